// SPDX-License-Identifier: MIT
/*
 * discard.c — queued and synchronous discards of freed space (discard.h);
 * batch trim of all free space is trim.c.
 */
#include "fs/core/core_types.h"
#include "fs/store/alloc.h"
#include "fs/store/chunk.h"
#include "fs/store/dev.h"
#include "fs/store/discard.h"
#include "fs/base/probe.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/*
 * Where a piece of discard_issue lies on the devices: each copy's range
 * (a mirror: the piece, which lies in one element).  A raid5/6 chunk
 * gives only the whole rows inside the piece, each stripe's part of
 * them in one range: a row's other sectors may belong to a live extent,
 * whose rebuild needs every column of its row as written, parity
 * included — a punched column would read as zeros.  A wholly free row
 * holds nothing a read or a rebuild needs, and is written whole, parity
 * and all, when it is next handed out.  Returns how many ranges.
 */
static int discard_ranges(struct core *c, uint64_t logical, uint64_t len,
			  struct chunk_copy *cp, uint64_t *dlen)
{
	struct chunk_geom g;
	uint64_t row, off, r0, r1;
	int n = 0;

	if (!chunk_map_is_parity(c, logical)) {
		n = chunk_map_lookup(c, logical, len, cp, NULL);
		*dlen = len;
		return n > 0 ? n : 0;
	}
	if (chunk_map_geometry(c, logical, &g) || !g.nparity)
		return 0;
	row = (uint64_t)g.ndata * CORE_SECTORSIZE;
	off = logical - g.logical;
	r0 = (off + row - 1) / row;
	r1 = (off + len) / row;
	if (r1 <= r0)
		return 0;	/* no whole row: nothing to discard */
	for (int i = 0; i < g.num_stripes; i++)
		if (g.stripes[i].dev)
			cp[n++] = (struct chunk_copy){ g.stripes[i].dev,
						      g.stripes[i].physical + r0 * CORE_SECTORSIZE };
	*dlen = (r1 - r0) * CORE_SECTORSIZE;
	return n;
}

/* One piece of discard_issue: inside one chunk element (or raid5/6 chunk).
 * *bytes grows by the device bytes discarded. */
static int discard_piece(struct core *c, uint64_t logical, uint64_t len, uint64_t *bytes)
{
	int unsupported = 0;

	struct chunk_copy cp[CHUNK_MAX_STRIPES];
	uint64_t dlen = 0;
	int n = discard_ranges(c, logical, len, cp, &dlen);

	for (int i = 0; i < n; i++) {
		uint64_t t0 = PROBE_ON(DISCARD_DONE) ? glock_now_ns() : 0;
		if (PROBE_ON(DISCARD_ISSUED))
			GLASSFS_DISCARD_ISSUED(cp[i].dev->devid, cp[i].physical, dlen);
		int r = dev_discard(cp[i].dev, cp[i].physical, dlen);	/* best effort */
		if (r == -EOPNOTSUPP && !__atomic_exchange_n(&cp[i].dev->discard_warned, 1,
							      __ATOMIC_RELAXED))
			core_log(c, "%s does not support discard: freed space on it is not discarded "
				 "(the discard= mount option has no effect there)", cp[i].dev->path);
		if (r == -EOPNOTSUPP)
			unsupported = r;
		if (!r)
			*bytes += dlen;
		if (PROBE_ON(DISCARD_DONE))
			GLASSFS_DISCARD_DONE(cp[i].dev->devid, cp[i].physical, dlen,
					     t0 ? glock_now_ns() - t0 : 0);
	}
	return unsupported;
}

int discard_issue_bytes(struct core *c, uint64_t logical, uint64_t len, uint64_t *bytes)
{
	int unsupported = 0;

	for (uint64_t off = 0; off < len;) {
		uint64_t n = chunk_map_piece(c, logical + off, len - off);
		int r = discard_piece(c, logical + off, n, bytes);
		if (r)
			unsupported = r;
		off += n;
	}
	return unsupported;
}

/* Issue the discard of [logical, +len) on every copy.  -EOPNOTSUPP when
 * a device cannot discard, else 0 (discards are hints: errors ignored). */
int discard_issue(struct core *c, uint64_t logical, uint64_t len)
{
	uint64_t bytes = 0;

	return discard_issue_bytes(c, logical, len, &bytes);
}

/* Async rate limits: sleep so that one discard of len bytes takes at
 * least 1/iops seconds and len/bytes_per_s seconds. */
static void rate_limit(struct core *c, uint64_t len, uint64_t t0)
{
	uint64_t want = 0, el = glock_now_ns() - t0;

	if (c->opts.discard_iops)
		want = 1000000000ull / c->opts.discard_iops;
	if (c->opts.discard_bytes_per_s) {
		uint64_t b = (uint64_t)((double)len * 1e9 / (double)c->opts.discard_bytes_per_s);
		if (b > want)
			want = b;
	}
	if (want > el) {
		uint64_t ns = want - el;
		struct timespec ts = { (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };
		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
	}
}

/*
 * Discard what is still free of [logical, +len): each free run is taken
 * out of the allocator while it is discarded (nothing can be written
 * there meanwhile), then given back.  Parts allocated again since the
 * range was queued are skipped: the discard was only a hint.
 */
static void discard_free_part(struct core *c, uint64_t logical, uint64_t len)
{
	uint64_t end = logical + len, from = logical, l, n;

	/* all of it allocated again (common: freed space is reused fast):
	 * nothing to do, and no scan for free space past the range under
	 * the allocator's write lock */
	if (alloc_is_used(c, logical, len))
		return;
	/* at most 64 MiB out of the allocator at a time */
	while (from < end && alloc_trim_take(c, from, end - from < (64ull << 20) ? end - from :
					     64ull << 20, &l, &n)) {
		if (l < end)
			discard_issue(c, l, (l + n < end ? l + n : end) - l);
		alloc_release(c, l, n);
		from = l + n;
	}
}

static void *discard_thread(void *arg)
{
	struct core *c = arg;
	struct discard_queue *q = &c->discard;

	glock_write(&q->lock);
	for (;;) {
		if (!gthread_wait_queued(&q->thread, &q->lock, &q->cond, &q->n))
			break;
		struct discard_range r = q->v[q->head];
		q->head = (q->head + 1) % q->cap;
		q->n--;
		q->busy = true;
		glock_write_unlock(&q->lock);

		uint64_t t0 = glock_now_ns();
		discard_free_part(c, r.logical, r.len);
		rate_limit(c, r.len, t0);

		glock_write(&q->lock);
		q->busy = false;
		q->done++;
		gcond_broadcast(&q->cond);	/* discard_wait_idle, discard_wait_inflight */
	}
	glock_write_unlock(&q->lock);
	return NULL;
}

int discard_open(struct core *c)
{
	struct discard_queue *q = &c->discard;
	const char *e = getenv("GLASSFS_DISCARD");

	glock_init(&q->lock, GLOCK_MUTEX, GLOCK_CLASS_DEV, 0, -1, -1);
	gcond_init(&q->cond);
	q->mode = DISCARD_OFF;
	q->max = DISCARD_QUEUE_MAX;
	switch (c->opts.discard) {	/* the mount option wins over the environment */
	case CORE_DISCARD_OFF: break;
	case CORE_DISCARD_SYNC: q->mode = DISCARD_SYNC; break;
	case CORE_DISCARD_ASYNC: q->mode = DISCARD_ASYNC; break;
	default:
		if (e && strcmp(e, "sync") == 0)
			q->mode = DISCARD_SYNC;
		else if (e && strcmp(e, "async") == 0)
			q->mode = DISCARD_ASYNC;
		break;
	}
	if (c->readonly)
		q->mode = DISCARD_OFF;
	if (q->mode == DISCARD_ASYNC)
		return gthread_start(&q->thread, discard_thread, c);
	return 0;
}

void discard_close(struct core *c)
{
	struct discard_queue *q = &c->discard;

	gthread_stop(&q->thread, &q->lock, &q->cond);
	free(q->v);
	q->v = NULL;
}

bool discard_freed(struct core *c, uint64_t logical, uint64_t len)
{
	struct discard_queue *q = &c->discard;
	struct chunk_copy cp[CHUNK_MAX_STRIPES];

	if (q->mode == DISCARD_OFF)
		return false;
	if (q->mode == DISCARD_SYNC) {
		uint64_t t0 = glock_now_ns(), ns;
		discard_issue(c, logical, len);
		ns = glock_now_ns() - t0;
		q->sync_ns += ns;
		/* the commit waited for this discard: the stall the talk shows */
		if (PROBE_ON(DISCARD_STALL))
			GLASSFS_DISCARD_STALL(__atomic_load_n(&c->generation, __ATOMIC_ACQUIRE), ns);
		return false;
	}
	glock_write(&q->lock);
	if (q->n && q->v[(q->head + q->n - 1) % q->cap].logical +
		    q->v[(q->head + q->n - 1) % q->cap].len == logical) {
		q->v[(q->head + q->n - 1) % q->cap].len += len;	/* one discard for both */
		goto queued;
	}
	if (q->n >= q->max)
		goto drop;
	if (q->n == q->cap) {
		size_t cap = q->cap ? q->cap * 2 : 256;
		struct discard_range *v;

		if (cap > q->max)
			cap = q->max;
		v = malloc(cap * sizeof(*v));
		if (!v)
			goto drop;
		for (size_t i = 0; i < q->n; i++)
			v[i] = q->v[(q->head + i) % q->cap];
		free(q->v);
		q->v = v;
		q->cap = cap;
		q->head = 0;
	}
	q->v[(q->head + q->n) % q->cap] = (struct discard_range){ logical, len };
	q->n++;
queued:
	gcond_broadcast(&q->cond);
	glock_write_unlock(&q->lock);
	if (PROBE_ON(DISCARD_QUEUED) &&
	    chunk_map_lookup(c, logical, chunk_map_piece(c, logical, len), cp, NULL) > 0)
		GLASSFS_DISCARD_QUEUED(cp[0].dev->devid, cp[0].physical, len);
	/* free at once: the discard thread discards what is still free then */
	return false;
drop:
	/* not discarded: only a missed hint (glassctl trim gets it); read
	 * without the lock by mount_stats */
	__atomic_store_n(&q->dropped, q->dropped + 1, __ATOMIC_RELAXED);
	glock_write_unlock(&q->lock);
	return false;
}

bool discard_wait_idle(struct core *c, uint64_t transid)
{
	struct discard_queue *q = &c->discard;
	bool waited = false;

	(void)transid;
	if (q->mode != DISCARD_ASYNC)
		return false;
	glock_write(&q->lock);
	while (q->n || q->busy) {
		waited = true;
		gcond_wait(&q->cond, &q->lock);
	}
	glock_write_unlock(&q->lock);
	return waited;
}

bool discard_wait_inflight(struct core *c, uint64_t transid)
{
	struct discard_queue *q = &c->discard;
	uint64_t t0, seq;
	bool waited = false;

	if (q->mode != DISCARD_ASYNC)
		return false;
	glock_write(&q->lock);
	t0 = glock_now_ns();
	seq = q->done;
	while (q->busy && q->done == seq) {	/* that one range, not the queue */
		waited = true;
		gcond_wait(&q->cond, &q->lock);
	}
	glock_write_unlock(&q->lock);
	if (waited && PROBE_ON(DISCARD_STALL))
		GLASSFS_DISCARD_STALL(transid, glock_now_ns() - t0);
	return waited;
}

uint64_t discard_take_sync_ns(struct core *c)
{
	uint64_t ns = c->discard.sync_ns;

	c->discard.sync_ns = 0;
	return ns;
}
