/* SPDX-License-Identifier: MIT */
/*
 * discard_types.h — the discard queue's in-memory types (discard.h has
 * the functions and the design); fs/core/core_types.h embeds the queue.
 */
#ifndef GLASSFS_DISCARD_TYPES_H
#define GLASSFS_DISCARD_TYPES_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "fs/base/lock.h"
#include "fs/base/gthread.h"

enum discard_mode { DISCARD_OFF = 0, DISCARD_SYNC = 1, DISCARD_ASYNC = 2 };

struct discard_range { uint64_t logical, len; };

#define DISCARD_QUEUE_MAX 65536

struct discard_queue {
	struct glock lock;		/* GLOCK_CLASS_DEV: guards the fields below */
	struct gcond cond;		/* work queued / queue drained / stop */
	struct discard_range *v;	/* FIFO of freed ranges to discard */
	size_t head, n, cap;
	size_t max;			/* longest queue (DISCARD_QUEUE_MAX; tests lower it) */
	bool busy;			/* the thread is issuing one range */
	uint64_t done;			/* ranges issued (discard_wait_inflight) */
	uint64_t dropped;		/* ranges not queued: queue full */
	enum discard_mode mode;		/* fixed after open */
	uint64_t sync_ns;		/* time spent in sync discards (commit) */
	struct gthread thread;		/* async mode; its stop: under lock, cond */
};

#endif
