// SPDX-License-Identifier: MIT
/*
 * txn.c — transactions and the commit (see txn.h).
 *
 * One transaction runs at a time.  Handles join it; a commit closes it to
 * new handles (they wait, firing commit__wait), waits for the open ones to
 * end, then writes it out in phases, each timed by commit__phase:
 *
 *   1 wait writers
 *   2 run delayed refs        \
 *   3 free-space tree,         > looped until a round changes nothing:
 *     block group items,      |  each round's copy-on-write queues refs
 *     root items              /   and free-space changes for the next
 *   4 write dirty nodes (cache_writeback)
 *   5 flush devices           every node durable before a superblock
 *                             points at it
 *   6 superblocks (every copy, every device), flush
 *   8 unpin                   space freed by this transaction becomes
 *                             allocatable only now
 *
 * A crash before phase 6 completes leaves the previous superblocks, which
 * point only at blocks this transaction never overwrote (copy-on-write,
 * pinned frees).  Commits run from txn_commit() (sync, fsync, unmount)
 * and from the commit thread (commit= interval, dirty threshold).
 */
#include "fs/core_internal.h"
#include "fs/btree.h"
#include "fs/crc32c.h"
#include "fs/probe.h"

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

	alloc_space(c, BG_METADATA, &total, &free_b);
	need = meta_need(c, nr_items, total);
	reserve = meta_reserve(c, total);
	if (free_b >= need + reserve * 2) {
		uint64_t st, sf;
		alloc_space(c, BG_SYSTEM, &st, &sf);
		if (sf >= (uint64_t)c->nodesize * 16)
			return 0;
	}
	glock_lock(&c->chunk_alloc_lock, GLOCK_WRITE);
	alloc_space(c, BG_METADATA, &total, &free_b);
	need = meta_need(c, nr_items, total);
	reserve = meta_reserve(c, total);
	if (free_b < need + reserve * 2) {
		uint64_t l;
		chunk_create(c, t, BG_METADATA, &l);	/* -ENOSPC: decided below */
		alloc_space(c, BG_METADATA, &total, &free_b);
	}
	uint64_t st, sf;
	alloc_space(c, BG_SYSTEM, &st, &sf);
	if (sf < (uint64_t)c->nodesize * 16) {
		uint64_t l;
		chunk_create(c, t, BG_SYSTEM, &l);
	}
	glock_unlock(&c->chunk_alloc_lock, GLOCK_WRITE);
	if (free_b >= need + ((t->flags & TXN_USE_RESERVE) ? 0 : reserve))
		return 0;
	/* space waiting for its discard is free a moment from now */
	if (discard_wait_idle(c, t->transid)) {
		alloc_space(c, BG_METADATA, &total, &free_b);
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
		ts->running = c->generation + 1;
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
	if (!ts->committing && !ts->want_commit && c->opts.dirty_thresh_bytes && c->cache &&
	    cache_dirty_bytes(c->cache) > c->opts.dirty_thresh_bytes) {
		ts->want_commit = COMMIT_DIRTY;
		gcond_broadcast(&ts->cond);
	}
	glock_write_unlock(&ts->lock);
	ret = c->aborted;
	free(t);
	return ret;
}

uint64_t txn_transid(const struct txn *t) { return t->transid; }
struct core *txn_core(const struct txn *t) { return t->c; }

void txn_abort(struct txn *t, int err, const char *where)
{
	struct core *c = t->c;
	int zero = 0;

	if (err >= 0)
		err = -EIO;
	if (__atomic_compare_exchange_n(&c->aborted, &zero, err, false, __ATOMIC_SEQ_CST,
					__ATOMIC_SEQ_CST))
		core_log(c, "transaction %llu aborted in %s: %s; the volume is now read-only",
			 (unsigned long long)t->transid, where, strerror(-err));
}

/* ---- the commit --------------------------------------------------------- */

void core_fill_super(struct core *c, uint64_t transid)
{
	struct super_block *sb = &c->sb;
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

/*
 * Write every superblock copy of every device, then flush each device.
 * On a multi-device volume a device whose superblock write or flush
 * fails is skipped (a log line, the degraded counter) as long as another
 * device took its superblock: the failure only matters if all fail.
 */
int core_write_supers(struct core *c, uint64_t transid)
{
	static const uint64_t offs[SUPER_COPIES] = { SUPER_OFFSET, SUPER_MIRROR1, SUPER_MIRROR2 };
	struct super_block *buf;
	int ret = 0, first_err = 0, good = 0;

	core_fill_super(c, transid);
	ret = chunk_build_sys_array(c, &c->sb);
	if (ret) {
		core_log(c, "superblock: system chunks do not fit in sys_chunk_array");
		return ret;
	}
	buf = aligned_alloc(4096, sizeof(*buf));
	if (!buf)
		return -ENOMEM;
	for (int i = 0; i < c->ndevs; i++) {
		struct dev *d = c->devs[i];
		const char *what = "write";

		ret = 0;
		for (int k = 0; k < SUPER_COPIES && !ret; k++) {
			if (offs[k] + SUPER_SIZE > d->size)
				continue;
			memcpy(buf, &c->sb, sizeof(*buf));
			buf->bytenr = offs[k];
			buf->dev_item.devid = d->devid;
			buf->dev_item.total_bytes = d->size;
			buf->dev_item.sector_size = CORE_SECTORSIZE;
			buf->dev_item.rotational = d->rotational;
			buf->dev_item.generation = transid;
			memcpy(buf->dev_item.uuid, d->uuid, 16);
			memcpy(buf->dev_item.fsid, c->sb.fsid, 16);
			memset(buf->csum, 0, sizeof(buf->csum));
			uint32_t crc = crc32c(0, (uint8_t *)buf + 32, SUPER_SIZE - 32);
			memcpy(buf->csum, &crc, 4);
			ret = dev_write(d, offs[k], buf, SUPER_SIZE);
		}
		if (!ret) {
			what = "flush";
			ret = dev_flush(d);
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
	free(buf);
	if (good == 0) {
		if (c->ndevs > 1)
			core_log(c, "superblock %llu: no device took it", (unsigned long long)transid);
		return first_err ? first_err : -EIO;
	}
	return 0;
}

int core_update_root_items(struct txn *t)
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
	int r = subvol_update_root_items(t);
	return r < 0 ? r : changes + r;
}

/* Work queued by core_commit_with for this commit (no handle is open). */
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

int core_commit_with(struct core *c, int (*fn)(struct txn *t, void *arg), void *arg)
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

/* Write out transaction transid; no handle is open.  0 or -errno; on error
 * the superblocks were not written and the volume is aborted. */
static int do_commit(struct core *c, uint64_t transid, uint64_t start_ns)
{
	struct txn th = { c, transid, TXN_USE_RESERVE };
	uint64_t t0 = start_ns, nodes = 0, bytes = 0;
	int ret = 0, rounds;
	const char *where = "commit";

	phase_end(transid, 1, &t0);
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
			phase_end(transid, 2, &t0);
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
		r = core_update_root_items(&th);
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
	phase_end(transid, 3, &t0);
	if (c->aborted) {
		ret = c->aborted;
		goto fail;
	}
	ret = cache_writeback(c->cache, transid, &nodes, &bytes);
	if (ret) {
		where = "commit: writing nodes";
		goto fail;
	}
	phase_end(transid, 4, &t0);
	for (int i = 0; i < c->ndevs && !ret; i++)
		ret = dev_flush(c->devs[i]);
	if (ret) {
		where = "commit: flushing nodes";
		goto fail;
	}
	phase_end(transid, 5, &t0);
	if (c->aborted) {	/* an abort during writeback: keep the old supers */
		ret = c->aborted;
		goto fail;
	}
	ret = core_write_supers(c, transid);	/* and flushes them */
	if (ret) {
		where = "commit: writing superblocks";
		goto fail;
	}
	phase_end(transid, 6, &t0);
	c->generation = transid;
	alloc_unpin(c, unpinned, c);
	alloc_clear_new(c);
	if (c->discard.mode == DISCARD_SYNC && PROBE_ON(COMMIT_PHASE))
		GLASSFS_COMMIT_PHASE(transid, 7, discard_take_sync_ns(c));
	phase_end(transid, 8, &t0);
	__atomic_fetch_add(&c->commits, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&c->nodes_written, nodes, __ATOMIC_RELAXED);
	if (PROBE_ON(COMMIT_END))
		GLASSFS_COMMIT_END(transid, start_ns ? glock_now_ns() - start_ns : 0, nodes, bytes);
	return 0;
fail:
	txn_abort(&th, ret, where);
	return ret;
}

/* Used by core_format: commit transaction transid without the handle
 * bookkeeping (no other thread exists yet). */
int txn_commit_format(struct core *c, uint64_t transid);
int txn_commit_format(struct core *c, uint64_t transid)
{
	return do_commit(c, transid, 0);
}

int txn_commit(struct core *c, enum commit_reason why)
{
	struct txn_state *ts = &c->ts;
	uint64_t transid, t0;
	int ret;

	if (c->readonly)
		return 0;
	glock_write(&ts->lock);
	if (c->aborted) {
		glock_write_unlock(&ts->lock);
		return c->aborted;
	}
	if (ts->committing) {
		/* our changes are in the transaction being written: wait for it */
		uint64_t done = ts->commits_done, w0 = glock_now_ns(), id = ts->running;
		while (ts->commits_done == done)
			gcond_wait(&ts->cond, &ts->lock);
		ret = ts->commit_ret;
		glock_write_unlock(&ts->lock);
		if (PROBE_ON(COMMIT_WAIT))
			GLASSFS_COMMIT_WAIT(id, glock_now_ns() - w0);
		return ret;
	}
	if (!ts->running) {
		glock_write_unlock(&ts->lock);
		return 0;
	}
	ts->committing = true;
	transid = ts->running;
	t0 = PROBE_ON(COMMIT_START) || PROBE_ON(COMMIT_PHASE) || PROBE_ON(COMMIT_END)
		? glock_now_ns() : 0;
	if (PROBE_ON(COMMIT_START))
		GLASSFS_COMMIT_START(transid, (int)why);
	while (ts->writers)
		gcond_wait(&ts->cond, &ts->lock);
	glock_write_unlock(&ts->lock);

	ret = do_commit(c, transid, t0);

	glock_write(&ts->lock);
	ts->running = 0;
	ts->committing = false;
	ts->want_commit = 0;
	ts->commits_done++;
	ts->commit_ret = ret;
	gcond_broadcast(&ts->cond);
	glock_write_unlock(&ts->lock);
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
	while (!ts->stop) {
		int why = ts->want_commit;
		uint64_t now = glock_now_ns();

		if (!why && ts->running && !ts->committing && now - ts->started_ns >= interval)
			why = COMMIT_PERIODIC;
		if (why && ts->running && !ts->committing && !c->aborted) {
			glock_write_unlock(&ts->lock);
			txn_commit(c, (enum commit_reason)why);
			glock_write(&ts->lock);
			continue;
		}
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
	int e = pthread_create(&c->ts.thread, NULL, commit_thread, c);

	if (e)
		return -e;
	c->ts.thread_started = true;
	return 0;
}

void txn_stop_commit_thread(struct core *c)
{
	if (!c->ts.thread_started)
		return;
	glock_write(&c->ts.lock);
	c->ts.stop = true;
	gcond_broadcast(&c->ts.cond);
	glock_write_unlock(&c->ts.lock);
	pthread_join(c->ts.thread, NULL);
	c->ts.thread_started = false;
}
