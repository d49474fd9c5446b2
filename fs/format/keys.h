/* SPDX-License-Identifier: MIT */
/*
 * keys.h — the key space shared by every glassfs B-tree.
 *
 * A key is (objectid, type, offset), compared in that order, as in Btrfs.
 * Numbers follow Btrfs where the concept is the same, so that anyone who
 * knows btrfs-progs' dump-tree can read ours.  The on-disk encoding of a
 * key inside a node is struct disk_key in format.h (little endian, packed).
 */
#ifndef GLASSFS_KEYS_H
#define GLASSFS_KEYS_H

#include <stdint.h>

struct key {
	uint64_t objectid;
	uint8_t  type;
	uint64_t offset;
};

/* Compare two numbers of a key: -1, 0, 1. */
static inline int key_cmp_u64(uint64_t a, uint64_t b)
{
	return (a > b) - (a < b);
}

/* Compare two keys: <0, 0, >0. */
static inline int key_cmp(const struct key *a, const struct key *b)
{
	int c = key_cmp_u64(a->objectid, b->objectid);

	if (!c)
		c = key_cmp_u64(a->type, b->type);
	return c ? c : key_cmp_u64(a->offset, b->offset);
}

/* --- item types of the fs trees (owned by the items layer) ------------ */
#define KEY_INODE_ITEM		1	/* (ino, 1, 0): struct inode_item */
#define KEY_INODE_REF		12	/* (ino, 12, parent): names of ino in parent */
#define KEY_INODE_EXTREF	13	/* (ino, 13, extref_hash(parent, name)): names
					 * past a full INODE_REF (SUPER_FEAT_EXTREF) */
#define KEY_XATTR_ITEM		24	/* (ino, 24, hash(name)): xattrs */
#define KEY_ORPHAN_ITEM		48	/* (ORPHAN_OBJECTID, 48, ino) */
#define KEY_DIR_ITEM		84	/* (dir, 84, hash(name)): lookup by name */
#define KEY_DIR_INDEX		96	/* (dir, 96, seq): readdir order */
#define KEY_EXTENT_DATA		108	/* (ino, 108, file offset) */

/* --- item types of the core trees (owned by the storage core) ---------- */
#define KEY_EXTENT_CSUM		128	/* csum tree: (CSUM_OBJECTID, 128, logical) */
#define KEY_ROOT_ITEM		132	/* root tree: (tree id, 132, 0) */
#define KEY_ROOT_REF		156	/* root tree: (parent tree, 156, child) */
#define KEY_ROOT_BACKREF	144	/* root tree: (child tree, 144, parent) */
#define KEY_EXTENT_ITEM		168	/* extent tree: (logical, 168, length) */
#define KEY_METADATA_ITEM	169	/* extent tree: (logical, 169, level) */
#define KEY_BLOCK_GROUP_ITEM	192	/* (logical, 192, length) */
#define KEY_FREE_SPACE_INFO	198	/* free-space tree: (bg start, 198, bg len) */
#define KEY_FREE_SPACE_EXTENT	199	/* free-space tree: (start, 199, length) */
#define KEY_DEV_EXTENT		204	/* device tree: (devid, 204, physical) */
#define KEY_DEV_ITEM		216	/* chunk tree: (DEV_ITEMS_OBJECTID, 216, devid) */
#define KEY_CHUNK_ITEM		228	/* chunk tree: (FIRST_CHUNK, 228, logical) */

/* --- well-known object and tree ids ----------------------------------- */
#define ROOT_TREE_OBJECTID	1ULL
#define EXTENT_TREE_OBJECTID	2ULL
#define CHUNK_TREE_OBJECTID	3ULL
#define DEV_TREE_OBJECTID	4ULL
#define FS_TREE_OBJECTID	5ULL	/* the default subvolume */
#define CSUM_TREE_OBJECTID	7ULL
#define FREE_SPACE_TREE_OBJECTID 10ULL
#define LOG_TREE_OBJECTID	11ULL	/* fsync log (issue: fast fsync) */
#define FIRST_SUBVOL_OBJECTID	256ULL	/* subvolume tree ids start here */
#define ORPHAN_OBJECTID		(-5ULL)
#define CSUM_OBJECTID		(-10ULL)
#define DEV_ITEMS_OBJECTID	1ULL
#define FIRST_CHUNK_OBJECTID	256ULL

#define ROOT_DIR_INO		256ULL	/* root directory of every fs tree */
#define FIRST_FREE_INO		257ULL

#endif
