/* SPDX-License-Identifier: MIT */
/*
 * subvol.h — subvolumes and snapshots.
 *
 * A subvolume is an fs tree of its own (tree id >= FIRST_SUBVOL_OBJECTID;
 * the default one is FS_TREE_OBJECTID) with its own root, so its own root
 * lock: the lock probes carry the tree id.  On disk (format.h):
 *   root tree  (id, ROOT_ITEM, 0)          root_item: root node, flags
 *                                          (ROOT_F_RDONLY, ROOT_F_DEAD),
 *                                          last_snapshot, drop_progress
 *              (parent, ROOT_REF, id)      root_ref: dirid, index, name
 *              (id, ROOT_BACKREF, parent)  the same
 *   parent fs tree: DIR_ITEM/DIR_INDEX in dirid with type DT_SUBVOL and
 *              ino = id; the parent directory counts it in its nlink like
 *              any subdirectory; there is no INODE_REF for it.
 * The subvolume's root directory is ROOT_DIR_INO of its tree.
 *
 * ## FUSE node ids
 *   nodeid = ino                      in the default subvolume (id 5)
 *   nodeid = (id << 48) | ino         in subvolume id (256 .. 65535)
 * (FUSE_ROOT_ID 1 is the default subvolume's ROOT_DIR_INO.)  st_ino is
 * the nodeid, so (st_dev, st_ino) stays unique across subvolumes.
 * Inode numbers stay below 2^48.
 *
 * ## Snapshots (Rodeh's lazy reference counting, as in btrfs)
 * A snapshot is made inside a commit (txn_commit_with: no handle is
 * open, so the source is a consistent tree): the source's root node is
 * copied and each child gains a reference (btree_snapshot_root).  Nothing
 * else is copied: O(1).  Later copy-on-write of a node with more than one
 * reference copies it for the writing tree only, giving the copy's
 * children one more reference and the node one less (btree.c); a block is
 * freed when its last reference goes.  The new subvolume is ROOT_F_DEAD
 * until the transaction that links its name clears the flag, so a crash
 * in between leaves nothing behind but work for the cleaner.
 *
 * ## Deletion
 * Unlinks the name and sets ROOT_F_DEAD in one transaction; the cleaner
 * thread then drops the tree in bounded batches (btree_drop_batch), one
 * small transaction each, recording its progress in the root item, so a
 * crash resumes where the last commit left it and commits never wait for
 * a whole tree.  The root item goes with the last node.
 */
#ifndef GLASSFS_SUBVOL_H
#define GLASSFS_SUBVOL_H

#include <stdbool.h>
#include <stdint.h>
#include "fs/format/keys.h"
#include "fs/items/inode.h"
#include "fs/format/ioctl.h"

#define SUBVOL_NODEID_SHIFT	48
#define SUBVOL_INO_MASK		((1ull << SUBVOL_NODEID_SHIFT) - 1)
#define SUBVOL_MAX_ID		0xffffull

static inline uint64_t subvol_nodeid(uint64_t subvol, uint64_t ino)
{
	return subvol == FS_TREE_OBJECTID ? ino : (subvol << SUBVOL_NODEID_SHIFT) | ino;
}
static inline uint64_t subvol_of_nodeid(uint64_t nodeid)
{
	uint64_t id = nodeid >> SUBVOL_NODEID_SHIFT;
	return id ? id : FS_TREE_OBJECTID;
}

/* The table of open fs trees, shared by every fsctx of one mount. */
int subvol_table_init(struct fsctx *deflt, const struct core_opts *o);
void subvol_table_destroy(struct fsctx *deflt);

/*
 * The fsctx of subvolume id (FS_TREE_OBJECTID: the default one), opened
 * on first use.  Never NULL: a subvolume that is gone (deleted, or never
 * existed) gets a context whose every inode is ENOENT.
 */
struct fsctx *subvol_fs(struct fsctx *any, uint64_t id);

/*
 * Is the DT_SUBVOL entry (dir -> id) of fs the subvolume's name (its
 * ROOT_REF)?  A snapshot copies its source's entries of nested
 * subvolumes without their ROOT_REFs: such stubs read as absent (lookup
 * ENOENT, not listed) and rmdir removes them, as btrfs's empty stubs.
 */
bool subvol_linked(struct fsctx *fs, uint64_t dir, uint64_t id);

/*
 * May fs write the data extent at disk_logical in place (a nocow write,
 * e.g. into a PREALLOC extent)?  Only if no snapshot can share it: it was
 * allocated after fs's tree was last snapshotted (or the tree never was).
 * Everything else must copy on write.
 */
bool subvol_extent_exclusive(struct fsctx *fs, uint64_t disk_logical);

/* Operations behind the ioctls; parent directory dir of pfs, name in it. */
int subvol_create(struct fsctx *pfs, uint64_t dir, const char *name,
		  const struct fsops_cred *cr, uint64_t *id);
int subvol_snapshot(struct fsctx *src, struct fsctx *pfs, uint64_t dir, const char *name,
		    bool rdonly, const struct fsops_cred *cr, uint64_t *id);
int subvol_delete(struct fsctx *pfs, uint64_t dir, const char *name,
		  const struct fsops_cred *cr, uint64_t *id);
int subvol_info(struct fsctx *fs, uint64_t ino, struct glassfs_ioc_subvol_info *out);
int subvol_list(struct fsctx *any, struct glassfs_ioc_subvol_list *io);

/* The path of directory dir of fs from the top of the volume ("" for the
 * top, else "/a/b"), for matching processes' working directories. */
int subvol_dir_path(struct fsctx *fs, uint64_t dir, char *out, size_t size);

/* Deleted subvolumes still being freed (tests, status). */
int subvol_cleaner_pending(struct core *c);

/* ---- the subvolume table in struct core (open, close, commit hook) ---- */
struct core;
struct root;
struct txn;
int subvol_core_open(struct core *c);		/* load subvolume roots, start the cleaner */
int subvol_cleaner_start(struct core *c);	/* after the commit thread */
void subvol_core_stop(struct core *c);		/* stop the cleaner (before the last commit) */
void subvol_core_free(struct core *c);
struct root *subvol_core_root(struct core *c, uint64_t id);
/* Tree roots by id: FS_TREE_OBJECTID is the default subvolume. NULL if absent. */
struct root *subvol_root(struct core *c, uint64_t tree_id);

/* ---- between subvol_root.c (the roots) and subvol.c (the table) ---- */
struct core_subvol;
struct core_subvols;
/* The entry of subvolume id, NULL if none (s->lock held). */
struct core_subvol *subvol_entry_find(struct core_subvols *s, uint64_t id);
/* A new entry of c->subvols (c->subvols.lock held); NULL on ENOMEM. */
struct core_subvol *subvol_entry_add(struct core *c, uint64_t id);
/* The root item flags of id (ROOT_F_*; ROOT_F_DEAD once gone); 0 below
 * FIRST_SUBVOL_OBJECTID.  Takes c->subvols.lock. */
uint64_t subvol_flags(struct core *c, uint64_t id);
/* Wake the cleaner: a subvolume was marked dead. */
void subvol_cleaner_kick(struct core *c);
int subvol_update_root_items(struct txn *t);	/* commit hook: changes made, or -errno */

#endif
