/* SPDX-License-Identifier: MIT */
/*
 * dev.h — one device: an image file or a block device.
 *
 * Positional I/O that loops over short reads/writes and EINTR, flush
 * (fdatasync), discard (hole punching with KEEP_SIZE on image files,
 * BLKDISCARD on block devices), a rotational flag, I/O counters and the
 * dev__io__submit/done probes.
 *
 * Latency model (to play a slow disk or a device whose discards stall):
 * GLASSFS_DEV_LATENCY="read=US,write=US,flush=US,discard=US" (microseconds,
 * any subset) adds a sleep to each operation of every device, or
 * dev_set_latency() per device (the mount options dev_latency= and
 * dev_latency.N= reach it through dev_apply_latency).  The sleep is
 * the calling thread's own: operations of different threads overlap, as
 * on a device with a deep queue.  In particular a flush does not wait for
 * discards in flight (a real cache flush orders writes; discards are
 * advisory and sit in their own queue), so the async discard thread never
 * delays a commit's flush.
 *
 * Error model (to play a failing disk): dev_set_fail(d, op, true) makes
 * every later operation op on d return -EIO without touching the file;
 * GLASSFS_DEV_FAIL="PATHSUFFIX:read,write" does it at open for every
 * device whose path ends in PATHSUFFIX ("write@N": after N good writes,
 * a disk that starts failing; "nodiscard": discards are -EOPNOTSUPP).
 *
 * Exclusive open (dev_claim.h): an open device is held for as long as it
 * is open, so one image or block device serves one mount, mkfs or fsck at
 * a time; read-only opens share.  dev_open returns -EBUSY when another
 * program holds the device and dev_holder() says who.
 *
 * Thread safety: every function may be called concurrently; counters are
 * atomic; the only lock is each device's flush thread's (dev_flush_all),
 * held around its queue and never across I/O (the claim is a file lock).
 */
#ifndef GLASSFS_DEV_H
#define GLASSFS_DEV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "fs/store/dev_types.h"


enum {				/* dev_open's flags */
	DEV_RDONLY = 1 << 0,	/* O_RDONLY, a shared claim */
	/* No claim at all: fsck -n reading a volume that a mount holds
	 * (what the mount has not committed yet is not seen). */
	DEV_NOCLAIM = 1 << 1,
};
/*
 * Open path (O_RDWR unless DEV_RDONLY) and claim it: O_EXCL on a block
 * device and an OFD lock (dev_claim.h).  -EBUSY when another program holds
 * it, after waiting for a holder that is closing it.
 */
int dev_open(const char *path, unsigned flags, struct dev **out);
void dev_close(struct dev *d);
/* The holder starts closing d (a final commit after an unmount): an
 * opener of d waits for the close instead of failing at once. */
void dev_closing(struct dev *d);
/* d is no longer the volume's (removed from it) though it stays open for
 * reads in flight: let go of the claim on an image file (a block
 * device's O_EXCL lasts until dev_close). */
void dev_unclaim(struct dev *d);
/* Who holds path, for a message: "pid N (command line)", "the kernel's
 * mount on DIR", or "another program" when that cannot be told. */
void dev_holder(const char *path, char *buf, size_t len);

int dev_read(struct dev *d, uint64_t off, void *buf, uint64_t len);
int dev_write(struct dev *d, uint64_t off, const void *buf, uint64_t len);
int dev_flush(struct dev *d);
/*
 * Flush devs[0..n) at the same time, each result in err[i]: devs[0] in
 * the caller's thread, every other one in its device's flush thread
 * (started at its first use, stopped by dev_close; requests that meet
 * there share one flush begun after all of them were made), so a
 * volume of several devices waits for the slowest flush, not the sum.
 * The caller waits on each thread's condition (an off-CPU stack shows
 * dev_flush_all); each flush fires the dev__io probes in the thread
 * that issues it.  n <= DEV_FLUSH_ALL_MAX.
 */
#define DEV_FLUSH_ALL_MAX 16
void dev_flush_all(struct dev *const *devs, int n, int *err);
/* Best effort: -EOPNOTSUPP when the device cannot discard. */
int dev_discard(struct dev *d, uint64_t off, uint64_t len);
/*
 * [off, off + len) of d has its blocks: no hole of an image file there
 * (SEEK_HOLE; past the end of the file is a hole), always on a block
 * device.  A host filesystem that cannot tell holes reports the file as
 * all data, so a hole may be missed, never invented; an lseek that fails
 * answers false (the caller's fill costs a write, skipping it nothing
 * worse than the host allocating later).
 */
bool dev_allocated(struct dev *d, uint64_t off, uint64_t len);

void dev_set_latency(struct dev *d, enum dev_op op, uint64_t ns);
/* Error injection: op on d fails with -EIO while on. */
void dev_set_fail(struct dev *d, enum dev_op op, bool on);
void dev_counters(const struct dev *d, struct dev_counters *out);
/* A block read from d failed verification (enum dev_err: CORRUPTION or
 * GENERATION); I/O errors are counted by the operations themselves. */
void dev_note_error(struct dev *d, enum dev_err e);
/* The error counters (enum dev_err order); reset: zero them as read. */
void dev_errors(struct dev *d, uint64_t out[DEV_ERR_NR], bool reset);
/* Report every later write, discard and flush of d to fn (NULL: stop). */
void dev_set_recorder(struct dev *d, dev_record_fn fn, void *arg);

struct core;
/* dev_latency.c: apply the latency model of device index idx (core_opts) to d. */
void dev_apply_latency(struct core *c, struct dev *d, int idx);

#endif
