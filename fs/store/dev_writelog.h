/* SPDX-License-Identifier: MIT */
/*
 * dev_writelog.h — the device layer's write log as a side file (the
 * daemon's -o writelog=PATH), for power-loss replay against the real
 * daemon (tests/integration/powerreplay.c builds crash images from it and
 * the images the mount started from; tests/integration/powerloss.test).
 *
 * It is a recorder (dev_record_fn, dev_types.h): every write with its
 * bytes, every discard, every flush of every device, in the order the
 * device layer reported them; what reaches the devices does not change.
 * The engine issues no FUA: each write is durable at its device's next
 * flush.  The log is not itself flushed: it is for tests, whose crash is
 * simulated from it, not a journal that survives a crash.
 *
 * File format (little-endian, as written by x86-64 and arm64):
 *   struct wlog_head, then records: struct wlog_rec, followed by len
 *   bytes of data for a WLOG_WRITE.  A device is its index in the list
 *   the mount was given (DEV_A:DEV_B); a device added later is
 *   WLOG_DEV_OTHER.  A log whose writes failed ends with a WLOG_BROKEN
 *   record (a replayer must not trust anything after the last flush).
 */
#ifndef GLASSFS_DEV_WRITELOG_H
#define GLASSFS_DEV_WRITELOG_H

#include <stdint.h>
#include "fs/store/dev_types.h"

#define WLOG_MAGIC	"GLWLOG01"
#define WLOG_REC_MAGIC	0x52574c47u	/* "GLWR" */
#define WLOG_DEV_OTHER	0xffffu

enum wlog_op { WLOG_WRITE = DEV_WRITE, WLOG_FLUSH = DEV_FLUSH, WLOG_DISCARD = DEV_DISCARD,
	       WLOG_BROKEN = 15 };

struct wlog_head {
	char magic[8];		/* WLOG_MAGIC */
	uint32_t ndevs;		/* devices the mount was given */
	uint32_t reserved;
};

struct wlog_rec {
	uint32_t magic;		/* WLOG_REC_MAGIC */
	uint16_t op;		/* enum wlog_op */
	uint16_t dev;		/* index, or WLOG_DEV_OTHER */
	uint64_t off, len;	/* bytes on the device */
};

struct dev_writelog;
/* Create (truncate) the log at path for the mount's devices (their paths
 * as given to mount_open).  0 or -errno. */
int dev_writelog_open(const char *path, const char *const *devs, int ndevs,
		      struct dev_writelog **out);
/* The recorder: core_opts.dev_recorder, with the log as its argument. */
void dev_writelog_record(void *arg, const struct dev *d, int op, uint64_t off,
			 const void *buf, uint64_t len);
/* Close the log: after the devices are closed. */
void dev_writelog_close(struct dev_writelog *w);

#endif
