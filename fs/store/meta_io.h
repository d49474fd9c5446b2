/* SPDX-License-Identifier: MIT */
/*
 * meta_io.h — metadata block I/O over the chunk map (meta_io.c); the node
 * cache (fs/btree/cache.c) reads and writes nodes through it.
 */
#ifndef GLASSFS_META_IO_H
#define GLASSFS_META_IO_H

#include <stdbool.h>
#include <stdint.h>

struct core;

/*
 * Read the node block at logical bytenr: tries each mirror in turn until
 * verify(buf, arg) returns 0; -EIO (and a log line) when no mirror passes.
 */
int meta_read(struct core *c, uint64_t bytenr, void *buf,
	      int (*verify)(const void *buf, uint64_t bytenr, void *arg), void *arg);
/* Write a finished node block (checksum already set) to every mirror. */
int meta_write(struct core *c, uint64_t bytenr, const void *buf);

/* Write every copy; a failing copy degrades when another took it. */
int meta_write_copies(struct core *c, uint64_t logical, const void *buf, uint64_t len,
		      const char *what);

/*
 * Every present copy of [logical, + len) has its blocks on its device
 * (dev_allocated): writing there allocates nothing on the host.  False
 * when a copy has a hole or the range is not mapped.
 */
bool meta_allocated(struct core *c, uint64_t logical, uint64_t len);

#endif
