// SPDX-License-Identifier: MIT
/*
 * txn.c — transactions and the commit (see txn.h).
 *
 * Handles join the running transaction.  A commit of transaction N closes
 * it to new handles (they wait, firing commit__wait), waits for the open
 * ones to end, then runs its critical section:
 *
 *   1 wait writers
 *   2 run delayed refs        \
 *   3 free-space tree,         > looped until a round changes nothing:
 *     block group items,      |  each round's copy-on-write queues refs
 *     root items              /   and free-space changes for the next
 *     capture                 the superblock (root tree and chunk root,
 *                             system chunk array), N's pinned extents
 *                             (alloc_capture_pins), N's dirty nodes
 *                             (cache_freeze)
 *
 * and opens transaction N+1 to joiners (btrfs's TRANS_STATE_UNBLOCKED)
 * before its write phase, which runs while N+1 changes the trees:
 *
 *   4 write N's dirty nodes (cache_writeback(N))
 *   5 flush devices           every node durable before a superblock
 *                             points at it
 *   6 the captured superblock (every copy, every device), flush
 *   8 unpin                   space freed by N becomes allocatable only now
 *
 * N's nodes are immutable once captured: their generation is N, so N+1
 * copies them (a node is still copied at most once per transaction), and
 * a node of N that N+1 frees stays on the dirty list for N's writeback
 * (cache.c) while its block stays pinned until N+1 commits (it is not
 * "new" in N+1: alloc_clear_new at capture).  Pins made by N+1 are N+1's;
 * the free-space tree and block group items N+1 changes are written by
 * N+1's critical section.  Only one commit is busy at a time: the commit
 * of N+1 starts after N's superblocks and unpin.
 *
 * A crash before phase 6 completes leaves the previous superblocks, which
 * point only at blocks this transaction never overwrote (copy-on-write,
 * pinned frees).  Commits run from txn_commit() (sync, fsync, unmount)
 * and from the commit thread (commit= interval, dirty threshold).
 */
#include "fs/core/core_types.h"
#include "fs/trees/chunk_tree.h"
#include "fs/store/alloc.h"
#include "fs/trees/alloc_tree.h"
#include "fs/store/chunk.h"
#include "fs/store/dev.h"
#include "fs/store/discard.h"
#include "fs/trees/extent.h"
#include "fs/txn/txn.h"
#include "fs/btree/btree.h"
#include "fs/btree/cache.h"
#include "fs/base/crc32c.h"
#include "fs/base/probe.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define COMMIT_MAX_ROUNDS 64

static uint64_t meta_need(const struct core *c, unsigned nr_items, uint64_t meta_total)
{
	/* Each item change may copy a path of nodes once per transaction and
	 * queue refs that change extent and free-space tree paths at commit.
	 * Many changes share paths, so a big batch is capped: a quarter of
	 * the metadata space is far more than one transaction copies. */
	uint64_t n = (uint64_t)(nr_items + 1) * c->nodesize * 4;
	return n < meta_total / 4 ? n : meta_total / 4;
}

/* Bytes of metadata kept for TXN_USE_RESERVE handles and the commit. */
static uint64_t meta_reserve(const struct core *c, uint64_t meta_total)
{
	uint64_t r = meta_total / 16, min = (uint64_t)c->nodesize * 64;

	return r < min ? min : r;
}

/* Make sure there is room for a handle's metadata, creating a chunk when
 * a type runs low.  Called with a handle, holding no tree lock. */
static int reserve_meta(struct txn *t, unsigned nr_items)
{
	struct core *c = t->c;
	uint64_t total, free_b, need, reserve;

	alloc_space_open(c, BG_METADATA, &total, &free_b);
	need = meta_need(c, nr_items, total);
	reserve = meta_reserve(c, total);
	if (free_b >= need + reserve * 2) {
		uint64_t st, sf;
		alloc_space_open(c, BG_SYSTEM, &st, &sf);
		if (sf >= (uint64_t)c->nodesize * 16)
			return 0;
	}
	glock_lock(&c->chunk_alloc_lock, GLOCK_WRITE);
	alloc_space_open(c, BG_METADATA, &total, &free_b);
	need = meta_need(c, nr_items, total);
	reserve = meta_reserve(c, total);
	if (free_b < need + reserve * 2) {
		uint64_t l;
		chunk_create(c, t, BG_METADATA, &l);	/* -ENOSPC: decided below */
		alloc_space_open(c, BG_METADATA, &total, &free_b);
	}
	uint64_t st, sf;
	alloc_space_open(c, BG_SYSTEM, &st, &sf);
	if (sf < (uint64_t)c->nodesize * 16) {
		uint64_t l;
		chunk_create(c, t, BG_SYSTEM, &l);
	}
	glock_unlock(&c->chunk_alloc_lock, GLOCK_WRITE);
	if (free_b >= need + ((t->flags & TXN_USE_RESERVE) ? 0 : reserve))
		return 0;
	/* the range being discarded right now is free a moment from now */
	if (discard_wait_inflight(c, t->transid)) {
		alloc_space_open(c, BG_METADATA, &total, &free_b);
		if (free_b >= need + ((t->flags & TXN_USE_RESERVE) ? 0 : reserve))
			return 0;
	}
	return -ENOSPC;
}

int txn_join(struct core *c, unsigned nr_items, unsigned flags, struct txn **out)
{
	struct txn_state *ts = &c->ts;
	struct txn *t;
	int ret;

	if (c->readonly || c->aborted)
		return -EROFS;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	glock_write(&ts->lock);
	if (ts->committing) {
		uint64_t t0 = glock_now_ns(), waited_for = ts->running;
		while (ts->committing)
			gcond_wait(&ts->cond, &ts->lock);
		if (PROBE_ON(COMMIT_WAIT))
			GLASSFS_COMMIT_WAIT(waited_for, glock_now_ns() - t0);
	}
	if (c->aborted) {
		glock_write_unlock(&ts->lock);
		free(t);
		return -EROFS;
	}
	if (!ts->running) {
		/* the transaction being written (if any) is newer than the
		 * last committed one */
		ts->running = (ts->writing > c->generation ? ts->writing : c->generation) + 1;
		ts->started_ns = glock_now_ns();
		if (PROBE_ON(TXN_START))
			GLASSFS_TXN_START(ts->running);
	} else if (PROBE_ON(TXN_JOIN)) {
		GLASSFS_TXN_JOIN(ts->running);
	}
	ts->writers++;
	t->c = c;
	t->transid = ts->running;
	t->flags = flags;
	glock_write_unlock(&ts->lock);

	ret = reserve_meta(t, nr_items);
	if (ret) {
		txn_end(t);
		return ret;
	}
	*out = t;
	return 0;
}

int txn_end(struct txn *t)
{
	struct core *c = t->c;
	struct txn_state *ts = &c->ts;
	int ret;

	glock_write(&ts->lock);
	ts->writers--;
	if (ts->committing && ts->writers == 0)
		gcond_broadcast(&ts->cond);
	/* nodes a commit is still writing are not this transaction's */
	if (!ts->committing && !ts->want_commit && c->opts.dirty_thresh_bytes && c->cache &&
	    cache_dirty_bytes(c->cache) > c->opts.dirty_thresh_bytes + (ts->writing ? ts->writing_bytes : 0)) {
		ts->want_commit = COMMIT_DIRTY;
		gcond_broadcast(&ts->cond);
	}
	glock_write_unlock(&ts->lock);
	ret = c->aborted;
	free(t);
	return ret;
}

void txn_set_commit_hooks(struct core *c, const struct txn_commit_hooks *h)
{
	c->ts.hook_root_items = h->root_items;
	c->ts.hook_critical = h->critical;
	c->ts.hook_super = h->super;
}

/* ---- the commit --------------------------------------------------------- */

static void fill_super(struct core *c, struct super_block *sb, uint64_t transid)
{
	struct root *rt = core_tree(c, CT_ROOT), *ch = core_tree(c, CT_CHUNK);

	sb->magic = GLASSFS_MAGIC;
	sb->generation = transid;
	sb->root = rt->bytenr;
	sb->root_level = (uint8_t)rt->level;
	sb->chunk_root = ch->bytenr;
	sb->chunk_root_level = (uint8_t)ch->level;
	sb->chunk_root_generation = transid;
	sb->bytes_used = alloc_bytes_used(c);
	/* num_devices is the volume's, from the superblock: a degraded open
	 * has fewer devices at hand; only an added device raises it */
	if (sb->num_devices < (uint64_t)c->ndevs)
		sb->num_devices = (uint64_t)c->ndevs;
	sb->total_bytes = 0;
	for (int i = 0; i < c->ndevs; i++)
		sb->total_bytes += c->devs[i]->size;
	sb->sectorsize = CORE_SECTORSIZE;
	sb->nodesize = c->nodesize;
	sb->csum_type = CSUM_TYPE_CRC32C;
}

void txn_fill_super(struct core *c, uint64_t transid)
{
	fill_super(c, &c->sb, transid);
}

/*
 * Write every superblock copy of every device, then flush the devices
 * at once (dev_flush_all).
 * On a multi-device volume a device whose superblock write or flush
 * fails is skipped (a log line, the degraded counter) as long as another
 * device took its superblock: the failure only matters if all fail.
 */
/* The superblock for transid into *sb (from c->sb), system chunk array
 * included. */
static int prepare_super(struct core *c, struct super_block *sb, uint64_t transid)
{
	int ret;

	if (sb != &c->sb)
		memcpy(sb, &c->sb, sizeof(*sb));
	fill_super(c, sb, transid);
	ret = chunk_build_sys_array(c, sb);
	if (ret)
		core_log(c, "superblock: system chunks do not fit in sys_chunk_array");
	return ret;
}

/* sb is durable: c->sb (the last committed superblock) takes what the
 * commit filled in; other fields (label, log root, devices) stay as the
 * running transaction may have set them meanwhile. */
static void super_committed(struct core *c, const struct super_block *sb)
{
	struct super_block *d = &c->sb;

	d->generation = sb->generation;
	d->root = sb->root;
	d->root_level = sb->root_level;
	d->chunk_root = sb->chunk_root;
	d->chunk_root_level = sb->chunk_root_level;
	d->chunk_root_generation = sb->chunk_root_generation;
	d->bytes_used = sb->bytes_used;
	if (d->total_bytes < sb->total_bytes)
		d->total_bytes = sb->total_bytes;
	if (d->num_devices < sb->num_devices)
		d->num_devices = sb->num_devices;
	d->sys_chunk_array_size = sb->sys_chunk_array_size;
	memcpy(d->sys_chunk_array, sb->sys_chunk_array, sizeof(d->sys_chunk_array));
	d->log_slot = sb->log_slot;
	d->log_slot_len = sb->log_slot_len;
	d->features = sb->features;
}

static int write_supers(struct core *c, const struct super_block *sb, uint64_t transid);

int txn_write_supers(struct core *c, uint64_t transid)
{
	int ret = prepare_super(c, &c->sb, transid);

	return ret ? ret : write_supers(c, &c->sb, transid);
}

/* fsync log: the last durable superblock again, with its log_root (the
 * caller holds a handle and no commit is writing: c->sb is stable). */
int txn_write_super_log(struct core *c)
{
	return write_supers(c, &c->sb, __atomic_load_n(&c->generation, __ATOMIC_ACQUIRE));
}

/* Write sb (prepared for transid) to every copy of every device, then
 * flush the devices that took it, all at once (dev_flush_all) — in two
 * rounds when a device was added since the mount (below). */
static int write_supers(struct core *c, const struct super_block *sb, uint64_t transid)
{
	static const uint64_t offs[SUPER_COPIES] = { SUPER_OFFSET, SUPER_MIRROR1, SUPER_MIRROR2 };
	struct super_block *buf;
	int first_err = 0, good = 0;

	_Static_assert(CORE_MAX_DEVS <= DEV_FLUSH_ALL_MAX, "dev_flush_all takes every device");
	buf = aligned_alloc(4096, sizeof(*buf));
	if (!buf)
		return -ENOMEM;
	/*
	 * A device added since the mount (no superblock of its own at open)
	 * first, written and flushed before the others are written: the
	 * commit that counts it in num_devices must not be durable on the
	 * others while it has no superblock — power lost between their
	 * flushes would leave a volume whose device count names one no scan
	 * finds (a mount then wants -o degraded).  The other way round, the
	 * devices that miss the superblock are stale, as after any cut
	 * between two devices' flushes.  Each round's flushes run at once.
	 */
	for (int round = 0; round < 2; round++) {
		struct dev *fl[CORE_MAX_DEVS], *in[CORE_MAX_DEVS];
		int res[CORE_MAX_DEVS], fres[CORE_MAX_DEVS], nfl = 0, nin = 0;

		for (int i = 0; i < c->ndevs; i++) {
			struct dev *d = c->devs[i];
			int ret = 0;

			if ((d->sb_generation == 0) != (round == 0))
				continue;
			for (int k = 0; k < SUPER_COPIES && !ret; k++) {
				if (offs[k] + SUPER_SIZE > d->size)
					continue;
				memcpy(buf, sb, sizeof(*buf));
				buf->bytenr = offs[k];
				buf->dev_item.devid = d->devid;
				buf->dev_item.total_bytes = d->size;
				buf->dev_item.sector_size = CORE_SECTORSIZE;
				buf->dev_item.rotational = d->rotational;
				buf->dev_item.generation = transid;
				memcpy(buf->dev_item.uuid, d->uuid, 16);
				memcpy(buf->dev_item.fsid, sb->fsid, 16);
				memset(buf->csum, 0, sizeof(buf->csum));
				uint32_t crc = crc32c(0, (uint8_t *)buf + 32, SUPER_SIZE - 32);
				memcpy(buf->csum, &crc, 4);
				ret = dev_write(d, offs[k], buf, SUPER_SIZE);
			}
			in[nin] = d;
			res[nin++] = ret;
			if (!ret)
				fl[nfl++] = d;
		}
		if (nfl)
			dev_flush_all(fl, nfl, fres);
		for (int j = 0, f = 0; j < nin; j++) {
			struct dev *d = in[j];
			const char *what = "write";
			int ret = res[j];

			if (!ret) {
				what = "flush";
				ret = fres[f++];
			}
			if (!ret) {
				good++;
				continue;
			}
			if (!first_err)
				first_err = ret;
			if (c->ndevs > 1) {
				__atomic_fetch_add(&c->degraded, 1, __ATOMIC_RELAXED);
				core_log(c, "superblock %llu: %s failed on %s: %s; device skipped, degraded",
					 (unsigned long long)transid, what, d->path, strerror(-ret));
			}
		}
	}
	free(buf);
	if (good == 0) {
		if (c->ndevs > 1)
			core_log(c, "superblock %llu: no device took it", (unsigned long long)transid);
		return first_err ? first_err : -EIO;
	}
	return 0;
}

int txn_update_root_items(struct txn *t)
{
	struct core *c = t->c;
	int changes = 0;

	for (int i = CT_EXTENT; i < CT_NR; i++) {
		struct core_root *cr = &c->roots[i];
		struct root_item ri;
		struct key k;
		int ret;

		if (i == CT_CHUNK || !cr->present)
			continue;
		if (cr->item_bytenr == cr->r.bytenr && cr->item_level == cr->r.level &&
		    cr->item_last_snapshot == cr->r.last_snapshot)
			continue;
		memset(&ri, 0, sizeof(ri));
		ri.generation = t->transid;
		ri.bytenr = cr->r.bytenr;
		ri.level = (uint8_t)cr->r.level;
		ri.refs = 1;
		ri.last_snapshot = cr->r.last_snapshot;
		k = (struct key){ cr->r.id, KEY_ROOT_ITEM, 0 };
		ret = btree_update(t, core_tree(c, CT_ROOT), &k, &ri, sizeof(ri));
		if (ret)
			return ret;
		cr->item_bytenr = cr->r.bytenr;
		cr->item_level = cr->r.level;
		cr->item_last_snapshot = cr->r.last_snapshot;
		changes++;
	}
	int r = c->ts.hook_root_items ? c->ts.hook_root_items(t) : 0;
	return r < 0 ? r : changes + r;
}

/* Work queued by txn_commit_with for this commit (no handle is open). */
static int run_pending(struct core *c, struct txn *th)
{
	struct core_pending *list, *p;
	int ret = 0;

	glock_write(&c->ts.lock);
	list = c->pending;
	c->pending = NULL;
	glock_write_unlock(&c->ts.lock);
	for (p = list; p; p = p->next)
		p->ret = ret ? ret : p->fn(th, p->arg);
	glock_write(&c->ts.lock);
	for (p = list; p; p = p->next)
		p->done = true;
	glock_write_unlock(&c->ts.lock);
	for (p = list; p && !ret; p = p->next)
		if (p->ret < 0 && c->aborted)
			ret = p->ret;
	return ret;
}

int txn_commit_with(struct core *c, int (*fn)(struct txn *t, void *arg), void *arg)
{
	struct core_pending p = { fn, arg, 0, false, NULL };
	struct txn *t;
	int ret = txn_join(c, 1, TXN_USE_RESERVE, &t);

	if (ret)
		return ret;
	/* our handle keeps this transaction from committing until queued */
	glock_write(&c->ts.lock);
	p.next = c->pending;
	c->pending = &p;
	glock_write_unlock(&c->ts.lock);
	txn_end(t);
	for (;;) {
		ret = txn_commit(c, COMMIT_OTHER);
		glock_write(&c->ts.lock);
		bool done = p.done;
		glock_write_unlock(&c->ts.lock);
		if (done)
			return ret ? ret : p.ret;
		if (ret) {
			glock_write(&c->ts.lock);
			for (struct core_pending **pp = &c->pending; *pp; pp = &(*pp)->next)
				if (*pp == &p) {
					*pp = p.next;
					break;
				}
			glock_write_unlock(&c->ts.lock);
			return ret;
		}
	}
}

static void phase_end(uint64_t transid, int phase, uint64_t *t0)
{
	if (PROBE_ON(COMMIT_PHASE)) {
		uint64_t now = glock_now_ns();
		GLASSFS_COMMIT_PHASE(transid, phase, *t0 ? now - *t0 : 0);
		*t0 = now;
	} else {
		*t0 = 0;
	}
}

static bool unpinned(void *arg, uint64_t logical, uint64_t len, uint64_t flags)
{
	struct core *c = arg;

	if (flags & (BG_METADATA | BG_SYSTEM))
		for (uint64_t b = logical; b < logical + len; b += c->nodesize)
			cache_forget(c->cache, b);
	return discard_freed(c, logical, len);
}

/*
 * The critical section of transaction transid's commit (no handle is
 * open): run delayed refs, write free-space tree, block group and root
 * items until nothing changes, then capture what the write phase needs
 * (*sb; pins; dirty nodes).  0 or -errno (the volume is aborted).
 */
static int commit_critical(struct core *c, uint64_t transid, uint64_t *t0,
			   struct super_block *sb)
{
	struct txn th = { c, transid, TXN_USE_RESERVE };
	int ret = 0, rounds;
	const char *where = "commit";

	phase_end(transid, 1, t0);
	/* this commit makes the fsync log obsolete: its blocks are freed
	 * (pinned: this commit's pins) and the superblock captured below says
	 * log_root 0 */
	if (c->ts.hook_critical)
		c->ts.hook_critical(c);
	ret = run_pending(c, &th);
	if (ret) {
		where = "commit: snapshots";
		goto fail;
	}
	for (rounds = 0; rounds < COMMIT_MAX_ROUNDS; rounds++) {
		int n = 0, r;

		while (extent_refs_pending(c)) {
			r = extent_run_refs(&th);
			if (r < 0) {
				where = "commit: running delayed refs";
				ret = r;
				goto fail;
			}
			n += r;
		}
		if (rounds == 0)
			phase_end(transid, 2, t0);
		r = alloc_commit_fst(&th);
		if (r < 0) {
			where = "commit: free-space tree";
			ret = r;
			goto fail;
		}
		n += r;
		r = alloc_commit_bg_items(&th);
		if (r < 0) {
			where = "commit: block group items";
			ret = r;
			goto fail;
		}
		n += r;
		r = txn_update_root_items(&th);
		if (r < 0) {
			where = "commit: root items";
			ret = r;
			goto fail;
		}
		n += r;
		if (n == 0 && !extent_refs_pending(c))
			break;
	}
	if (rounds == COMMIT_MAX_ROUNDS) {
		where = "commit: reference updates do not converge";
		ret = -ELOOP;
		goto fail;
	}
	if (c->aborted) {
		ret = c->aborted;
		goto fail;
	}
	/* capture: from here on the running transaction is the next one.
	 * c->sb stays the last durable superblock until this one is written */
	ret = prepare_super(c, sb, transid);
	if (ret) {
		where = "commit: superblock";
		goto fail;
	}
	/* the trees are final: the fsync log names the next transaction's
	 * first segment in the captured superblock (after bytes_used) */
	if (c->ts.hook_super)
		c->ts.hook_super(c, sb);
	alloc_capture_pins(c);
	alloc_clear_new(c);
	cache_freeze(c->cache, transid);
	phase_end(transid, 3, t0);
	return 0;
fail:
	txn_abort(&th, ret, where);
	return ret;
}

/* The write phase of transid's commit, while the next transaction runs:
 * its nodes, a flush, the superblock sb, then its pins are released.
 * 0 or -errno (the volume is aborted; the old superblocks stay). */
static int commit_write(struct core *c, uint64_t transid, const struct super_block *sb,
			uint64_t *t0, uint64_t start_ns)
{
	struct txn th = { c, transid, TXN_USE_RESERVE };
	uint64_t nodes = 0, bytes = 0;
	const char *where;
	int ret;

	ret = cache_writeback(c->cache, transid, &nodes, &bytes);
	if (ret) {
		where = "commit: writing nodes";
		goto fail;
	}
	phase_end(transid, 4, t0);
	ret = chunk_flush_devs(c, "commit");
	if (ret) {
		where = "commit: flushing nodes";
		goto fail;
	}
	phase_end(transid, 5, t0);
	if (c->aborted) {	/* an abort during writeback: keep the old supers */
		ret = c->aborted;
		where = "commit";
		goto fail;
	}
	ret = write_supers(c, sb, transid);	/* and flushes them */
	if (ret) {
		where = "commit: writing superblocks";
		goto fail;
	}
	phase_end(transid, 6, t0);
	super_committed(c, sb);
	__atomic_store_n(&c->generation, transid, __ATOMIC_RELEASE);
	alloc_unpin(c, unpinned, c);
	if (c->discard.mode == DISCARD_SYNC && PROBE_ON(COMMIT_PHASE))
		GLASSFS_COMMIT_PHASE(transid, 7, discard_take_sync_ns(c));
	phase_end(transid, 8, t0);
	__atomic_fetch_add(&c->commits, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&c->nodes_written, nodes, __ATOMIC_RELAXED);
	if (PROBE_ON(COMMIT_END))
		GLASSFS_COMMIT_END(transid, start_ns ? glock_now_ns() - start_ns : 0, nodes, bytes);
	return 0;
fail:
	txn_abort(&th, ret, where);
	return ret;
}

/* Used by mount_format: commit transaction transid without the handle
 * bookkeeping (no other thread exists yet). */
int txn_commit_format(struct core *c, uint64_t transid);
int txn_commit_format(struct core *c, uint64_t transid)
{
	struct super_block sb;
	uint64_t t0 = 0;
	int ret = commit_critical(c, transid, &t0, &sb);

	return ret ? ret : commit_write(c, transid, &sb, &t0, 0);
}

/*
 * Commit the running transaction, with ts->lock held and ts->busy clear;
 * returns with the lock held.  Joiners wait only for the critical
 * section; the write phase runs with the lock dropped and the next
 * transaction open.
 */
static int run_commit(struct core *c, enum commit_reason why)
{
	struct txn_state *ts = &c->ts;
	struct super_block *sb = aligned_alloc(64, sizeof(*sb));
	uint64_t transid = ts->running, t0, writing_bytes;
	int ret;

	ts->busy = true;
	ts->committing = true;
	ts->want_commit = 0;
	t0 = PROBE_ON(COMMIT_START) || PROBE_ON(COMMIT_PHASE) || PROBE_ON(COMMIT_END)
		? glock_now_ns() : 0;
	uint64_t start_ns = t0;
	if (PROBE_ON(COMMIT_START))
		GLASSFS_COMMIT_START(transid, (int)why);
	while (ts->writers)
		gcond_wait(&ts->cond, &ts->lock);
	glock_write_unlock(&ts->lock);

	ret = sb ? commit_critical(c, transid, &t0, sb) : -ENOMEM;
	writing_bytes = c->cache ? cache_dirty_bytes(c->cache) : 0;

	glock_write(&ts->lock);
	ts->committing = false;
	ts->running = 0;
	ts->writing = transid;
	ts->writing_bytes = writing_bytes;
	gcond_broadcast(&ts->cond);	/* joiners start transaction transid + 1 */
	glock_write_unlock(&ts->lock);

	if (ret == 0)
		ret = commit_write(c, transid, sb, &t0, start_ns);
	else if (ret == -ENOMEM && !c->aborted)
		txn_abort(&(struct txn){ c, transid, 0 }, ret, "commit");
	free(sb);

	glock_write(&ts->lock);
	ts->writing = 0;
	ts->writing_bytes = 0;
	ts->busy = false;
	ts->durable = transid;
	ts->commits_done++;
	ts->commit_ret = ret;
	gcond_broadcast(&ts->cond);
	return ret;
}

void txn_wait_written(struct core *c)
{
	struct txn_state *ts = &c->ts;
	uint64_t w0 = 0, id = 0;

	glock_write(&ts->lock);
	while (ts->writing && !c->aborted) {
		if (!w0) {
			w0 = glock_now_ns();
			id = ts->writing;
		}
		gcond_wait(&ts->cond, &ts->lock);
	}
	glock_write_unlock(&ts->lock);
	if (w0 && PROBE_ON(COMMIT_WAIT))
		GLASSFS_COMMIT_WAIT(id, glock_now_ns() - w0);
}

uint64_t txn_newest(struct core *c)
{
	struct txn_state *ts = &c->ts;
	uint64_t n;

	glock_write(&ts->lock);
	n = ts->running ? ts->running : ts->writing > c->generation ? ts->writing : c->generation;
	glock_write_unlock(&ts->lock);
	return n;
}

int txn_commit(struct core *c, enum commit_reason why)
{
	struct txn_state *ts = &c->ts;
	uint64_t target, w0 = 0;
	int ret = 0;

	if (c->readonly)
		return 0;
	glock_write(&ts->lock);
	/* everything joined so far: the running transaction, else the one
	 * being written */
	target = ts->running ? ts->running : ts->writing;
	for (;;) {
		if (c->aborted) {
			ret = c->aborted;
			break;
		}
		if (!target || ts->durable >= target)
			break;
		if (!ts->busy && ts->running == target) {
			ret = run_commit(c, why);
			if (ret)
				break;
			continue;
		}
		/* another thread's commit holds what we wait for, or must
		 * finish before ours can start */
		if (!w0)
			w0 = glock_now_ns();
		gcond_wait(&ts->cond, &ts->lock);
	}
	glock_write_unlock(&ts->lock);
	if (w0 && PROBE_ON(COMMIT_WAIT))
		GLASSFS_COMMIT_WAIT(target, glock_now_ns() - w0);
	return ret;
}

/* ---- the commit thread ---------------------------------------------------- */

static void *commit_thread(void *arg)
{
	struct core *c = arg;
	struct txn_state *ts = &c->ts;
	uint64_t interval = (uint64_t)(c->opts.commit_interval_s ? c->opts.commit_interval_s : 30) *
			    1000000000ull;

	glock_write(&ts->lock);
	while (!ts->thread.stop) {
		int why = ts->want_commit;
		uint64_t now = glock_now_ns();

		if (!why && ts->running && !ts->busy && now - ts->started_ns >= interval)
			why = COMMIT_PERIODIC;
		if (why && ts->running && !ts->busy && !c->aborted) {
			glock_write_unlock(&ts->lock);
			txn_commit(c, (enum commit_reason)why);
			glock_write(&ts->lock);
			continue;
		}
		if (!ts->busy)	/* else: wanted again once that commit ends */
			ts->want_commit = 0;
		uint64_t wait = interval;
		if (ts->running && now - ts->started_ns < interval)
			wait = interval - (now - ts->started_ns);
		gcond_timedwait(&ts->cond, &ts->lock, wait);
	}
	glock_write_unlock(&ts->lock);
	return NULL;
}

int txn_start_commit_thread(struct core *c)
{
	return gthread_start(&c->ts.thread, commit_thread, c);
}

void txn_stop_commit_thread(struct core *c)
{
	gthread_stop(&c->ts.thread, &c->ts.lock, &c->ts.cond);
}
