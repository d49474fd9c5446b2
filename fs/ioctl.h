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

/* The counters of struct core_stats (core.h), in this order. */
#define GLASSFS_STATS_FIELDS(X) \
	X(transid) X(commits) X(nodes_written) \
	X(dev_read_ios) X(dev_read_bytes) X(dev_write_ios) X(dev_write_bytes) \
	X(dev_flushes) X(dev_discards) X(dev_discard_bytes) \
	X(cache_hits) X(cache_misses) X(csum_errors)

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

#endif
