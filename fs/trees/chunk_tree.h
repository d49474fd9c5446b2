/* SPDX-License-Identifier: MIT */
/*
 * chunk_tree.h — the chunk map's items (chunk_tree.c): chunk items and
 * device extents.  fs/store/chunk.h has the map in memory and the
 * contracts of relocation and split, whose item halves are here.
 */
#ifndef GLASSFS_CHUNK_TREE_H
#define GLASSFS_CHUNK_TREE_H

#include <stdint.h>

struct core;
struct txn;
struct chunk;
struct key;

/* Load the chunk map's chunks from the chunk tree (open). */
int chunk_load_tree(struct core *c);
/*
 * Visit the chunk tree's items of (objectid, type) in key order (chunk
 * items, device items): fn returns 0 to go on, > 0 to stop, < 0 an error
 * (returned).  0 or -errno.
 */
struct key;
int chunk_tree_items(struct core *c, uint64_t objectid, uint8_t type,
		     int (*fn)(struct core *c, const struct key *k, const void *item,
			       uint32_t size, void *arg), void *arg);

/*
 * Create a chunk of block-group type `type` (BG_DATA / BG_METADATA /
 * BG_SYSTEM): device space, chunk map entry and block group in memory;
 * with t != NULL also its chunk item, dev extent, block group item and
 * free-space info.  -ENOSPC when no device has room.
 */
int chunk_create(struct core *c, struct txn *t, uint64_t type, uint64_t *logical);
/* Insert the items of an in-memory chunk (mkfs after the trees exist). */
int chunk_insert_items(struct txn *t, const struct chunk *ch);

/* Relocation's switch and split (fs/store/chunk.h says what they do). */
uint64_t chunk_split_point(struct core *c, uint64_t logical, uint64_t upto, uint64_t below,
			   uint64_t unit);
int chunk_split(struct txn *t, uint64_t logical, uint64_t at);
int chunk_reloc_switch(struct txn *t, uint64_t logical);

#endif
