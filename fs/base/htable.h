/* SPDX-License-Identifier: MIT */
/*
 * htable.h — the engine's one hash table: intrusive, chained, keyed by a
 * u64, doubling when it holds two entries per bucket.
 *
 * The entry embeds a struct hnode (key and chain); the table owns only its
 * bucket array, never the entries.  No lock: the owner's lock guards the
 * table and every hnode in it (say which where the table is declared).
 * Keys need not be unique: htable_find returns one entry of the key and
 * htable_find_next the others (the inode and node caches keep theirs
 * unique; the delayed refs key by block address, one entry per level).
 *
 * Cost: find, insert and remove walk one chain (2 entries on average);
 * insert that doubles rehashes every entry once, O(n), amortised O(1).
 * When the larger bucket array cannot be allocated the table keeps its
 * size and only gets slower: insert never fails.
 */
#ifndef GLASSFS_HTABLE_H
#define GLASSFS_HTABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hnode {
	struct hnode *next;	/* chain; owned by the table */
	uint64_t key;		/* set before htable_insert, fixed while hashed */
};

struct htable {
	struct hnode **b;	/* nbuckets chains */
	size_t nbuckets;	/* a power of two */
	size_t count;		/* entries hashed */
	size_t low;		/* every bucket below it is empty (htable_pop
				 * starts there; insert lowers it) */
};

/* The entry holding hnode p: htable_entry(p, struct inode, hnode). */
#define htable_entry(p, type, member) \
	((type *)((char *)(p) - offsetof(type, member)))

/* nbuckets: rounded up to a power of two (at least 1).  0 or -ENOMEM. */
int htable_init(struct htable *h, size_t nbuckets);
/* Frees the bucket array (not the entries); safe twice and on a zeroed table. */
void htable_destroy(struct htable *h);
struct hnode *htable_find(const struct htable *h, uint64_t key);
/* The next entry after n with n's key, NULL after the last: every entry
 * of a key is htable_find, then htable_find_next until NULL. */
struct hnode *htable_find_next(const struct hnode *n);
/* n->key set by the caller; doubles the buckets at two entries per bucket. */
void htable_insert(struct htable *h, struct hnode *n);
/* false when n is not in the table. */
bool htable_remove(struct htable *h, struct hnode *n);
/* Unhash and return any one entry, NULL when empty: a loop of pops
 * empties the table (to free the entries) in O(entries + buckets) in all,
 * so a table emptied at every commit costs no scan per entry. */
struct hnode *htable_pop(struct htable *h);

/*
 * A set of bare u64 keys on the table, for owners with no entry of their
 * own to embed an hnode in (the allocator's new blocks, the fsync log's
 * inodes and extents): the set allocates hnodes HTABLE_SET_CHUNK at a
 * time and keeps the ones it unhashes for the next adds, so an add
 * mallocs once in HTABLE_SET_CHUNK at most, and a set emptied at every
 * commit not at all once it has reached its size.  No lock, as the
 * table.  A zeroed struct is an empty set (its buckets come with the
 * first add).
 */
#define HTABLE_SET_CHUNK 255
struct htable_set {
	struct htable t;
	struct hnode *spare;	/* unhashed hnodes, chained by next */
	void *chunks;		/* the hnodes' allocations, chained by their first word */
};

/* 0 (added, or already there), or -ENOMEM with the set unchanged. */
int htable_set_add(struct htable_set *s, uint64_t key);
bool htable_set_has(const struct htable_set *s, uint64_t key);
/* true when key was in the set; it is not any more. */
bool htable_set_take(struct htable_set *s, uint64_t key);
/* Empty the set, O(keys + buckets); its hnodes and buckets are kept. */
void htable_set_clear(struct htable_set *s);
/* Empty the set and free all it holds; safe twice and on a zeroed set. */
void htable_set_destroy(struct htable_set *s);

/* Every entry: for (size_t i = 0; ...) style, no insert or remove inside. */
#define htable_for_each(h, i, n) \
	for (size_t i = 0; i < (h)->nbuckets; i++) \
		for (struct hnode *n = (h)->b[i]; n; n = n->next)

#endif
