/* SPDX-License-Identifier: MIT */
/*
 * dev_readahead_types.h — the read-ahead queue's in-memory types
 * (dev_readahead.h has the functions and the design); fs/core/core_types.h
 * embeds the queue, one per volume.
 */
#ifndef GLASSFS_DEV_READAHEAD_TYPES_H
#define GLASSFS_DEV_READAHEAD_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "fs/base/lock.h"
#include "fs/base/gthread.h"

/*
 * One hint for the read-ahead thread: the device's file descriptor and id,
 * not the struct dev, so a device removed while its hint waits is never
 * touched (a hint on a closed or reused descriptor only costs I/O).
 */
struct dev_ra_req {
	int fd;
	uint64_t devid;
	uint64_t off, len;
	uint64_t queued_ns;	/* when queued, for the probe; 0 when nobody listens */
	bool write;		/* write-behind: start writing the range out */
};

/* A few hints suffice: one stream asks once per half window (4 MiB). */
#define DEV_RA_QUEUE 32

struct dev_ra_queue {
	struct glock lock;		/* GLOCK_CLASS_DEV: guards the fields below */
	struct gcond cond;		/* hint queued / queue drained / stop */
	struct dev_ra_req v[DEV_RA_QUEUE];	/* FIFO */
	size_t head, n;
	bool busy;			/* the thread is asking the OS for one hint */
	uint64_t dropped;		/* hints not queued: queue full */
	struct gthread thread;		/* its stop: under lock, cond */
};

#endif
