// SPDX-License-Identifier: MIT
/*
 * dcache.c — the positive lookup cache (see dcache.h): a direct-mapped
 * table of DCACHE_SLOTS entries, hashed on (directory, name), guarded by
 * DCACHE_SHARDS locks of fs/base/lock.c.  A new entry simply replaces what its
 * slot held: the cache is for names asked again soon, not for keeping.
 */
#include "fs/items/dcache.h"
#include "fs/items/dir.h"
#include "fs/base/lock.h"

#include <stdlib.h>
#include <string.h>

#define DCACHE_SLOTS  4096	/* power of two */
#define DCACHE_SHARDS 64	/* power of two, divides DCACHE_SLOTS */

struct dslot {
	uint64_t dir;		/* 0: empty (no directory has inode number 0) */
	uint64_t ino;
	uint64_t index;
	uint8_t type;
	uint8_t len;
	char name[DCACHE_NAME_MAX];
};

/* A shard's lock with its counters on the same cache line: a lookup
 * touches only its shard's line, not one shared by every thread. */
struct dshard {
	struct glock lock;
	uint64_t hits, misses;	/* atomic, relaxed */
} __attribute__((aligned(64)));

struct dcache {
	uint64_t rm_seq;	/* atomic: bumped by every dcache_drop */
	struct dshard shard[DCACHE_SHARDS];
	struct dslot slot[DCACHE_SLOTS];
};

struct dcache *dcache_new(uint64_t tree)
{
	struct dcache *dc = aligned_alloc(64, sizeof(*dc));	/* the shards' alignment */

	if (!dc)
		return NULL;
	memset(dc, 0, sizeof(*dc));
	for (int i = 0; i < DCACHE_SHARDS; i++)
		glock_init(&dc->shard[i].lock, GLOCK_RWLOCK, GLOCK_CLASS_CACHE, tree, -1, -1);
	return dc;
}

void dcache_free(struct dcache *dc)
{
	free(dc);
}

/* FNV-1a over the name, mixed with the directory's inode number. */
static uint32_t slot_of(uint64_t dir, const char *name, size_t len)
{
	uint64_t h = 1469598103934665603ull ^ (dir * 0x9e3779b97f4a7c15ull);

	for (size_t i = 0; i < len; i++)
		h = (h ^ (uint8_t)name[i]) * 1099511628211ull;
	return (uint32_t)(h ^ (h >> 29)) & (DCACHE_SLOTS - 1);
}

static struct dshard *shard_of(struct dcache *dc, uint32_t s)
{
	return &dc->shard[s & (DCACHE_SHARDS - 1)];
}

static bool matches(const struct dslot *e, uint64_t dir, const char *name, size_t len)
{
	return e->dir == dir && e->len == len && memcmp(e->name, name, len) == 0;
}

uint64_t dcache_seq(struct dcache *dc)
{
	return __atomic_load_n(&dc->rm_seq, __ATOMIC_SEQ_CST);
}

bool dcache_get(struct dcache *dc, uint64_t dir, const char *name, size_t len,
		struct dir_hit *hit)
{
	uint32_t s = slot_of(dir, name, len);
	struct dshard *sh = shard_of(dc, s);
	bool found = false;

	if (len > DCACHE_NAME_MAX) {	/* never kept: always the tree's */
		__atomic_fetch_add(&sh->misses, 1, __ATOMIC_RELAXED);
		return false;
	}
	glock_read(&sh->lock);
	const struct dslot *e = &dc->slot[s];
	if (matches(e, dir, name, len)) {
		hit->ino = e->ino;
		hit->index = e->index;
		hit->type = e->type;
		found = true;
	}
	glock_read_unlock(&sh->lock);
	__atomic_fetch_add(found ? &sh->hits : &sh->misses, 1, __ATOMIC_RELAXED);
	return found;
}

void dcache_put(struct dcache *dc, uint64_t seq, uint64_t dir, const char *name,
		size_t len, const struct dir_hit *hit)
{
	uint32_t s;

	if (len > DCACHE_NAME_MAX || dir == 0)
		return;
	s = slot_of(dir, name, len);
	glock_write(&shard_of(dc, s)->lock);
	/* under the slot's lock: a drop that bumped the sequence after our
	 * search either ran its drop already (we see the bump) or will run
	 * it after us (it clears what we store) */
	if (__atomic_load_n(&dc->rm_seq, __ATOMIC_SEQ_CST) == seq) {
		struct dslot *e = &dc->slot[s];
		e->dir = dir;
		e->ino = hit->ino;
		e->index = hit->index;
		e->type = hit->type;
		e->len = (uint8_t)len;
		memcpy(e->name, name, len);
	}
	glock_write_unlock(&shard_of(dc, s)->lock);
}

void dcache_drop(struct dcache *dc, uint64_t dir, const char *name, size_t len)
{
	uint32_t s;

	__atomic_fetch_add(&dc->rm_seq, 1, __ATOMIC_SEQ_CST);
	if (len > DCACHE_NAME_MAX)
		return;
	s = slot_of(dir, name, len);
	glock_write(&shard_of(dc, s)->lock);
	if (matches(&dc->slot[s], dir, name, len))
		dc->slot[s].dir = 0;
	glock_write_unlock(&shard_of(dc, s)->lock);
}

void dcache_counts(struct dcache *dc, uint64_t *hits, uint64_t *misses)
{
	*hits = *misses = 0;
	for (int i = 0; i < DCACHE_SHARDS; i++) {
		*hits += __atomic_load_n(&dc->shard[i].hits, __ATOMIC_RELAXED);
		*misses += __atomic_load_n(&dc->shard[i].misses, __ATOMIC_RELAXED);
	}
}
