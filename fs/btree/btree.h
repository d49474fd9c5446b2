/* SPDX-License-Identifier: MIT */
/*
 * btree.h — the one copy-on-write B-tree, used by every tree.
 *
 * Items live in leaves, sorted by key (keys.h).  Interior nodes hold
 * (key, child block, generation).  Every node carries a checksum and the
 * generation that wrote it (format.h).  A node is copied at most once per
 * transaction: the first modification in transaction T copies it to a new
 * location and frees the old one when T commits.
 *
 * Locking: searches couple locks from the root down (lock.h), releasing a
 * parent once the child is locked and the parent cannot change (no split or
 * merge can propagate to it).  locking=groups:N splits each node's lock
 * into N groups by slot range (interior nodes: regions with key fences,
 * btree.c); splits, merges and root changes take all groups of the node
 * changing shape, a child split only the parent's groups from the child's
 * region up.  Callers never lock nodes themselves.
 *
 * Usage rules that follow from the locking: a thread holds at most one
 * path per tree at a time and calls no other btree_* function on that tree
 * (nor one that could reach it, e.g. through the allocator) while it holds
 * one — release the path first.  A path from a cow search may change
 * items in place only at p->slots[0]; btree_del_items/btree_resize_item
 * take what else they need themselves (they may search again, so p then
 * points at the same logical position in a possibly different leaf).
 */
#ifndef GLASSFS_BTREE_H
#define GLASSFS_BTREE_H

#include <stdint.h>
#include "fs/format/keys.h"
#include "fs/core/core.h"
#include "fs/core/txn_handle.h"
#include "fs/btree/btree_types.h"

#define BTREE_MAX_LEVEL 8

struct node;

/*
 * A path from the root to a leaf slot.  Owned by one thread; holds
 * references and locks on the nodes it names until btree_path_release().
 */
struct path {
	struct node *nodes[BTREE_MAX_LEVEL];
	int slots[BTREE_MAX_LEVEL];
	uint8_t lock_held[BTREE_MAX_LEVEL];	/* 0 none, 1 read, 2 write; btree.c only */
	uint8_t lock_group[BTREE_MAX_LEVEL];	/* group held (groups scheme); btree.c only */
	uint8_t all_groups[BTREE_MAX_LEVEL];	/* every group held; btree.c only */
	uint8_t tail_groups[BTREE_MAX_LEVEL];	/* groups lock_group..N-1 held (an
						 * interior node's shift); btree.c only */
	struct root *root;
	int cow;				/* searched for modification */
	/* btree.c only: the root's lock while held (0 none, 1 read, 2 write),
	 * and the leaf's key range as the last search saw it (the separators
	 * of the nearest ancestors), used by btree_next/prev to cross leaves
	 * without keeping ancestors locked. */
	uint8_t root_lock;
	uint8_t has_lo, has_hi;
	struct key lo, hi;
};

void btree_path_init(struct path *p);
void btree_path_release(struct path *p);

/*
 * Search root r for key k.
 *   t       transaction handle; required when cow != 0, else may be NULL.
 *   ins_len > 0: the caller will insert an item of ins_len data bytes, so
 *           full nodes are split on the way down (pass 1 for an item of
 *           0 bytes: the header needs room too); when the key exists, it
 *           will grow to ins_len bytes; < 0: the caller will
 *           delete, so underfull nodes are merged on the way down; 0: no
 *           change of the tree's shape.
 *   cow     nonzero: every node on the path is copied-on-write (once per
 *           transaction) and write-locked, so items may be changed in
 *           place through btree_item_ptr().
 * Returns 0 when found (p->slots[0] at the item), 1 when not found
 * (p->slots[0] at the slot where k would be inserted, possibly == nritems),
 * or -errno (-EIO for a node that fails its checksum or validation).
 */
int btree_search(struct txn *t, struct root *r, const struct key *k,
		 struct path *p, int ins_len, int cow);

/* Insert an item; -EEXIST if the key is present; -ENOSPC. */
int btree_insert(struct txn *t, struct root *r, const struct key *k,
		 const void *data, uint32_t size);
/* Insert two items of a new object (same objectid, k1 < k2, no items of
 * that objectid yet) in one descent; -EEXIST, -EINVAL if the object
 * already has items, -ENOSPC. */
int btree_insert_pair(struct txn *t, struct root *r,
		      const struct key *k1, const void *d1, uint32_t s1,
		      const struct key *k2, const void *d2, uint32_t s2);
/* Insert k2 (absent, else -EEXIST) and, in the same descent, k1 < k2 when
 * it goes right before k2 in k2's leaf (nothing between them, k1 absent):
 * 0.  1: only k2 went in (k1 would go in another leaf, or is present or
 * not beside it): the caller writes k1 itself.  -ENOSPC, -errno. */
int btree_insert_two(struct txn *t, struct root *r,
		     const struct key *k1, const void *d1, uint32_t s1,
		     const struct key *k2, const void *d2, uint32_t s2);
/* Insert an item of size bytes (uninitialised) and leave p at it. */
int btree_insert_empty(struct txn *t, struct root *r, struct path *p,
		       const struct key *k, uint32_t size);
/* Delete nr items starting at p->slots[0] (p from a cow search). */
int btree_del_items(struct txn *t, struct root *r, struct path *p, int nr);
/* Resize the item at p->slots[0]: grow (new bytes at the end, zeroed) or
 * shrink (keeps the front).  p must come from a cow search whose ins_len
 * covered the growth. */
int btree_resize_item(struct txn *t, struct root *r, struct path *p,
		      uint32_t new_size);

/* Convenience: copy the item at k into buf (up to bufsize); returns the
 * item's size, -ENOENT, or -errno. */
int btree_lookup(struct root *r, const struct key *k, void *buf, uint32_t bufsize);
/* Convenience: replace the item at k (any size), or insert it. */
int btree_update(struct txn *t, struct root *r, const struct key *k,
		 const void *data, uint32_t size);
/* Convenience: delete the item at k; -ENOENT if absent. */
int btree_delete(struct txn *t, struct root *r, const struct key *k);

/* Leaf access at the current path (level 0). */
uint32_t btree_nritems(const struct path *p);
/* The transaction that wrote the current leaf: one older than the running
 * transaction holds exactly what the last commit's leaf held (a change
 * copies it first). */
uint64_t btree_leaf_generation(const struct path *p);
void btree_item_key(const struct path *p, int slot, struct key *k);
void *btree_item_ptr(const struct path *p, int slot, uint32_t *size);

/*
 * Step to the next / previous item in key order, crossing leaves (may
 * release and re-search internally; keys stay ordered).  0 moved, 1 no
 * more items, -errno.  Read-only paths only (cow == 0).
 */
int btree_next(struct path *p);
int btree_prev(struct path *p);
/*
 * Read-only search positioned at the first item with key >= K (crossing to
 * the next leaf when K sorts after the last item of the leaf it lands in):
 * 0 positioned, 1 no such item, -errno.  The start of every range walk.
 */
int btree_search_ge(struct root *r, const struct key *k, struct path *p);

/* Largest item a leaf can hold (for inline data and xattr limits). */
uint32_t btree_max_item_size(const struct root *r);

/*
 * Snapshots (subvol.c).  btree_snapshot_root: dst (btree_root_init'ed for a new
 * tree id) gets a copy of src's root node; every child of it (or, for a
 * leaf root, every data extent of its file-extent items) gains a
 * reference, so both trees share everything below their roots.  Sets both
 * trees' last_snapshot.  No handle may change src meanwhile: the caller
 * runs inside a commit (txn_commit_with).
 */
int btree_snapshot_root(struct txn *t, struct root *src, struct root *dst);

/*
 * Dropping a deleted tree in bounded batches.  progress: every leaf key
 * below it has been dropped; all: nothing is left.  Each batch drops at
 * most budget leaves or shared subtrees (a shared subtree loses one
 * reference and is not entered), frees the nodes it empties and advances
 * progress; the caller stores progress with the root item, so a crash
 * resumes from the last commit.  1 when the tree is gone, 0 when more is
 * left, -errno.
 */
int btree_drop_batch(struct txn *t, struct root *r, struct btree_drop *d, int budget);

/* Tree id of a root (its objectid in the root tree). */
uint64_t btree_root_id(const struct root *r);

#ifdef BTREE_TEST_HOOKS
/*
 * Tests only: fs/btree/btree.mk compiles a copy of btree.c with
 * BTREE_TEST_HOOKS for tests/unit/btree_mem; the engine has none.  Each
 * hook, when set, is called by the searching thread at one moment, so a
 * test can hold that thread there while others run.
 *   extend: a search holds one group of a node for writing and every
 *           group of the child about to split below it, and is about to
 *           take the node's groups above its own to insert the child's
 *           new pointer (tail_extend, btree.c).
 */
struct btree_test_hooks {
	void (*extend)(void);
};
extern struct btree_test_hooks btree_test_hooks;
#endif

#endif
