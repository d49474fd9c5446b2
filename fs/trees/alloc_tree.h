/* SPDX-License-Identifier: MIT */
/*
 * alloc_tree.h — the allocator's items (alloc_tree.c): block-group items
 * in the extent tree, the free-space tree.  fs/store/alloc.h keeps the
 * block groups in memory and says how the two agree.
 */
#ifndef GLASSFS_ALLOC_TREE_H
#define GLASSFS_ALLOC_TREE_H

#include <stdint.h>

struct core;
struct txn;

/* Load every block group's bitmap from the free-space tree at open. */
int alloc_load(struct core *c);
/* Commit: write dirty free-space segments / block group items.
 * Return how many items changed (0: nothing left), or -errno. */
int alloc_commit_fst(struct txn *t);
int alloc_commit_bg_items(struct txn *t);
/* A new chunk's block group item (its free-space items follow at commit). */
int alloc_insert_bg_items(struct txn *t, uint64_t start);
/* A split block group (alloc_split_bg, alloc.h): delete the old group's
 * block group item, free-space info and the bitmaps whose keys change. */
int alloc_split_items(struct txn *t, uint64_t start, uint64_t len, uint64_t at);

#endif
