/* SPDX-License-Identifier: MIT */
/*
 * items_format.h — on-disk format of the items of an fs tree.
 *
 * Every structure here is stored little endian and packed, as the data of
 * one B-tree item (btree.h).  The key of each item is given with its table.
 * Numbers of the item types are in keys.h.  The hosts glassfs runs on are
 * little endian (checked below), so the structs are used in place.
 *
 * Inode numbers: ROOT_DIR_INO (256) is the root directory, new inodes take
 * the next number above the largest objectid in the tree (never reused
 * within a mount; generation tells reuse apart across mounts).
 *
 * INODE_ITEM   key (ino, 1, 0)                         struct inode_item
 * ------------------------------------------------------------------------
 *   off size field        meaning
 *     0   8  generation   transid that created the inode (FUSE generation)
 *     8   8  transid      transid of the last change
 *    16   8  size         i_size in bytes
 *    24   8  nbytes       bytes of data blocks the file references
 *    32   8  rdev         device number for char/block nodes (makedev)
 *    40   4  nlink        link count (directories: 2 + subdirectories)
 *    44   4  uid
 *    48   4  gid
 *    52   4  mode         type and permission bits (S_IF* | 07777)
 *    56   8  flags        INODE_F_* (none defined yet; must be 0)
 *    64   8  dir_seq      directories: next DIR_INDEX sequence (starts at 2)
 *    72  12  atime        struct item_time: seconds (s64) + nanoseconds (u32)
 *    84  12  ctime
 *    96  12  mtime
 *   108  12  otime        creation time
 *   120      (end)
 *
 * INODE_REF    key (ino, 12, parent dir ino)           inode_ref entries
 * ------------------------------------------------------------------------
 *   A packed run of entries, one per name the inode has in that parent
 *   (several for hard links inside one directory):
 *     0   8  index        the DIR_INDEX sequence of this name in parent
 *     8   2  name_len
 *    10   n  name         (no NUL)
 *   The item is never larger than the largest item of a leaf
 *   (btree_max_item_size): about 230 names of 60 bytes at 16 KiB nodes.
 *   A name that does not fit goes to an INODE_EXTREF item; the first name
 *   of an inode in a directory always goes here, so a directory (one name)
 *   and any inode with few names have INODE_REFs only.
 *
 * INODE_EXTREF key (ino, 13, extref_hash(parent, name)) inode_extref entries
 * ------------------------------------------------------------------------
 *   Extended back references, btrfs's INODE_EXTREF: the names of ino that
 *   did not fit in the INODE_REF of their directory, each item holding the
 *   names whose (parent, name) share a hash (a packed run, as DIR_ITEM), so
 *   one inode takes any number of names in one directory: the link count
 *   (at most 65,000, as ext4; EMLINK past it) bounds them, not an item.
 *     0   8  parent       the directory holding the name
 *     8   8  index        the DIR_INDEX sequence of this name in parent
 *    16   2  name_len
 *    18   n  name         (no NUL)
 *   Written only when the INODE_REF (ino, parent) has no room for the
 *   name; a name in either counts once, found in the INODE_REF first.  A
 *   volume that holds one has SUPER_FEAT_EXTREF (format.h).
 *
 * DIR_ITEM     key (dir, 84, name_hash(name))          dir_entry entries
 * DIR_INDEX    key (dir, 96, seq)                      one dir_entry
 * ------------------------------------------------------------------------
 *   DIR_ITEM serves lookups: the key's offset is a 64-bit hash of the name,
 *   so a lookup is one B-tree search, never a scan.  Names whose hashes
 *   collide share the item: its data is a packed run of entries, and a
 *   lookup compares names inside that one item.  DIR_INDEX serves readdir:
 *   seq is taken from the directory's dir_seq at insertion, so readdir
 *   offsets stay stable while the directory changes (offset = seq + 1;
 *   offsets 1 and 2 are "." and "..").
 *     0   8  ino          target inode (DT_SUBVOL: the subvolume's tree id)
 *     8   8  index        seq of the DIR_INDEX (DIR_ITEM) / same seq (DIR_INDEX)
 *    16   1  type         DT_* of the target (dirent type), or DT_SUBVOL:
 *                         the root directory of another subvolume, named
 *                         by ROOT_REF/ROOT_BACKREF in the root tree, with
 *                         no INODE_REF (it lives in another tree)
 *    17   2  name_len     1..255
 *    19   n  name
 *
 * XATTR_ITEM   key (ino, 24, name_hash(name))          xattr_entry entries
 * ------------------------------------------------------------------------
 *   Packed run of entries (hash collisions share an item, as DIR_ITEM):
 *     0   2  name_len     full name incl. namespace ("user.foo")
 *     2   4  value_len
 *     6   n  name
 *   6+n   v  value        stored byte for byte (system.posix_acl_* too)
 *
 * ORPHAN_ITEM  key (ORPHAN_OBJECTID, 48, ino)          u64 ino (or empty)
 * ------------------------------------------------------------------------
 *   The data repeats the key's ino (8 bytes); readers accept an empty item.
 *   An inode with nlink 0 that is still open or known to the kernel.
 *   Removed with the inode at the last forget; orphans left by a crash are
 *   freed when the volume is next mounted.
 *
 * EXTENT_DATA  key (ino, 108, file offset)             struct file_extent
 * ------------------------------------------------------------------------
 *     0   8  generation   transid that wrote the item
 *     8   8  ram_bytes    inline: bytes of data following the header
 *    16   1  type         FE_INLINE, FE_REG or FE_PREALLOC
 *    17   8  disk_logical regular/prealloc: logical start of the data extent
 *    25   8  disk_len     its full length (the extent's refcount is per item)
 *    33   8  offset       where in the extent this item's bytes start
 *    41   8  num_bytes    bytes of file this item covers
 *    49      (end of a regular item; inline data starts at 17)
 *   Holes are the absence of items.  Regular and prealloc items are
 *   4 KiB-aligned in file offset, offset and num_bytes; bytes of the last
 *   block past i_size are zero on disk.  An inline item is the only
 *   EXTENT_DATA item of its file, at file offset 0, and holds exactly
 *   min(i_size, ram_bytes) bytes.  Each regular/prealloc item holds one
 *   reference on its data extent (data_ref); prealloc reads as zeros.
 */
#ifndef GLASSFS_ITEMS_FORMAT_H
#define GLASSFS_ITEMS_FORMAT_H

#include <stdint.h>
#include <stddef.h>

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "glassfs items are used in place and need a little-endian host"
#endif

struct item_time {
	int64_t sec;
	uint32_t nsec;
} __attribute__((packed));

struct inode_item {
	uint64_t generation;
	uint64_t transid;
	uint64_t size;
	uint64_t nbytes;
	uint64_t rdev;
	uint32_t nlink;
	uint32_t uid;
	uint32_t gid;
	uint32_t mode;
	uint64_t flags;
	uint64_t dir_seq;
	struct item_time atime;
	struct item_time ctime;
	struct item_time mtime;
	struct item_time otime;
} __attribute__((packed));
_Static_assert(sizeof(struct inode_item) == 120, "inode_item layout");

#define DIR_SEQ_FIRST 2

/* dir_entry.type of a subvolume's entry in its parent (a directory). */
#define DT_SUBVOL 0x84		/* offsets 1, 2 of readdir are "." and ".." */

struct inode_ref {
	uint64_t index;
	uint16_t name_len;
	char name[];
} __attribute__((packed));

struct inode_extref {
	uint64_t parent;
	uint64_t index;
	uint16_t name_len;
	char name[];
} __attribute__((packed));
_Static_assert(sizeof(struct inode_extref) == 18, "inode_extref layout");

struct dir_entry {
	uint64_t ino;
	uint64_t index;
	uint8_t type;
	uint16_t name_len;
	char name[];
} __attribute__((packed));
_Static_assert(sizeof(struct dir_entry) == 19, "dir_entry layout");

struct xattr_entry {
	uint16_t name_len;
	uint32_t value_len;
	char name[];		/* then the value */
} __attribute__((packed));

enum { FE_INLINE = 0, FE_REG = 1, FE_PREALLOC = 2 };

struct file_extent {
	uint64_t generation;
	uint64_t ram_bytes;
	uint8_t type;
	/* regular / prealloc only; inline data starts here */
	uint64_t disk_logical;
	uint64_t disk_len;
	uint64_t offset;
	uint64_t num_bytes;
} __attribute__((packed));
_Static_assert(sizeof(struct file_extent) == 49, "file_extent layout");
#define FE_INLINE_HDR offsetof(struct file_extent, disk_logical)	/* 17 */

/* FNV-1a 64 over len bytes, from h; the name hashes below start it at
 * FNV_OFFSET and end it with hash_mix.  Part of the on-disk format. */
#define FNV_OFFSET 0xcbf29ce484222325ULL
static inline uint64_t fnv1a(uint64_t h, const void *p, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		h ^= ((const uint8_t *)p)[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

static inline uint64_t hash_mix(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	return h;
}

/* Hash of a directory-entry or xattr name (FNV-1a 64 with a final mix).
 * Part of the on-disk format: never change it. */
static inline uint64_t name_hash(const char *name, size_t len)
{
	return hash_mix(fnv1a(FNV_OFFSET, name, len));
}

/* The INODE_EXTREF key offset of name in directory parent: FNV-1a 64
 * over the parent's 8 bytes (little endian) then the name, with the
 * final mix of name_hash.  Part of the on-disk format: never change it. */
static inline uint64_t extref_hash(uint64_t parent, const char *name, size_t len)
{
	uint8_t le[8];

	for (int i = 0; i < 8; i++)
		le[i] = (uint8_t)(parent >> (8 * i));
	return hash_mix(fnv1a(fnv1a(FNV_OFFSET, le, sizeof(le)), name, len));
}

/* The most names an inode has (its nlink; a directory's counts its
 * subdirectories): link(2) and mkdir(2) say EMLINK past it, as ext4's
 * EXT4_LINK_MAX. */
#define LINK_MAX_COUNT 65000

#endif
