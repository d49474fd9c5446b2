// SPDX-License-Identifier: MIT
/*
 * btree_fixture.c — see btree_fixture.h.  Implements the core side of
 * fs/btree/meta.h and the txn accessors for tests/unit/btree_mem only.
 */
#include "tests/unit/btree_fixture.h"
#include "fs/btree/meta.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { B_FREE = 0, B_USED = 1, B_PINNED = 2 };

struct txn {
	struct core *c;
	uint64_t transid;
};

struct core {
	uint32_t nodesize;
	uint64_t nblocks;
	uint8_t *store;
	uint8_t *state;		/* B_* per block */
	uint8_t *fresh;		/* allocated in the running transaction */
	uint64_t hint, used;
	struct glock lock;	/* guards the block maps */
	struct node_cache *cache;
	uint64_t cache_bytes;
	enum glock_type type;
	unsigned groups;
	uint64_t generation;
	struct txn txn;
	uint8_t fsid[16];
	uint64_t writes;
	int64_t fail_after;
	bool cow_lock_path;
	int corrupt;		/* core_corrupt called: -EUCLEAN, as the core's abort */
};

struct core *fx_create(uint32_t nodesize, uint64_t nblocks, enum glock_type type,
		       unsigned groups, uint64_t cache_bytes)
{
	struct core *c = calloc(1, sizeof(*c));

	c->nodesize = nodesize;
	c->nblocks = nblocks;
	c->store = calloc(nblocks, nodesize);
	c->state = calloc(nblocks, 1);
	c->fresh = calloc(nblocks, 1);
	if (!c->store || !c->state || !c->fresh) {
		fprintf(stderr, "fixture: out of memory\n");
		exit(2);
	}
	glock_init(&c->lock, GLOCK_MUTEX, GLOCK_CLASS_ALLOC, 0, -1, -1);
	c->type = type;
	c->groups = groups;
	c->cache_bytes = cache_bytes;
	c->generation = 1;
	c->txn = (struct txn){ c, 2 };
	memcpy(c->fsid, "btree-fixture-id", 16);
	c->fail_after = -1;
	c->cache = cache_create(c, nodesize, cache_bytes);
	return c;
}

void fx_destroy(struct core *c)
{
	cache_destroy(c->cache);
	free(c->store);
	free(c->state);
	free(c->fresh);
	free(c);
}

struct txn *fx_txn(struct core *c) { return &c->txn; }

int fx_commit(struct core *c)
{
	uint64_t nodes, bytes;
	int ret = cache_writeback(c->cache, c->txn.transid, &nodes, &bytes);

	if (ret)
		return ret;
	for (uint64_t i = 0; i < c->nblocks; i++) {
		if (c->state[i] == B_PINNED) {
			c->state[i] = B_FREE;
			c->used--;
			cache_forget(c->cache, (i + 1) * c->nodesize);
		}
		c->fresh[i] = 0;
	}
	c->generation = c->txn.transid;
	c->hint = 0;	/* lowest blocks first: keeps the store's touched pages few */
	c->txn.transid++;
	return 0;
}

void fx_new_cache(struct core *c)
{
	cache_destroy(c->cache);
	c->cache = cache_create(c, c->nodesize, c->cache_bytes);
}

void fx_corrupt(struct core *c, uint64_t bytenr, uint32_t offset)
{
	c->store[(bytenr / c->nodesize - 1) * c->nodesize + offset] ^= 0x40;
}

uint64_t fx_used_blocks(struct core *c) { return c->used; }
uint64_t fx_writes(struct core *c) { return c->writes; }
void fx_fail_alloc_after(struct core *c, int64_t n) { c->fail_after = n; }

/* ---- meta.h, core side ---- */

static int fx_meta_alloc(struct txn *t, uint64_t owner, int level, uint64_t *bytenr)
{
	struct core *c = t->c;
	uint64_t i;

	(void)owner;
	(void)level;
	glock_lock(&c->lock, GLOCK_WRITE);
	if (c->fail_after == 0 || c->used == c->nblocks) {
		glock_unlock(&c->lock, GLOCK_WRITE);
		return -ENOSPC;
	}
	if (c->fail_after > 0)
		c->fail_after--;
	for (i = c->hint; c->state[i % c->nblocks] != B_FREE; i++)
		;
	i %= c->nblocks;
	c->hint = i + 1;
	c->state[i] = B_USED;
	c->fresh[i] = 1;
	c->used++;
	glock_unlock(&c->lock, GLOCK_WRITE);
	*bytenr = (i + 1) * c->nodesize;
	cache_forget(c->cache, *bytenr);
	return 0;
}

static void fx_meta_free(struct txn *t, uint64_t owner, int level, uint64_t bytenr)
{
	struct core *c = t->c;
	uint64_t i = bytenr / c->nodesize - 1;

	(void)owner;
	(void)level;
	glock_lock(&c->lock, GLOCK_WRITE);
	if (c->state[i] != B_USED) {
		fprintf(stderr, "fixture: meta_free of block %llu in state %d\n",
			(unsigned long long)bytenr, c->state[i]);
		abort();
	}
	if (c->fresh[i]) {
		c->state[i] = B_FREE;
		c->fresh[i] = 0;
		c->used--;
		if (i < c->hint)
			c->hint = i;
	} else {
		c->state[i] = B_PINNED;
	}
	glock_unlock(&c->lock, GLOCK_WRITE);
}

/* No snapshots in the in-memory core: nothing is ever shared. */
static int fx_meta_shared_drop(struct txn *t, uint64_t owner, int level, uint64_t bytenr)
{
	(void)t; (void)owner; (void)level; (void)bytenr;
	return 0;
}

static int fx_meta_ref(struct txn *t, uint64_t owner, int level, uint64_t bytenr, int delta)
{
	(void)t; (void)owner; (void)level; (void)bytenr; (void)delta;
	return 0;
}

static int fx_meta_leaf_item_ref(struct txn *t, const struct key *k, const void *data,
				 uint32_t size, int delta)
{
	(void)t; (void)k; (void)data; (void)size; (void)delta;
	return 0;
}

/* The B-tree's block ops of the in-memory core (meta.h). */
static const struct meta_ops fx_meta_ops = {
	.alloc = fx_meta_alloc,
	.free = fx_meta_free,
	.shared_drop = fx_meta_shared_drop,
	.ref = fx_meta_ref,
	.leaf_item_ref = fx_meta_leaf_item_ref,
};

const struct meta_ops *core_meta_ops(const struct core *c) { (void)c; return &fx_meta_ops; }

int meta_read(struct core *c, uint64_t bytenr, void *buf,
	      int (*verify)(const void *buf, uint64_t bytenr, void *arg), void *arg)
{
	uint64_t i = bytenr / c->nodesize - 1;

	if (bytenr % c->nodesize || i >= c->nblocks)
		return -EIO;
	memcpy(buf, c->store + i * c->nodesize, c->nodesize);
	if (verify && verify(buf, bytenr, arg)) {
		memset(buf, 0, c->nodesize);
		return -EIO;
	}
	return 0;
}

int meta_write(struct core *c, uint64_t bytenr, const void *buf)
{
	uint64_t i = bytenr / c->nodesize - 1;

	if (bytenr % c->nodesize || i >= c->nblocks)
		return -EIO;
	memcpy(c->store + i * c->nodesize, buf, c->nodesize);
	__atomic_fetch_add(&c->writes, 1, __ATOMIC_RELAXED);
	return 0;
}

struct node_cache *core_cache(struct core *c) { return c->cache; }
void core_lock_scheme(const struct core *c, enum glock_type *type, unsigned *groups)
{
	*type = c->type;
	*groups = c->groups;
}
bool core_cow_lock_path(const struct core *c) { return c->cow_lock_path; }
void fx_set_cow_lock_path(struct core *c, bool on) { c->cow_lock_path = on; }
uint64_t core_generation(const struct core *c) { return c->generation; }
/* the real one (fs/core/core.c) logs and forces read-only: here log and
 * remember, for a test to read back */
void core_corrupt(struct core *c, const char *where, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "fixture: corruption in %s: ", where);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	__atomic_store_n(&c->corrupt, -EUCLEAN, __ATOMIC_SEQ_CST);
}
const uint8_t *core_fsid(const struct core *c) { return c->fsid; }
uint32_t core_nodesize(const struct core *c) { return c->nodesize; }
uint64_t txn_transid(const struct txn *t) { return t->transid; }
struct core *txn_core(const struct txn *t) { return t->c; }
