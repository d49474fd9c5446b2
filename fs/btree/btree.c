// SPDX-License-Identifier: MIT
/*
 * btree.c — the one copy-on-write B-tree (contract in btree.h, node format
 * in node.h, node cache in cache.h).
 *
 * ## Copy-on-write
 * A node whose generation is not the running transid is never changed in
 * place: the first modifying search in transaction T that passes it copies
 * it to a newly allocated block (cow_node), points the parent (or the root)
 * at the copy and frees the old block (meta_free: pinned until T commits).
 * A node whose generation is T was created in T and is changed in place.
 *
 * ## Shape changes
 * Searches fix the shape on the way down and then start again from the
 * root ("restart"), so every change is made with a fresh, locked path:
 *   - ins_len > 0: an interior node with fewer than 2 free pointers is
 *     split before descending into it (so a child split always finds room
 *     in its parent); a leaf without room for the item is split; a root
 *     that needs splitting first grows a new root above it.  Under
 *     locking=groups:N that check holds one group of the node only, so
 *     it is a hint: a child split checks again under the groups it
 *     inserts with (tail_extend) and starts again when the node filled.
 *   - ins_len < 0: a node below a quarter full is merged with, or refilled
 *     from, a sibling; a root with a single child is replaced by the child.
 * Separators follow B+-tree rules (node.h), so no change ever has to
 * rewrite keys in ancestors.
 *
 * ## Locking (lock.h order: root lock > nodes top-down > groups ascending)
 * root->lock (always a rwlock) is held, read mode, while the root node is
 * locked, so the root pointer cannot change under a searcher; changing the
 * root (its COW, growth or shrink) restarts the search with root->lock in
 * write mode.  Then lock coupling: a child is locked before its parent is
 * released.  Readers release the parent at once.  Modifying searches keep
 * ancestors only while the child could still push a change up to them
 * (unlock_up): a child that is neither nearly full (inserts) nor low
 * (deletes) releases every ancestor.  A search that finds the child's lock
 * busy (glock_busy, a hint) releases its whole path, waits for that lock
 * alone, and searches again — up to four times per search, then it waits
 * coupled — so a convoy on a hot leaf does not hold the root's locks and
 * stall searches bound for other leaves.
 *
 * locking=node: one lock per node (class ROOT for the root node, NODE
 * otherwise).  locking=groups:N: each node has N locks.  Rules common to
 * leaves and interior nodes:
 *   - node->seq is odd while a writer holds every group ("all groups").
 *   - With one group held in write mode a thread may change only its own
 *     slot's child pointer (COW of a child) or its own item's bytes in
 *     place; copying the node itself (COW) needs no group beyond that,
 *     because a node of an older generation is never changed in place and
 *     the parent's slot (held) serialises copiers.
 *   - A split or merge of a node, and a root change, need all groups of
 *     that node; a merge also needs all groups of its parent (it deletes a
 *     pointer or moves a separator).  A search that finds it holds fewer
 *     restarts with need[] raised for those levels (enum want).
 * The root node's group locks carry class ROOT (with their group index),
 * so root waits stay identifiable in both schemes.
 *
 * ## Regions
 * Group g of a node (leaf or interior) owns the slots [start[g],
 * start[g+1]) (its region; the last group's ends at nritems) and the keys
 * from fence[g] up to fence[g+1] (group 0 from the smallest key).  start
 * and fence live in the in-memory node only, in the spare bytes of each
 * group's cache line (struct glock_line): the node's bytes stay a packed
 * node in the on-disk format at every moment, so write-out, checksums and
 * COW copy it as they always did and nothing converts.  regions_layout
 * deals the slots out — min(N, nritems) groups get nearly equal ranges,
 * fence[g] = the key at start[g]; the rest get empty regions and no fence
 * — whenever every group held for writing is released (a split, merge,
 * root change, or a change routed to group 0), on a node created by a split or
 * root growth before it is linked, and, through regions_init, on a node
 * read from disk before its first single-group lock (COW copies the
 * original's regions).
 *   - A search picks its group by the fences (read racily, validated by
 *     seq, which only a relayout moves), locks it, and searches only the
 *     region's slots (region_search): nobody shifts them while it is held.
 *     The child's upper bound past the region's last slot is fence[g+1]:
 *     the key at start[g+1], which no shift moves (child_hi).
 *   - In an interior node a child split inserts one pointer right after the child's slot, in
 *     the child's region: it moves the slots above it, so it holds the
 *     groups from the region's up (W_TAIL, groups g..N-1 ascending),
 *     shifts, and moves start[g+1..N-1] up one (parent_insert).  Groups
 *     below g see nothing move.  Every shifter holds group N-1, so
 *     nritems and the room left are exact for a holder of N-1: the check
 *     that a node about to take a pointer has room (node_full) is made
 *     under the same tail it inserts with.  At the right edge, where
 *     ascending keys (new inode numbers) go, that is the last group alone.
 *   - In an interior node the key at a region's first slot is its fence
 *     and only a relayout moves it (a split inserts after its child;
 *     separators move only in merges, under all groups), so fences stay
 *     true between relayouts.
 *   - regions_stale asks for all groups instead of a tail when too few
 *     groups are in use for the slots or one region has grown past twice
 *     its share (appends pile into the last region): a relayout now and
 *     then keeps each group's share of the readers.
 *
 * ## Leaves: regions, changes holding the groups from their own up
 * A leaf's item headers sit in slot order after the node header and their
 * data is packed from the end of the block down in the same order, so an
 * insert, delete or resize at slot s moves the headers and the data of
 * the items after s, and nothing before s.  So a change in group g's
 * region holds groups g..N-1 (W_TAIL), as a child split does in its
 * parent: the items it shifts are all in regions it holds, and group N-1,
 * which every shifter holds, makes nritems and the leaf's free space
 * exact for the room check (leaf_room) and the split decision.  A leaf
 * change never takes every group just because it changes the leaf:
 *   - the search for a change locks the tail of the region its key is
 *     routed to (lock_region; the slot found inside the region, or the
 *     region's end when k sorts after its items: k's item joins g) and
 *     afterwards the change moves start[g+1..N-1] by the items it added or
 *     removed (leaf_shifted);
 *   - readers and in-place writers hold one group.  A reader whose slot
 *     is its region's end (its key sorts after the region's items) and
 *     btree_next walk the lock up one group at a time, ascending
 *     (leaf_walk_up: holding h keeps start[h+1] still, since only holders
 *     of h or a lower group move it); btree_prev past the region's start
 *     searches again;
 *   - every group only to split, merge or rebalance the leaf, for a change
 *     routed to group 0 (its tail is every group anyway), when the regions
 *     are worth dealing again (regions_stale: too few groups in use, or
 *     one region past twice its share — appends at the right edge pile
 *     into the last one), and to free a leaf emptied by a delete.  The
 *     release of every group lays the leaf out again.
 * Deletes keep fences true: keys deleted from a region leave its range
 * as it was, and the key at a leaf region's first slot may then lie above
 * its fence (leaf searches do not assume it equal, unlike interior ones).
 * At the right edge, where ascending keys (new inode numbers) go, a
 * change holds the last group alone; at random places N/2 groups on
 * average.  tests/unit/btree_mem counts it with the lock module's
 * per-thread counts (leaf-groups-per-change: 16 groups per call before,
 * 2-4 at the right edge and ~9 at random places after, groups:16; and
 * one-leaf-x16: 16 threads changing one leaf against their models, ~9
 * per change), and the root groups a child split write-locks
 * (root-groups-per-split).
 *
 * Not built: room of its own per region (a gap after each region in the
 * in-memory node, packed at write-out and spread at read), which would
 * let a change hold its own group alone instead of g..N-1, in leaves and
 * interior nodes.  It needs every reader of node bytes (node.h accessors,
 * walk, ref_children, the write path) to see the packed form or convert,
 * and the measurements below put the waits on the root, not in leaves.
 * A way in, sketched but not built: only a node of the running
 * transaction is ever changed, so only such a node needs the spread form
 * — cow_node and new_node would lay it out spread (each region's headers
 * or pointers followed by slack, a leaf region's data packed into an area
 * of its own: an item's data offset is in its header, so data need not be
 * packed in memory), cache_freeze would pack T's nodes before writeback
 * checksums them (T's writers are done by then, but T+1 may be copying
 * one: pack under its groups, or copy from the spread form), and
 * every slot access in btree.c would go through a slot-to-position map
 * kept per region in the group's cache line, with a per-region count so
 * no change needs the last group.  A region out of room re-lays the node
 * under every group.  No layer above reads node bytes (btree_walk,
 * ref_children and the item accessors are in this file); the unit tests'
 * structural checks read them after a commit, packed.
 *
 * ## A split takes the groups above its own last, without waiting
 * A child split inserts a pointer in its parent's region g and so needs
 * the parent's groups g..N-1; it also needs every group of the child,
 * which it waits for (the child is busy: every search below passes it).
 * Asking for the tail before the descent (want_shift) held g..N-1 of the
 * parent through that wait, and every reader routed to a higher region of
 * the parent queued behind it.  Now the search that finds the child
 * without room holds the parent's group g alone (for writing), waits for
 * the child's groups, and only then extends the hold to g+1..N-1 by
 * trylock (tail_extend: out of lock order, so it never waits); when one is
 * busy it drops them and restarts asking for the tail as before.  So it
 * does when the parent has filled meanwhile: the room seen with group g
 * alone says nothing of threads in regions above g, whose splits hold
 * their own tails and add pointers while we wait for the child (the
 * soak's "parent unexpectedly full"; tests/unit/btree_mem split-race).  Group 0
 * and stale regions still ask for every group.  The restart that raises
 * wlevel for a split asks for the child's groups at once (one restart
 * where there were two, each write-locking the parent's group), and a
 * search that finds the child without room while it holds only a tail of
 * it (cowlock=path, where wlevel never rises) first asks for the child's
 * groups alone, so it reaches tail_extend too.  So a split at a random
 * place waits for one group of its parent (plus every group for group 0
 * and relayouts): ~3 per split, 9-11 before, under cowlock=leaf and path
 * (root-groups-per-split, through glock_counts' tried[]).  In fs_mark's
 * creates (enginebench, 64,000 files, 16 threads, groups:16) the root's
 * tail holds that could wait fall from ~650 to ~195 per run (those left:
 * inserts while the root is still a leaf), ~460 extended by trylock and
 * < 15 of those found busy; enginebench prints the root-class write
 * locks per create (root_w_per_op): ~0.075 with cowlock=leaf, ~0.05 of
 * them could wait, and ~4.1 with cowlock=path, one per search by design.
 *
 * Why the root was waited on during creates (fs_mark, 64,000 files, 16
 * threads, groups:16, counted with a diagnostic build): every B-tree wait
 * of the run is on the fs tree (none on the extent, free-space or root
 * trees), the root pointer lock (root->lock) has < 3 % of it, and the
 * rest is on the root node's groups, mostly readers.  The root stays a
 * level-1 node (the leaves' parent) for the first ~500 of ~2,300 leaf
 * splits, then a level-2 node that changes only for ~7 level-1 splits.
 * With cowlock=leaf the root is write-locked ~1,100 times one group
 * (raising wlevel and copying its children), ~700 times g..N-1 and ~80
 * times every group per run: all child splits while it is the leaves'
 * parent, and a handful of level-1 splits.  cowlock=path write-locks one
 * root group per search by design (~4 per create: the talk's locking).
 * The readers' waits are few and long (~1-2 ms: a holder preempted, 16
 * threads on 2 CPUs) behind those writers.
 *
 * Left for per-region room (above): a change still holds g..N-1 of the
 * node it changes (a leaf change; a child's pointer insert once the
 * child is held), only for the change itself now.  And what the root's
 * wait is now: readers of its groups behind the one-group write holds
 * (cowlock=leaf: ~1,000 per run, copies of its children and the splits
 * of leaves while it is their parent; cowlock=path: every search), few
 * and long (a holder preempted, 16 threads on 2 CPUs); regions do not
 * help where threads share a root region (spread: ~10 root children for
 * 16 threads; not spread: every create's inode item at the right edge).
 *
 * ## Where groups:N waited, and what regions change
 * Measured in-process (tests/bench/engine.bench: fs_mark's creates through
 * fsops, 16 threads on 2 loaded CPUs, the lock module's per-class wait
 * counters, glock_stats_read): before regions, with groups:16, 97-99 % of
 * the B-tree lock wait was on the root node's groups — not on the root
 * pointer lock (root->lock, level -1) and hardly on leaves — under
 * cowlock=path and cowlock=leaf alike.  Per 16,000 creates the root node
 * was locked
 *   cowlock=path: ~65,000 times one group for writing, ~1,600 times all
 *                 groups for writing (child splits, root changes);
 *   cowlock=leaf: ~82,000 times one group for reading, ~1,600 all groups
 *                 for writing, ~600 one group for writing (a child's COW).
 * So the wait was readers and single-group writers of the root queued
 * behind the all-groups writers, which split a child while holding every
 * root group.  With regions and waits for a busy child taken outside the
 * path (both above), the same bench against main's enginebench in one
 * interleaved run (ENG_BASE; 64,000 files, 16 threads, rwlock, load
 * 10-16 on 2 CPUs) gives the root's share of B-tree lock wait, before ->
 * after: node/path 96 -> 28 %, groups:16/path 98 -> 25 %, groups:16/leaf
 * 34 -> 27 %; at 16,000 files (the root at level 1, so every leaf split
 * adds a root pointer) groups:16 98 -> 71 % (path) and 98 -> 86 % (leaf).
 * The root waits left are few and long (a few hundred per 16,000
 * creates, ~10 ms each: a holder preempted with 16 threads on 2 CPUs) on
 * the two hot regions of fs_mark's keys: the right edge, where every
 * create's inode item goes, and the directories' entries at the left,
 * whose splits still hold g..N-1.
 *
 * With leaf regions (above) the same interleaved run (main's
 * enginebench plus its leaf-wait counter as base; 64,000 files, 16
 * threads, rwlock, load 8-16 on 2 CPUs) splits the B-tree wait into root,
 * leaves and the interior nodes between, before -> after:
 * groups:16/path root 38 -> 31 %, leaves 15 -> 12 %, so about 47 -> 57 %
 * on interior nodes below the root; groups:16/leaf root 21 -> 38 %,
 * leaves 3 -> 8 % (one run each; shares move 10-20 points between runs
 * at this load).  The leaves were never where groups:16 waited: every
 * create's inode items go to the one rightmost leaf and its ancestors'
 * last groups, which one region or all groups serialise alike.
 *
 * Next step, measurable the same way: spread the right edge — inode
 * numbers from a range per parent directory (as XFS allocation groups,
 * ext4's Orlov allocator) put each thread's new inodes in leaves and root
 * regions of their own.  Tried alone (512 numbers per directory) before
 * regions it left the root's share at 99 %.  Built since (inode_spread,
 * fs/items/inode.h: 4,096 numbers per directory), with leaf regions: the
 * leaves' share of the wait falls to 2-3 % (from 15-37 %, cowlock=path)
 * and the root's rises to 50-57 % (from 22-40 %), groups:16 and node
 * alike (docs/benchmarks.md, two interleaved runs): a create in the middle
 * of the key space holds g..N-1 in its leaf and, when its child splits,
 * in each ancestor, so a thread in a low range holds every higher
 * thread's groups.  Room of its own per region (not built, above) is what
 * would let each range's changes hold one group.
 */
#include "fs/btree/btree.h"
#include "fs/btree/cache.h"
#include "fs/btree/meta.h"
#include "fs/btree/node.h"

#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_RESTARTS 10000

/* Test hooks: compiled in only with BTREE_TEST_HOOKS (btree.mk builds a
 * copy of this file with it for tests/unit/btree_mem; btree.h). */
#ifdef BTREE_TEST_HOOKS
struct btree_test_hooks btree_test_hooks;
#define TEST_HOOK(name) do {							\
	void (*h_)(void) = __atomic_load_n(&btree_test_hooks.name, __ATOMIC_ACQUIRE); \
	if (h_)									\
		h_();								\
} while (0)
#else
#define TEST_HOOK(name) do { } while (0)
#endif

enum { L_NONE = 0, L_READ = 1, L_WRITE = 2 };

/* ---- helpers: the node cache of a root ------------------------------ */

static inline struct node_cache *NC(const struct root *r) { return core_cache(r->core); }
static inline uint32_t NS(const struct root *r) { return cache_nodesize(NC(r)); }
static inline unsigned NG(const struct node *n) { return cache_groups(n->nc); }
static inline uint8_t *D(const struct node *n) { return n->data; }
static inline int LVL(const struct node *n) { return nb_level(n->data); }

/* A tree that contradicts itself: through the one corruption helper, so
 * the volume goes read-only as it does for every other corruption (the
 * caller returns -EUCLEAN). */
static void corrupt(const struct root *r, const struct node *n, const char *what)
{
	core_corrupt(r->core, "b-tree", "tree %" PRIu64 " node %" PRIu64 ": %s",
		     r->id, n ? n->bytenr : 0, what);
}

/* ---- node locks ------------------------------------------------------- */

static inline enum glock_mode M(int held) { return held == L_WRITE ? GLOCK_WRITE : GLOCK_READ; }

/* ---- regions: lock groups of a node --------------------------------- */

/* A node under locking=groups: its groups own regions (leaves and
 * interior nodes alike). */
static inline int REG(const struct node *n) { return NG(n) != 0; }

/* The key at slot of n, leaf or interior. */
static inline void slot_key(const struct node *n, int slot, struct key *k)
{
	if (LVL(n))
		nb_ptr_key(D(n), slot, k);
	else
		nb_item_key(D(n), slot, k);
}

/* One past group g's last slot (the holder of g, or of g+1..N-1 for the
 * last group's end, nritems, which every shifter holds). */
static int reg_end(const struct node *n, unsigned g)
{
	return g + 1 < NG(n) ? (int)n->groups[g + 1].start : (int)nb_nritems(D(n));
}

/*
 * Deal the slots of node n into regions: the first
 * min(N, nritems) groups get consecutive, nearly equal slot ranges and the
 * first key of their range as fence; the others get empty regions at the
 * end and no fence (no key is routed to them).  Only with every group held
 * for writing, or on a node nobody else can reach yet.
 */
static void regions_layout(struct node *n)
{
	unsigned g = NG(n), cnt = nb_nritems(D(n)), a = cnt < g ? cnt : g;

	if (!a)
		a = 1;
	for (unsigned i = 0; i < g; i++) {
		uint32_t st = i < a ? (uint32_t)((uint64_t)i * cnt / a) : cnt;

		n->groups[i].start = st;
		if (i > 0 && i < a)
			slot_key(n, (int)st, &n->groups[i].fence);
	}
	n->active = (uint8_t)a;
	__atomic_store_n(&n->laid, 1, __ATOMIC_RELEASE);
}

/* A copy of an immutable node (COW) starts with the original's regions. */
static void regions_copy(struct node *dst, const struct node *src)
{
	if (!REG(dst))
		return;
	if (!__atomic_load_n(&src->laid, __ATOMIC_ACQUIRE)) {
		regions_layout(dst);
		return;
	}
	for (unsigned i = 0; i < NG(dst); i++) {
		dst->groups[i].start = src->groups[i].start;
		dst->groups[i].fence = src->groups[i].fence;
	}
	dst->active = src->active;
	__atomic_store_n(&dst->laid, 1, __ATOMIC_RELEASE);
}

/* The group whose keys include k: the last active group whose fence is
 * <= k (group 0 takes every smaller key).  Read racily: the caller
 * validates with seq, which only a relayout (every group held) moves. */
static unsigned region_pick(const struct node *n, const struct key *k)
{
	unsigned lo = 1, hi = n->active;

	if (hi > NG(n))
		hi = NG(n);
	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;

		if (key_cmp(&n->groups[mid].fence, k) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo - 1;
}

/*
 * node_search confined to group g's slots (g held).  Interior node: the
 * largest slot of the region whose key is <= k, else the region's first
 * slot (whose key is the fence, <= k; slot 0's key is not compared).
 * Leaf: the slot of k, or where k would go — the first slot of the region
 * with a key above k, else the region's end (k's item joins the region:
 * every item of the regions above sorts at or above their fences, which
 * are above k).
 */
static int region_search(const struct node *n, unsigned g, const struct key *k, int *exact)
{
	int a = (int)n->groups[g].start, lvl = LVL(n), slot;

	if (!lvl)
		return node_search_slots(D(n), 0, a, reg_end(n, g), k, exact);
	slot = node_search_slots(D(n), lvl, a > 1 ? a : 1, reg_end(n, g), k, exact);
	return slot > a ? slot : a;
}

/*
 * Regions worth dealing again, judged racily when a shift is about to be
 * asked for: fewer groups in use than the slots allow, or one region
 * grown past twice its share (appends at the right edge all land in the
 * last group).  Then the shift takes every group and lays the node out
 * again on release, instead of the groups from its own up.
 */
static int regions_stale(const struct node *n)
{
	unsigned g = NG(n), a = n->active, cnt = nb_nritems(D(n)), share;

	if (a < g && cnt >= 2 * a)
		return 1;
	share = cnt / (a ? a : 1);
	for (unsigned i = 0; i < a && i < g; i++) {
		int sz = reg_end(n, i) - (int)n->groups[i].start;

		if (sz > (int)(2 * share + 8))
			return 1;
	}
	return 0;
}

/* ---- node locks ------------------------------------------------------- */

static void lock_all(struct node *n, int held)
{
	unsigned g = NG(n);

	if (!g) {
		glock_lock(&n->lock, M(held));
		return;
	}
	for (unsigned i = 0; i < g; i++)
		glock_lock(&n->groups[i].l, M(held));
	if (held == L_WRITE)
		__atomic_fetch_add(&n->seq, 1, __ATOMIC_SEQ_CST);
}

/* Releasing every group held for writing ends a change of shape: an
 * interior node's regions are dealt again before anyone else looks. */
static void unlock_all(struct node *n, int held)
{
	unsigned g = NG(n);

	if (!g) {
		glock_unlock(&n->lock, M(held));
		return;
	}
	if (held == L_WRITE) {
		if (REG(n))
			regions_layout(n);
		__atomic_fetch_add(&n->seq, 1, __ATOMIC_SEQ_CST);
	}
	for (unsigned i = g; i-- > 0;)
		glock_unlock(&n->groups[i].l, M(held));
}

/* Groups g..N-1 (ascending) / released in reverse. */
static void lock_tail(struct node *n, unsigned g, int held)
{
	for (unsigned i = g; i < NG(n); i++)
		glock_lock(&n->groups[i].l, M(held));
}

static void unlock_tail(struct node *n, unsigned g, int held)
{
	for (unsigned i = NG(n); i-- > g;)
		glock_unlock(&n->groups[i].l, M(held));
}

/* An interior node read from disk gets its regions before its first
 * single-group lock: every group held for writing for the moment it takes
 * (once per node read; callers hold nothing of n). */
static void regions_init(struct node *n)
{
	if (__atomic_load_n(&n->laid, __ATOMIC_ACQUIRE))
		return;
	lock_all(n, L_WRITE);
	unlock_all(n, L_WRITE);		/* lays it out */
}

/* Record in p that level l holds n locked the way described: every group
 * (all), groups group..N-1 (tail), or group alone. */
static void path_set(struct path *p, int l, struct node *n, int held, int all, int tail, int group)
{
	p->nodes[l] = n;
	p->lock_held[l] = (uint8_t)held;
	p->all_groups[l] = (uint8_t)(all || !NG(n));
	p->tail_groups[l] = (uint8_t)(!p->all_groups[l] && tail);
	p->lock_group[l] = (uint8_t)(group < 0 ? 0 : group);
}

/* Lock or unlock n the way level l of p holds its node (n is that node, a
 * fresh copy of it, or a sibling). */
static void lock_like(struct path *p, int l, struct node *n)
{
	if (p->all_groups[l])
		lock_all(n, p->lock_held[l]);
	else if (p->tail_groups[l])
		lock_tail(n, p->lock_group[l], p->lock_held[l]);
	else
		glock_lock(&n->groups[p->lock_group[l]].l, M(p->lock_held[l]));
}

static void unlock_like(struct path *p, int l, struct node *n)
{
	if (p->all_groups[l])
		unlock_all(n, p->lock_held[l]);
	else if (p->tail_groups[l])
		unlock_tail(n, p->lock_group[l], p->lock_held[l]);
	else
		glock_unlock(&n->groups[p->lock_group[l]].l, M(p->lock_held[l]));
}

static void path_unlock(struct path *p, int l)
{
	struct node *n = p->nodes[l];

	if (!n || !p->lock_held[l])
		return;
	unlock_like(p, l, n);
	p->lock_held[l] = L_NONE;
}

static void path_drop(struct path *p, int l)
{
	path_unlock(p, l);
	if (p->nodes[l])
		cache_put(p->nodes[l]);
	p->nodes[l] = NULL;
	p->all_groups[l] = 0;
	p->tail_groups[l] = 0;
}

static void root_unlock(struct path *p)
{
	if (p->root_lock && p->root)
		glock_unlock(&p->root->lock, M(p->root_lock));
	p->root_lock = L_NONE;
}

/* Release every level above l (unlock_up). */
static void release_above(struct path *p, int l)
{
	for (int i = l + 1; i < BTREE_MAX_LEVEL; i++)
		path_drop(p, i);
	root_unlock(p);
}

void btree_path_init(struct path *p)
{
	memset(p, 0, sizeof(*p));
}

void btree_path_release(struct path *p)
{
	for (int i = 0; i < BTREE_MAX_LEVEL; i++)
		path_drop(p, i);
	root_unlock(p);
	p->has_lo = p->has_hi = 0;
}

/* What a search asks of a node's groups (locking=groups). */
enum want { W_ONE = 0, W_ALL = 1, W_TAIL = 2 };

/*
 * A reader holding one group of a leaf whose slot is the region's end
 * (k sorts after the region's items) looks at the item there next: it
 * belongs to a region above.  Walk the lock up, one group at a time
 * (ascending; holding group h keeps start[h+1] still, since only holders
 * of h or a lower group move it), to the group that owns slot.  The item
 * found there is still the first above k: every item of a higher region
 * sorts above the fences below it.
 */
static void leaf_walk_up(struct path *p, int l, struct node *n, int slot)
{
	unsigned h = p->lock_group[l];
	enum glock_mode m = M(p->lock_held[l]);

	while (h + 1 < NG(n) && slot >= reg_end(n, h)) {
		glock_lock(&n->groups[h + 1].l, m);
		glock_unlock(&n->groups[h].l, m);
		h++;
	}
	p->lock_group[l] = (uint8_t)h;
}

/*
 * Lock a node's group for k (W_ONE), or that group and every group above
 * it (W_TAIL: an interior node may take a pointer in that region, a leaf
 * may take, drop or resize an item there): the group is picked by the
 * fences, locked, and the pick validated by seq; the slot is then searched
 * inside the region, which nobody can shift while the group is held.  A
 * pick of group 0 for W_TAIL, or regions worth dealing again, is every
 * group (and a relayout at release).
 */
static int lock_region(struct path *p, int l, struct node *n, const struct key *k,
		       int held, int want, int *exact)
{
	regions_init(n);
	for (int tries = 0; tries < 8; tries++) {
		uint32_t s0 = __atomic_load_n(&n->seq, __ATOMIC_ACQUIRE);
		unsigned grp;

		if (s0 & 1) {
			sched_yield();
			continue;
		}
		grp = region_pick(n, k);
		if (want == W_TAIL && (grp == 0 || (!LVL(n) && regions_stale(n))))
			break;
		if (want == W_TAIL)
			lock_tail(n, grp, held);
		else
			glock_lock(&n->groups[grp].l, M(held));
		if (__atomic_load_n(&n->seq, __ATOMIC_ACQUIRE) == s0) {
			int slot;

			path_set(p, l, n, held, 0, want == W_TAIL, (int)grp);
			slot = region_search(n, grp, k, exact);
			if (!LVL(n) && want != W_TAIL)
				leaf_walk_up(p, l, n, slot);
			return slot;
		}
		if (want == W_TAIL)
			unlock_tail(n, grp, held);
		else
			glock_unlock(&n->groups[grp].l, M(held));
	}
	lock_all(n, held);
	path_set(p, l, n, held, 1, 0, -1);
	return node_search(D(n), cache_nodesize(n->nc), k, exact);
}

/*
 * Lock n for a search of k in mode held: every group when want is W_ALL
 * (or locking=node), else by its regions (lock_region).  Records the lock
 * in p at level l and returns the slot, found under the lock.
 */
static int lock_for_key(struct path *p, int l, struct node *n, const struct key *k,
			int held, int want, int *exact)
{
	if (NG(n) && want != W_ALL)
		return lock_region(p, l, n, k, held, want, exact);
	lock_all(n, held);
	path_set(p, l, n, held, 1, 0, -1);
	return node_search(D(n), cache_nodesize(n->nc), k, exact);
}

/*
 * The key range of slot's child as level l's lock lets it be read: the
 * next separator inside the held region, else the next region's fence
 * (the key at its first slot, which no shift moves), else none.
 * 1 with *hi set, 0 when the child is the node's last.
 */
static int child_hi(const struct path *p, int l, int slot, struct key *hi)
{
	const struct node *n = p->nodes[l];
	unsigned g = p->lock_group[l];

	if (!REG(n) || p->all_groups[l]) {
		if (slot + 1 >= (int)nb_nritems(D(n)))
			return 0;
		nb_ptr_key(D(n), slot + 1, hi);
		return 1;
	}
	if (slot + 1 < reg_end(n, g)) {
		nb_ptr_key(D(n), slot + 1, hi);
		return 1;
	}
	if (g + 1 < n->active) {
		*hi = n->groups[g + 1].fence;
		return 1;
	}
	return 0;
}


/* Lock labels: the root node's locks say ROOT. */
static void label(struct node *n, uint64_t tree, int is_root)
{
	int level = LVL(n);

	glock_relabel(&n->lock, is_root ? GLOCK_CLASS_ROOT : GLOCK_CLASS_NODE, tree, level, -1);
	for (unsigned i = 0; i < NG(n); i++)
		glock_relabel(&n->groups[i].l, is_root ? GLOCK_CLASS_ROOT : GLOCK_CLASS_GROUP,
			      tree, level, (int)i);
}

/* ---- roots ------------------------------------------------------------ */

void btree_root_init(struct root *r, struct core *c, uint64_t id, uint64_t bytenr,
	       int level, uint64_t generation)
{
	memset(r, 0, sizeof(*r));
	r->id = id;
	r->core = c;
	/* always a rwlock: searchers share it while they lock the root node */
	glock_init(&r->lock, GLOCK_RWLOCK, GLOCK_CLASS_ROOT, id, -1, -1);
	r->bytenr = bytenr;
	r->level = level;
	r->generation = generation;
}

int btree_root_create_empty(struct txn *t, struct root *r)
{
	uint64_t b;
	struct node *n;
	int ret = meta_alloc(t, r->id, 0, &b);

	if (ret)
		return ret;
	n = cache_new(NC(r), b, txn_transid(t), r->id, 0);
	if (!n) {
		meta_free(t, r->id, 0, b);
		return -ENOMEM;
	}
	node_init(D(n), NS(r), b, r->id, 0, txn_transid(t));
	label(n, r->id, 1);
	glock_write(&r->lock);
	if (r->node) {
		cache_put(r->node);
	}
	r->node = n;
	r->bytenr = b;
	r->level = 0;
	r->generation = txn_transid(t);
	r->dirty_trans = txn_transid(t);
	glock_write_unlock(&r->lock);
	return 0;
}

void btree_root_release(struct root *r)
{
	if (r->node)
		cache_put(r->node);
	r->node = NULL;
}

uint64_t btree_root_id(const struct root *r) { return r->id; }

/* Trees that snapshots may share nodes between: a node of such a tree may
 * have been written by (be owned by) another fs tree, so its owner is not
 * checked against the tree read through. */
static inline uint64_t expect_owner(const struct root *r)
{
	return r->id == FS_TREE_OBJECTID || r->id >= FIRST_SUBVOL_OBJECTID ? 0 : r->id;
}

/* Load the root node (root->lock held for writing). */
static int load_root(struct root *r)
{
	struct node_expect e = {
		.nodesize = NS(r), .bytenr = r->bytenr, .fsid = core_fsid(r->core),
		.owner = expect_owner(r), .level = r->level, .generation = 0,
		.max_generation = r->generation,
	};
	struct node *n;
	int err;

	if (!r->bytenr)
		return -ENOENT;
	n = cache_read(NC(r), &e, &err);
	if (!n)
		return err == -ESTALE ? -EIO : err;
	label(n, r->id, 1);
	r->node = n;
	return 0;
}

/* ---- reading children ---------------------------------------------- */

static struct node *read_child(struct root *r, struct node *parent, int slot, int *err)
{
	struct node_expect e = {
		.nodesize = NS(r),
		.bytenr = nb_ptr_blockptr(D(parent), slot),
		.fsid = core_fsid(r->core),
		.owner = expect_owner(r),
		.level = LVL(parent) - 1,
		.generation = nb_ptr_gen(D(parent), slot),
	};
	return cache_read(NC(r), &e, err);
}

/* ---- copy-on-write ------------------------------------------------- */

/*
 * Shared nodes (lazy reference counting, Rodeh "B-trees, Shadowing, and
 * Clones"): a snapshot shares its source's nodes; each node's extent item
 * counts the parent pointers (or root items) that reach it.  A node can
 * only be shared if it is no younger than the tree's last snapshot, so
 * trees never snapshotted never ask.  Copying a shared node gives the copy
 * one more reference on every child (data extents of a leaf's file-extent
 * items) and drops one on the node, which stays for its other owners;
 * copying an unshared node moves its references to the copy and frees it.
 */
static int ref_children(struct txn *t, struct root *r, const uint8_t *b, int level, int delta)
{
	uint32_t n = nb_nritems(b);
	int ret = 0;

	for (uint32_t i = 0; i < n && !ret; i++) {
		if (level > 0) {
			ret = meta_ref(t, r->id, level - 1, nb_ptr_blockptr(b, (int)i), delta);
		} else {
			struct key k;
			nb_item_key(b, (int)i, &k);
			ret = meta_leaf_item_ref(t, &k, b + nb_item_off(b, (int)i),
						 nb_item_size(b, (int)i), delta);
		}
	}
	return ret;
}

static int maybe_shared(const struct root *r, const struct node *n)
{
	return r->last_snapshot && nb_generation(D(n)) <= r->last_snapshot;
}

/* The tree stops pointing at old (now copied to nn, or NULL when the node
 * is just dropped): free it, or drop one reference if it is shared. */
static int release_old(struct txn *t, struct root *r, struct node *old, struct node *nn, int l)
{
	int shared = maybe_shared(r, old) ? meta_shared_drop(t, r->id, l, old->bytenr) : 0;

	if (shared < 0)
		return shared;
	if (shared)
		return nn ? ref_children(t, r, D(nn), l, +1) : 0;
	cache_drop(old);
	meta_free(t, r->id, l, old->bytenr);
	return 0;
}

/*
 * Copy the node at level l of p (locked for writing) into a new block,
 * point its parent (level l+1, its slot held for writing) or the root
 * (root->lock held for writing) at the copy, free the old block.
 */
static int cow_node(struct txn *t, struct root *r, struct path *p, int l)
{
	struct node *old = p->nodes[l], *nn;
	uint64_t transid = txn_transid(t), b;
	int is_root = (l + 1 >= BTREE_MAX_LEVEL || !p->nodes[l + 1]);
	int ret = meta_alloc(t, r->id, l, &b);

	if (ret)
		return ret;
	nn = cache_new(NC(r), b, transid, r->id, l);
	if (!nn) {
		meta_free(t, r->id, l, b);
		return -ENOMEM;
	}
	memcpy(D(nn), D(old), NS(r));
	nb_set_bytenr(D(nn), b);
	nb_set_generation(D(nn), transid);
	nb_set_owner(D(nn), r->id);
	label(nn, r->id, is_root);
	regions_copy(nn, old);
	lock_like(p, l, nn);
	if (is_root) {
		r->node = nn;
		cache_get(nn);		/* the root's reference */
		r->bytenr = b;
		r->generation = transid;
		r->dirty_trans = transid;
		cache_put(old);		/* was the root's reference */
	} else {
		struct node *parent = p->nodes[l + 1];

		nb_set_ptr(D(parent), p->slots[l + 1], b, transid);
	}
	unlock_like(p, l, old);
	p->nodes[l] = nn;
	ret = release_old(t, r, old, nn, l);
	cache_put(old);
	return ret;
}

/* ---- leaf and pointer array edits (the node is held as needed) ----- */

static inline uint32_t item_end(const uint8_t *b, uint32_t ns, int slot)
{
	return slot == 0 ? ns : nb_item_off(b, slot - 1);
}

/* Make room for an item of size bytes at slot (the leaf has the room). */
static void leaf_insert_space(uint8_t *b, uint32_t ns, int slot, const struct key *k, uint32_t size)
{
	int n = (int)nb_nritems(b);
	uint32_t end = item_end(b, ns, slot), start = node_leaf_data_start(b, ns);

	if (slot < n) {
		memmove(b + start - size, b + start, end - start);
		for (int i = slot; i < n; i++)
			nb_set_item_off(b, i, nb_item_off(b, i) - size);
		memmove(nb_item(b, slot + 1), nb_item(b, slot), (size_t)(n - slot) * NODE_ITEM_SIZE);
	}
	nb_set_item_key(b, slot, k);
	nb_set_item_off(b, slot, end - size);
	nb_set_item_size(b, slot, size);
	memset(b + end - size, 0, size);
	nb_set_nritems(b, (uint32_t)n + 1);
}

static void leaf_del(uint8_t *b, uint32_t ns, int slot, int nr)
{
	int n = (int)nb_nritems(b);
	uint32_t start = node_leaf_data_start(b, ns);
	uint32_t last_off = nb_item_off(b, slot + nr - 1);
	uint32_t dsize = item_end(b, ns, slot) - last_off;

	if (slot + nr < n) {
		memmove(b + start + dsize, b + start, last_off - start);
		for (int i = slot + nr; i < n; i++)
			nb_set_item_off(b, i, nb_item_off(b, i) + dsize);
		memmove(nb_item(b, slot), nb_item(b, slot + nr),
			(size_t)(n - slot - nr) * NODE_ITEM_SIZE);
	}
	nb_set_nritems(b, (uint32_t)(n - nr));
	/* keep freed space zero so blocks compress and leak nothing */
	memset(nb_item(b, n - nr), 0, (size_t)nr * NODE_ITEM_SIZE);
	memset(b + start, 0, dsize);
}

static void leaf_resize(uint8_t *b, uint32_t ns, int slot, uint32_t new_size)
{
	int n = (int)nb_nritems(b);
	uint32_t old = nb_item_size(b, slot), off = nb_item_off(b, slot);
	uint32_t start = node_leaf_data_start(b, ns);
	uint32_t keep = old < new_size ? old : new_size;
	int64_t diff = (int64_t)new_size - old;

	if (!diff)
		return;
	memmove(b + (int64_t)start - diff, b + start, off + keep - start);
	for (int i = slot; i < n; i++)
		nb_set_item_off(b, i, (uint32_t)((int64_t)nb_item_off(b, i) - diff));
	if (diff > 0)
		memset(b + off - diff + old, 0, (size_t)diff);
	else
		memset(b + start, 0, (size_t)-diff);
	nb_set_item_size(b, slot, new_size);
}

/* Concatenate the items of L and R (L's keys below R's) and deal the
 * first m to L, the rest to R. */
static int leaf_repack(uint8_t *L, uint8_t *R, uint32_t ns, int m)
{
	int nl = (int)nb_nritems(L), nr = (int)nb_nritems(R), total = nl + nr;
	struct it { struct key k; uint32_t off, size; } *v = malloc(sizeof(*v) * (size_t)(total ? total : 1));
	uint8_t *tmp = malloc(2 * (size_t)ns);
	uint32_t used = 0;

	if (!v || !tmp) {
		free(v);
		free(tmp);
		return -ENOMEM;
	}
	for (int i = 0; i < total; i++) {
		const uint8_t *b = i < nl ? L : R;
		int j = i < nl ? i : i - nl;

		nb_item_key(b, j, &v[i].k);
		v[i].size = nb_item_size(b, j);
		v[i].off = used;
		memcpy(tmp + used, b + nb_item_off(b, j), v[i].size);
		used += v[i].size;
	}
	for (int side = 0; side < 2; side++) {
		uint8_t *b = side ? R : L;
		int from = side ? m : 0, to = side ? total : m;
		uint32_t end = ns;

		memset(b + NODE_HDR_SIZE, 0, ns - NODE_HDR_SIZE);
		for (int i = from; i < to; i++) {
			end -= v[i].size;
			memcpy(b + end, tmp + v[i].off, v[i].size);
			nb_set_item_key(b, i - from, &v[i].k);
			nb_set_item_off(b, i - from, end);
			nb_set_item_size(b, i - from, v[i].size);
		}
		nb_set_nritems(b, (uint32_t)(to - from));
	}
	free(v);
	free(tmp);
	return 0;
}

static void ptr_insert(uint8_t *b, int slot, const struct key *k, uint64_t blockptr, uint64_t gen)
{
	int n = (int)nb_nritems(b);

	memmove(nb_ptr(b, slot + 1), nb_ptr(b, slot), (size_t)(n - slot) * NODE_PTR_SIZE);
	nb_set_ptr_key(b, slot, k);
	nb_set_ptr(b, slot, blockptr, gen);
	nb_set_nritems(b, (uint32_t)n + 1);
}

static void ptr_del(uint8_t *b, int slot)
{
	int n = (int)nb_nritems(b);

	memmove(nb_ptr(b, slot), nb_ptr(b, slot + 1), (size_t)(n - slot - 1) * NODE_PTR_SIZE);
	memset(nb_ptr(b, n - 1), 0, NODE_PTR_SIZE);
	nb_set_nritems(b, (uint32_t)n - 1);
}

/* Insert a child pointer at slot of level l's node, which holds every
 * group or the groups from slot's region up (slot may be the region's
 * end: the pointer joins the region).  The regions above move up one. */
static void parent_insert(struct path *p, int l, int slot, const struct key *k,
			  uint64_t blockptr, uint64_t gen)
{
	struct node *n = p->nodes[l];

	ptr_insert(D(n), slot, k, blockptr, gen);
	if (REG(n) && !p->all_groups[l])
		for (unsigned i = p->lock_group[l] + 1u; i < NG(n); i++)
			n->groups[i].start++;
}

/*
 * Level 0 of p took ins items at slot, or lost del items from slot on:
 * with the groups from g up held (a tail), the regions above g start that
 * much later or earlier (an insert at g's end joins g).  With every group
 * held nothing is kept up: the release lays the leaf out again.
 */
static void leaf_shifted(struct path *p, int slot, int ins, int del)
{
	struct node *n = p->nodes[0];

	if (!REG(n) || p->all_groups[0])
		return;
	for (unsigned i = p->lock_group[0] + 1u; i < NG(n); i++) {
		int st = (int)n->groups[i].start, gone = st - slot;

		gone = gone < 0 ? 0 : gone > del ? del : gone;
		n->groups[i].start = (uint32_t)(st + ins - gone);
	}
}

/* The leaf at level 0 of p is held so that items from slot on may move:
 * every group, or the groups from the one owning slot up. */
static int leaf_shift_ok(const struct path *p, int slot)
{
	const struct node *n = p->nodes[0];

	if (p->all_groups[0])
		return 1;
	return p->tail_groups[0] && slot >= (int)n->groups[p->lock_group[0]].start;
}

static int ptr_repack(uint8_t *L, uint8_t *R, uint32_t ns, int m)
{
	int nl = (int)nb_nritems(L), nr = (int)nb_nritems(R), total = nl + nr;
	uint8_t *tmp = malloc((size_t)(total ? total : 1) * NODE_PTR_SIZE);

	if (!tmp)
		return -ENOMEM;
	memcpy(tmp, nb_ptr(L, 0), (size_t)nl * NODE_PTR_SIZE);
	memcpy(tmp + (size_t)nl * NODE_PTR_SIZE, nb_ptr(R, 0), (size_t)nr * NODE_PTR_SIZE);
	memset(L + NODE_HDR_SIZE, 0, ns - NODE_HDR_SIZE);
	memset(R + NODE_HDR_SIZE, 0, ns - NODE_HDR_SIZE);
	memcpy(nb_ptr(L, 0), tmp, (size_t)m * NODE_PTR_SIZE);
	memcpy(nb_ptr(R, 0), tmp + (size_t)m * NODE_PTR_SIZE, (size_t)(total - m) * NODE_PTR_SIZE);
	nb_set_nritems(L, (uint32_t)m);
	nb_set_nritems(R, (uint32_t)(total - m));
	free(tmp);
	return 0;
}

/* ---- shape predicates ----------------------------------------------- */

/* The leaf has room for the change a search with ins_len announced. */
static int leaf_room(const uint8_t *b, uint32_t ns, int slot, int exact, int ins_len)
{
	uint32_t fr = node_leaf_free(b, ns);

	if (ins_len <= 0)
		return 1;
	if (exact) {
		uint32_t cur = nb_item_size(b, slot);

		return (uint32_t)ins_len <= cur || fr >= (uint32_t)ins_len - cur;
	}
	return fr >= (uint32_t)ins_len + NODE_ITEM_SIZE;
}

/* An interior node that could not take two more pointers. */
static int node_full(const uint8_t *b, uint32_t ns)
{
	return nb_nritems(b) + 2 > node_ptr_cap(ns);
}

static int node_low(const uint8_t *b, uint32_t ns)
{
	if (nb_level(b) == 0)
		return node_leaf_used(b, ns) < node_leaf_space(ns) / 4;
	return nb_nritems(b) < node_ptr_cap(ns) / 4;
}

/* Item i's bytes in a leaf (header + data). */
static inline uint32_t item_bytes(const uint8_t *b, int i)
{
	return NODE_ITEM_SIZE + nb_item_size(b, i);
}

/* ---- splits, merges, root changes ---------------------------------- */

static struct node *new_node(struct txn *t, struct root *r, int level, int *err)
{
	uint64_t b;
	struct node *n;

	*err = meta_alloc(t, r->id, level, &b);
	if (*err)
		return NULL;
	n = cache_new(NC(r), b, txn_transid(t), r->id, level);
	if (!n) {
		meta_free(t, r->id, level, b);
		*err = -ENOMEM;
		return NULL;
	}
	node_init(D(n), NS(r), b, r->id, level, txn_transid(t));
	label(n, r->id, 0);
	return n;
}

/* Free a node the tree stops referencing (n stays valid for its holders). */
static void free_node(struct txn *t, struct root *r, struct node *n)
{
	int level = LVL(n);

	cache_drop(n);
	meta_free(t, r->id, level, n->bytenr);
}

/* Split interior node at level l (all groups; parent too). */
static int split_interior(struct txn *t, struct root *r, struct path *p, int l)
{
	struct node *c = p->nodes[l], *parent = p->nodes[l + 1], *rn;
	int n = (int)nb_nritems(D(c)), err;
	struct key sep;

	if (node_full(D(parent), NS(r))) {
		corrupt(r, parent, "node split: parent unexpectedly full");
		return -EUCLEAN;
	}
	rn = new_node(t, r, l, &err);
	if (!rn)
		return err;
	err = ptr_repack(D(c), D(rn), NS(r), n / 2);
	if (!err) {
		nb_ptr_key(D(rn), 0, &sep);
		if (REG(rn))
			regions_layout(rn);	/* before anyone can reach it */
		parent_insert(p, l + 1, p->slots[l + 1] + 1, &sep, rn->bytenr, txn_transid(t));
	}
	cache_put(rn);
	return err;
}

/*
 * Split the leaf so that the item (k, ins_len) fits in the side k lands on
 * when the search restarts.  Appending past the leaf's last key starts an
 * empty right leaf whose separator is k (sequential inserts fill leaves).
 */
static int split_leaf(struct txn *t, struct root *r, struct path *p, const struct key *k,
		      int exact, int ins_len)
{
	struct node *c = p->nodes[0], *parent = p->nodes[1], *rn;
	uint8_t *b = D(c);
	uint32_t ns = NS(r), space = node_leaf_space(ns);
	int n = (int)nb_nritems(b), slot = p->slots[0], m = -1, err;
	uint32_t need, total = node_leaf_used(b, ns), left = 0, best = UINT32_MAX;
	struct key sep;

	if (exact) {
		uint32_t cur = nb_item_size(b, slot);
		need = (uint32_t)ins_len > cur ? (uint32_t)ins_len - cur : 0;
	} else {
		need = (uint32_t)ins_len + NODE_ITEM_SIZE;
	}
	if (node_full(D(parent), ns)) {
		corrupt(r, parent, "leaf split: parent unexpectedly full");
		return -EUCLEAN;
	}
	if (!exact && slot == n && n > 0) {
		m = n;		/* append: empty right leaf, separator k */
	} else {
		for (int i = 0; i <= n; i++) {	/* left = items [0, i) */
			uint32_t right = total - left, diff;
			int goes_left = exact ? slot < i : slot <= i;
			int ok = i < n && (goes_left ? left + need <= space : right + need <= space);

			if (ok) {
				diff = left > right ? left - right : right - left;
				if (diff < best) {
					best = diff;
					m = i;
				}
			}
			if (i < n)
				left += item_bytes(b, i);
		}
		if (m < 0)	/* no single split makes room: isolate the slot */
			m = exact ? (slot > 0 ? slot : 1) : slot;
		if (m <= 0 && !(slot == 0 && !exact))
			m = 1;
	}
	rn = new_node(t, r, 0, &err);
	if (!rn)
		return err;
	if (m < n) {
		err = leaf_repack(b, D(rn), ns, m);
		if (err) {
			free_node(t, r, rn);
			cache_put(rn);
			return err;
		}
		nb_item_key(D(rn), 0, &sep);
	} else {
		sep = *k;
	}
	if (REG(rn))
		regions_layout(rn);	/* before anyone can reach it */
	parent_insert(p, 1, p->slots[1] + 1, &sep, rn->bytenr, txn_transid(t));
	cache_put(rn);
	return 0;
}

/* A new root above the current one (root->lock and the root held). */
static int grow_root(struct txn *t, struct root *r, struct path *p, int l)
{
	struct node *old = p->nodes[l], *nr;
	struct key k0 = { 0, 0, 0 };
	int err;

	if (l + 1 >= BTREE_MAX_LEVEL) {
		corrupt(r, old, "tree too tall");
		return -EUCLEAN;
	}
	nr = new_node(t, r, l + 1, &err);
	if (!nr)
		return err;
	ptr_insert(D(nr), 0, &k0, old->bytenr, txn_transid(t));
	if (REG(nr))
		regions_layout(nr);
	label(nr, r->id, 1);
	label(old, r->id, 0);
	r->node = nr;			/* takes cache_new's reference */
	cache_put(old);			/* the root's reference */
	r->bytenr = nr->bytenr;
	r->level = l + 1;
	r->generation = txn_transid(t);
	r->dirty_trans = txn_transid(t);
	return 0;
}

/* Replace a root with one child by that child. */
static int shrink_root(struct txn *t, struct root *r, struct path *p, int l)
{
	struct node *old = p->nodes[l], *c;
	int err;

	c = read_child(r, old, 0, &err);
	if (!c)
		return err == -ESTALE ? -EIO : err;
	lock_all(c, L_WRITE);
	path_set(p, l - 1, c, L_WRITE, 1, 0, -1);
	p->slots[l] = 0;
	if (nb_generation(D(c)) != txn_transid(t)) {
		err = cow_node(t, r, p, l - 1);
		if (err)
			return err;
		c = p->nodes[l - 1];
	}
	cache_get(c);
	label(c, r->id, 1);
	r->node = c;
	r->bytenr = c->bytenr;
	r->level = l - 1;
	r->generation = txn_transid(t);
	r->dirty_trans = txn_transid(t);
	free_node(t, r, old);
	cache_put(old);			/* the root's reference */
	return 0;
}

/* Copy a sibling (all groups held for writing) whose parent slot we hold. */
static struct node *cow_sibling(struct txn *t, struct root *r, struct node *parent, int pslot,
				struct node *s, int *err)
{
	struct node *nn;
	int level = LVL(s);

	nn = new_node(t, r, level, err);
	if (!nn)
		return NULL;
	memcpy(D(nn) + NODE_HDR_SIZE, D(s) + NODE_HDR_SIZE, NS(r) - NODE_HDR_SIZE);
	nb_set_nritems(D(nn), nb_nritems(D(s)));
	lock_all(nn, L_WRITE);
	nb_set_ptr(D(parent), pslot, nn->bytenr, txn_transid(t));
	unlock_all(s, L_WRITE);
	*err = release_old(t, r, s, nn, level);	/* on error nn is linked: the caller fails */
	cache_put(s);
	return nn;
}

/*
 * The node at level l is low: merge it with a sibling or move items over
 * (node, parent and sibling all held for writing with every group).
 * 1 changed, 0 nothing could be done, -errno.
 */
static int rebalance(struct txn *t, struct root *r, struct path *p, int l)
{
	struct node *c = p->nodes[l], *parent = p->nodes[l + 1], *s, *L, *R;
	uint8_t *pb = D(parent);
	uint32_t ns = NS(r);
	int ps = p->slots[l + 1], np = (int)nb_nritems(pb), err, ss, rs, left_is_c, changed = 1;

	if (np < 2)
		return 0;
	left_is_c = ps == 0;
	ss = left_is_c ? ps + 1 : ps - 1;
	s = read_child(r, parent, ss, &err);
	if (!s)
		return err == -ESTALE ? -EIO : err;
	lock_all(s, L_WRITE);
	if (nb_generation(D(s)) != txn_transid(t)) {
		struct node *nn = cow_sibling(t, r, parent, ss, s, &err);

		if (!nn) {
			unlock_all(s, L_WRITE);
			cache_put(s);
			return err;
		}
		s = nn;
		if (err) {
			unlock_all(s, L_WRITE);
			cache_put(s);
			return err;
		}
	}
	L = left_is_c ? c : s;
	R = left_is_c ? s : c;
	rs = left_is_c ? ss : ps;
	if (l == 0) {
		uint32_t ul = node_leaf_used(D(L), ns), ur = node_leaf_used(D(R), ns);
		uint32_t space = node_leaf_space(ns), tot = ul + ur, acc = 0, best = UINT32_MAX;
		int nl = (int)nb_nritems(D(L)), nr = (int)nb_nritems(D(R)), m = -1;

		if (tot <= space - space / 4 || nl == 0 || nr == 0) {
			err = leaf_repack(D(L), D(R), ns, nl + nr);
			if (!err && nb_nritems(D(R)) == 0) {
				ptr_del(pb, rs);
				free_node(t, r, R);
			} else if (!err) {	/* one side was empty but it did not all fit */
				struct key k;
				nb_item_key(D(R), 0, &k);
				nb_set_ptr_key(pb, rs, &k);
			}
		} else {
			for (int i = 0; i < nl + nr; i++) {	/* left = [0, i) */
				uint32_t right = tot - acc, diff = acc > right ? acc - right : right - acc;

				if (i > 0 && acc <= space && right <= space && diff < best) {
					best = diff;
					m = i;
				}
				acc += item_bytes(i < nl ? D(L) : D(R), i < nl ? i : i - nl);
			}
			if (m < 0 || m == nl) {
				changed = 0;
				err = 0;
			} else {
				struct key k;

				err = leaf_repack(D(L), D(R), ns, m);
				if (!err) {
					nb_item_key(D(R), 0, &k);
					nb_set_ptr_key(pb, rs, &k);
				}
			}
		}
	} else {
		int nl = (int)nb_nritems(D(L)), nr = (int)nb_nritems(D(R));
		struct key k;

		nb_ptr_key(pb, rs, &k);		/* R's key 0 becomes its separator */
		nb_set_ptr_key(D(R), 0, &k);
		if ((uint32_t)(nl + nr) + 2 <= node_ptr_cap(ns)) {
			err = ptr_repack(D(L), D(R), ns, nl + nr);
			if (!err) {
				ptr_del(pb, rs);
				free_node(t, r, R);
			}
		} else if ((nl + nr) / 2 == nl) {
			changed = 0;
			err = 0;
		} else {
			err = ptr_repack(D(L), D(R), ns, (nl + nr) / 2);
			if (!err) {
				nb_ptr_key(D(R), 0, &k);
				nb_set_ptr_key(pb, rs, &k);
			}
		}
	}
	unlock_all(s, L_WRITE);
	cache_put(s);
	return err ? err : changed;
}

/* ---- search ---------------------------------------------------------- */

/*
 * The lock a search of k would wait for on n right now (a racy hint,
 * glock_busy), or NULL: the group (or groups) lock_for_key would take for
 * want, or the node's lock.
 */
static struct glock *busy_lock(struct node *n, const struct key *k, int held, int want)
{
	enum glock_mode m = M(held);
	unsigned g = NG(n), lo, hi;

	if (!g)
		return glock_busy(&n->lock, m) ? &n->lock : NULL;
	if (want == W_ALL) {
		lo = 0;
		hi = g;
	} else {
		if (!__atomic_load_n(&n->laid, __ATOMIC_ACQUIRE))
			return NULL;
		lo = region_pick(n, k);
		hi = want == W_TAIL ? g : lo + 1;
	}
	for (unsigned i = lo; i < hi && i < g; i++)
		if (glock_busy(&n->groups[i].l, m))
			return &n->groups[i].l;
	return NULL;
}

/*
 * Level l holds group g of its node alone, for writing, and the child
 * below is about to split (every group of the child held): extend the
 * hold to the groups above g without waiting (glock_trylock, ascending),
 * so that the split holds the groups above its own only while it inserts
 * the new pointer, never while it waits for the child's groups.  A
 * waiting tail holder is what readers of every higher region queued
 * behind (the root's share of the wait, "Where groups:N waited").  0 when
 * one of them is busy (none kept; the caller restarts asking for the
 * tail, want_shift), when g is 0 or the regions are worth dealing again
 * (those ask for every group), or when l is no one-group write hold.
 * Taking locks above a held child is out of lock order, so only trylock.
 */
static int tail_extend(struct path *p, int l)
{
	struct node *n = p->nodes[l];
	unsigned g = p->lock_group[l], i;

	if (!n || !REG(n) || p->all_groups[l] || p->lock_held[l] != L_WRITE)
		return 0;
	if (p->tail_groups[l])
		return 1;
	if (g == 0 || regions_stale(n))
		return 0;
	TEST_HOOK(extend);
	for (i = g + 1; i < NG(n); i++)
		if (!glock_trylock(&n->groups[i].l, GLOCK_WRITE))
			break;
	/*
	 * Room for the child's new pointer, known only now.  The descent
	 * checked node_full(n) holding group g alone, and that keeps no
	 * other thread from adding a pointer to n: a child split in a region
	 * above g holds that region's tail g'..N-1 (g' > g), none of it
	 * ours.  So between the check and here (we waited for the child's
	 * groups meanwhile) other threads' splits may have filled n — the
	 * soak's "leaf split: parent unexpectedly full" under groups:64 at
	 * 4 KiB, where a region is one or two pointers and 16 threads split
	 * leaves of one parent.  Every shifter holds group N-1, so under the
	 * tail nritems is exact and this check is the one that counts.  A
	 * full n fails like a busy group: the caller restarts asking for the
	 * tail (want_shift), whose descent checks node_full under the tail
	 * it keeps until the split, so it splits n (or grows the root)
	 * first.  A restart, not a retry: nothing was changed yet, and the
	 * condition that sent us back is exactly what the next descent
	 * acts on.
	 */
	if (i < NG(n) || node_full(D(n), cache_nodesize(n->nc))) {
		while (i-- > g + 1)
			glock_unlock(&n->groups[i].l, GLOCK_WRITE);
		return 0;
	}
	p->tail_groups[l] = 1;
	return 1;
}

/* A child of level l's node n will take a new pointer: the groups from
 * its region up, or every group when n's regions are worth dealing again
 * (or n is no region node: a leaf, locking=node).  Never weakens W_ALL. */
static void want_shift(uint8_t *need, int l, const struct node *n)
{
	if (need[l] != W_ALL)
		need[l] = REG(n) && !regions_stale(n) ? W_TAIL : W_ALL;
}

int btree_search(struct txn *t, struct root *r, const struct key *k,
		 struct path *p, int ins_len, int cow)
{
	/* per level, what the next descent asks of the node's groups
	 * (enum want): every group to change its shape, the groups from the
	 * slot's region up to take a child's new pointer */
	uint8_t need[BTREE_MAX_LEVEL] = { 0 };
	uint32_t ns = NS(r);
	uint64_t transid = cow ? txn_transid(t) : 0;
	/*
	 * A cow search write-locks only the levels it may change: levels
	 * <= wlevel.  It starts with the leaf alone, as btrfs's
	 * write_lock_level does; the levels above are read-locked, so
	 * concurrent changes in different leaves share the root and the
	 * upper nodes.  When a node above wlevel turns out to need a change
	 * — copying it (its first change in this transaction, which also
	 * rewrites its parent's pointer), a split or a merge (which change
	 * the parent) — wlevel rises to the parent's level and the search
	 * starts again.  cowlock=path (core.h) keeps every level
	 * write-locked, the baseline this is measured against.
	 */
	int wlevel = core_cow_lock_path(r->core) ? BTREE_MAX_LEVEL : 0;
#define HMODE(lvl) (cow && (lvl) <= wlevel ? L_WRITE : L_READ)
	/* a leaf change asks for the groups from its region up, unless a
	 * restart raised it to every group */
#define WANT(lvl) (!cow ? W_ONE : ((lvl) == 0 && ins_len && need[0] != W_ALL) ? W_TAIL : need[lvl])
	/* level lvl holds what a new child pointer in its region needs */
#define SHIFT_OK(lvl) (p->all_groups[lvl] || p->tail_groups[lvl])
	int root_w = 0, restarts = 0, eio_retry = 0, ret = 0, l, slot, exact = 0;
	int no_merge = 0;	/* deletes on a full volume: skip rebalancing */
	int outside = 0;	/* waits for a busy child with the path released */
	struct node *n;

	if (cow && !t)
		return -EINVAL;
	if (!cow)
		ins_len = 0;
again:
	btree_path_release(p);
	p->root = r;
	p->cow = cow;
	if (++restarts > MAX_RESTARTS) {
		corrupt(r, NULL, "search does not converge");
		return -EUCLEAN;
	}
	glock_lock(&r->lock, root_w ? GLOCK_WRITE : GLOCK_READ);
	p->root_lock = root_w ? L_WRITE : L_READ;
	if (!r->node) {
		if (!root_w) {
			root_w = 1;
			goto again;
		}
		ret = load_root(r);
		if (ret)
			goto fail;
	}
	n = r->node;
	cache_get(n);
	l = LVL(n);
	if (l >= BTREE_MAX_LEVEL) {
		cache_put(n);
		corrupt(r, n, "root level out of range");
		ret = -EUCLEAN;
		goto fail;
	}
	slot = lock_for_key(p, l, n, k, HMODE(l), WANT(l), &exact);
	p->slots[l] = slot;
	if (cow) {
		int change = nb_generation(D(n)) != transid;
		int grow = ins_len > 0 && (l ? node_full(D(n), ns)
					      : !leaf_room(D(n), ns, slot, exact, ins_len));
		int shrink = ins_len < 0 && !no_merge && l > 0 && nb_nritems(D(n)) == 1;

		if (change || grow || shrink) {
			if (l > wlevel) {	/* the root node is read-locked */
				wlevel = l;
				goto again;
			}
			if (!root_w || ((grow || shrink) && !p->all_groups[l])) {
				root_w = 1;
				if (grow || shrink)
					need[l] = W_ALL;
				goto again;
			}
			if (change) {
				ret = cow_node(t, r, p, l);
				if (ret)
					goto fail;
			}
			if (grow || shrink) {
				ret = grow ? grow_root(t, r, p, l) : shrink_root(t, r, p, l);
				if (ret == -ENOSPC && shrink) {
					no_merge = 1;
					root_w = 0;
					goto again;
				}
				if (ret)
					goto fail;
				root_w = 0;
				goto again;
			}
			root_w = 0;	/* later restarts need not exclude readers */
		}
	}
	root_unlock(p);

	while (l > 0) {
		struct node *c;
		int cl = l - 1, cslot, cexact = 0, safe = 1;

		n = p->nodes[l];
		slot = p->slots[l];
		if (child_hi(p, l, slot, &p->hi))
			p->has_hi = 1;
		if (slot > 0) {
			nb_ptr_key(D(n), slot, &p->lo);
			p->has_lo = 1;
		}
		c = read_child(r, n, slot, &ret);
		if (!c) {
			if (ret == -ESTALE || (ret == -EIO && !eio_retry++))
				goto again;
			goto fail;
		}
		/*
		 * Lock coupling holds the path above while it waits for the
		 * child, and every search for another child of that path
		 * queues behind it.  When the child is busy, wait for it
		 * holding nothing, then search again (a few times per search;
		 * after that, wait coupled).  So waits for a busy leaf stay
		 * on the leaf instead of spreading to the root.
		 */
		if (outside < 4) {
			struct glock *bl = busy_lock(c, k, HMODE(cl), WANT(cl));

			if (bl) {
				enum glock_mode bm = M(HMODE(cl));

				outside++;
				btree_path_release(p);
				glock_lock(bl, bm);
				glock_unlock(bl, bm);
				cache_put(c);
				goto again;
			}
		}
		cslot = lock_for_key(p, cl, c, k, HMODE(cl), WANT(cl), &cexact);
		p->slots[cl] = cslot;
		exact = cexact;
		if (!cow) {
			path_drop(p, l);
			l = cl;
			continue;
		}
		if (nb_generation(D(c)) != transid) {
			if (l > wlevel) {	/* the copy rewrites the parent's pointer */
				wlevel = l;
				goto again;
			}
			ret = cow_node(t, r, p, cl);
			if (ret)
				goto fail;
			c = p->nodes[cl];
		}
		if (ins_len > 0) {
			if (cl > 0 && node_full(D(c), ns)) {
				if (l > wlevel) {
					wlevel = l;
					need[cl] = W_ALL;	/* the split's, one restart */
					goto again;
				}
				if (!p->all_groups[cl] || (!SHIFT_OK(l) && !tail_extend(p, l))) {
					/* the parent's tail only once tail_extend
					 * found it busy: first the child's groups */
					if (p->all_groups[cl])
						want_shift(need, l, n);
					need[cl] = W_ALL;
					goto again;
				}
				ret = split_interior(t, r, p, cl);
				if (ret)
					goto fail;
				/* the next descent finds room: one group again */
				need[l] = need[cl] = W_ONE;
				goto again;
			}
			if (cl == 0 && !leaf_room(D(c), ns, cslot, cexact, ins_len)) {
				if (l > wlevel) {	/* split_leaf below changes the parent */
					wlevel = l;
					need[0] = W_ALL;	/* the split's, one restart */
					goto again;
				}
				safe = 0;
			}
		} else if (ins_len < 0 && !no_merge && node_low(D(c), ns)) {
			if (l > wlevel) {
				wlevel = l;
				goto again;
			}
			if (!p->all_groups[l] || !p->all_groups[cl]) {
				need[l] = need[cl] = W_ALL;
				goto again;
			}
			ret = rebalance(t, r, p, cl);
			if (ret == -ENOSPC) {	/* a delete must work on a full volume */
				no_merge = 1;
				goto again;
			}
			if (ret < 0)
				goto fail;
			if (ret > 0)
				goto again;
			safe = 0;
		}
		if (safe)
			release_above(p, cl);
		l = cl;
	}
	if (cow && ins_len > 0 && !leaf_room(D(p->nodes[0]), ns, p->slots[0], exact, ins_len)) {
		if (p->nodes[1] && p->lock_held[1] != L_WRITE) {
			wlevel = wlevel > 1 ? wlevel : 1;
			need[0] = W_ALL;
			goto again;
		}
		if (!p->nodes[1] || !p->all_groups[0] || (!SHIFT_OK(1) && !tail_extend(p, 1))) {
			/* the parent's tail only once tail_extend found it
			 * busy (or for a parent held in no way it extends):
			 * first the leaf's groups */
			if (p->nodes[1] && (p->all_groups[0] || p->lock_held[1] != L_WRITE ||
					    p->all_groups[1] || !REG(p->nodes[1])))
				want_shift(need, 1, p->nodes[1]);
			else if (!p->nodes[1])
				need[1] = W_ALL;
			need[0] = W_ALL;
			goto again;
		}
		ret = split_leaf(t, r, p, k, exact, ins_len);
		if (ret)
			goto fail;
		need[1] = need[0] = W_ONE;
		goto again;
	}
	return exact ? 0 : 1;
fail:
	btree_path_release(p);
	return ret;
#undef HMODE
#undef WANT
#undef SHIFT_OK
}

/* ---- leaf access ------------------------------------------------------ */

uint32_t btree_nritems(const struct path *p)
{
	return p->nodes[0] ? nb_nritems(D(p->nodes[0])) : 0;
}

uint64_t btree_leaf_generation(const struct path *p)
{
	return p->nodes[0] ? nb_generation(D(p->nodes[0])) : 0;
}

void btree_item_key(const struct path *p, int slot, struct key *k)
{
	nb_item_key(D(p->nodes[0]), slot, k);
}

void *btree_item_ptr(const struct path *p, int slot, uint32_t *size)
{
	uint8_t *b = D(p->nodes[0]);

	if (size)
		*size = nb_item_size(b, slot);
	return b + nb_item_off(b, slot);
}

uint32_t btree_max_item_size(const struct root *r)
{
	return node_max_item(NS(r));
}

/* ---- modifications ----------------------------------------------------- */

int btree_insert_empty(struct txn *t, struct root *r, struct path *p,
		       const struct key *k, uint32_t size)
{
	int ret;

	if (size > btree_max_item_size(r))
		return -EOVERFLOW;
	/* ins_len 0 would mean "no change of shape": an empty item still
	 * needs room for its header */
	ret = btree_search(t, r, k, p, size ? (int)size : 1, 1);
	if (ret < 0)
		return ret;
	if (ret == 0) {
		btree_path_release(p);
		return -EEXIST;
	}
	if (node_leaf_free(D(p->nodes[0]), NS(r)) < size + NODE_ITEM_SIZE) {
		corrupt(r, p->nodes[0], "insert: leaf without room after the search");
		btree_path_release(p);
		return -EUCLEAN;
	}
	leaf_insert_space(D(p->nodes[0]), NS(r), p->slots[0], k, size);
	leaf_shifted(p, p->slots[0], 1, 0);
	return 0;
}

int btree_insert(struct txn *t, struct root *r, const struct key *k,
		 const void *data, uint32_t size)
{
	struct path p;
	int ret;

	btree_path_init(&p);
	ret = btree_insert_empty(t, r, &p, k, size);
	if (!ret && size)
		memcpy(btree_item_ptr(&p, p.slots[0], NULL), data, size);
	btree_path_release(&p);
	return ret;
}

static int settle(struct txn *t, struct root *r, const struct key *k);

/*
 * The contract check of btree_insert_pair when the pair cannot go in at
 * one leaf slot: a read-only look at the items on either side of k2's
 * place, crossing leaves.  The same answers as the one-descent path:
 * -EEXIST when k2 is present or k1 is right before it, -EINVAL when
 * another item of the object is beside it, 0 when neither neighbour
 * belongs to the object (then it has no items: they would sort together).
 */
static int pair_check_new(struct root *r, const struct key *k1, const struct key *k2)
{
	struct path q;
	struct key near;
	int ret;

	btree_path_init(&q);
	ret = btree_search_ge(r, k2, &q);
	if (ret == 0) {
		btree_item_key(&q, q.slots[0], &near);
		if (near.objectid == k1->objectid) {
			ret = key_cmp(&near, k2) == 0 ? -EEXIST : -EINVAL;
			goto out;
		}
	}
	if (ret < 0)
		goto out;
	ret = btree_prev(&q);
	if (ret == 0) {
		btree_item_key(&q, q.slots[0], &near);
		if (near.objectid == k1->objectid)
			ret = key_cmp(&near, k1) == 0 ? -EEXIST : -EINVAL;
	}
out:
	btree_path_release(&q);
	return ret < 0 ? ret : 0;
}

/* Two items at slot and slot + 1 of the held leaf, which has room for
 * both (btree_insert_pair, btree_insert_two). */
static void leaf_put_two(struct path *p, uint32_t ns, int slot,
			 const struct key *k1, const void *d1, uint32_t s1,
			 const struct key *k2, const void *d2, uint32_t s2)
{
	uint8_t *b = D(p->nodes[0]);

	leaf_insert_space(b, ns, slot, k1, s1);
	leaf_insert_space(b, ns, slot + 1, k2, s2);
	leaf_shifted(p, slot, 2, 0);
	if (s1)
		memcpy(btree_item_ptr(p, slot, NULL), d1, s1);
	if (s2)
		memcpy(btree_item_ptr(p, slot + 1, NULL), d2, s2);
}

/*
 * Insert two items of one new object in one descent.  Both keys must have
 * the same objectid, k1 < k2, and the object must have no items yet (an
 * inode number just handed out).  The search is for k2, so the leaf is
 * the one k2 belongs in; k1 goes right before it, which is its place too
 * when the item before that slot is in this leaf (it belongs to a smaller
 * objectid, so it sorts below k1, and it is not below the leaf's lower
 * bound).  At slot 0 the item before is in another leaf, and the lower
 * bound is the separator the search saw: when that has a smaller
 * objectid, k1 sorts after it and every item of the leaves before sorts
 * below it, so the pair still goes in here.  A separator of this objectid
 * may be a key of an earlier object with this number (numbers freed
 * before a remount are handed out again), sorting between k1 and k2, and
 * the leaf before may hold items of the object: then, as for a pair too
 * big for one leaf, the neighbours across leaves are checked and the two
 * go in one at a time.  The search announces room for both.
 */
int btree_insert_pair(struct txn *t, struct root *r,
		      const struct key *k1, const void *d1, uint32_t s1,
		      const struct key *k2, const void *d2, uint32_t s2)
{
	uint32_t both = s1 + s2 + NODE_ITEM_SIZE;
	struct path p;
	struct key near;
	int ret;

	if (k1->objectid != k2->objectid || key_cmp(k1, k2) >= 0)
		return -EINVAL;
	if (both > btree_max_item_size(r))	/* too big for one leaf */
		goto one_at_a_time;
	btree_path_init(&p);
	ret = btree_search(t, r, k2, &p, (int)both, 1);
	if (ret < 0)
		goto out;
	if (ret == 0) {
		ret = -EEXIST;
		goto out;
	}
	uint8_t *b = D(p.nodes[0]);
	int slot = p.slots[0];
	if (slot < (int)nb_nritems(b)) {
		nb_item_key(b, slot, &near);
		if (near.objectid == k1->objectid) {	/* the object is not new */
			ret = -EINVAL;
			goto out;
		}
	}
	if (slot == 0) {
		if (p.has_lo && p.lo.objectid >= k1->objectid) {
			btree_path_release(&p);
			ret = pair_check_new(r, k1, k2);
			if (ret) {
				/* the search may have split off an empty leaf for
				 * k2; a refusal must not leave it in the tree (a
				 * failed rebalance leaves a valid one) */
				settle(t, r, k2);
				return ret;
			}
			goto each;
		}
	} else {
		nb_item_key(b, slot - 1, &near);
		if (near.objectid == k1->objectid) {
			ret = key_cmp(&near, k1) == 0 ? -EEXIST : -EINVAL;
			goto out;
		}
	}
	if (node_leaf_free(b, NS(r)) < both + NODE_ITEM_SIZE) {
		corrupt(r, p.nodes[0], "insert: leaf without room after the search");
		ret = -EUCLEAN;
		goto out;
	}
	leaf_put_two(&p, NS(r), slot, k1, d1, s1, k2, d2, s2);
	ret = 0;
out:
	btree_path_release(&p);
	return ret;
one_at_a_time:
	ret = pair_check_new(r, k1, k2);
	if (ret)
		return ret;
each:
	ret = btree_insert(t, r, k1, d1, s1);
	return ret ? ret : btree_insert(t, r, k2, d2, s2);
}

/*
 * One descent for two items: the search for k2 announces room for both,
 * so the leaf it lands in takes k1 too when k1 sorts right before k2's
 * slot there.  At slot 0, k1 may belong to the leaf before (below this
 * leaf's separator): k2 alone, as btree_insert would.
 */
int btree_insert_two(struct txn *t, struct root *r,
		     const struct key *k1, const void *d1, uint32_t s1,
		     const struct key *k2, const void *d2, uint32_t s2)
{
	uint32_t both = s1 + s2 + NODE_ITEM_SIZE;
	struct path p;
	struct key near = { 0, 0, 0 };
	uint8_t *b;
	int ret, slot;

	if (key_cmp(k1, k2) >= 0)
		return -EINVAL;
	if (both > btree_max_item_size(r)) {	/* too big for one leaf */
		ret = btree_insert(t, r, k2, d2, s2);
		return ret ? ret : 1;
	}
	btree_path_init(&p);
	ret = btree_search(t, r, k2, &p, (int)both, 1);
	if (ret < 0)
		goto out;
	if (ret == 0) {
		ret = -EEXIST;
		goto out;
	}
	b = D(p.nodes[0]);
	slot = p.slots[0];
	if (node_leaf_free(b, NS(r)) < both + NODE_ITEM_SIZE) {
		corrupt(r, p.nodes[0], "insert: leaf without room after the search");
		ret = -EUCLEAN;
		goto out;
	}
	if (slot > 0)
		nb_item_key(b, slot - 1, &near);
	if (slot == 0 || key_cmp(&near, k1) >= 0) {
		leaf_insert_space(b, NS(r), slot, k2, s2);
		leaf_shifted(&p, slot, 1, 0);
		if (s2)
			memcpy(btree_item_ptr(&p, slot, NULL), d2, s2);
		ret = 1;
		goto out;
	}
	leaf_put_two(&p, NS(r), slot, k1, d1, s1, k2, d2, s2);
	ret = 0;
out:
	btree_path_release(&p);
	return ret;
}

/* After deletions left the leaf low (or empty) with no parent held:
 * search again for k as a delete, which rebalances on the way down. */
static int settle(struct txn *t, struct root *r, const struct key *k)
{
	struct path q;
	int ret;

	btree_path_init(&q);
	ret = btree_search(t, r, k, &q, -1, 1);
	btree_path_release(&q);
	return ret < 0 ? ret : 0;
}

int btree_del_items(struct txn *t, struct root *r, struct path *p, int nr)
{
	struct node *leaf = p->nodes[0];
	uint32_t ns = NS(r);
	struct key first, after;
	int slot = p->slots[0], n, ret, have_after;

	if (!leaf || !p->cow || nr <= 0)
		return -EINVAL;
	n = (int)nb_nritems(D(leaf));
	if (slot < 0 || slot + nr > n)
		return -EINVAL;
	nb_item_key(D(leaf), slot, &first);
	if (!leaf_shift_ok(p, slot)) {	/* the deletion shifts other items */
		ret = btree_search(t, r, &first, p, -1, 1);
		if (ret)
			return ret < 0 ? ret : -ENOENT;
		return btree_del_items(t, r, p, nr);
	}
	have_after = slot + nr < n;
	if (have_after)
		nb_item_key(D(leaf), slot + nr, &after);
	leaf_del(D(leaf), ns, slot, nr);
	leaf_shifted(p, slot, 0, nr);
	if (leaf == __atomic_load_n(&r->node, __ATOMIC_ACQUIRE) || !node_low(D(leaf), ns))
		return 0;		/* the root leaf, or still full enough */
	if (p->lock_held[1] == L_WRITE && p->all_groups[1] && p->all_groups[0] &&
	    nb_nritems(D(leaf)) == 0 &&
	    nb_nritems(D(p->nodes[1])) > 1) {
		ptr_del(D(p->nodes[1]), p->slots[1]);
		free_node(t, r, leaf);
		btree_path_release(p);
		ret = 0;
	} else {
		btree_path_release(p);
		/* the items are gone whatever happens here: a rebalance that
		 * fails (ENOSPC on a full volume) leaves a valid, underfull tree */
		(void)settle(t, r, &first);
		ret = 0;
	}
	/* leave p where the caller expects it: at the item after the deleted ones */
	ret = btree_search(t, r, have_after ? &after : &first, p, 0, 1);
	return ret < 0 ? ret : 0;
}

int btree_resize_item(struct txn *t, struct root *r, struct path *p, uint32_t new_size)
{
	struct node *leaf = p->nodes[0];
	uint32_t ns = NS(r), cur;
	int slot = p->slots[0], ret;
	struct key k;

	if (!leaf || !p->cow || slot >= (int)nb_nritems(D(leaf)))
		return -EINVAL;
	if (new_size > btree_max_item_size(r))
		return -EOVERFLOW;
	cur = nb_item_size(D(leaf), slot);
	if (new_size == cur)
		return 0;
	if (!leaf_shift_ok(p, slot) ||
	    (new_size > cur && node_leaf_free(D(leaf), ns) < new_size - cur)) {
		nb_item_key(D(leaf), slot, &k);
		ret = btree_search(t, r, &k, p, (int)new_size, 1);
		if (ret)
			return ret < 0 ? ret : -ENOENT;
		leaf = p->nodes[0];
		slot = p->slots[0];
	}
	leaf_resize(D(leaf), ns, slot, new_size);
	return 0;
}

int btree_lookup(struct root *r, const struct key *k, void *buf, uint32_t bufsize)
{
	struct path p;
	uint32_t size;
	void *ptr;
	int ret;

	btree_path_init(&p);
	ret = btree_search(NULL, r, k, &p, 0, 0);
	if (ret == 0) {
		ptr = btree_item_ptr(&p, p.slots[0], &size);
		memcpy(buf, ptr, size < bufsize ? size : bufsize);
		ret = (int)size;
	} else if (ret == 1) {
		ret = -ENOENT;
	}
	btree_path_release(&p);
	return ret;
}

int btree_update(struct txn *t, struct root *r, const struct key *k,
		 const void *data, uint32_t size)
{
	struct path p;
	int ret;

	if (size > btree_max_item_size(r))
		return -EOVERFLOW;
	btree_path_init(&p);
	ret = btree_search(t, r, k, &p, size ? (int)size : 1, 1);
	if (ret < 0)
		return ret;
	if (ret == 1) {
		if (node_leaf_free(D(p.nodes[0]), NS(r)) < size + NODE_ITEM_SIZE) {
			corrupt(r, p.nodes[0], "update: leaf without room after the search");
			btree_path_release(&p);
			return -EUCLEAN;
		}
		leaf_insert_space(D(p.nodes[0]), NS(r), p.slots[0], k, size);
		leaf_shifted(&p, p.slots[0], 1, 0);
	} else if (nb_item_size(D(p.nodes[0]), p.slots[0]) != size) {
		ret = btree_resize_item(t, r, &p, size);
		if (ret) {
			btree_path_release(&p);
			return ret;
		}
	}
	if (size)
		memcpy(btree_item_ptr(&p, p.slots[0], NULL), data, size);
	btree_path_release(&p);
	return 0;
}

int btree_delete(struct txn *t, struct root *r, const struct key *k)
{
	struct path p;
	int ret;

	btree_path_init(&p);
	ret = btree_search(t, r, k, &p, -1, 1);
	if (ret == 0)
		ret = btree_del_items(t, r, &p, 1);
	else if (ret == 1)
		ret = -ENOENT;
	btree_path_release(&p);
	return ret;
}

/* ---- iteration ---------------------------------------------------------- */

/*
 * Move a read path to another slot of its leaf (groups: the slot's group).
 * Up: walk the lock up to the group owning the slot (leaf_walk_up: the
 * items above the held region keep their order while it is held).  Down
 * past the region's start, or past the last slot the lock vouches for:
 * 1, the caller searches again.
 */
static int move_slot(struct path *p, int slot)
{
	struct node *n = p->nodes[0];
	unsigned g;

	if (p->all_groups[0]) {
		p->slots[0] = slot;
		return 0;
	}
	g = p->lock_group[0];
	if (slot < (int)n->groups[g].start)
		return 1;
	if (slot >= reg_end(n, g))
		leaf_walk_up(p, 0, n, slot);
	if (slot >= reg_end(n, p->lock_group[0]))
		return 1;
	p->slots[0] = slot;
	return 0;
}

static int key_inc(struct key *k)
{
	if (++k->offset)
		return 0;
	if (++k->type)
		return 0;
	return ++k->objectid ? 0 : -1;
}

static int key_dec(struct key *k)
{
	if (k->offset--)
		return 0;
	if (k->type--)
		return 0;
	return k->objectid-- ? 0 : -1;
}

int btree_search_ge(struct root *r, const struct key *k, struct path *p)
{
	int ret = btree_search(NULL, r, k, p, 0, 0);

	if (ret < 0)
		return ret;
	if (p->slots[0] >= (int)btree_nritems(p))
		return btree_next(p);
	return 0;
}

int btree_next(struct path *p)
{
	struct root *r = p->root;
	struct node *leaf = p->nodes[0];
	struct key target;
	int slot, n, ret;

	if (!leaf || p->cow)
		return -EINVAL;
	slot = p->slots[0];
	n = (int)nb_nritems(D(leaf));
	if (slot + 1 < n) {
		struct key cur;

		if (!move_slot(p, slot + 1))
			return 0;
		nb_item_key(D(leaf), slot, &cur);
		target = cur;
		if (key_inc(&target))
			return 1;
	} else {
		if (!p->has_hi)
			return 1;
		target = p->hi;
	}
	for (;;) {
		ret = btree_search(NULL, r, &target, p, 0, 0);
		if (ret < 0)
			return ret;
		if (p->slots[0] < (int)btree_nritems(p))
			return 0;
		if (!p->has_hi)
			return 1;
		target = p->hi;
	}
}

int btree_prev(struct path *p)
{
	struct root *r = p->root;
	struct node *leaf = p->nodes[0];
	struct key target;
	int slot, n, ret;

	if (!leaf || p->cow)
		return -EINVAL;
	slot = p->slots[0];
	n = (int)nb_nritems(D(leaf));
	if (slot > n)
		slot = n;
	if (slot > 0) {
		if (!move_slot(p, slot - 1))
			return 0;
		nb_item_key(D(leaf), slot - 1, &target);
	} else {
		if (!p->has_lo)
			return 1;
		target = p->lo;
		if (key_dec(&target))
			return 1;
	}
	for (;;) {
		ret = btree_search(NULL, r, &target, p, 0, 0);
		if (ret < 0)
			return ret;
		if (ret == 0)
			return 0;
		if (p->slots[0] > 0) {
			if (move_slot(p, p->slots[0] - 1)) {
				nb_item_key(D(p->nodes[0]), p->slots[0] - 1, &target);
				continue;
			}
			return 0;
		}
		if (!p->has_lo)
			return 1;
		target = p->lo;
		if (key_dec(&target))
			return 1;
	}
}

/* ---- walk (fsck, scrub) ------------------------------------------------ */

struct walk {
	struct root *r;
	int (*visit)(const struct node_info *ni, void *arg);
	void (*bad)(uint64_t bytenr, int level, int err, void *arg);
	void *arg;
	const struct key *dropped;	/* a deleted tree: subtrees ending at or below it are gone */
};

static void report(struct walk *w, uint64_t bytenr, int level, int err, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static void report(struct walk *w, uint64_t bytenr, int level, int err, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "glassfs: tree %" PRIu64 " node %" PRIu64 " level %d: ", w->r->id,
		bytenr, level);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (w->bad)
		w->bad(bytenr, level, err, w->arg);
}

/* Visit n (referenced, not locked) and its subtree; keys must lie in
 * [lo, hi) (NULL: unbounded). */
static int walk_node(struct walk *w, struct node *n, const struct key *lo, const struct key *hi)
{
	uint32_t ns = NS(w->r);
	struct node_info ni;
	uint8_t *copy;
	int ret = 0, level, cnt;
	char why[200];

	copy = malloc(ns);
	if (!copy)
		return -ENOMEM;
	glock_lock(NG(n) ? &n->groups[0].l : &n->lock, GLOCK_READ);
	if (NG(n))
		for (unsigned g = 1; g < NG(n); g++)
			glock_lock(&n->groups[g].l, GLOCK_READ);
	memcpy(copy, D(n), ns);
	for (unsigned g = NG(n); g-- > 1;)
		glock_unlock(&n->groups[g].l, GLOCK_READ);
	glock_unlock(NG(n) ? &n->groups[0].l : &n->lock, GLOCK_READ);

	level = nb_level(copy);
	cnt = (int)nb_nritems(copy);
	if (node_check(copy, ns, why, sizeof(why))) {
		report(w, n->bytenr, level, -EUCLEAN, "%s", why);
		goto out;
	}
	if (cnt > 0 && (lo || hi)) {
		struct key first, last;

		if (level == 0) {
			nb_item_key(copy, 0, &first);
			nb_item_key(copy, cnt - 1, &last);
		} else {
			nb_ptr_key(copy, cnt > 1 ? 1 : 0, &first);
			nb_ptr_key(copy, cnt - 1, &last);
		}
		if ((level == 0 || cnt > 1) &&
		    ((lo && key_cmp(&first, lo) < 0) || (hi && key_cmp(&last, hi) >= 0))) {
			report(w, n->bytenr, level, -EUCLEAN,
			       "keys outside the range its parent's separators give");
			goto out;
		}
	}
	ni = (struct node_info){ n->bytenr, nb_generation(copy), nb_owner(copy), level, (uint32_t)cnt,
				 copy };
	ret = w->visit ? w->visit(&ni, w->arg) : 0;
	if (ret < 0 || level == 0)
		goto out;
	if (ret > 0) {		/* seen through another tree already */
		ret = 0;
		goto out;
	}
	for (int i = 0; i < cnt && ret >= 0; i++) {
		struct node_expect e = {
			.nodesize = ns, .bytenr = nb_ptr_blockptr(copy, i),
			.fsid = core_fsid(w->r->core), .owner = expect_owner(w->r), .level = level - 1,
			.generation = nb_ptr_gen(copy, i),
		};
		struct key klo, khi;
		const struct key *clo = lo, *chi = hi;
		struct node *c;
		int err;

		if (i > 0) {
			nb_ptr_key(copy, i, &klo);
			clo = &klo;
		}
		if (i + 1 < cnt) {
			nb_ptr_key(copy, i + 1, &khi);
			chi = &khi;
		}
		if (w->dropped && chi && key_cmp(chi, w->dropped) <= 0)
			continue;
		c = cache_read(NC(w->r), &e, &err);
		if (!c) {
			report(w, e.bytenr, level - 1, err == -ESTALE ? -EIO : err,
			       "child %d of node %" PRIu64 " unreadable or not what its parent expects (%s)",
			       i, n->bytenr, strerror(-err));
			continue;
		}
		ret = walk_node(w, c, clo, chi);
		cache_put(c);
	}
out:
	free(copy);
	return ret < 0 ? ret : 0;
}

int btree_walk(struct root *r,
	       int (*visit)(const struct node_info *ni, void *arg),
	       void (*bad)(uint64_t bytenr, int level, int err, void *arg),
	       void *arg)
{
	return btree_walk_dropped(r, NULL, visit, bad, arg);
}

int btree_walk_dropped(struct root *r, const struct key *dropped,
		       int (*visit)(const struct node_info *ni, void *arg),
		       void (*bad)(uint64_t bytenr, int level, int err, void *arg),
		       void *arg)
{
	struct walk w = { r, visit, bad, arg, dropped };
	struct node *n;
	int ret;

	glock_write(&r->lock);
	if (!r->node) {
		ret = load_root(r);
		if (ret) {
			glock_write_unlock(&r->lock);
			if (bad)
				bad(r->bytenr, r->level, ret, arg);
			return ret == -EIO ? 0 : ret;
		}
	}
	n = r->node;
	cache_get(n);
	glock_write_unlock(&r->lock);
	ret = walk_node(&w, n, NULL, NULL);
	cache_put(n);
	return ret;
}

/* ---- snapshots and dropping a tree ------------------------------------ */

int btree_snapshot_root(struct txn *t, struct root *src, struct root *dst)
{
	uint64_t transid = txn_transid(t), b;
	struct node *old, *nn;
	int level, ret;

	glock_write(&src->lock);
	if (!src->node && (ret = load_root(src)))
		goto out;
	old = src->node;
	level = LVL(old);
	ret = meta_alloc(t, dst->id, level, &b);
	if (ret)
		goto out;
	nn = cache_new(NC(src), b, transid, dst->id, level);
	if (!nn) {
		meta_free(t, dst->id, level, b);
		ret = -ENOMEM;
		goto out;
	}
	lock_all(old, L_READ);
	memcpy(D(nn), D(old), NS(src));
	unlock_all(old, L_READ);
	nb_set_bytenr(D(nn), b);
	nb_set_generation(D(nn), transid);
	nb_set_owner(D(nn), dst->id);
	label(nn, dst->id, 1);
	ret = ref_children(t, dst, D(nn), level, +1);
	glock_write(&dst->lock);
	if (dst->node)
		cache_put(dst->node);
	dst->node = nn;			/* cache_new's reference */
	dst->bytenr = b;
	dst->level = level;
	dst->generation = transid;
	dst->dirty_trans = transid;
	dst->last_snapshot = transid;
	glock_write_unlock(&dst->lock);
	src->last_snapshot = transid;
out:
	glock_write_unlock(&src->lock);
	return ret;
}

struct drop_ctx {
	struct txn *t;
	struct root *r;
	struct btree_drop *d;
	int budget;
};

static void drop_advance(struct drop_ctx *dc, const struct key *hi)
{
	if (hi)
		dc->d->progress = *hi;
	else
		dc->d->all = 1;
}

/* Drop node n (reached exclusively: refs 1) covering [lo, hi) (hi NULL:
 * no upper bound), skipping what progress says is done.  1 when n is
 * gone, 0 when the budget ran out first, -errno. */
static int drop_node(struct drop_ctx *dc, struct node *n, const struct key *lo,
		     const struct key *hi)
{
	struct root *r = dc->r;
	int level = LVL(n), nr = (int)nb_nritems(D(n)), ret;

	if (level == 0) {
		ret = ref_children(dc->t, r, D(n), 0, -1);
		if (ret)
			return ret;
		dc->budget--;
		drop_advance(dc, hi);
	}
	for (int i = 0; level > 0 && i < nr; i++) {
		struct key clo, chi_k;
		const struct key *chi = hi;
		struct node *c;

		if (i == 0)
			clo = *lo;
		else
			nb_ptr_key(D(n), i, &clo);
		if (i + 1 < nr) {
			nb_ptr_key(D(n), i + 1, &chi_k);
			chi = &chi_k;
		}
		if (chi && key_cmp(chi, &dc->d->progress) <= 0)
			continue;			/* dropped by an earlier batch */
		if (dc->budget <= 0)
			return 0;
		if (key_cmp(&clo, &dc->d->progress) >= 0 && r->last_snapshot &&
		    nb_ptr_gen(D(n), i) <= r->last_snapshot) {
			int sh = meta_shared_drop(dc->t, r->id, level - 1, nb_ptr_blockptr(D(n), i));

			if (sh < 0)
				return sh;
			if (sh) {			/* another tree keeps it */
				dc->budget--;
				drop_advance(dc, chi);
				continue;
			}
		}
		c = read_child(r, n, i, &ret);
		if (!c)
			return ret == -ESTALE ? -EIO : ret;
		ret = drop_node(dc, c, &clo, chi);
		cache_put(c);
		if (ret <= 0)
			return ret;
	}
	cache_drop(n);
	meta_free(dc->t, r->id, level, n->bytenr);
	return 1;
}

int btree_drop_batch(struct txn *t, struct root *r, struct btree_drop *d, int budget)
{
	struct drop_ctx dc = { t, r, d, budget };
	struct key lo = { 0, 0, 0 };
	int ret;

	glock_write(&r->lock);
	if (!r->bytenr || d->all) {
		ret = 1;
		goto out;
	}
	if (!r->node && (ret = load_root(r)))
		goto out;
	ret = drop_node(&dc, r->node, &lo, NULL);
	if (ret == 1) {
		cache_put(r->node);
		r->node = NULL;
		r->bytenr = 0;
		r->level = 0;
		r->dirty_trans = txn_transid(t);
		d->all = 1;
	}
out:
	glock_write_unlock(&r->lock);
	return ret;
}
