// SPDX-License-Identifier: MIT
/*
 * cache.c — the node cache (contract in cache.h and meta.h).
 *
 * Memory bound: the budget is split evenly over the shards; a shard over
 * its share evicts clean, unreferenced nodes with a clock (second chance)
 * over its list.  Referenced and dirty nodes may push a shard past its
 * share (they cannot be dropped); the excess goes once they are put or
 * written and the shard next inserts.
 */
#include "fs/btree/cache.h"
#include "fs/core/core.h"
#include "fs/base/probe.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CACHE_SHARDS 64u

struct shard {
	struct glock lock;		/* GLOCK_CLASS_CACHE */
	struct htable t;		/* hashed nodes by bytenr (node.hnode);
					 * sized to the budget, so it does
					 * not grow unless referenced nodes
					 * hold the shard over it */
	struct node *lru_head, *lru_tail;	/* every hashed node; the clock
						 * hand works from the tail */
};

struct node_cache {
	struct core *core;		/* fixed */
	uint32_t nodesize;		/* fixed */
	enum glock_type locktype;	/* fixed at create */
	unsigned groups;		/* fixed at create: 0 = locking=node */
	uint32_t shard_budget;		/* nodes per shard before eviction */
	struct shard shards[CACHE_SHARDS];

	struct glock dirty_lock;	/* GLOCK_CLASS_CACHE: the dirty list */
	struct node *dirty_head;
	uint64_t dirty_nodes;
	/* atomic: dirty nodes of transactions <= frozen belong to a commit
	 * that is writing them (cache_freeze); a drop leaves them listed */
	uint64_t frozen;

	uint64_t hits, misses;		/* atomic */
	uint64_t nodes;			/* atomic: nodes in memory */
};

static inline uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

static inline struct shard *shard_of(struct node_cache *nc, uint64_t bytenr)
{
	return &nc->shards[mix(bytenr / nc->nodesize) % CACHE_SHARDS];
}

struct node_cache *cache_create(struct core *c, uint32_t nodesize, uint64_t budget_bytes)
{
	struct node_cache *nc = calloc(1, sizeof(*nc));
	uint64_t budget_nodes = budget_bytes / nodesize;
	uint32_t nb = 16;

	if (!nc)
		return NULL;
	nc->core = c;
	nc->nodesize = nodesize;
	core_lock_scheme(c, &nc->locktype, &nc->groups);
	nc->shard_budget = (uint32_t)(budget_nodes / CACHE_SHARDS);
	if (nc->shard_budget < 2)
		nc->shard_budget = 2;
	while (nb < nc->shard_budget && nb < (1u << 16))
		nb <<= 1;
	for (unsigned i = 0; i < CACHE_SHARDS; i++) {
		struct shard *s = &nc->shards[i];

		glock_init(&s->lock, GLOCK_RWLOCK, GLOCK_CLASS_CACHE, 0, -1, -1);
		if (htable_init(&s->t, nb)) {
			cache_destroy(nc);
			return NULL;
		}
	}
	glock_init(&nc->dirty_lock, GLOCK_MUTEX, GLOCK_CLASS_CACHE, 0, -1, -1);
	return nc;
}

static void node_free(struct node *n)
{
	__atomic_fetch_sub(&n->nc->nodes, 1, __ATOMIC_RELAXED);
	free(n->data);
	free(n->groups);
	free(n);
}

void cache_destroy(struct node_cache *nc)
{
	if (!nc)
		return;
	for (unsigned i = 0; i < CACHE_SHARDS; i++) {
		struct shard *s = &nc->shards[i];

		struct hnode *h;

		while (s->t.b && (h = htable_pop(&s->t)))
			node_free(htable_entry(h, struct node, hnode));
		htable_destroy(&s->t);
	}
	free(nc);
}

static void lru_del(struct shard *s, struct node *n)
{
	if (!n->in_lru)
		return;
	if (n->lru_prev)
		n->lru_prev->lru_next = n->lru_next;
	else
		s->lru_head = n->lru_next;
	if (n->lru_next)
		n->lru_next->lru_prev = n->lru_prev;
	else
		s->lru_tail = n->lru_prev;
	n->lru_prev = n->lru_next = NULL;
	n->in_lru = 0;
}

static void lru_add(struct shard *s, struct node *n)
{
	n->lru_prev = NULL;
	n->lru_next = s->lru_head;
	if (s->lru_head)
		s->lru_head->lru_prev = n;
	else
		s->lru_tail = n;
	s->lru_head = n;
	n->in_lru = 1;
}

static void unhash(struct shard *s, struct node *n)
{
	if (!n->hashed)
		return;
	htable_remove(&s->t, &n->hnode);
	n->hashed = 0;
	s->t.count--;
	lru_del(s, n);
}

static struct node *hash_find(struct shard *s, uint64_t bytenr)
{
	struct hnode *h = htable_find(&s->t, bytenr);

	return h ? htable_entry(h, struct node, hnode) : NULL;
}

/*
 * Evict while the shard is over budget (write lock held): a clock over the
 * list of hashed nodes.  Referenced nodes (dirty ones hold a reference of
 * the dirty list) go back to the head; a node used since the hand last
 * passed gets a second chance.  The scan is bounded, so a shard full of
 * referenced nodes stays over budget rather than spinning.  Frees into
 * *freed (a chain through free_next) so the caller frees outside the lock.
 */
static void evict(struct node_cache *nc, struct shard *s, struct node **freed)
{
	uint32_t budget = 2 * (s->t.count - (s->t.count > nc->shard_budget ? nc->shard_budget : s->t.count)) + 16;

	while (s->t.count > nc->shard_budget && s->lru_tail && budget--) {
		struct node *n = s->lru_tail;

		if (__atomic_load_n(&n->refs, __ATOMIC_ACQUIRE) ||
		    __atomic_exchange_n(&n->accessed, 0, __ATOMIC_RELAXED)) {
			lru_del(s, n);
			lru_add(s, n);
			continue;
		}
		unhash(s, n);
		n->free_next = *freed;
		*freed = n;
	}
}

static void free_chain(struct node *n)
{
	while (n) {
		struct node *next = n->free_next;

		node_free(n);
		n = next;
	}
}

static void hash_insert(struct shard *s, struct node *n)
{
	htable_insert(&s->t, &n->hnode);
	n->hashed = 1;
	s->t.count++;
	lru_add(s, n);
}

/* Lock labels: the B-tree relabels root nodes (btree.c). */
static struct node *node_alloc(struct node_cache *nc, uint64_t bytenr, uint64_t owner, int level)
{
	struct node *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	if (posix_memalign((void **)&n->data, 4096, nc->nodesize)) {
		free(n);
		return NULL;
	}
	if (nc->groups) {
		if (posix_memalign((void **)&n->groups, 64, nc->groups * sizeof(*n->groups)))
			n->groups = NULL;
		if (!n->groups) {
			free(n->data);
			free(n);
			return NULL;
		}
		for (unsigned g = 0; g < nc->groups; g++)
			glock_init(&n->groups[g].l, nc->locktype, GLOCK_CLASS_GROUP, owner, level, (int)g);
	}
	glock_init(&n->lock, nc->locktype, GLOCK_CLASS_NODE, owner, level, -1);
	n->bytenr = bytenr;
	n->hnode.key = bytenr;
	n->nc = nc;
	n->refs = 1;
	__atomic_fetch_add(&nc->nodes, 1, __ATOMIC_RELAXED);
	return n;
}

static int match(const struct node *n, const struct node_expect *e)
{
	const uint8_t *b = n->data;

	if ((e->owner && nb_owner(b) != e->owner) ||
	    (e->level >= 0 && nb_level(b) != e->level) ||
	    (e->generation && nb_generation(b) != e->generation))
		return 0;
	return 1;
}

struct verify_arg {
	const struct node_expect *e;
	struct core *core;
};

static int verify_cb(const void *buf, uint64_t bytenr, void *arg)
{
	struct verify_arg *va = arg;
	char why[256];
	int ret = node_verify(buf, va->e, why, sizeof(why));

	(void)bytenr;
	if (ret)
		fprintf(stderr, "glassfs: node %" PRIu64 " (tree %" PRIu64 ", level %d): %s\n",
			va->e->bytenr, va->e->owner, va->e->level, why);
	return ret;
}

struct node *cache_read(struct node_cache *nc, const struct node_expect *e, int *err)
{
	struct shard *s = shard_of(nc, e->bytenr);
	struct node *n, *mine;
	struct verify_arg va = { e, nc->core };
	int ret;

	/* hits share the shard lock: nothing but the refcount changes */
	glock_lock(&s->lock, GLOCK_READ);
	n = hash_find(s, e->bytenr);
	if (n) {
		if (!match(n, e)) {
			glock_unlock(&s->lock, GLOCK_READ);
			*err = -ESTALE;
			return NULL;
		}
		__atomic_fetch_add(&n->refs, 1, __ATOMIC_RELAXED);
		if (!__atomic_load_n(&n->accessed, __ATOMIC_RELAXED))
			__atomic_store_n(&n->accessed, 1, __ATOMIC_RELAXED);
		glock_unlock(&s->lock, GLOCK_READ);
		__atomic_fetch_add(&nc->hits, 1, __ATOMIC_RELAXED);
		if (PROBE_ON(CACHE_HIT))
			GLASSFS_CACHE_HIT(e->bytenr, nb_level(n->data));
		*err = 0;
		return n;
	}
	glock_unlock(&s->lock, GLOCK_READ);

	__atomic_fetch_add(&nc->misses, 1, __ATOMIC_RELAXED);
	if (PROBE_ON(CACHE_MISS))
		GLASSFS_CACHE_MISS(e->bytenr, e->level);
	mine = node_alloc(nc, e->bytenr, e->owner, e->level < 0 ? 0 : e->level);
	if (!mine) {
		*err = -ENOMEM;
		return NULL;
	}
	ret = meta_read(nc->core, e->bytenr, mine->data, verify_cb, &va);
	if (ret) {
		node_free(mine);
		*err = ret < 0 ? ret : -EIO;
		return NULL;
	}
	{
		int level = nb_level(mine->data);
		uint64_t owner = nb_owner(mine->data);

		glock_relabel(&mine->lock, GLOCK_CLASS_NODE, owner, level, -1);
		for (unsigned g = 0; g < nc->groups; g++)
			glock_relabel(&mine->groups[g].l, GLOCK_CLASS_GROUP, owner, level, (int)g);
	}
	glock_lock(&s->lock, GLOCK_WRITE);
	n = hash_find(s, e->bytenr);
	if (n) {		/* another reader won the race */
		if (!match(n, e)) {
			glock_unlock(&s->lock, GLOCK_WRITE);
			node_free(mine);
			*err = -ESTALE;
			return NULL;
		}
		__atomic_fetch_add(&n->refs, 1, __ATOMIC_RELAXED);
		glock_unlock(&s->lock, GLOCK_WRITE);
		node_free(mine);
		*err = 0;
		return n;
	}
	{
		struct node *freed = NULL;

		hash_insert(s, mine);
		evict(nc, s, &freed);
		glock_unlock(&s->lock, GLOCK_WRITE);
		free_chain(freed);
	}
	*err = 0;
	return mine;
}

struct node *cache_new(struct node_cache *nc, uint64_t bytenr, uint64_t transid,
		       uint64_t owner, int level)
{
	struct shard *s = shard_of(nc, bytenr);
	struct node *n = node_alloc(nc, bytenr, owner, level), *old, *freed = NULL;

	if (!n)
		return NULL;
	memset(n->data, 0, nc->nodesize);
	/* a stale copy of the block must never be served again */
	glock_lock(&s->lock, GLOCK_WRITE);
	old = hash_find(s, bytenr);
	if (old) {
		unhash(s, old);
		if (__atomic_load_n(&old->refs, __ATOMIC_ACQUIRE) == 0) {
			old->free_next = freed;
			freed = old;
		}
	}
	n->refs = 2;		/* the caller's and the dirty list's */
	hash_insert(s, n);
	glock_unlock(&s->lock, GLOCK_WRITE);
	free_chain(freed);

	glock_lock(&nc->dirty_lock, GLOCK_WRITE);
	n->dirty = 1;
	n->dirty_trans = transid;
	n->dprev = NULL;
	n->dnext = nc->dirty_head;
	if (nc->dirty_head)
		nc->dirty_head->dprev = n;
	nc->dirty_head = n;
	nc->dirty_nodes++;
	glock_unlock(&nc->dirty_lock, GLOCK_WRITE);
	return n;
}

/* The caller holds a reference, so refs >= 1: no lock needed. */
void cache_get(struct node *n)
{
	__atomic_fetch_add(&n->refs, 1, __ATOMIC_RELAXED);
}

void cache_put(struct node *n)
{
	struct shard *s;
	int last;

	if (!n)
		return;
	/* Drops that leave a reference need no lock.  The last one happens
	 * under the shard lock (shared): the evictor and unhash (exclusive)
	 * then see either a reference or a settled zero. */
	for (uint32_t old = __atomic_load_n(&n->refs, __ATOMIC_RELAXED); old > 1;)
		if (__atomic_compare_exchange_n(&n->refs, &old, old - 1, false,
						__ATOMIC_RELEASE, __ATOMIC_RELAXED))
			return;
	s = shard_of(n->nc, n->bytenr);
	glock_lock(&s->lock, GLOCK_READ);
	/* an unhashed node cannot be found again: whoever drops its last
	 * reference frees it; a hashed one stays for the evictor */
	last = __atomic_sub_fetch(&n->refs, 1, __ATOMIC_ACQ_REL) == 0 && !n->hashed;
	glock_unlock(&s->lock, GLOCK_READ);
	if (last)
		node_free(n);
}

/* Take n off the dirty list if it is there; returns 1 if it was (the
 * caller then owns the dirty list's reference). */
static int undirty(struct node_cache *nc, struct node *n)
{
	int was;

	glock_lock(&nc->dirty_lock, GLOCK_WRITE);
	was = n->dirty;
	if (was) {
		if (n->dprev)
			n->dprev->dnext = n->dnext;
		else
			nc->dirty_head = n->dnext;
		if (n->dnext)
			n->dnext->dprev = n->dprev;
		n->dprev = n->dnext = NULL;
		n->dirty = 0;
		nc->dirty_nodes--;
	}
	glock_unlock(&nc->dirty_lock, GLOCK_WRITE);
	return was;
}

/* Is n a dirty node of a transaction a commit is writing?  Then its
 * writeback, not a drop, takes it off the dirty list: the superblock of
 * that commit points at it even though the running transaction freed it.
 * dirty_trans is fixed at cache_new. */
static bool frozen(struct node_cache *nc, struct node *n)
{
	return n->dirty_trans && n->dirty_trans <= __atomic_load_n(&nc->frozen, __ATOMIC_ACQUIRE);
}

void cache_freeze(struct node_cache *nc, uint64_t transid)
{
	__atomic_store_n(&nc->frozen, transid, __ATOMIC_RELEASE);
}

void cache_drop(struct node *n)
{
	struct node_cache *nc = n->nc;
	struct shard *s = shard_of(nc, n->bytenr);

	glock_lock(&s->lock, GLOCK_WRITE);
	unhash(s, n);
	glock_unlock(&s->lock, GLOCK_WRITE);
	if (!frozen(nc, n) && undirty(nc, n))
		cache_put(n);
}

void cache_forget(struct node_cache *nc, uint64_t bytenr)
{
	struct shard *s = shard_of(nc, bytenr);
	struct node *n;

	glock_lock(&s->lock, GLOCK_WRITE);
	n = hash_find(s, bytenr);
	if (!n) {
		glock_unlock(&s->lock, GLOCK_WRITE);
		return;
	}
	/* hold it while we look at the dirty list */
	__atomic_fetch_add(&n->refs, 1, __ATOMIC_RELAXED);
	unhash(s, n);
	glock_unlock(&s->lock, GLOCK_WRITE);
	if (!frozen(nc, n) && undirty(nc, n))
		cache_put(n);
	cache_put(n);
}

uint64_t cache_dirty_bytes(struct node_cache *nc)
{
	return __atomic_load_n(&nc->dirty_nodes, __ATOMIC_RELAXED) * nc->nodesize;
}

static int cmp_bytenr(const void *a, const void *b)
{
	const struct node *x = *(struct node *const *)a, *y = *(struct node *const *)b;

	return x->bytenr < y->bytenr ? -1 : x->bytenr > y->bytenr;
}

int cache_writeback(struct node_cache *nc, uint64_t transid,
		    uint64_t *nodes, uint64_t *bytes)
{
	struct node **v = NULL, *n;
	size_t cnt = 0, cap = 0;
	const uint8_t *fsid = core_fsid(nc->core);
	int ret = 0;

	glock_lock(&nc->dirty_lock, GLOCK_WRITE);
	for (n = nc->dirty_head; n; n = n->dnext) {
		if (n->dirty_trans > transid)
			continue;
		if (cnt == cap) {
			size_t ncap = cap ? cap * 2 : 256;
			struct node **nv = realloc(v, ncap * sizeof(*v));

			if (!nv) {
				glock_unlock(&nc->dirty_lock, GLOCK_WRITE);
				free(v);
				return -ENOMEM;
			}
			v = nv;
			cap = ncap;
		}
		v[cnt++] = n;
	}
	/* the dirty list's references keep them alive: only writeback (one
	 * commit at a time) takes frozen nodes off the list; cache_drop and
	 * cache_forget leave them (cache_freeze).  The next transaction never
	 * changes them in place (their generation is older): it copies them,
	 * reading the buffer while node_finalize below sets the checksum in
	 * the header, which the copy overwrites with its own. */
	glock_unlock(&nc->dirty_lock, GLOCK_WRITE);

	if (cnt)
		qsort(v, cnt, sizeof(*v), cmp_bytenr);
	for (size_t i = 0; i < cnt; i++) {
		n = v[i];
		node_finalize(n->data, nc->nodesize, fsid);
		ret = meta_write(nc->core, n->bytenr, n->data);
		if (ret) {
			fprintf(stderr, "glassfs: writing node %" PRIu64 ": %s\n", n->bytenr,
				strerror(ret < 0 ? -ret : EIO));
			break;
		}
	}
	if (!ret) {
		for (size_t i = 0; i < cnt; i++)
			if (undirty(nc, v[i]))
				cache_put(v[i]);
		if (nodes)
			*nodes = cnt;
		if (bytes)
			*bytes = (uint64_t)cnt * nc->nodesize;
	}
	free(v);
	return ret < 0 ? ret : (ret ? -EIO : 0);
}

uint32_t cache_nodesize(const struct node_cache *nc) { return nc->nodesize; }
struct core *cache_core(const struct node_cache *nc) { return nc->core; }
enum glock_type cache_locktype(const struct node_cache *nc) { return nc->locktype; }
unsigned cache_groups(const struct node_cache *nc) { return nc->groups; }

void cache_stats(struct node_cache *nc, uint64_t *hits, uint64_t *misses, uint64_t *nodes)
{
	if (hits)
		*hits = __atomic_load_n(&nc->hits, __ATOMIC_RELAXED);
	if (misses)
		*misses = __atomic_load_n(&nc->misses, __ATOMIC_RELAXED);
	if (nodes)
		*nodes = __atomic_load_n(&nc->nodes, __ATOMIC_RELAXED);
}
