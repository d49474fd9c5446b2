/* SPDX-License-Identifier: MIT */
/*
 * format.h — the on-disk format of the superblock and of the storage
 * core's items (chunk, device, block group, root, extent, free-space and
 * checksum items).  B-tree node layout lives in fs/btree/node.h; the items of fs
 * trees (inodes, directories, file extents) in fs/format/items_format.h.
 *
 * Everything on disk is little endian and packed; the structs below are
 * the byte layout, used only on little-endian hosts (static assert below).
 * Sizes are in bytes, offsets from the start of the struct.
 *
 * ## Address spaces
 *
 * Trees and data live in one *logical* address space.  Chunks map logical
 * ranges to (device, physical offset) stripes.  Physical offsets are byte
 * offsets on one device.  Logical address 0 is never used ("no block").
 *
 * ## Devices
 *
 * Each device starts with 1 MiB that chunks never use.  The superblock is
 * a 4 KiB block at these physical offsets, each written only when it ends
 * inside the device (mirrors guard against a torn or damaged primary):
 *
 *   | copy    | physical offset | chunks avoid            |
 *   |---------|-----------------|-------------------------|
 *   | primary | 64 KiB          | [0, 1 MiB)              |
 *   | mirror1 | 64 MiB          | [64 MiB, 65 MiB)        |
 *   | mirror2 | 256 GiB         | [256 GiB, 256 GiB+1 MiB)|
 *
 * Every copy on every device holds the same fields except `bytenr` (where
 * the copy sits) and `dev_item` (the device it is on).  Open takes the
 * valid copy (magic, checksum) with the highest generation; a commit
 * writes all of them after the new tree nodes are flushed, then flushes
 * again.  The fsid ties devices of one volume together.
 *
 * ## Superblock (4096 bytes, struct super_block)
 *
 *   | off  | size | field                  | meaning                                   |
 *   |------|------|------------------------|-------------------------------------------|
 *   | 0    | 32   | csum                   | crc32c of bytes [32, 4096) in csum[0..3]  |
 *   | 32   | 16   | fsid                   | volume id, same on every device           |
 *   | 48   | 8    | bytenr                 | physical offset of this copy              |
 *   | 56   | 8    | flags                  | 0                                         |
 *   | 64   | 8    | magic                  | GLASSFS_MAGIC "_GlasFS_"                  |
 *   | 72   | 8    | generation             | transid of the commit that wrote it       |
 *   | 80   | 8    | root                   | logical address of the root tree's root   |
 *   | 88   | 8    | chunk_root             | logical address of the chunk tree's root  |
 *   | 96   | 8    | log_root               | fsync log: newest segment the superblock  |
 *   |      |      |                        | names (written after this commit), or 0   |
 *   | 104  | 8    | total_bytes            | sum of device sizes                       |
 *   | 112  | 8    | bytes_used             | bytes in allocated extents at commit      |
 *   | 120  | 8    | num_devices            |                                           |
 *   | 128  | 4    | sectorsize             | 4096                                      |
 *   | 132  | 4    | nodesize               | 4096..65536, power of two                 |
 *   | 136  | 4    | sys_chunk_array_size   | bytes used in sys_chunk_array             |
 *   | 140  | 4    | csum_type              | 0 = crc32c                                |
 *   | 144  | 8    | chunk_root_generation  |                                           |
 *   | 152  | 1    | root_level             |                                           |
 *   | 153  | 1    | chunk_root_level       |                                           |
 *   | 154  | 1    | log_root_level         |                                           |
 *   | 155  | 5    | pad                    |                                           |
 *   | 160  | 8    | features               | SUPER_FEAT_* bits (below)                 |
 *   | 168  | 98   | dev_item               | struct dev_item of this device            |
 *   | 266  | 256  | label                  | NUL-terminated                            |
 *   | 522  | 8    | log_slot               | fsync log: blocks this commit reserved for|
 *   |      |      |                        | the next transaction's first segment, or 0|
 *   | 530  | 8    | log_slot_len           | their length (that segment is no longer)  |
 *   | 538  | 1510 | reserved               | zero                                      |
 *   | 2048 | 2048 | sys_chunk_array        | (disk_key, chunk_item) pairs of SYSTEM    |
 *   |      |      |                        | chunks: enough to read the chunk tree     |
 *
 * ## Trees (all keys: struct disk_key, compared as keys.h)
 *
 *   | tree       | id | root in      | items (key -> payload)                             |
 *   |------------|----|--------------|----------------------------------------------------|
 *   | root       | 1  | superblock   | (tree id, ROOT_ITEM, 0) -> root_item               |
 *   |            |    |              | (parent, ROOT_REF, subvol) -> root_ref (name)      |
 *   |            |    |              | (subvol, ROOT_BACKREF, parent) -> root_ref         |
 *   | extent     | 2  | root tree    | (logical, EXTENT_ITEM, len) -> extent_item (data)  |
 *   |            |    |              | (bytenr, METADATA_ITEM, level) -> extent_item      |
 *   |            |    |              | (logical, BLOCK_GROUP_ITEM, len) -> block_group_item|
 *   | chunk      | 3  | superblock   | (DEV_ITEMS, DEV_ITEM, devid) -> dev_item           |
 *   |            |    |              | (FIRST_CHUNK, CHUNK_ITEM, logical) -> chunk_item   |
 *   | dev        | 4  | root tree    | (devid, DEV_EXTENT, physical) -> dev_extent        |
 *   | fs         | 5  | root tree    | items layer (items_format.h)                       |
 *   | subvolume  |256+| root tree    | the same, one tree per subvolume (subvol.h)        |
 *   | csum       | 7  | root tree    | (CSUM_OBJECTID, EXTENT_CSUM, logical) -> le32[]    |
 *   | free space | 10 | root tree    | (bg start, FREE_SPACE_INFO, bg len) -> fs_info     |
 *   |            |    |              | (seg start, FREE_SPACE_BITMAP, seg len) -> bitmap  |
 *
 * The chunk tree's nodes live in SYSTEM chunks, every other tree's nodes in
 * METADATA chunks, file data in DATA chunks.
 *
 * Reference counts: every tree node has a METADATA_ITEM whose refs count
 * the parent pointers (or root items) reaching it: 1 until a snapshot
 * shares it, then one per tree node pointing at it (lazy reference
 * counting, subvol.h); every data extent an EXTENT_ITEM whose refs count
 * the file-extent items pointing into it (an item in a shared leaf counts
 * once).  The extent tree's and the
 * free-space tree's own nodes are counted too: their changes are applied
 * at commit in a loop that stops when a round changes nothing (each node
 * is copied once per transaction, so the loop converges).
 *
 * Free space ("v2", bitmap form): each block group has a FREE_SPACE_INFO
 * and one bitmap item per FST_SEG_SECTORS sectors; bit i set = sector i of
 * the segment is free after the commit that wrote the item.  A commit
 * rewrites only the segments whose bits changed, so its cost does not
 * grow with the size of the filesystem.
 *
 * Features: `features` holds bits a reader must know to read the volume
 * right; mount and fsck refuse a volume with a bit they do not know
 * (SUPER_FEAT_KNOWN).  Images without a bit read as before, so older
 * volumes stay mountable: a field added later reads as zero there.
 *   SUPER_FEAT_LOG_SLOT  log_slot may name the first fsync log segment
 *                        after this commit (fs/items/log.h): a reader
 *                        that ignores it loses fsync'd files.  Set by the
 *                        first commit that names a slot, kept after.
 *   SUPER_FEAT_LOG_DELTA the fsync log of the transactions after this
 *                        commit may hold delta records (LOG_REC_DELTA,
 *                        fs/items/log.c): a reader that knows none would
 *                        stop at the first and lose the fsyncs after it.
 *                        Set by every commit of a mount with the log,
 *                        kept after; a log hanging from a superblock
 *                        without it holds whole records only.
 *   SUPER_FEAT_EXTREF    an fs tree may hold INODE_EXTREF items
 *                        (items_format.h): a reader that knows none would
 *                        miss those names (fsck: "unknown item type";
 *                        unlink: a name with no back reference).  Set by
 *                        the first commit after one is written (any
 *                        mount: nothing else turns it on), kept after;
 *                        mkfs does not set it, so a volume whose inodes
 *                        never outgrew an INODE_REF stays readable by
 *                        code that predates extended refs.
 *
 * Data checksums: one crc32c (le32) per 4 KiB sector; an EXTENT_CSUM item
 * at key offset L covers sectors [L, L + 4096 * (item size / 4)).  Items
 * never span two data extents.
 */
#ifndef GLASSFS_FORMAT_H
#define GLASSFS_FORMAT_H

#include <stdint.h>
#include "fs/format/keys.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
	       "glassfs structs are the little-endian disk layout; add byte swapping for BE hosts");

#define GLASSFS_MAGIC		0x5f534673616c475full	/* "_GlasFS_" as le64 */
#define SUPER_SIZE		4096u
#define SUPER_OFFSET		(64ull << 10)
#define SUPER_MIRROR1		(64ull << 20)
#define SUPER_MIRROR2		(256ull << 30)
#define SUPER_COPIES		3
#define SUPER_RESERVED		(1ull << 20)	/* chunks avoid [copy & ~(1M-1), +1 MiB) */
#define SYS_CHUNK_ARRAY_SIZE	2048u
#define DEV_MIN_SIZE		(16ull << 20)	/* smaller devices are refused */
#define LOGICAL_START		(16ull << 20)	/* first chunk's logical address */

#define KEY_FREE_SPACE_BITMAP	200	/* free-space tree: (seg start, 200, seg len) */

#define CSUM_TYPE_CRC32C	0
#define CSUM_SIZE		4

struct disk_key {
	uint64_t objectid;
	uint8_t  type;
	uint64_t offset;
} __attribute__((packed));

/* 98 bytes: in the superblock (this device) and the chunk tree (each device). */
struct dev_item {
	uint64_t devid;		/* 1.. ; stable for the device's life */
	uint64_t total_bytes;	/* device size used by the volume */
	uint64_t bytes_used;	/* bytes in dev extents */
	uint32_t io_align;
	uint32_t io_width;
	uint32_t sector_size;
	uint64_t type;		/* DEV_ITEM_* flags */
	uint64_t generation;	/* transid that last changed it */
	uint8_t  rotational;	/* 1 if the device said it is rotational at mkfs */
	uint8_t  pad;
	uint8_t  uuid[16];	/* device uuid */
	uint8_t  fsid[16];	/* volume fsid */
	uint8_t  reserved[12];
} __attribute__((packed));

struct super_block {
	uint8_t  csum[32];
	uint8_t  fsid[16];
	uint64_t bytenr;
	uint64_t flags;
	uint64_t magic;
	uint64_t generation;
	uint64_t root;
	uint64_t chunk_root;
	uint64_t log_root;
	uint64_t total_bytes;
	uint64_t bytes_used;
	uint64_t num_devices;
	uint32_t sectorsize;
	uint32_t nodesize;
	uint32_t sys_chunk_array_size;
	uint32_t csum_type;
	uint64_t chunk_root_generation;
	uint8_t  root_level;
	uint8_t  chunk_root_level;
	uint8_t  log_root_level;
	uint8_t  pad[5];
	uint64_t features;
	struct dev_item dev_item;
	char     label[256];
	uint64_t log_slot;
	uint64_t log_slot_len;
	uint8_t  reserved[1510];
	uint8_t  sys_chunk_array[SYS_CHUNK_ARRAY_SIZE];
} __attribute__((packed));
_Static_assert(sizeof(struct super_block) == SUPER_SIZE, "superblock is 4 KiB");
_Static_assert(sizeof(struct dev_item) == 98, "dev_item layout");
#define SUPER_FEAT_LOG_SLOT	(1ull << 0)
#define SUPER_FEAT_LOG_DELTA	(1ull << 1)
#define SUPER_FEAT_EXTREF	(1ull << 2)
#define SUPER_FEAT_KNOWN	(SUPER_FEAT_LOG_SLOT | SUPER_FEAT_LOG_DELTA | SUPER_FEAT_EXTREF)

/* dev_item.type: the device came back stale and its resync (volume_resync.c) has
 * not committed its end; the next full mount starts the resync over. */
#define DEV_ITEM_RESYNC	(1ull << 0)

/* Block group / chunk type bits (Btrfs values). */
#define BG_DATA		(1ull << 0)
#define BG_SYSTEM	(1ull << 1)
#define BG_METADATA	(1ull << 2)
#define BG_TYPE_MASK	(BG_DATA | BG_SYSTEM | BG_METADATA)
#define BG_RAID0	(1ull << 3)
#define BG_RAID1	(1ull << 4)
#define BG_DUP		(1ull << 5)
#define BG_RAID10	(1ull << 6)
#define BG_RAID5	(1ull << 7)
#define BG_RAID6	(1ull << 8)
#define BG_RAID1C3	(1ull << 9)	/* three copies on three devices */
#define BG_RAID1C4	(1ull << 10)	/* four copies on four devices */
#define BG_PARITY	(BG_RAID5 | BG_RAID6)
#define BG_MIRROR	(BG_RAID1 | BG_RAID1C3 | BG_RAID1C4)	/* a full copy per device */
#define BG_PROFILE_MASK	(BG_RAID0 | BG_MIRROR | BG_DUP | BG_RAID10 | BG_RAID5 | BG_RAID6)
					/* none set = single */

/*
 * Profiles and their chunk items:
 *
 *   | profile | num_stripes | sub_stripes | stripe_len | logical byte o of the chunk lives at      |
 *   |---------|-------------|-------------|------------|-------------------------------------------|
 *   | single  | 1           | 1           | 64 KiB     | stripes[0] + o                            |
 *   | dup     | 2 (one dev) | 1           | 64 KiB     | stripes[0] + o and stripes[1] + o         |
 *   | raid1   | 2           | 1           | 64 KiB     | stripes[0] + o and stripes[1] + o         |
 *   | raid1c3 | 3           | 1           | 64 KiB     | stripes[i] + o, i < 3 (one per device)    |
 *   | raid1c4 | 4           | 1           | 64 KiB     | stripes[i] + o, i < 4 (one per device)    |
 *   | raid10  | 2p (p >= 2) | 2           | 64 KiB     | element u = o / 64K: pair k = u % p, row  |
 *   |         |             |             |            | r = u / p; stripes[2k] and stripes[2k+1]  |
 *   |         |             |             |            | + r * 64K + o % 64K                       |
 *   | raid5   | n >= 3      | 1           | 4 KiB      | sector s = o / 4K: row r = s / k, column  |
 *   | raid6   | n >= 4      | 1           | 4 KiB      | j = s % k (k = n - 1, raid6 n - 2): on    |
 *   |         |             |             |            | stripes[(r + j) % n] + r * 4K; P of the   |
 *   |         |             |             |            | row on stripes[(r + k) % n], Q (raid6) on |
 *   |         |             |             |            | stripes[(r + k + 1) % n]                  |
 *
 * Each stripe of a mirrored profile spans the chunk's length on its
 * device; each stripe of raid10 spans length / p (length is a multiple
 * of p * 64 KiB), of raid5/6 length / k.  A tree node (at most 64 KiB,
 * aligned to its size) never crosses a raid10 element.  P is the XOR of
 * the row's k data sectors, Q the Reed-Solomon syndrome sum(2^j * d_j)
 * over GF(2^8) (ISA-L's gf_gen_rs_matrix rows k and k + 1, as Linux md's
 * raid6).  A row (k sectors, "a full stripe") is written whole or not
 * at all and never rewritten while any sector of it is allocated
 * (fs/store/parity.c), so parity never disagrees with live data.
 */
#define CHUNK_STRIPE_LEN	(64ull << 10)

struct stripe {
	uint64_t devid;
	uint64_t offset;	/* physical byte offset on devid */
	uint8_t  dev_uuid[16];
} __attribute__((packed));

/* Chunk item: 48 bytes + num_stripes * 32. */
struct chunk_item {
	uint64_t length;	/* logical bytes mapped */
	uint64_t owner;		/* EXTENT_TREE_OBJECTID */
	uint64_t stripe_len;	/* 64 KiB (for striped profiles) */
	uint64_t type;		/* BG_* type | profile */
	uint32_t io_align;
	uint32_t io_width;
	uint32_t sector_size;
	uint16_t num_stripes;	/* single: 1; dup/raid1: 2, raid1c3 3, raid1c4 4 (copies) */
	uint16_t sub_stripes;
	struct stripe stripes[];
} __attribute__((packed));
#define CHUNK_ITEM_SIZE(n) (sizeof(struct chunk_item) + (size_t)(n) * sizeof(struct stripe))
#define CHUNK_MAX_STRIPES 4

struct dev_extent {
	uint64_t chunk_tree;	/* CHUNK_TREE_OBJECTID */
	uint64_t chunk_objectid;/* FIRST_CHUNK_OBJECTID */
	uint64_t chunk_offset;	/* logical start of the chunk */
	uint64_t length;
} __attribute__((packed));

struct block_group_item {
	uint64_t used;		/* bytes allocated at commit */
	uint64_t chunk_objectid;/* FIRST_CHUNK_OBJECTID */
	uint64_t flags;		/* BG_* of the chunk */
} __attribute__((packed));

/*
 * Root item (root tree: (tree id, ROOT_ITEM, 0)).  Subvolumes (fs trees
 * with ids >= FIRST_SUBVOL_OBJECTID) use flags, last_snapshot and, while a
 * deleted subvolume is being freed, drop_progress: every leaf key below it
 * has been dropped (subvol.c).
 */
#define ROOT_F_RDONLY	(1ull << 0)	/* read-only snapshot */
#define ROOT_F_DEAD	(1ull << 48)	/* deleted (or never linked): the cleaner frees it */
struct root_item {
	uint64_t generation;	/* transid that last wrote the root node */
	uint64_t bytenr;	/* logical address of the root node */
	uint64_t flags;		/* ROOT_F_* */
	uint64_t refs;		/* 1 */
	uint8_t  level;
	uint8_t  pad[7];
	uint64_t last_snapshot;	/* transid of the last snapshot of or from this tree */
	struct disk_key drop_progress;
	uint8_t  pad2[7];
	uint64_t otime;		/* creation time (seconds) */
	uint64_t reserved[4];
} __attribute__((packed));
_Static_assert(sizeof(struct root_item) == 112, "root_item layout");

/*
 * ROOT_REF (parent tree, ROOT_REF, child tree) and ROOT_BACKREF (child
 * tree, ROOT_BACKREF, parent tree): the name of a subvolume in its parent
 * directory (dirid), whose DIR_ITEM/DIR_INDEX (seq = index) point at it
 * with type DT_SUBVOL (items_format.h).
 */
struct root_ref {
	uint64_t dirid;
	uint64_t index;
	uint16_t name_len;
	char name[];
} __attribute__((packed));

#define EXTENT_FLAG_DATA	1ull
#define EXTENT_FLAG_TREE_BLOCK	2ull

struct extent_item {
	uint64_t refs;		/* references: file-extent items, or 1 for a node */
	uint64_t generation;	/* transid that allocated it */
	uint64_t flags;		/* EXTENT_FLAG_* */
	uint64_t owner;		/* tree id owning a node; 0 for data */
} __attribute__((packed));

#define FREE_SPACE_USING_BITMAPS 1u

struct free_space_info {
	uint32_t extent_count;	/* bitmap items of the block group */
	uint32_t flags;		/* FREE_SPACE_USING_BITMAPS */
} __attribute__((packed));

/* Sectors per free-space bitmap item: 512 bytes of bits = 16 MiB. */
#define FST_SEG_SECTORS	4096u
#define FST_SEG_BYTES	(FST_SEG_SECTORS / 8)

#endif
