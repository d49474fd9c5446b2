/*
 * hmap.h — a tiny open-addressing map from a non-zero 64-bit key to a
 * 64-bit value, for per-query aggregation (stack id -> count) and caches.
 * Key 0 is reserved as "empty"; callers map key k to k+1 if 0 can occur.
 * Not thread-safe.
 */
#ifndef GLASS_HMAP_H
#define GLASS_HMAP_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

struct hmap {
	uint64_t *keys, *vals;
	size_t cap, n;		/* cap: power of two */
};

static inline uint64_t hmap_mix(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	return k;
}

static inline void hmap_free(struct hmap *m)
{
	free(m->keys);
	free(m->vals);
	m->keys = m->vals = NULL;
	m->cap = m->n = 0;
}

static inline int hmap_grow(struct hmap *m)
{
	size_t ncap = m->cap ? m->cap * 2 : 1024;
	uint64_t *nk = calloc(ncap, sizeof(*nk)), *nv = calloc(ncap, sizeof(*nv));

	if (!nk || !nv) {
		free(nk);
		free(nv);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->keys[i])
			continue;
		size_t j = hmap_mix(m->keys[i]) & (ncap - 1);
		while (nk[j])
			j = (j + 1) & (ncap - 1);
		nk[j] = m->keys[i];
		nv[j] = m->vals[i];
	}
	free(m->keys);
	free(m->vals);
	m->keys = nk;
	m->vals = nv;
	m->cap = ncap;
	return 0;
}

/* Pointer to the value of KEY, inserting it as 0 if absent; NULL on ENOMEM. */
static inline uint64_t *hmap_slot(struct hmap *m, uint64_t key)
{
	size_t j;

	if ((m->n + 1) * 4 > m->cap * 3 && hmap_grow(m))
		return NULL;
	j = hmap_mix(key) & (m->cap - 1);
	while (m->keys[j] && m->keys[j] != key)
		j = (j + 1) & (m->cap - 1);
	if (!m->keys[j]) {
		m->keys[j] = key;
		m->vals[j] = 0;
		m->n++;
	}
	return &m->vals[j];
}

/* Pointer to the value of KEY or NULL if absent. */
static inline uint64_t *hmap_get(const struct hmap *m, uint64_t key)
{
	size_t j;

	if (!m->cap)
		return NULL;
	j = hmap_mix(key) & (m->cap - 1);
	while (m->keys[j]) {
		if (m->keys[j] == key)
			return &m->vals[j];
		j = (j + 1) & (m->cap - 1);
	}
	return NULL;
}

#endif /* GLASS_HMAP_H */
