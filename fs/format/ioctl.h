/* SPDX-License-Identifier: MIT */
/*
 * ioctl.h — ioctls on a mounted glassfs (issued on the mount point or any
 * file of it, the way btrfs-progs talks to btrfs).  FUSE passes only
 * "restricted" ioctls: the size and direction are encoded in the number.
 */
#ifndef GLASSFS_IOCTL_H
#define GLASSFS_IOCTL_H

#include <stdint.h>
#include <sys/ioctl.h>

#define GLASSFS_IOC_MAGIC 0xb7

/* The counters of struct core_stats (core.h), in this order.  Append only:
 * glassctl prints values[i] under the i-th name. */
#define GLASSFS_STATS_FIELDS(X) \
	X(transid) X(commits) X(nodes_written) \
	X(dev_read_ios) X(dev_read_bytes) X(dev_write_ios) X(dev_write_bytes) \
	X(dev_flushes) X(dev_discards) X(dev_discard_bytes) \
	X(cache_hits) X(cache_misses) X(csum_errors) X(degraded) X(repaired) \
	X(discard_dropped) X(resync_bytes) X(resync_done_bytes) \
	X(name_cache_hits) X(name_cache_misses) X(resync_running) \
	X(resync_mismatch) X(resync_rerouted) \
	X(dev_readahead_ios) X(dev_readahead_bytes) X(readahead_dropped) \
	X(span_reads) X(span_bytes) X(span_fallbacks) \
	X(copy_fence_waits) X(copy_fence_passed) \
	X(dev_writebehind_ios) X(dev_writebehind_bytes) \
	X(log_syncs) X(log_fallbacks) X(log_bytes) X(log_rec_bytes) X(log_deltas) X(log_arenas) \
	X(data_rewrites)

#define GLASSFS_STATS_MAX 48

struct glassfs_ioc_stats {
	uint32_t version;		/* 1 */
	uint32_t count;			/* values filled, <= GLASSFS_STATS_MAX */
	uint64_t values[GLASSFS_STATS_MAX];	/* GLASSFS_STATS_FIELDS order */
};

/* Read the counters. */
#define GLASSFS_IOC_STATS	_IOR(GLASSFS_IOC_MAGIC, 1, struct glassfs_ioc_stats)
/* Commit the running transaction and wait for it (like `sync` for this fs). */
#define GLASSFS_IOC_COMMIT	_IO(GLASSFS_IOC_MAGIC, 2)


/*
 * Scrub (scrub.h) in a daemon thread.  START takes rate_bytes_per_s
 * (0 = unlimited) and fails with EBUSY while one runs, EROFS on a
 * read-only mount; STATUS fills the rest; CANCEL stops a running scrub
 * (ENOENT if none runs).  Byte counts as in struct scrub_progress:
 * done <= total (logical), checked <= total_check (every copy).
 */
struct glassfs_ioc_scrub {
	uint32_t version;		/* 1 */
	uint32_t running;		/* 1 while a scrub runs */
	int32_t result;			/* last scrub's return (0, -ECANCELED, -errno) */
	uint32_t started;		/* scrubs started since mount */
	uint64_t rate_bytes_per_s;	/* START: in; STATUS: the running one's */
	uint64_t total_bytes, done_bytes, checked_bytes;
	uint64_t corrected_bytes, uncorrectable_bytes;
	uint64_t meta_errors, data_errors, read_errors;
	uint64_t nodes, extents;
	uint64_t total_check_bytes;	/* every copy (raid5/6: every column of its rows) of
					 * total_bytes: checked_bytes' unit */
	int64_t start_time;		/* wall clock (s) of the last start */
	uint64_t duration_ns;		/* of the last scrub, or so far */
	uint64_t parity_errors;		/* raid5/6 parity sectors disagreeing with their row */
	uint64_t skipped_bytes;		/* freed between the walk listing them and their
					 * turn: not read (struct scrub_progress) */
};

/* Batch trim (trim_batch): minlen in, trimmed bytes out. */
struct glassfs_ioc_trim {
	uint64_t minlen;
	uint64_t trimmed;
};

#define GLASSFS_IOC_SCRUB_START	_IOW(GLASSFS_IOC_MAGIC, 3, struct glassfs_ioc_scrub)
#define GLASSFS_IOC_SCRUB_STATUS _IOR(GLASSFS_IOC_MAGIC, 4, struct glassfs_ioc_scrub)
#define GLASSFS_IOC_SCRUB_CANCEL _IO(GLASSFS_IOC_MAGIC, 5)
#define GLASSFS_IOC_TRIM	_IOWR(GLASSFS_IOC_MAGIC, 6, struct glassfs_ioc_trim)

/*
 * Subvolumes and snapshots (10-19; fs/items/subvol.h, glassctl subvolume ...).
 * CREATE, SNAP_CREATE and DELETE are issued on the parent directory and
 * name the entry in it; SNAP_CREATE names its source by the id that
 * SUBVOL_INFO (on the source directory) returned.  Errors: EEXIST (name
 * taken), EINVAL (the source is not a subvolume's root directory, or the
 * name is not a subvolume), EBUSY (open files in the subvolume), EPERM
 * (the default subvolume, or not the owner), EACCES (no write+exec on the
 * parent), ENOTEMPTY (the subvolume holds other subvolumes), EROFS.
 */
#define GLASSFS_SUBVOL_NAME_MAX	255
#define GLASSFS_SUBVOL_RDONLY	(1ull << 0)	/* = ROOT_F_RDONLY */
#define GLASSFS_SUBVOL_DELETED	(1ull << 48)	/* list: being freed (ROOT_F_DEAD) */

struct glassfs_ioc_subvol_info {
	uint64_t id;			/* out: tree id of the subvolume the file is in */
	uint64_t ino;			/* out: its inode number there */
	uint64_t flags;			/* out: GLASSFS_SUBVOL_* */
	uint32_t is_root;		/* out: 1 if it is the subvolume's root directory */
	uint32_t pad;
};

struct glassfs_ioc_subvol_args {
	uint64_t src_id;		/* SNAP_CREATE: the source subvolume */
	uint64_t flags;			/* SNAP_CREATE: GLASSFS_SUBVOL_RDONLY */
	uint64_t id;			/* out: the new (or deleted) subvolume */
	char name[GLASSFS_SUBVOL_NAME_MAX + 1];	/* NUL-terminated */
};

#define GLASSFS_SUBVOL_PATH_MAX	208
struct glassfs_subvol_entry {
	uint64_t id, parent, dirid;	/* parent: subvolume holding its name; dirid: directory there */
	uint64_t generation;		/* transid that last wrote its root */
	uint64_t flags;			/* GLASSFS_SUBVOL_* */
	uint64_t otime;			/* creation time, seconds */
	char path[GLASSFS_SUBVOL_PATH_MAX];	/* from the top of the volume; "" while deleted */
};
#define GLASSFS_SUBVOL_LIST_MAX	48
struct glassfs_ioc_subvol_list {
	uint64_t start_id;		/* in: first id to report */
	uint32_t count;			/* out: entries filled */
	uint32_t more;			/* out: 1 if ids above the last one remain */
	struct glassfs_subvol_entry e[GLASSFS_SUBVOL_LIST_MAX];
};

#define GLASSFS_IOC_SUBVOL_INFO	_IOR(GLASSFS_IOC_MAGIC, 10, struct glassfs_ioc_subvol_info)
#define GLASSFS_IOC_SUBVOL_CREATE _IOWR(GLASSFS_IOC_MAGIC, 11, struct glassfs_ioc_subvol_args)
#define GLASSFS_IOC_SNAP_CREATE	_IOWR(GLASSFS_IOC_MAGIC, 12, struct glassfs_ioc_subvol_args)
#define GLASSFS_IOC_SUBVOL_DELETE _IOWR(GLASSFS_IOC_MAGIC, 13, struct glassfs_ioc_subvol_args)
#define GLASSFS_IOC_SUBVOL_LIST	_IOWR(GLASSFS_IOC_MAGIC, 14, struct glassfs_ioc_subvol_list)

/*
 * Devices and balance (fs/services/volume.h), numbers 20-29.  Requests that can
 * fail for a reason the user must read come back with the ioctl itself
 * succeeding and result = -errno, msg = the reason.
 */
struct glassfs_ioc_vol {
	uint32_t version;		/* 1 */
	int32_t result;			/* out: 0 or -errno */
	int64_t arg0, arg1;		/* set-rotational: arg0 = 0|1; balance start:
					 * data, metadata profile to convert to (-1 keep) */
	char path[1024];		/* device path, absolute */
	char msg[512];			/* out: why it failed */
};

struct glassfs_ioc_balance {
	uint32_t version;		/* 1 */
	int32_t running;		/* 1 while a balance runs */
	int32_t result;			/* last balance: 0, -ECANCELED, -errno */
	uint32_t started;		/* balances started since mount */
	uint64_t chunks_total, chunks_done;
	uint64_t bytes_total, bytes_done;	/* logical bytes of the chunks moved */
	char msg[256];			/* why the last one stopped */
	int32_t op;			/* what the counters measure: 1 balance, 2 device remove */
	int32_t op_running;		/* 1 while that operation runs */
};

#define GLASSFS_IOC_DEV_ADD		_IOWR(GLASSFS_IOC_MAGIC, 20, struct glassfs_ioc_vol)
#define GLASSFS_IOC_DEV_REMOVE		_IOWR(GLASSFS_IOC_MAGIC, 21, struct glassfs_ioc_vol)
#define GLASSFS_IOC_DEV_ROTATIONAL	_IOWR(GLASSFS_IOC_MAGIC, 22, struct glassfs_ioc_vol)
#define GLASSFS_IOC_BALANCE_START	_IOWR(GLASSFS_IOC_MAGIC, 23, struct glassfs_ioc_vol)
#define GLASSFS_IOC_BALANCE_STATUS	_IOR(GLASSFS_IOC_MAGIC, 24, struct glassfs_ioc_balance)
#define GLASSFS_IOC_BALANCE_CANCEL	_IOWR(GLASSFS_IOC_MAGIC, 25, struct glassfs_ioc_vol)

/*
 * What a volume is made of (30-39; fs/services/volinfo.c; glassctl
 * filesystem show|usage, device list|stats), as btrfs's FS_INFO,
 * DEV_INFO, SPACE_INFO and GET_DEV_STATS in one answer.  Sizes in bytes.
 * A device in the volume's device items but not open (a degraded mount)
 * is listed with GLASSFS_DEV_MISSING and no path.  Space: one entry per
 * block-group type and profile in use (two for a type while a balance
 * converts it); size = logical bytes of its chunks, used = logical bytes
 * allocated in them (used <= size); a device's alloc[] is the device
 * bytes its chunks take per type (data, system, metadata: every copy),
 * and their sum is its used.  Error counters: since mount; in:
 * reset = 1 zeroes them as they are read.
 */
#define GLASSFS_DEV_MISSING	(1u << 0)	/* not open on this (degraded) mount */
#define GLASSFS_DEV_STALE	(1u << 1)	/* missed commits: being resynced, read last */
#define GLASSFS_DEV_ROTATIONAL	(1u << 2)
#define GLASSFS_DEV_REMOVING	(1u << 3)	/* device remove in progress */

#define GLASSFS_ERR_FIELDS(X) X(read_io_errs) X(write_io_errs) X(flush_io_errs) \
	X(corruption_errs) X(generation_errs)	/* = enum dev_err order */
#define GLASSFS_ERR_NR 5

struct glassfs_dev_info {
	uint64_t devid;
	uint64_t size;			/* device bytes the volume may use */
	uint64_t used;			/* device bytes in chunks */
	uint64_t alloc[3];		/* of used, per type: data, system, metadata */
	uint64_t errs[GLASSFS_ERR_NR];	/* GLASSFS_ERR_FIELDS order */
	uint32_t flags;			/* GLASSFS_DEV_* */
	uint32_t pad;
	char path[256];			/* "" when missing */
};

struct glassfs_space_info {
	uint64_t flags;			/* BG_DATA|BG_SYSTEM|BG_METADATA | profile bits (format.h) */
	uint64_t size, used;
};

#define GLASSFS_INFO_DEVS	16	/* = CORE_MAX_DEVS */
#define GLASSFS_INFO_SPACES	12
struct glassfs_ioc_fs_info {
	uint32_t version;		/* 1 */
	uint32_t reset;			/* in: zero the error counters after reading */
	uint8_t fsid[16];
	char label[64];
	uint64_t generation, num_devices;	/* num_devices: of the volume, present or not */
	uint32_t nodesize, sectorsize;
	uint64_t total_bytes;		/* device bytes, every present device */
	uint64_t bytes_used;		/* logical bytes allocated (what df calls used) */
	uint32_t ndevs, nspaces;
	struct glassfs_dev_info dev[GLASSFS_INFO_DEVS];
	struct glassfs_space_info space[GLASSFS_INFO_SPACES];
};
_Static_assert(sizeof(struct glassfs_ioc_fs_info) < (1 << 14), "fits an ioctl number");

#define GLASSFS_IOC_FS_INFO	_IOWR(GLASSFS_IOC_MAGIC, 30, struct glassfs_ioc_fs_info)

#endif
