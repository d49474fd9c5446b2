/* SPDX-License-Identifier: MIT */
/*
 * core.h — the storage core: a volume opened from its devices.
 *
 * The core owns devices, the chunk map, the allocator and free-space tree,
 * the node cache, every B-tree root and the transaction machinery.  The
 * items layer (inodes, directories, xattrs, file extents: fs/items/inode.c etc.)
 * sits on top and only talks to it through core.h, txn.h, btree.h and
 * data.h.  Nothing here includes FUSE headers.
 */
#ifndef GLASSFS_CORE_H
#define GLASSFS_CORE_H

#include <stdint.h>
#include <stdbool.h>
#include "fs/base/lock.h"

struct core;
struct root;
struct dev;

#define CORE_SECTORSIZE 4096u		/* data block and checksum unit */
#define CORE_DEFAULT_NODESIZE 16384u
#define CORE_OPTS_MAX_DEVS 16		/* = CORE_MAX_DEVS (core_types.h) */

struct core_opts {
	unsigned commit_interval_s;	/* commit=N, default 30 */
	enum glock_type locktype;	/* locktype=rwlock|mutex|spin */
	unsigned lock_groups;		/* locking=node -> 0, locking=groups:N -> N */
	/*
	 * cowlock=leaf|path: a modifying B-tree descent write-locks only the
	 * levels it changes (leaf, the default; read locks above), or every
	 * level from the root down (path: the talk's baseline, where every
	 * change serializes on the root node).
	 */
	bool cow_lock_path;
	bool readonly;			/* ro: no transactions, no commit thread */
	uint64_t cache_bytes;		/* node cache budget, default 256 MiB */
	uint64_t dirty_thresh_bytes;	/* commit early past this much dirty metadata */
	/*
	 * discard=off|sync|async (nodiscard = off).  CORE_DISCARD_DEFAULT
	 * (0) falls back to the GLASSFS_DISCARD environment variable, else off.
	 */
	int discard;			/* enum core_discard */
	uint64_t discard_iops;		/* async: discards per second, 0 = unlimited */
	uint64_t discard_bytes_per_s;	/* async: bytes per second, 0 = unlimited */
	/*
	 * Device latency model for every device, in microseconds per
	 * operation (0 = none): a test plays a slow disk.  The environment
	 * variable GLASSFS_DEV_LATENCY still applies when these are 0.
	 */
	uint64_t dev_lat_us[4];		/* read, write, flush, discard */
	/*
	 * dev_latency.N=...: device index N only (0-based, the order of the
	 * devices given at open; a device added online gets the next index).
	 * Bit op of dev_lat_dev_set[N] says which of dev_lat_dev_us[N][op]
	 * were given; those replace the every-device value for that device.
	 */
	uint64_t dev_lat_dev_us[CORE_OPTS_MAX_DEVS][4];
	uint8_t dev_lat_dev_set[CORE_OPTS_MAX_DEVS];
	/*
	 * degraded: open with devices missing when every chunk keeps a copy
	 * on the devices given (dup/raid1).  Writable (ro still applies):
	 * writes go to the copies present, new chunks that cannot be raid1
	 * are single/dup, and a device that missed commits is resynced at
	 * the next open that has it (fs/services/volume.h).
	 */
	bool degraded;
	/* fsync=log (default): fsync writes the file's items to the fsync log
	 * (log.h); fsync=commit: every fsync is a full commit (the baseline). */
	int fsync_mode;			/* enum core_fsync */
	/* atime updates on read: relatime (default; also "atime"), noatime,
	 * strictatime (= norelatime) */
	int atime;			/* enum core_atime */
	/* Open the devices without claiming them (dev.h DEV_NOCLAIM): fsck -n
	 * of a volume that a mount holds.  With readonly only. */
	bool noclaim;
	/*
	 * inode_spread=on: each directory hands out numbers from a block of
	 * its own (inode.h, INODE_SPREAD_BLOCK), so creates in different
	 * directories insert into different leaves.  Default (false): every
	 * new inode takes the next number of one counter — with the lock
	 * groups as they are, spreading moved the B-tree wait from the
	 * leaves to the root (docs/benchmarks.md), so it stays an option
	 * for the lock experiment until groups own room of their own.
	 */
	bool inode_spread;
	/*
	 * Test hook: the write log of every device (dev_set_recorder, dev.h;
	 * op is an enum dev_op), set as each device is opened.  NULL = none.
	 */
	void (*dev_recorder)(void *arg, const struct dev *d, int op, uint64_t off,
			     const void *buf, uint64_t len);
	void *dev_recorder_arg;
};
enum core_fsync { CORE_FSYNC_LOG = 0, CORE_FSYNC_COMMIT = 1 };
enum core_atime { CORE_ATIME_RELATIME = 0, CORE_ATIME_NONE = 1, CORE_ATIME_STRICT = 2 };
enum core_discard {
	CORE_DISCARD_DEFAULT = 0, CORE_DISCARD_OFF = 1, CORE_DISCARD_SYNC = 2,
	CORE_DISCARD_ASYNC = 3,
};
/* "off"/"nodiscard", "sync", "async" -> enum core_discard; -EINVAL otherwise. */
int core_discard_parse(const char *s);
void core_opts_default(struct core_opts *o);

/* mkfs options (mount_format, fs/ops/mount.h). */
struct format_opts {
	const char *label;
	uint32_t nodesize;		/* 4096..65536, power of two; default 16 KiB */
	bool force;			/* overwrite an existing signature */
	/* Profiles (CORE_PROFILE_*) of data and metadata chunks (system
	 * chunks follow metadata).  0 = single. */
	uint64_t data_profile, meta_profile;
	/* Per device (same order as devs): -1/absent = ask the device
	 * (sysfs), 0 = non-rotational, 1 = rotational.  NULL = all ask. */
	const int8_t *rotational;
};
/* Profiles: the chunk type's BG_* profile bits (format.h). */
#define CORE_PROFILE_SINGLE	0ull
#define CORE_PROFILE_RAID1	(1ull << 4)
#define CORE_PROFILE_DUP	(1ull << 5)
#define CORE_PROFILE_RAID10	(1ull << 6)
#define CORE_PROFILE_RAID5	(1ull << 7)
#define CORE_PROFILE_RAID6	(1ull << 8)
#define CORE_PROFILE_RAID1C3	(1ull << 9)
#define CORE_PROFILE_RAID1C4	(1ull << 10)
/* "single", "dup", "raid1", "raid1c3", "raid1c4", "raid10", "raid5", "raid6"
 * -> *out; -EINVAL for anything else. */
int core_profile_parse(const char *s, uint64_t *out);
const char *core_profile_name(uint64_t profile);

/* Corruption and I/O trouble: one line on stderr naming where. */
void core_log(struct core *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Corruption, the one helper every layer reports it through: log where,
 * force the volume read-only (core_readonly; the first abort's error,
 * -EUCLEAN, stays). */
void core_corrupt(struct core *c, const char *where, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Whether the last mount_open() or mount_format() (fs/ops/mount.h) of this
 * thread that failed already said why on stderr (the caller then adds no
 * second message). */
bool core_failure_reported(void);

uint32_t core_nodesize(const struct core *c);
const char *core_label(const struct core *c);
const uint8_t *core_fsid(const struct core *c);	/* 16 bytes */
bool core_readonly(const struct core *c);		/* ro mount, or forced ro after an abort */

/* statfs: truthful byte counts (data space; metadata reserve excluded from avail). */
struct core_space {
	uint64_t total_bytes;
	uint64_t free_bytes;
	uint64_t avail_bytes;
};

/* Counters for tests, benchmarks and `glassctl stats`. Monotonic since open. */
struct core_stats {
	uint64_t transid;		/* last committed generation */
	uint64_t commits;		/* commits completed since open */
	uint64_t nodes_written;
	uint64_t dev_read_ios, dev_read_bytes;
	uint64_t dev_write_ios, dev_write_bytes;
	uint64_t dev_flushes, dev_discards, dev_discard_bytes;
	uint64_t cache_hits, cache_misses;
	uint64_t csum_errors;		/* checksum mismatches seen on reads */
	uint64_t degraded;		/* I/Os served by / written to fewer copies than the profile has */
	uint64_t repaired;		/* bad copies rewritten from a good one (scrub) */
	uint64_t discard_dropped;	/* freed ranges not discarded: async queue full */
	uint64_t resync_bytes;		/* stale devices: bytes of their chunks to resync */
	uint64_t resync_done_bytes;	/* ... gone through */
	uint64_t resync_running;	/* 1 until the resync's end is committed: the
					 * bytes are all through before that */
	uint64_t resync_mismatch;	/* data sectors / nodes a resync found bad on every
					 * copy (the device kept its own bytes there) */
	uint64_t resync_rerouted;	/* ... bad on the copy read first, taken from another */
	/* the name cache (dcache.h) of the subvolume asked, which the core
	 * does not know: 0 here, filled by the caller (dir_cache_counts) */
	uint64_t name_cache_hits, name_cache_misses;
	/* read-ahead asked of the OS for sequential data reads (dev_readahead.c) */
	uint64_t dev_readahead_ios, dev_readahead_bytes;
	uint64_t readahead_dropped;	/* hints not asked: the read-ahead queue was full */
	/* zero-copy reads (fs/trees/data_span.h): reads replied with device
	 * ranges to splice, their device bytes, and reads that fell back to
	 * the ordinary copy (raid5/6, a checksum to look into, a model) */
	uint64_t span_reads, span_bytes, span_fallbacks;
	/* writes that waited for the segment a resync or relocation copied,
	 * and writes that went on beside one (fs/store/copy_fence.h) */
	uint64_t copy_fence_waits, copy_fence_passed;
	/* write-behind asked of the OS for large data writes (dev_readahead.c) */
	uint64_t dev_writebehind_ios, dev_writebehind_bytes;
	/* the fsync log (fs/items/log.h, log_stats): fsyncs it served and
	 * that committed instead, segment and record bytes written, delta
	 * records, arenas reserved */
	uint64_t log_syncs, log_fallbacks, log_bytes, log_rec_bytes, log_deltas, log_arenas;
	/* whole data extents of the running transaction written again in
	 * place instead of copied on write (fs/trees/data.h, data_rewrite) */
	uint64_t data_rewrites;
};

#endif
