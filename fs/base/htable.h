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

/* Every entry: for (size_t i = 0; ...) style, no insert or remove inside. */
#define htable_for_each(h, i, n) \
	for (size_t i = 0; i < (h)->nbuckets; i++) \
		for (struct hnode *n = (h)->b[i]; n; n = n->next)

#endif
