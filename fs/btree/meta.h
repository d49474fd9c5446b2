/* SPDX-License-Identifier: MIT */
/*
 * meta.h — the seam between the B-tree (btree.c, node.c, cache.c) and the
 * rest of the storage core (allocator, chunks, devices, transactions).
 *
 * The B-tree side implements struct root's node handling, the node cache
 * and the cache_* functions; the core side implements meta_* and core_*
 * accessors.  Neither side reaches into the other's structs beyond what
 * is declared here.
 */
#ifndef GLASSFS_META_H
#define GLASSFS_META_H

#include <stdint.h>
#include <stdbool.h>
#include "fs/core/core.h"
#include "fs/format/keys.h"
#include "fs/core/txn_handle.h"
#include "fs/base/lock.h"
#include "fs/btree/btree_types.h"

struct node;
struct node_cache;


/* Set up r for tree id, rooted at (bytenr, level, generation) on disk. */
void btree_root_init(struct root *r, struct core *c, uint64_t id, uint64_t bytenr,
	       int level, uint64_t generation);
/* Create a tree with one empty leaf in transaction t. */
int btree_root_create_empty(struct txn *t, struct root *r);
/* Drop the cached root node reference (at close). */
void btree_root_release(struct root *r);

/* ---- the block ops: implemented above the B-tree, set at mount ---- */

/*
 * The B-tree allocates, frees and counts references of node blocks only
 * through these, so it never names the layer that keeps the extent tree
 * (fs/trees/extent.c: extent_meta_ops, set by mount_open/mount_format; the
 * unit tests' in-memory core: its own).
 *
 * alloc: a new node block for tree `owner` at `level` in transaction t
 * (the allocator prefers metadata chunks).  The extent reference is
 * recorded.  -ENOSPC.
 *
 * free: the tree stops referencing the node at bytenr in transaction t.
 * If the node was allocated in t (never committed) its block is reusable
 * at once; otherwise it stays pinned until t commits.
 *
 * shared_drop (snapshots): if the node at bytenr has more than one
 * reference (committed refcount plus the running transaction's pending
 * changes), drop one and return 1: the caller must not free it.  Returns
 * 0 (nothing queued: the caller frees it with free) when it has one.
 * Atomic against other callers.
 * ref: queue a reference change on a node; leaf_item_ref: on what a leaf
 * item references (a file-extent item's data extent).
 */
struct meta_ops {
	int (*alloc)(struct txn *t, uint64_t owner, int level, uint64_t *bytenr);
	void (*free)(struct txn *t, uint64_t owner, int level, uint64_t bytenr);
	int (*shared_drop)(struct txn *t, uint64_t owner, int level, uint64_t bytenr);
	int (*ref)(struct txn *t, uint64_t owner, int level, uint64_t bytenr, int delta);
	int (*leaf_item_ref)(struct txn *t, const struct key *k, const void *data,
			     uint32_t size, int delta);
};
/* The ops of c's trees (fs/core: set at open, fixed while open). */
const struct meta_ops *core_meta_ops(const struct core *c);

static inline int meta_alloc(struct txn *t, uint64_t owner, int level, uint64_t *bytenr)
{
	return core_meta_ops(txn_core(t))->alloc(t, owner, level, bytenr);
}
static inline void meta_free(struct txn *t, uint64_t owner, int level, uint64_t bytenr)
{
	core_meta_ops(txn_core(t))->free(t, owner, level, bytenr);
}
static inline int meta_shared_drop(struct txn *t, uint64_t owner, int level, uint64_t bytenr)
{
	return core_meta_ops(txn_core(t))->shared_drop(t, owner, level, bytenr);
}
static inline int meta_ref(struct txn *t, uint64_t owner, int level, uint64_t bytenr,
			   int delta)
{
	return core_meta_ops(txn_core(t))->ref(t, owner, level, bytenr, delta);
}
static inline int meta_leaf_item_ref(struct txn *t, const struct key *k, const void *data,
				     uint32_t size, int delta)
{
	return core_meta_ops(txn_core(t))->leaf_item_ref(t, k, data, size, delta);
}

/* ---- implemented below the B-tree (fs/store/meta_io.c, fs/core) ---- */

#include "fs/store/meta_io.h"


struct node_cache *core_cache(struct core *c);
void core_lock_scheme(const struct core *c, enum glock_type *type, unsigned *groups);
/* cowlock=path (core_opts.cow_lock_path in core.h)? */
bool core_cow_lock_path(const struct core *c);
uint64_t core_generation(const struct core *c);	/* last committed transid */

/* ---- implemented by the B-tree side (cache.c, node.c) ---- */

struct node_cache *cache_create(struct core *c, uint32_t nodesize, uint64_t budget_bytes);
void cache_destroy(struct node_cache *nc);
/*
 * Commit: finalize (checksum) and write every node dirtied in transid,
 * then mark them clean.  Counts nodes and bytes written.
 */
int cache_writeback(struct node_cache *nc, uint64_t transid,
		    uint64_t *nodes, uint64_t *bytes);
/* Bytes of dirty nodes (for the dirty-threshold commit trigger). */
uint64_t cache_dirty_bytes(struct node_cache *nc);
/* Forget a node block (freed and reused), so a stale copy is never served. */
void cache_forget(struct node_cache *nc, uint64_t bytenr);

/*
 * Offline checks (fsck) and scrub: visit every node of r top-down, each
 * read and verified (checksum, bytenr, owner, key order, item bounds).
 * visit() returns 0 to go on, <0 to stop.  Nodes that fail verification
 * are reported through bad() and their subtree skipped.  Item-level checks
 * use btree_search()/btree_next() on the tree.
 */
struct node_info {
	uint64_t bytenr, generation, owner;
	int level;
	uint32_t nritems;
	const void *block;	/* the node's bytes (node.h), valid during visit() */
};
int btree_walk(struct root *r,
	       int (*visit)(const struct node_info *ni, void *arg),
	       void (*bad)(uint64_t bytenr, int level, int err, void *arg),
	       void *arg);
/*
 * Shared trees (snapshots): visit() returning 1 skips the node's subtree
 * (already walked through another tree).  btree_walk_dropped: a deleted
 * tree being freed (btree_drop_batch): subtrees whose keys all lie below
 * dropped are gone and not visited.
 */
int btree_walk_dropped(struct root *r, const struct key *dropped,
		       int (*visit)(const struct node_info *ni, void *arg),
		       void (*bad)(uint64_t bytenr, int level, int err, void *arg),
		       void *arg);

#endif
