/* SPDX-License-Identifier: MIT */
/*
 * fsck.h — the seams of fsck.glassfs: its core checks (fs/cmd/fsck.c:
 * checksums, tree invariants, extent reference counts, free space vs
 * allocations), the items layer's checks (fs/cmd/fsck_items.c: directory
 * index vs entries, link counts, inode sizes vs extents) and the repairs
 * (fs/cmd/fsck_repair.c).
 *
 * Repair is two steps per pass: the checks, on a read-only open, report
 * each error (fsck_error) and, where they know a repair, queue it
 * (fsck_fix); then fsck_repair_apply opens the volume read-write and makes
 * every queued repair in one transaction, committed once, so a crash
 * leaves the last commit before the pass or the repaired one.  fsck.c
 * checks again after each pass (a repair can uncover the next error: an
 * entry removed leaves its directory's size wrong) until the volume is
 * clean, nothing more can be repaired, or FSCK_MAX_PASSES ran.  A pass
 * that leaves more errors than it found is undone (fsck.c, supers_restore).
 */
#ifndef GLASSFS_FSCK_H
#define GLASSFS_FSCK_H

#include <stdbool.h>
#include <stdint.h>
#include "fs/base/htable.h"
#include "fs/btree/meta.h"
#include "fs/format/keys.h"

struct fsck;
struct core;

#define FSCK_MAX_PASSES 4

/*
 * fsck's maps (fsck.c: nodes, references, levels; fsck_items.c: inodes):
 * a u64 key -> an entry that starts with its struct hnode (the key), on
 * the engine's hash table.  Entries are zeroed at creation and come from
 * 64 KiB blocks the map frees all at once, so a key costs no malloc of
 * its own.  Single-threaded: no lock.  A zeroed struct is an empty map.
 */
struct fsck_map {
	struct htable t;
	void *block;		/* the newest block; each starts with a pointer
				 * to the one before */
	size_t used;		/* bytes of block handed out */
};

/* The entry of key, or NULL. */
void *fsck_map_find(const struct fsck_map *m, uint64_t key);
/* The entry of key, made (esize bytes, at most 4 KiB, zeroed) when there
 * is none; NULL when memory runs out.  Every entry of a map has one esize. */
void *fsck_map_get(struct fsck_map *m, uint64_t key, size_t esize);
/* Frees every entry and the table; the map is empty again. */
void fsck_map_free(struct fsck_map *m);

/* Room for one more element in the array *v of *n (capacity *cap): false
 * when memory runs out (f then ends as an operational error, exit 8). */
bool fsck_vec_room(struct fsck *f, void **v, size_t n, size_t *cap, size_t elem);

/* Report one error (printed with its location, counted). */
void fsck_error(struct fsck *f, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* The items layer found one reference to the data extent that starts at
 * logical (extent_len: the whole extent's length); fsck.c compares the
 * totals with the extent tree's reference counts. */
void fsck_data_ref(struct fsck *f, uint64_t logical, uint64_t extent_len);

/*
 * Every item of tree r from key `from` on, in key order, to fn, until fn
 * returns non-zero: 0 at the end of the tree or when fn returned > 0, or
 * -errno (the walk's, or fn's).  The one item walker of fsck's checks.
 */
int fsck_walk(struct root *r, const struct key *from,
	      int (*fn)(void *arg, const struct key *k, const void *d, uint32_t size), void *arg);

/* Implemented by the items layer: check one fs tree.  0, or -errno for an
 * operational error (not for inconsistencies, which go to fsck_error). */
int fsck_items_check(struct fsck *f, struct root *fsroot);

/*
 * One repair, queued by a check for the error it just reported.  tree is
 * the tree id the keys are in (fs trees: FS_TREE_OBJECTID or a subvolume).
 * "safe" repairs only make bookkeeping agree with what the volume holds
 * and change no name or content a user sees: -p (preen) makes those
 * only; the others need -y.
 */
enum fsck_fix_kind {
	FIX_INODE_NLINK,	/* inode a: nlink = v */
	FIX_INODE_SIZE,		/* dir a: size = v */
	FIX_INODE_NBYTES,	/* inode a: nbytes = v */
	FIX_DEL_ITEM,		/* delete item k (orphan item, dangling DIR_INDEX) */
	FIX_DEL_OBJECT,		/* delete every item of object a (no INODE_ITEM); -y */
	FIX_DEL_DENTRY,		/* remove the entry (index v) of DIR_ITEM k; -y */
	FIX_ADD_INDEX,		/* DIR_ITEM k's entry of index v has no DIR_INDEX */
	FIX_ADD_DENTRY,		/* DIR_INDEX k has no DIR_ITEM entry */
	FIX_ADD_REF,		/* inode a has no back reference for DIR_INDEX k */
	FIX_DEL_REF,		/* inode a's back reference (INODE_REF k, index v, its
				 * name's name_hash w, 0: any; or INODE_EXTREF k,
				 * parent b, index v) names nothing */
	FIX_LOST_FOUND,		/* inode a is named nowhere: into /lost+found (made,
				 * if missing, as inode w: free in the tree); -y */
	FIX_META_REFS,		/* node a (level in k.offset): refs = v (0: delete item) */
	FIX_DATA_REFS,		/* data extent a+b: refs v (item holds w; no item: w = 0) */
	FIX_USED,		/* free-space tree rebuild: a+b is in use */
	FIX_CSUM,		/* data a+b has no checksums: compute from agreeing copies; -y */
	FIX_SUPER,		/* a superblock copy is damaged or stale: the pass's
				 * commit rewrites every copy from the good one */
	FIX_DENTRY_TYPE,	/* the entry (index v) of DIR_ITEM/DIR_INDEX k names
				 * inode a: its type = w (the inode's mode) */
	FIX_INDEX_CONFLICT,	/* DIR_INDEX k and the entry of the same index in
				 * DIR_ITEM (k.objectid, hash b) disagree: the side
				 * the inode's back reference confirms is kept, the
				 * other rewritten from it; -y */
	FIX_DEL_BAD_ITEM,	/* item k is malformed or of an unknown type: removed
				 * (the checks rebuild what derives from it); -y */
	FIX_COPY_ITEM,		/* item k of tree `tree` is missing its twin: a copy
				 * of its bytes at (a, w, v) */
	FIX_REFILE,		/* DIR_ITEM or XATTR_ITEM k holds names that hash to
				 * another slot: each moved to its own */
	FIX_EXTREF_FEATURE,	/* the volume holds sound INODE_EXTREF items but its
				 * superblock lacks SUPER_FEAT_EXTREF: the pass's
				 * commit sets it */
};

struct fsck_fix {
	enum fsck_fix_kind kind;
	uint64_t tree;
	uint64_t a, b, v, w;
	struct key k;
};

/* Queue a repair for the error just reported (ignored when only checking). */
void fsck_fix(struct fsck *f, const struct fsck_fix *x);
/* Errors reported so far; n more of them are repaired by a repair already
 * queued (one lost+found move repairs an inode's link count, back
 * references and orphan state). */
uint64_t fsck_errors(const struct fsck *f);
void fsck_covered(struct fsck *f, uint64_t n);
/* Whether a repair kind is safe for -p. */
bool fsck_fix_safe(enum fsck_fix_kind kind);

/*
 * Make the queued repairs in one transaction on c (opened read-write),
 * then commit.  Returns how many repairs were
 * made (>= 0), or -errno (the transaction is then aborted: nothing of the
 * pass reaches the disk).  Each repair that turns out impossible on the
 * volume as found says why on stdout and is skipped.
 */
int fsck_repair_apply(struct core *c, const struct fsck_fix *v, size_t n);

#endif
