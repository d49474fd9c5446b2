/* SPDX-License-Identifier: MIT */
/*
 * btree_types.h — the B-tree's in-memory types that other structs embed:
 * a tree root, a tree root with its last committed root item (the core's
 * and the subvolumes' tables), a drop's progress.  btree.h and meta.h
 * have the functions.
 */
#ifndef GLASSFS_BTREE_TYPES_H
#define GLASSFS_BTREE_TYPES_H

#include <stdbool.h>
#include <stdint.h>
#include "fs/base/lock.h"
#include "fs/format/keys.h"

struct core;
struct node;

/*
 * An in-memory tree root.  One per tree (root tree, extent tree, chunk
 * tree, device tree, csum tree, free-space tree, each fs tree).
 * Lock order: see lock.h; `lock` is class GLOCK_CLASS_ROOT and guards the
 * swap of node/bytenr/level (a new root after COW, a split or a merge of
 * the root).  The root node's own lock is taken while holding `lock`.
 */
struct root {
	uint64_t id;		/* tree id (keys.h); fixed */
	struct core *core;	/* fixed */
	struct glock lock;	/* GLOCK_CLASS_ROOT; guards the fields below */
	struct node *node;	/* root node in the cache, referenced; NULL until loaded */
	uint64_t bytenr;	/* logical address of the root node */
	int level;		/* its level (0: a leaf) */
	uint64_t generation;	/* transid that wrote it */
	uint64_t dirty_trans;	/* transid in which bytenr/level changed, else 0 */
	uint64_t last_snapshot;	/* transid of the last snapshot of (or from) this
				 * tree: older nodes may be shared (btree.c) */
	void *priv;		/* for the layer that owns the tree's items */
};

/* A tree root plus what the last commit recorded about it. */
struct core_root {
	struct root r;
	bool present;
	uint64_t item_bytenr;	/* root item (or superblock) as last written */
	int item_level;
	uint64_t item_last_snapshot;	/* r.last_snapshot as last written */
};

/* A drop's progress (btree_drop_batch, btree.h). */
struct btree_drop {
	struct key progress;
	int all;
};

#endif
