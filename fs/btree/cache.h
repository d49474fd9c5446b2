/* SPDX-License-Identifier: MIT */
/*
 * cache.h — the node cache: every B-tree node in memory is a struct node
 * owned by the cache, found by logical address (bytenr).
 *
 *  - Hash by bytenr, cut into shards, each with its own rwlock (class
 *    GLOCK_CLASS_CACHE).  A hit takes it shared and only bumps the
 *    reference count, so hot interior nodes cost no exclusive lock and no
 *    cache wait shows up beside the B-tree lock waits in the probes.
 *  - Reference counts: cache_read()/cache_new() return a referenced node,
 *    cache_put() drops it.  Every cached node is on its shard's clock list;
 *    when the shard is over its share of the budget the hand evicts nodes
 *    nobody references and nobody used since it last passed.  Dirty nodes
 *    hold a reference of the dirty list, so they are never evicted.
 *  - Dirty nodes: a node created in transaction T (cache_new) is dirty
 *    until cache_writeback(T) checksums and writes it.  Nodes are never
 *    dirtied again: a later change copies the node (btree.c).  The dirty
 *    list holds a reference of its own.  Commits are pipelined (txn.c):
 *    cache_freeze(T) marks T's dirty nodes as the writing commit's, and
 *    transaction T+1, running meanwhile, may copy and drop them without
 *    taking them off the dirty list.
 *  - A freed node (cache_drop) or a reused block (cache_forget) leaves the
 *    hash at once; holders of a reference keep a valid buffer until their
 *    cache_put.
 *
 * Lock order: B-tree node locks > shard lock > dirty lock.  No function
 * here calls into the core while holding a cache lock.
 */
#ifndef GLASSFS_CACHE_H
#define GLASSFS_CACHE_H

#include <stdint.h>
#include "fs/base/htable.h"
#include "fs/base/lock.h"
#include "fs/btree/meta.h"
#include "fs/btree/node.h"

/* One lock group on a cache line of its own: groups of a hot node are
 * taken by different CPUs, and must not bounce one line between them.
 * The rest of the line is the group's region of the node (leaf or
 * interior; btree.c, "Regions"): meaningful only while the node's `laid` is set. */
struct glock_line {
	struct glock l;
	uint32_t start;		/* first slot of the region; moved by holders
				 * of this group (inserts and, in leaves,
				 * deletes in a lower group) */
	struct key fence;	/* lowest key routed to the group (group > 0);
				 * changed only with every group held */
} __attribute__((aligned(64)));
_Static_assert(sizeof(struct glock_line) == 64, "a group and its region share one line");

struct node {
	uint64_t bytenr;	/* fixed */
	uint8_t *data;		/* nodesize bytes; layout in node.h.  Guarded by
				 * the node's lock (groups: see btree.c) */
	struct node_cache *nc;	/* fixed */
	/* guarded by the shard lock (write), except refs: atomic; it drops to
	 * 0 only under the shard lock (read), is raised from 0 only by a
	 * lookup under the shard lock, and an evictor or unhash (write)
	 * frees a node only at 0 */
	uint32_t refs;
	uint8_t hashed;		/* findable by bytenr */
	uint8_t in_lru;		/* on the shard's clock list (== hashed) */
	uint8_t accessed;	/* atomic: used since the clock hand passed */
	struct hnode hnode;	/* key = bytenr; in the shard's table */
	struct node *free_next;	/* unhashed, to be freed outside the lock */
	struct node *lru_prev, *lru_next;
	/* guarded by the dirty lock */
	uint8_t dirty;
	uint64_t dirty_trans;
	struct node *dprev, *dnext;
	/* locking (btree.c) */
	uint32_t seq;		/* groups: odd while a writer holds every group */
	uint8_t laid;		/* groups: regions set (atomic;
				 * zero from node_alloc's calloc) */
	uint8_t active;		/* groups with a region of their own (>= 1):
				 * set with every group held */
	struct glock lock;	/* locking=node */
	struct glock_line *groups;	/* locking=groups:N: N locks, else NULL */
};

/* Referenced node at bytenr: from the cache, or read and verified against
 * e (e->bytenr must equal bytenr).  *err: 0, -EIO (verification failed),
 * -ESTALE (a cached node does not match e: the caller followed a pointer
 * from a node that changed, and should search again), -ENOMEM. */
struct node *cache_read(struct node_cache *nc, const struct node_expect *e, int *err);
/* A new node for a block just allocated in transaction transid: zeroed
 * buffer, dirty, referenced (once for the caller).  NULL on ENOMEM. */
struct node *cache_new(struct node_cache *nc, uint64_t bytenr, uint64_t transid,
		       uint64_t owner, int level);
void cache_get(struct node *n);
void cache_put(struct node *n);
/* The tree no longer references n (its block was freed): unhash it and
 * take it off the dirty list. */
void cache_drop(struct node *n);

/* Dirty nodes of transactions <= transid are being written by a commit:
 * cache_drop/cache_forget leave them on the dirty list for it. */
void cache_freeze(struct node_cache *nc, uint64_t transid);

uint32_t cache_nodesize(const struct node_cache *nc);
struct core *cache_core(const struct node_cache *nc);
/* Lock scheme read from the core at cache_create. */
enum glock_type cache_locktype(const struct node_cache *nc);
unsigned cache_groups(const struct node_cache *nc);
/* Counters since cache_create. */
void cache_stats(struct node_cache *nc, uint64_t *hits, uint64_t *misses, uint64_t *nodes);

#endif
