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
 * dev_latency.N= reach it through core_apply_latency).  The sleep is
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
 * atomic; nothing here takes a lock (of ours: the claim is a file lock).
 */
#ifndef GLASSFS_DEV_H
#define GLASSFS_DEV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum dev_op { DEV_READ = 0, DEV_WRITE = 1, DEV_FLUSH = 2, DEV_DISCARD = 3 };

struct dev;
/*
 * Write log (crash-state tests, tests/unit/test_powerloss.c): a recorder
 * sees every write and discard that reached the device, once it returned
 * (buf: the bytes written; NULL for a discard), and every flush before it
 * is issued (off = len = 0), so a flush covers exactly the writes reported
 * before it: replaying the log up to a flush, with any subset of the
 * writes after it, gives a state power loss can leave.  Failed operations
 * are not reported.  op is an enum dev_op.  What reaches the device does
 * not change.  The recorder runs in the thread doing the I/O, with no
 * lock held, and orders concurrent calls itself.  There is no FUA: every
 * write, superblocks included, is durable only at the next flush.
 */
typedef void (*dev_record_fn)(void *arg, const struct dev *d, int op, uint64_t off,
			      const void *buf, uint64_t len);

struct dev_counters {
	uint64_t read_ios, read_bytes;
	uint64_t write_ios, write_bytes;
	uint64_t flushes, discards, discard_bytes;
};

struct dev {
	char *path;		/* fixed after open */
	int fd;
	uint64_t devid;		/* set by the core once the superblock is read */
	uint8_t uuid[16];	/* device uuid, from the superblock */
	uint64_t size;		/* bytes */
	bool blockdev;
	bool rotational;
	bool readonly;
	bool unclaimed;		/* dev_unclaim(): no longer held exclusively */
	/* set by the core (fs/volume.c), read under the chunk map's lock: */
	bool removing;		/* being removed: no new stripes here */
	bool stale;		/* its superblock missed commits: read it last */
	uint64_t sb_generation;	/* generation of its best superblock at open */
	uint64_t lat_ns[4];	/* latency model per enum dev_op; 0 = none */
	int fail[4];		/* error model per enum dev_op: -EIO when set (atomic) */
	uint64_t fail_after[4];	/* error model: N + 1 = fail after N good operations (0 = off) */
	uint64_t op_count[4];	/* operations seen by the error model (atomic) */
	bool no_discard;	/* error model: discards are -EOPNOTSUPP */
	int discard_warned;	/* "cannot discard" logged once (atomic) */
	int flush_failed;	/* a commit's flush failed here: logged once (atomic) */
	uint64_t errors;	/* operations that returned an error (atomic) */
	struct dev_counters cnt;	/* atomic adds */
	/* write log: set before I/O starts (core_open), fixed after */
	dev_record_fn recorder;
	void *recorder_arg;
};

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
/* Best effort: -EOPNOTSUPP when the device cannot discard. */
int dev_discard(struct dev *d, uint64_t off, uint64_t len);

void dev_set_latency(struct dev *d, enum dev_op op, uint64_t ns);
/* Error injection: op on d fails with -EIO while on. */
void dev_set_fail(struct dev *d, enum dev_op op, bool on);
void dev_counters(const struct dev *d, struct dev_counters *out);
/* Report every later write, discard and flush of d to fn (NULL: stop). */
void dev_set_recorder(struct dev *d, dev_record_fn fn, void *arg);

#endif
