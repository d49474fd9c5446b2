// SPDX-License-Identifier: MIT
/*
 * htable.c — see htable.h.
 */
#include "fs/base/htable.h"

#include <errno.h>
#include <stdlib.h>

/* Fibonacci hashing: the product's bits 20.. pick the bucket, so keys that
 * differ only in their low bits (consecutive inode numbers, block
 * addresses a node apart) spread over the buckets, and a caller that
 * shards by the low bits does not leave buckets of its shard empty. */
static size_t bucket(uint64_t key, size_t nbuckets)
{
	key *= 0x9e3779b97f4a7c15ULL;
	return (size_t)(key >> 20) & (nbuckets - 1);
}

int htable_init(struct htable *h, size_t nbuckets)
{
	size_t n = 1;

	while (n < nbuckets)
		n <<= 1;
	h->count = 0;
	h->low = 0;
	h->nbuckets = n;
	h->b = calloc(n, sizeof(*h->b));
	if (!h->b) {
		h->nbuckets = 0;
		return -ENOMEM;
	}
	return 0;
}

void htable_destroy(struct htable *h)
{
	free(h->b);
	h->b = NULL;
	h->nbuckets = 0;
	h->count = 0;
	h->low = 0;
}

struct hnode *htable_find(const struct htable *h, uint64_t key)
{
	struct hnode *n = h->b[bucket(key, h->nbuckets)];

	while (n && n->key != key)
		n = n->next;
	return n;
}

/* Entries of one key share a chain: the rest of n's chain holds the others. */
struct hnode *htable_find_next(const struct hnode *n)
{
	struct hnode *m = n->next;

	while (m && m->key != n->key)
		m = m->next;
	return m;
}

static void grow(struct htable *h)
{
	size_t nn = h->nbuckets * 2;
	struct hnode **nb = calloc(nn, sizeof(*nb));

	if (!nb)
		return;		/* keep the size: slower, never wrong */
	for (size_t i = 0; i < h->nbuckets; i++) {
		struct hnode *n = h->b[i], *next;

		for (; n; n = next) {
			size_t j = bucket(n->key, nn);

			next = n->next;
			n->next = nb[j];
			nb[j] = n;
		}
	}
	free(h->b);
	h->b = nb;
	h->nbuckets = nn;
	h->low = 0;
}

void htable_insert(struct htable *h, struct hnode *n)
{
	size_t i;

	if (h->count >= h->nbuckets * 2)
		grow(h);
	i = bucket(n->key, h->nbuckets);
	n->next = h->b[i];
	h->b[i] = n;
	h->count++;
	if (i < h->low)
		h->low = i;
}

bool htable_remove(struct htable *h, struct hnode *n)
{
	struct hnode **pp = &h->b[bucket(n->key, h->nbuckets)];

	while (*pp && *pp != n)
		pp = &(*pp)->next;
	if (!*pp)
		return false;
	*pp = n->next;
	n->next = NULL;
	h->count--;
	return true;
}

struct hnode *htable_pop(struct htable *h)
{
	for (size_t i = h->low; h->count && i < h->nbuckets; i++) {
		struct hnode *n = h->b[i];

		if (n) {
			h->b[i] = n->next;
			n->next = NULL;
			h->count--;
			h->low = i;
			return n;
		}
	}
	return NULL;
}

/* ---- sets of bare keys ------------------------------------------------- */

int htable_set_add(struct htable_set *s, uint64_t key)
{
	struct hnode *n;

	if (!s->t.b && htable_init(&s->t, 64))
		return -ENOMEM;
	if (htable_find(&s->t, key))
		return 0;
	if (!s->spare) {
		/* one hnode's room for the link to the chunk before */
		struct hnode *c = malloc((HTABLE_SET_CHUNK + 1) * sizeof(*c));

		if (!c)
			return -ENOMEM;
		*(void **)c = s->chunks;
		s->chunks = c;
		for (int i = 1; i <= HTABLE_SET_CHUNK; i++) {
			c[i].next = s->spare;
			s->spare = &c[i];
		}
	}
	n = s->spare;
	s->spare = n->next;
	n->key = key;
	htable_insert(&s->t, n);
	return 0;
}

bool htable_set_has(const struct htable_set *s, uint64_t key)
{
	return s->t.b && htable_find(&s->t, key);
}

bool htable_set_take(struct htable_set *s, uint64_t key)
{
	struct hnode *n = s->t.b ? htable_find(&s->t, key) : NULL;

	if (!n)
		return false;
	htable_remove(&s->t, n);
	n->next = s->spare;
	s->spare = n;
	return true;
}

void htable_set_clear(struct htable_set *s)
{
	struct hnode *n;

	while (s->t.b && (n = htable_pop(&s->t))) {
		n->next = s->spare;
		s->spare = n;
	}
}

void htable_set_destroy(struct htable_set *s)
{
	htable_destroy(&s->t);
	while (s->chunks) {
		void *c = s->chunks;

		s->chunks = *(void **)c;
		free(c);
	}
	s->spare = NULL;
}
