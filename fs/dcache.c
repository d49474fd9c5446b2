// SPDX-License-Identifier: MIT
/*
 * dcache.c — the positive lookup cache (see dcache.h): a direct-mapped
 * table of DCACHE_SLOTS entries, hashed on (directory, name), guarded by
 * DCACHE_SHARDS locks of fs/lock.c.  A new entry simply replaces what its
 * slot held: the cache is for names asked again soon, not for keeping.
 */
#include "fs/dcache.h"
#include "fs/dir.h"
#include "fs/lock.h"

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

struct dcache {
	uint64_t rm_seq;	/* atomic: bumped by every dcache_drop */
	uint64_t hits, misses;	/* atomic, relaxed */
	struct glock lock[DCACHE_SHARDS];
	struct dslot slot[DCACHE_SLOTS];
};

struct dcache *dcache_new(uint64_t tree)
{
	struct dcache *dc = calloc(1, sizeof(*dc));

	if (!dc)
		return NULL;
	for (int i = 0; i < DCACHE_SHARDS; i++)
		glock_init(&dc->lock[i], GLOCK_RWLOCK, GLOCK_CLASS_CACHE, tree, -1, -1);
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

static struct glock *lock_of(struct dcache *dc, uint32_t s)
{
	return &dc->lock[s & (DCACHE_SHARDS - 1)];
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
	uint32_t s;
	bool found = false;

	if (len > DCACHE_NAME_MAX) {	/* never kept: always the tree's */
		__atomic_fetch_add(&dc->misses, 1, __ATOMIC_RELAXED);
		return false;
	}
	s = slot_of(dir, name, len);
	glock_read(lock_of(dc, s));
	const struct dslot *e = &dc->slot[s];
	if (matches(e, dir, name, len)) {
		hit->ino = e->ino;
		hit->index = e->index;
		hit->type = e->type;
		found = true;
	}
	glock_read_unlock(lock_of(dc, s));
	__atomic_fetch_add(found ? &dc->hits : &dc->misses, 1, __ATOMIC_RELAXED);
	return found;
}

void dcache_put(struct dcache *dc, uint64_t seq, uint64_t dir, const char *name,
		size_t len, const struct dir_hit *hit)
{
	uint32_t s;

	if (len > DCACHE_NAME_MAX || dir == 0)
		return;
	s = slot_of(dir, name, len);
	glock_write(lock_of(dc, s));
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
	glock_write_unlock(lock_of(dc, s));
}

void dcache_drop(struct dcache *dc, uint64_t dir, const char *name, size_t len)
{
	uint32_t s;

	__atomic_fetch_add(&dc->rm_seq, 1, __ATOMIC_SEQ_CST);
	if (len > DCACHE_NAME_MAX)
		return;
	s = slot_of(dir, name, len);
	glock_write(lock_of(dc, s));
	if (matches(&dc->slot[s], dir, name, len))
		dc->slot[s].dir = 0;
	glock_write_unlock(lock_of(dc, s));
}

void dcache_counts(struct dcache *dc, uint64_t *hits, uint64_t *misses)
{
	*hits = __atomic_load_n(&dc->hits, __ATOMIC_RELAXED);
	*misses = __atomic_load_n(&dc->misses, __ATOMIC_RELAXED);
}
