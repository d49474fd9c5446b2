/* SPDX-License-Identifier: MIT */
/*
 * node.h — the on-disk layout of a B-tree node, its accessors and its
 * validation.  A node is one block of `nodesize` bytes (4 KiB .. 64 KiB,
 * the superblock's nodesize).  Everything is little endian.
 *
 * ## Header (96 bytes, every node)
 *
 *   | off | size | field      | meaning                                         |
 *   |-----|------|------------|-------------------------------------------------|
 *   | 0   | 32   | csum       | crc32c of bytes [32, nodesize) as le32 in the    |
 *   |     |      |            | first 4 bytes; the other 28 bytes are zero       |
 *   | 32  | 16   | fsid       | volume id (core_fsid): a block of another volume |
 *   |     |      |            | is recognised as such                            |
 *   | 48  | 8    | bytenr     | logical address the node was written for         |
 *   | 56  | 8    | flags      | 0                                                |
 *   | 64  | 8    | generation | transid that wrote the node; the parent's        |
 *   |     |      |            | pointer carries the same number                  |
 *   | 72  | 8    | owner      | tree id (keys.h) of the tree the node belongs to |
 *   | 80  | 4    | nritems    | items (leaf) or child pointers (interior)        |
 *   | 84  | 1    | level      | 0 for a leaf; a child is one level lower         |
 *   | 85  | 11   | reserved   | zero                                             |
 *
 * ## Leaf (level 0)
 *
 *   +--------+--------+--------+-----+---------------+--------+--------+--------+
 *   | header | item 0 | item 1 | ... |  free space   | data 2 | data 1 | data 0 |
 *   +--------+--------+--------+-----+---------------+--------+--------+--------+
 *   0        96       121      146                                     nodesize
 *
 * Item headers (25 bytes each) grow from the front, sorted by key; item
 * data grows from the back, packed: item 0's data ends at nodesize, item
 * i's data ends where item i-1's begins.  So inserting an item shifts the
 * headers after it by 25 bytes and the data of those items down by the new
 * item's size (as in Btrfs).
 *
 *   | off | size | field  | meaning                                          |
 *   |-----|------|--------|--------------------------------------------------|
 *   | 0   | 17   | key    | struct disk_key: objectid le64, type u8, offset le64 |
 *   | 17  | 4    | offset | le32: start of the item's data, from node start  |
 *   | 21  | 4    | size   | le32: bytes of data (may be 0)                   |
 *
 * ## Interior node (level 1 .. BTREE_MAX_LEVEL-1)
 *
 *   +--------+-------+-------+-----+-------------+
 *   | header | ptr 0 | ptr 1 | ... |   unused    |
 *   +--------+-------+-------+-----+-------------+
 *
 *   | off | size | field      | meaning                                     |
 *   |-----|------|------------|---------------------------------------------|
 *   | 0   | 17   | key        | separator: every key in child i is >= key i |
 *   |     |      |            | and < key i+1 (key 0 is not compared: the   |
 *   |     |      |            | leftmost child takes every smaller key)     |
 *   | 17  | 8    | blockptr   | le64 logical address of the child           |
 *   | 25  | 8    | generation | le64: the child's header generation         |
 *
 * Separators follow B+-tree rules rather than "key == child's first key":
 * deleting a child's first item or inserting below a subtree's smallest key
 * never has to rewrite keys in the ancestors, so those operations need no
 * lock above the leaf.  Separators are set from the right node's first key
 * when a node splits, and moved when nodes merge or rebalance.
 *
 * ## Validation
 *
 * node_verify() checks, in this order, and reports the first failure with
 * the node's address and what was found: checksum (expected/found), bytenr,
 * fsid, owner, level, generation (against the parent's pointer), nritems
 * within capacity, key order (strictly ascending; interior from slot 1),
 * item bounds (headers before data, data inside the node, packed, no
 * overlap), child pointers nonzero with generation <= the node's.
 */
#ifndef GLASSFS_NODE_H
#define GLASSFS_NODE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "fs/format/keys.h"

#define NODE_HDR_SIZE	96u
#define NODE_ITEM_SIZE	25u	/* leaf item header */
#define NODE_PTR_SIZE	33u	/* interior key pointer */
#define NODE_CSUM_SIZE	32u

/* ---- little-endian field access ---------------------------------------- */
static inline uint64_t get_le64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	return v;
}
static inline uint32_t get_le32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap32(v);
#endif
	return v;
}
static inline void put_le64(uint8_t *p, uint64_t v)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	memcpy(p, &v, 8);
}
static inline void put_le32(uint8_t *p, uint32_t v)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap32(v);
#endif
	memcpy(p, &v, 4);
}

/* ---- header ------------------------------------------------------------ */
#define NH_CSUM		0
#define NH_FSID		32
#define NH_BYTENR	48
#define NH_FLAGS	56
#define NH_GENERATION	64
#define NH_OWNER	72
#define NH_NRITEMS	80
#define NH_LEVEL	84

static inline uint64_t nb_bytenr(const uint8_t *b) { return get_le64(b + NH_BYTENR); }
static inline uint64_t nb_generation(const uint8_t *b) { return get_le64(b + NH_GENERATION); }
static inline uint64_t nb_owner(const uint8_t *b) { return get_le64(b + NH_OWNER); }
static inline uint32_t nb_nritems(const uint8_t *b) { return get_le32(b + NH_NRITEMS); }
static inline int nb_level(const uint8_t *b) { return b[NH_LEVEL]; }
static inline void nb_set_bytenr(uint8_t *b, uint64_t v) { put_le64(b + NH_BYTENR, v); }
static inline void nb_set_generation(uint8_t *b, uint64_t v) { put_le64(b + NH_GENERATION, v); }
static inline void nb_set_owner(uint8_t *b, uint64_t v) { put_le64(b + NH_OWNER, v); }
static inline void nb_set_nritems(uint8_t *b, uint32_t v) { put_le32(b + NH_NRITEMS, v); }
static inline void nb_set_level(uint8_t *b, int v) { b[NH_LEVEL] = (uint8_t)v; }

/* ---- keys ---------------------------------------------------------------- */
static inline void nb_read_key(const uint8_t *p, struct key *k)
{
	k->objectid = get_le64(p);
	k->type = p[8];
	k->offset = get_le64(p + 9);
}
static inline void nb_write_key(uint8_t *p, const struct key *k)
{
	put_le64(p, k->objectid);
	p[8] = k->type;
	put_le64(p + 9, k->offset);
}

/* ---- leaf items -------------------------------------------------------- */
static inline uint8_t *nb_item(uint8_t *b, int i) { return b + NODE_HDR_SIZE + (size_t)i * NODE_ITEM_SIZE; }
static inline const uint8_t *nb_citem(const uint8_t *b, int i) { return b + NODE_HDR_SIZE + (size_t)i * NODE_ITEM_SIZE; }
static inline void nb_item_key(const uint8_t *b, int i, struct key *k) { nb_read_key(nb_citem(b, i), k); }
static inline uint32_t nb_item_off(const uint8_t *b, int i) { return get_le32(nb_citem(b, i) + 17); }
static inline uint32_t nb_item_size(const uint8_t *b, int i) { return get_le32(nb_citem(b, i) + 21); }
static inline void nb_set_item_key(uint8_t *b, int i, const struct key *k) { nb_write_key(nb_item(b, i), k); }
static inline void nb_set_item_off(uint8_t *b, int i, uint32_t v) { put_le32(nb_item(b, i) + 17, v); }
static inline void nb_set_item_size(uint8_t *b, int i, uint32_t v) { put_le32(nb_item(b, i) + 21, v); }

/* ---- interior pointers ----------------------------------------------- */
static inline uint8_t *nb_ptr(uint8_t *b, int i) { return b + NODE_HDR_SIZE + (size_t)i * NODE_PTR_SIZE; }
static inline const uint8_t *nb_cptr(const uint8_t *b, int i) { return b + NODE_HDR_SIZE + (size_t)i * NODE_PTR_SIZE; }
static inline void nb_ptr_key(const uint8_t *b, int i, struct key *k) { nb_read_key(nb_cptr(b, i), k); }
static inline uint64_t nb_ptr_blockptr(const uint8_t *b, int i) { return get_le64(nb_cptr(b, i) + 17); }
static inline uint64_t nb_ptr_gen(const uint8_t *b, int i) { return get_le64(nb_cptr(b, i) + 25); }
static inline void nb_set_ptr_key(uint8_t *b, int i, const struct key *k) { nb_write_key(nb_ptr(b, i), k); }
static inline void nb_set_ptr(uint8_t *b, int i, uint64_t blockptr, uint64_t gen)
{
	put_le64(nb_ptr(b, i) + 17, blockptr);
	put_le64(nb_ptr(b, i) + 25, gen);
}

/* ---- sizes ------------------------------------------------------------- */
/* Bytes for item headers + data in a leaf. */
static inline uint32_t node_leaf_space(uint32_t nodesize) { return nodesize - NODE_HDR_SIZE; }
/* Most child pointers an interior node holds. */
static inline uint32_t node_ptr_cap(uint32_t nodesize) { return (nodesize - NODE_HDR_SIZE) / NODE_PTR_SIZE; }
/* Most items a leaf holds (all of size 0). */
static inline uint32_t node_item_cap(uint32_t nodesize) { return (nodesize - NODE_HDR_SIZE) / NODE_ITEM_SIZE; }
/* Largest item data a leaf holds. */
static inline uint32_t node_max_item(uint32_t nodesize) { return node_leaf_space(nodesize) - NODE_ITEM_SIZE; }

/* Bytes used in a leaf by headers + data (valid leaf). */
uint32_t node_leaf_used(const uint8_t *b, uint32_t nodesize);
/* Free bytes of a leaf between the headers and the data. */
uint32_t node_leaf_free(const uint8_t *b, uint32_t nodesize);
/* Start of the lowest item data (nodesize when empty). */
uint32_t node_leaf_data_start(const uint8_t *b, uint32_t nodesize);

/* Initialise an empty node (header only; csum and fsid set at finalize). */
void node_init(uint8_t *b, uint32_t nodesize, uint64_t bytenr, uint64_t owner,
	       int level, uint64_t generation);

/* crc32c of [32, nodesize). */
uint32_t node_csum(const uint8_t *b, uint32_t nodesize);
/* Before writing: store fsid and the checksum. */
void node_finalize(uint8_t *b, uint32_t nodesize, const uint8_t *fsid);

/*
 * Structure of one node (no checksum): nritems, key order, item bounds,
 * pointers.  0, or -EUCLEAN with a message in why.
 */
int node_check(const uint8_t *b, uint32_t nodesize, char *why, size_t whylen);

/* What the reader of a block expects to find (0 / -1 = do not check). */
struct node_expect {
	uint32_t nodesize;
	uint64_t bytenr;
	const uint8_t *fsid;	/* NULL: do not check */
	uint64_t owner;		/* 0: any */
	int level;		/* -1: any */
	uint64_t generation;	/* 0: any */
	uint64_t max_generation;/* 0: any; else generation must be <= this */
};

/* Checksum, identity and structure.  0 or -EIO with why filled in. */
int node_verify(const uint8_t *b, const struct node_expect *e, char *why, size_t whylen);
/* node_verify as a read's verify callback (parity_read_verified): e is
 * the struct node_expect, the reason is not wanted (a read may try
 * several reconstructions of one node). */
int node_verify_quiet(const void *b, uint64_t bytenr, void *e);

/* Binary search.  Leaf: first slot whose key >= k (*exact set when equal).
 * Interior: the child slot to descend for k (largest i >= 1 with key i <= k,
 * else 0).  nritems is clamped to the node's capacity so a racing reader
 * (locking=groups optimistic probe) never reads outside the block. */
int node_search(const uint8_t *b, uint32_t nodesize, const struct key *k, int *exact);
/* node_search within the slots [lo, hi) of b (interior: lo >= 1), which
 * the caller keeps inside the node; level is b's, as the caller read it.
 * Leaf (level 0): as node_search.  Interior: the
 * largest i in [lo, hi) with key i <= k, else lo - 1; *exact compares
 * that slot's key unless it is slot 0 (whose key is never compared). */
int node_search_slots(const uint8_t *b, int level, int lo, int hi, const struct key *k,
		      int *exact);

#endif
