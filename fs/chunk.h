/* SPDX-License-Identifier: MIT */
/*
 * chunk.h — the chunk map: logical ranges -> stripes on devices.
 *
 * Loaded at open from the superblock's sys_chunk_array (SYSTEM chunks,
 * enough to read the chunk tree) and then the chunk tree.  A chunk has a
 * profile (format.h BG_*): single is one stripe; dup and raid1 keep one
 * full copy per stripe (reads try each copy, writes go to all).  Striped
 * profiles are refused at open for now.
 *
 * New chunks are created lazily (chunk_alloc) when a block group type runs
 * out of space: data chunks of up to 1 GiB, metadata up to 256 MiB, both
 * smaller on small filesystems.  A new chunk gets its type's profile
 * (core->profile[]; at open, the profile of the newest chunk of the type):
 * single takes the device with the most unallocated space, dup two
 * stripes on that device, raid1 one stripe on each of the two devices
 * with the most unallocated space.  Metadata and system chunks prefer
 * non-rotational devices, data chunks rotational ones; when that class
 * has no room (or too few devices for raid1) any device is used.
 */
#ifndef GLASSFS_CHUNK_H
#define GLASSFS_CHUNK_H

#include <stdint.h>
#include <stdbool.h>
#include "fs/lock.h"
#include "fs/format.h"

struct core;
struct txn;
struct dev;

struct chunk {
	uint64_t logical, length, type;
	int num_stripes;
	struct {
		uint64_t devid;
		uint64_t physical;
		struct dev *dev;	/* NULL: device missing (degraded open) */
		uint8_t uuid[16];	/* device uuid, as in the chunk item */
	} stripes[CHUNK_MAX_STRIPES];
};

struct chunk_map {
	struct glock lock;	/* GLOCK_CLASS_CHUNK, rwlock: guards v/n */
	struct chunk **v;	/* sorted by logical, never overlapping */
	int n, cap;
};

struct chunk_copy {
	struct dev *dev;
	uint64_t physical;
};

void chunk_map_init(struct chunk_map *m);
void chunk_map_free(struct chunk_map *m);

/* Add a chunk from its item (validated: -EUCLEAN when malformed). */
int chunk_map_insert(struct core *c, uint64_t logical, const struct chunk_item *ci,
		     uint32_t size);
/*
 * Map [logical, logical + len), which must lie inside one chunk, to its
 * copies (1 for single) on devices that are present (a degraded open
 * leaves some out).  Returns the number of copies, or -EIO when no chunk
 * (or no present copy) maps it.  *type gets the chunk's BG_* flags when type != NULL.
 */
int chunk_map_lookup(struct core *c, uint64_t logical, uint64_t len,
		     struct chunk_copy *copies, uint64_t *type);

int chunk_load_sys_array(struct core *c, const struct super_block *sb);
int chunk_load_tree(struct core *c);
int chunk_build_sys_array(struct core *c, struct super_block *sb);

/*
 * Create a chunk of block-group type `type` (BG_DATA / BG_METADATA /
 * BG_SYSTEM): device space, chunk map entry and block group in memory;
 * with t != NULL also its chunk item, dev extent, block group item and
 * free-space info.  -ENOSPC when no device has room.
 */
int chunk_create(struct core *c, struct txn *t, uint64_t type, uint64_t *logical);
/* Insert the items of an in-memory chunk (mkfs after the trees exist). */
int chunk_insert_items(struct txn *t, const struct chunk *ch);

/* Set c->profile[] from the chunks loaded (open). */
void chunk_load_profiles(struct core *c);

uint64_t chunk_default_size(const struct core *c, uint64_t type);
/*
 * Ranges of d in no chunk and outside the superblock megabytes, as
 * (physical, length) pairs in out (at most max).  The caller holds
 * c->chunk_alloc_lock so no chunk appears in them meanwhile.  Returns
 * how many, or -ENOMEM.
 */
int chunk_unallocated_ranges(struct core *c, const struct dev *d, uint64_t (*out)[2], int max);
/* Device bytes not in any chunk (for statfs). */
uint64_t chunk_unallocated(struct core *c);
/* Visit every chunk (under the map's read lock; fn must not take it). */
int chunk_for_each(struct core *c, int (*fn)(const struct chunk *ch, void *arg), void *arg);

#endif
