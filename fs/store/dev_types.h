/* SPDX-License-Identifier: MIT */
/*
 * dev_types.h — one device's in-memory state (dev.h has the functions);
 * struct core holds the volume's devices and core_log names the first.
 */
#ifndef GLASSFS_DEV_TYPES_H
#define GLASSFS_DEV_TYPES_H

#include <stdbool.h>
#include <stdint.h>
#include "fs/base/gthread.h"
#include "fs/base/lock.h"

#include "fs/base/lock.h"

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

/* Per-device error counters, as btrfs's device stats (`glassctl device
 * stats`): I/O that failed by operation, and blocks read from the device
 * that failed verification (corruption: a bad checksum; generation: a
 * node whose checksum holds but whose header names another place or
 * generation, i.e. a lost or misdirected write).  Since mount, in memory. */
enum dev_err { DEV_ERR_READ, DEV_ERR_WRITE, DEV_ERR_FLUSH, DEV_ERR_CORRUPTION,
	       DEV_ERR_GENERATION, DEV_ERR_NR };

/* One caller's request to a device's flush thread (dev_flush_all):
 * on the caller's stack, queued on dev_flusher.queue until served. */
struct dev_flush_req {
	struct dev_flush_req *next;
	int ret;		/* dev_flush's result, once done */
	bool done;
};

/*
 * A device's flush thread, started by the first dev_flush_all that needs
 * it and stopped by dev_close: it takes every queued request, flushes
 * once (that flush began after each of them was queued, so it covers
 * their writes) and answers them all.
 */
struct dev_flusher {
	struct glock lock;		/* GLOCK_CLASS_DEV, mutex: the fields below */
	struct gcond cond;		/* a request was queued / served, or stop */
	struct gthread th;		/* th.stop under lock */
	struct dev_flush_req *queue;	/* waiting for the next flush */
	bool broken;			/* the thread could not start: callers flush */
};

struct dev_counters {
	uint64_t read_ios, read_bytes;
	uint64_t write_ios, write_bytes;
	uint64_t flushes, discards, discard_bytes;
	uint64_t ra_ios, ra_bytes;	/* read-ahead asked of the OS (dev_readahead.c) */
	uint64_t wb_ios, wb_bytes;	/* write-behind asked of the OS (dev_readahead.c) */
};

/*
 * A sequential stream of data reads on one device (dev_readahead.c): where
 * its next read is expected and how far ahead of it the OS was asked to
 * read.  Physical addresses; 0 = a free slot.
 */
#define DEV_RA_STREAMS 8
struct dev_ra_stream {
	uint64_t next;		/* end of the furthest read of the stream */
	uint64_t hinted;	/* end of the range asked for ahead of it */
	uint64_t used;		/* ra_tick at its last read, for replacement */
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
	/* set by volume management (fs/services/volume_*.c), read under the chunk map's lock: */
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
	uint64_t err[DEV_ERR_NR];	/* enum dev_err (atomic) */
	struct dev_counters cnt;	/* atomic adds */
	/* read-ahead (dev_readahead.c), under ra_lock: */
	struct glock ra_lock;
	struct dev_ra_stream ra[DEV_RA_STREAMS];
	uint64_t ra_tick;
	uint64_t wb_from, wb_to;	/* a write stream: asked for up to, furthest write */
	struct dev_flusher flusher;	/* dev_flush_all's thread for this device */
	/* dev_map.c: the whole device mapped read-only, made at first use */
	void *map;
	int map_state;		/* atomic: none, being made, made, failed */
	bool map_cold;		/* dev_map_set_cold */
	/* write log: set before I/O starts (mount_open), fixed after */
	dev_record_fn recorder;
	void *recorder_arg;
};

#endif
