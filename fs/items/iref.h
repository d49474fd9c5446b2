/* SPDX-License-Identifier: MIT */
/*
 * iref.h — an inode's back references: each name the inode has, with its
 * directory and DIR_INDEX sequence, in the INODE_REF item (ino, parent)
 * and, once that item is full, in INODE_EXTREF items (ino,
 * extref_hash(parent, name)), as kernel btrfs does (items_format.h).
 *
 * Why btrfs's design and not one more INODE_REF per directory (say keyed
 * (ino, parent) with a spill counter): the extref's key comes from the
 * name, so adding, finding or removing one name reads one item of at most
 * a few names, however many names the inode has; a chain of full
 * INODE_REF items would be walked name by name.  Plain refs stay first,
 * so an inode with few names (every directory: one) costs what it did,
 * and volumes that never fill one need no new format bit.
 *
 * The functions take a tree and a transaction, not an fsctx: fsck's
 * repairs (one raw transaction over the tree) share them with link and
 * unlink.  Callers hold the inode's lock, or own the tree (fsck).
 */
#ifndef GLASSFS_IREF_H
#define GLASSFS_IREF_H

#include <stddef.h>
#include <stdint.h>

struct root;
struct txn;
struct core;
struct super_block;

/* One entry of a run of back references: an INODE_REF's (parent 0: the
 * item's key names it) or an INODE_EXTREF's; size: its bytes in the run. */
struct iref_ent {
	uint64_t parent, index;
	const char *name;
	uint16_t len;
	uint32_t size;
};

/* The entry at off of a run b of n bytes (INODE_EXTREF when ext): false
 * past the run's end or for an entry that overruns it.  Names of any
 * length, also 0: fsck holds them to 1..255. */
bool iref_entry(const uint8_t *b, uint32_t n, uint32_t off, bool ext, struct iref_ent *e);

/*
 * Can ino take a name of len bytes in parent?  0, or -EMLINK when neither
 * the INODE_REF (ino, parent) nor the INODE_EXTREF of (parent, name) has
 * room (the second only with names that share a 64-bit hash), or -errno.
 * gone: a name of ino in parent that the same operation removes first (a
 * rename within one directory), or NULL.  Checked before any change.
 */
int iref_room(struct root *r, uint64_t ino, uint64_t parent, const char *name, size_t len,
	      const char *gone, size_t gone_len);

/* Add (parent, index, name) to ino's back references: in the INODE_REF
 * when it has room, else in an INODE_EXTREF (turning SUPER_FEAT_EXTREF
 * on for the next commit).  0, -EMLINK (iref_room said no), -errno. */
int iref_add(struct txn *t, struct root *r, uint64_t ino, uint64_t parent, const char *name,
	     size_t len, uint64_t index);

/* Remove name in parent from ino's back references (INODE_REF first, then
 * its INODE_EXTREF; an emptied item goes).  0 (and *index, when given),
 * -ENOENT when ino has no such name, -errno. */
int iref_del(struct txn *t, struct root *r, uint64_t ino, uint64_t parent, const char *name,
	     size_t len, uint64_t *index);

/* Does ino have name in parent?  0 and its index, -ENOENT, -errno. */
int iref_find(struct root *r, uint64_t ino, uint64_t parent, const char *name, size_t len,
	      uint64_t *index);

/*
 * Remove the extended reference of (parent, index) from INODE_EXTREF item
 * k (fsck: a back reference no entry names).  0, -ENOENT, -errno.
 */
int iref_ext_del_index(struct txn *t, struct root *r, uint64_t ino, uint64_t hash,
		       uint64_t parent, uint64_t index);

/* SUPER_FEAT_EXTREF on at the next commit of c (iref_add, when it writes
 * an extended ref; fsck, for a volume that holds sound ones without it). */
void iref_feature_extref(struct core *c);

/* Commit (the superblock hook, fs/ops/mount.c): sb takes the feature bits
 * extended refs written since the mount need. */
void iref_commit_super(struct core *c, struct super_block *sb);

#endif
