// SPDX-License-Identifier: MIT
/*
 * scrub.c — verify and repair every copy of every block (scrub.h).
 */
#include "fs/core/core_types.h"
#include "fs/store/alloc.h"
#include "fs/store/chunk.h"
#include "fs/store/dev.h"
#include "fs/store/parity.h"
#include "fs/trees/data.h"
#include "fs/trees/extent.h"
#include "fs/txn/txn.h"
#include "fs/services/scrub.h"
#include "fs/btree/btree.h"
#include "fs/btree/node.h"
#include "fs/base/crc32c.h"
#include "fs/base/probe.h"
#include "fs/format/ioctl.h"

#include <pthread.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SECT CORE_SECTORSIZE
#define BATCH_ITEMS 32		/* extents per transaction handle */
#define PIECE_SECTORS 64	/* data read per step: 256 KiB */

#define PADD(f, v) __atomic_fetch_add(&p->f, (v), __ATOMIC_RELAXED)

struct scrub {
	struct core *c;
	struct scrub_opts *o;
	struct scrub_progress *p;
	uint64_t t0, read_bytes;	/* for the rate limit */
	uint8_t *buf[CHUNK_MAX_STRIPES];
	uint32_t *exp;
	uint8_t *have;
};

void scrub_cancel(struct scrub_opts *o)
{
	__atomic_store_n(&o->cancel, 1, __ATOMIC_RELAXED);
}

void scrub_progress_read(const struct scrub_progress *p, struct scrub_progress *o)
{
#define RD(f) o->f = __atomic_load_n(&p->f, __ATOMIC_RELAXED)
	RD(total_bytes); RD(total_check_bytes); RD(done_bytes); RD(checked_bytes); RD(corrected_bytes);
	RD(uncorrectable_bytes); RD(meta_errors); RD(data_errors); RD(read_errors); RD(parity_errors);
	RD(nodes); RD(extents); RD(skipped_bytes); RD(running); RD(result);
#undef RD
}

static bool cancelled(const struct scrub *s)
{
	return __atomic_load_n(&s->o->cancel, __ATOMIC_RELAXED) != 0;
}

/* Sleep until read_bytes fits the rate since t0: after each node and
 * each piece (at most PIECE_SECTORS per copy read ahead of the rate),
 * never under a handle. */
static void rate_wait(struct scrub *s)
{
	uint64_t rate = s->o->rate_bytes_per_s, want, el;

	if (!rate)
		return;
	want = (uint64_t)((double)s->read_bytes * 1e9 / (double)rate);
	el = glock_now_ns() - s->t0;
	while (want > el && !cancelled(s)) {
		uint64_t ns = want - el;
		if (ns > 50000000ull)
			ns = 50000000ull;	/* wake to notice a cancel */
		struct timespec ts = { 0, (long)ns };
		nanosleep(&ts, NULL);
		el = glock_now_ns() - s->t0;
	}
}

/* Rewrite copy cp at byte offset off of the block from good. */
static bool repair(struct scrub *s, const struct chunk_copy *cp, uint64_t off,
		   const void *good, uint64_t len, uint64_t logical)
{
	struct scrub_progress *p = s->p;
	int ret;

	/* an aborted volume writes nothing more (and scrub holds no handle
	 * there: nothing keeps the block what it was) */
	if (s->o->readonly || core_readonly(s->c))
		return false;
	ret = dev_write(cp->dev, cp->physical + off, good, len);
	if (ret) {
		core_log(s->c, "scrub: repairing logical %llu on %s at %llu failed: %s",
			 (unsigned long long)logical, cp->dev->path,
			 (unsigned long long)(cp->physical + off), strerror(-ret));
		return false;
	}
	PADD(corrected_bytes, len);
	__atomic_fetch_add(&s->c->repaired, 1, __ATOMIC_RELAXED);
	return true;
}

/* What a parity_scrub did, into the scrub's progress (data: its bad
 * sectors are data errors; a node's are counted as one node error). */
static void add_parity_stats(struct scrub *s, const struct parity_scrub_stats *st, bool data)
{
	struct scrub_progress *p = s->p;

	s->read_bytes += st->checked_bytes;
	PADD(checked_bytes, st->checked_bytes);
	PADD(read_errors, st->read_errors);
	if (data)
		PADD(data_errors, st->data_errors);
	PADD(parity_errors, st->parity_errors);
	PADD(corrected_bytes, st->corrected_bytes);
	PADD(uncorrectable_bytes, st->uncorrectable_bytes);
}

/*
 * A node in a raid5/6 chunk: read until it verifies (rebuilding the
 * stripes whose columns are wrong), then its rows checked against those
 * verified bytes — each column, parity too — and what differs rewritten.
 */
static void scrub_parity_node(struct scrub *s, uint64_t bytenr, struct node_expect *e)
{
	struct core *c = s->c;
	struct scrub_progress *p = s->p;
	struct parity_scrub_stats st = { 0 };
	int ret = parity_read_verified(c, bytenr, c->nodesize, s->buf[0], node_verify_quiet, e);

	if (ret) {
		PADD(meta_errors, 1);
		PADD(uncorrectable_bytes, c->nodesize);
		core_log(c, "scrub: node %llu (raid5/6): no set of columns parity can rebuild "
			 "verifies (uncorrectable)", (unsigned long long)bytenr);
		return;
	}
	ret = parity_check_block(c, bytenr, c->nodesize, s->buf[0], s->o->readonly, &st);
	add_parity_stats(s, &st, false);
	if (st.data_errors) {
		PADD(meta_errors, 1);
		if (PROBE_ON(SCRUB_ERROR))
			GLASSFS_SCRUB_ERROR(bytenr, 0, 0, 1, st.corrected_bytes > 0);
		core_log(c, "scrub: node %llu (raid5/6): %llu column(s) bad, %llu bytes rewritten",
			 (unsigned long long)bytenr, (unsigned long long)st.data_errors,
			 (unsigned long long)st.corrected_bytes);
	}
	if (ret)
		core_log(c, "scrub: node %llu (raid5/6): %s", (unsigned long long)bytenr,
			 strerror(-ret));
}

/*
 * The node at bytenr, which its extent item says generation gen wrote
 * (allocated: a node is written in the transaction that allocates it and
 * never after).  A copy whose checksum holds but whose header names
 * another generation is bad (a lost write: the block's bytes from an
 * earlier life, before it was freed and reused): reported as a
 * generation error and rewritten from a copy of the right generation,
 * never used to rewrite another copy.
 */
static void scrub_node(struct scrub *s, uint64_t bytenr, uint64_t gen)
{
	struct core *c = s->c;
	struct scrub_progress *p = s->p;
	struct chunk_copy cp[CHUNK_MAX_STRIPES];
	struct node_expect e = { c->nodesize, bytenr, c->sb.fsid, 0, -1, gen, 0 };
	bool bad[CHUNK_MAX_STRIPES] = { false };
	int n = chunk_map_lookup(c, bytenr, c->nodesize, cp, NULL), good = -1;
	char why[160];

	PADD(nodes, 1);
	if (chunk_map_is_parity(c, bytenr)) {
		scrub_parity_node(s, bytenr, &e);
		return;
	}
	if (n < 0) {
		core_log(c, "scrub: node %llu maps to no chunk", (unsigned long long)bytenr);
		PADD(uncorrectable_bytes, c->nodesize);
		return;
	}
	for (int m = 0; m < n; m++) {
		int ret = dev_read(cp[m].dev, cp[m].physical, s->buf[m], c->nodesize);
		s->read_bytes += c->nodesize;
		if (ret) {
			PADD(read_errors, 1);
			bad[m] = true;
			core_log(c, "scrub: node %llu: read error on %s at %llu: %s",
				 (unsigned long long)bytenr, cp[m].dev->path,
				 (unsigned long long)cp[m].physical, strerror(-ret));
			continue;
		}
		PADD(checked_bytes, c->nodesize);
		if (node_verify(s->buf[m], &e, why, sizeof(why))) {
			bad[m] = true;
			PADD(meta_errors, 1);
			/* a sound checksum on the wrong block: a lost or
			 * misdirected write (btrfs's generation error) */
			dev_note_error(cp[m].dev, get_le32(s->buf[m]) == node_csum(s->buf[m], c->nodesize) ?
				       DEV_ERR_GENERATION : DEV_ERR_CORRUPTION);
			core_log(c, "scrub: node %llu: copy on %s at %llu is bad: %s",
				 (unsigned long long)bytenr, cp[m].dev->path,
				 (unsigned long long)cp[m].physical, why);
		} else if (good < 0) {
			good = m;
		}
	}
	for (int m = 0; m < n; m++) {
		bool fixed;
		if (!bad[m])
			continue;
		fixed = good >= 0 && repair(s, &cp[m], 0, s->buf[good], c->nodesize, bytenr);
		if (PROBE_ON(SCRUB_ERROR))
			GLASSFS_SCRUB_ERROR(bytenr, cp[m].dev->devid, cp[m].physical, 1, fixed);
		if (fixed)
			core_log(c, "scrub: node %llu: copy on %s rewritten from the copy on %s",
				 (unsigned long long)bytenr, cp[m].dev->path, cp[good].dev->path);
	}
	if (good < 0) {
		PADD(uncorrectable_bytes, c->nodesize);
		core_log(c, "scrub: node %llu: no good copy left (uncorrectable)",
			 (unsigned long long)bytenr);
	}
}

/* Sectors [start, start + n*SECT) of one data extent. */
static int scrub_data_piece(struct scrub *s, uint64_t start, uint32_t n)
{
	struct core *c = s->c;
	struct scrub_progress *p = s->p;
	struct chunk_copy cp[CHUNK_MAX_STRIPES];
	bool rerr[CHUNK_MAX_STRIPES] = { false };
	uint64_t len = (uint64_t)n * SECT;
	int ncp = chunk_map_lookup(c, start, len, cp, NULL), ret;

	if (ncp < 0) {
		core_log(c, "scrub: data %llu+%llu maps to no chunk", (unsigned long long)start,
			 (unsigned long long)len);
		PADD(uncorrectable_bytes, len);
		return 0;
	}
	ret = data_load_csums(c, start, n, s->exp, s->have);
	if (ret)
		return ret;
	for (int m = 0; m < ncp; m++) {
		ret = dev_read(cp[m].dev, cp[m].physical, s->buf[m], len);
		s->read_bytes += len;
		if (ret) {
			rerr[m] = true;
			PADD(read_errors, 1);
			core_log(c, "scrub: data %llu+%llu: read error on %s at %llu: %s",
				 (unsigned long long)start, (unsigned long long)len, cp[m].dev->path,
				 (unsigned long long)cp[m].physical, strerror(-ret));
		} else {
			PADD(checked_bytes, len);
		}
	}
	for (uint32_t i = 0; i < n; i++) {
		uint64_t off = (uint64_t)i * SECT, logical = start + off;
		bool bad[CHUNK_MAX_STRIPES];
		int good = -1, nbad = 0;

		if (!s->have[i])
			continue;	/* no checksum: nothing to verify against */
		for (int m = 0; m < ncp; m++) {
			bad[m] = rerr[m] || crc32c(0, s->buf[m] + off, SECT) != s->exp[i];
			if (!bad[m] && good < 0)
				good = m;
			nbad += bad[m];
		}
		if (!nbad)
			continue;
		for (int m = 0; m < ncp; m++) {
			bool fixed;
			if (!bad[m])
				continue;
			if (!rerr[m]) {
				PADD(data_errors, 1);
				dev_note_error(cp[m].dev, DEV_ERR_CORRUPTION);
				core_log(c, "scrub: data checksum error: logical %llu on %s physical %llu: expected crc32c %08x, found %08x",
					 (unsigned long long)logical, cp[m].dev->path,
					 (unsigned long long)(cp[m].physical + off), s->exp[i],
					 crc32c(0, s->buf[m] + off, SECT));
			}
			fixed = good >= 0 && repair(s, &cp[m], off, s->buf[good] + off, SECT, logical);
			if (PROBE_ON(SCRUB_ERROR))
				GLASSFS_SCRUB_ERROR(logical, cp[m].dev->devid, cp[m].physical + off, 0,
						    fixed);
		}
		if (good < 0) {
			PADD(uncorrectable_bytes, SECT);
			core_log(c, "scrub: data logical %llu: no good copy left (uncorrectable)",
				 (unsigned long long)logical);
		}
	}
	return 0;
}

/* Sectors [start, start + n*SECT) of a raid5/6 extent: its rows, parity too. */
static int scrub_parity_piece(struct scrub *s, uint64_t start, uint32_t n)
{
	struct parity_scrub_stats st = { 0 };
	int ret = data_load_csums(s->c, start, n, s->exp, s->have);

	if (!ret)
		ret = parity_scrub(s->c, start, (uint64_t)n * SECT, s->exp, s->have, s->o->readonly, &st);
	add_parity_stats(s, &st, true);
	return ret;
}

/*
 * One piece of a data extent from pos, left bytes before its end: up to
 * PIECE_SECTORS (raid5/6: whole rows; raid10: one element).  *step gets
 * the bytes it covered.
 */
static int scrub_data_step(struct scrub *s, uint64_t pos, uint64_t left, uint64_t *step)
{
	uint64_t row = chunk_row_bytes(s->c, pos) / SECT, n = left / SECT;

	if (n > PIECE_SECTORS / row * row)
		n = PIECE_SECTORS / row * row;	/* raid5/6: whole rows per piece */
	if (row == 1)
		n = chunk_map_piece(s->c, pos, n * SECT) / SECT;	/* raid10: one element */
	*step = n * SECT;
	return row > 1 ? scrub_parity_piece(s, pos, (uint32_t)n) : scrub_data_piece(s, pos, (uint32_t)n);
}

/*
 * Join a handle for one unit of the walk (a node, a piece of an extent):
 * while it is held no commit can free the unit's blocks and hand them
 * out again (frees are pinned until the commit that makes them, which
 * waits for every handle: txn.c), so what scrub reads, checks and
 * repairs under it stays the same block.  *t is NULL on a read-only or
 * aborted volume: nothing changes there (and repair writes nothing).
 */
static int hold(struct scrub *s, struct txn **t)
{
	struct core *c = s->c;
	int ret;

	*t = NULL;
	if (c->readonly || c->aborted)
		return 0;
	ret = txn_join(c, 0, TXN_USE_RESERVE, t);
	if (ret == -EROFS) {	/* aborted meanwhile */
		*t = NULL;
		return 0;
	}
	return ret;
}

/* End hold()'s handle; ret or the transaction's error (not -EROFS). */
static int let_go(struct txn *t, int ret)
{
	int r2 = t ? txn_end(t) : 0;

	return !ret && r2 && r2 != -EROFS ? r2 : ret;
}

/*
 * Is the block the walk listed (before this handle) still allocated as
 * it was: a node at bytenr, or a data extent [bytenr, +len)?  A unit
 * freed since is skipped (counted): its space may hold another block, or
 * one the running transaction writes and has not listed.
 *
 * A node of the commit still in its write phase (commits are pipelined:
 * the extent tree lists its nodes before they are on disk) is waited
 * for; a data extent's bytes were written before its transaction
 * committed (data_write), so a piece never waits for a commit.
 */
static bool still_listed(struct scrub *s, uint64_t bytenr, bool data, uint64_t len,
			 uint64_t *gen)
{
	struct extent_item ei;
	uint64_t l = 0;

	if (extent_lookup(s->c, bytenr, data, &ei, &l))
		return false;
	if (!data && ei.generation > __atomic_load_n(&s->c->generation, __ATOMIC_ACQUIRE))
		txn_wait_written(s->c);
	if (gen)
		*gen = ei.generation;
	return !data || l == len;
}

/*
 * A data extent, piece by piece, each under a handle of its own
 * (hold): a commit waits for one piece's reads and repairs, not for
 * the extent's or the batch's.
 */
static int scrub_data(struct scrub *s, uint64_t logical, uint64_t len)
{
	struct scrub_progress *p = s->p;
	int ret = 0;

	PADD(extents, 1);
	for (uint64_t pos = logical, step = 0; pos < logical + len && !ret; pos += step) {
		struct txn *t;

		if (cancelled(s))
			return -ECANCELED;
		ret = hold(s, &t);
		if (ret)
			return ret;
		if (still_listed(s, logical, true, len, NULL)) {
			ret = scrub_data_step(s, pos, logical + len - pos, &step);
			if (!step)	/* cannot happen (a piece is a sector at least): never loop */
				step = logical + len - pos;
		} else {
			step = logical + len - pos;
			PADD(skipped_bytes, step);
		}
		ret = let_go(t, ret);
		rate_wait(s);	/* per piece, and with no handle held: a commit never waits on it */
	}
	return ret;
}

/* A node, under a handle of its own (hold). */
static int scrub_node_held(struct scrub *s, uint64_t bytenr)
{
	struct scrub_progress *p = s->p;
	struct txn *t;
	uint64_t gen = 0;
	int ret = hold(s, &t);

	if (ret)
		return ret;
	if (still_listed(s, bytenr, false, 0, &gen))
		scrub_node(s, bytenr, gen);
	else
		PADD(skipped_bytes, s->c->nodesize);
	ret = let_go(t, 0);
	rate_wait(s);
	return ret;
}

/* Up to max extent/metadata keys at or after *cursor. Returns how many. */
static int collect(struct core *c, struct key *cursor, struct key *out, int max)
{
	struct path p;
	int n = 0, ret;

	btree_path_init(&p);
	ret = btree_search_ge(core_tree(c, CT_EXTENT), cursor, &p);
	if (ret)
		goto out;
	while (n < max) {
		struct key k;
		btree_item_key(&p, p.slots[0], &k);
		if (k.type == KEY_EXTENT_ITEM || k.type == KEY_METADATA_ITEM)
			out[n++] = k;
		*cursor = k;
		ret = btree_next(&p);
		if (ret)
			break;
	}
out:
	btree_path_release(&p);
	if (ret < 0)
		return ret;
	if (n == 0 && ret > 0)
		return 0;
	return n;
}

/*
 * total_check_bytes: what the walk reads of each block group's used
 * sectors, the unit of checked_bytes: every copy of a mirror (raid1,
 * dup, raid10: 2); every column of each raid5/6 row an extent touches
 * (parity_scrub reads rows whole, a short extent's padded last row too:
 * n columns for its k data ones, so raid5 on three devices reads 1.5
 * times its data).  The block group's flags hold its type only: the
 * profile and stripe count are the chunk's, read first (chunks.lock is
 * taken before the allocator's, never inside it).
 */
struct chunk_ratio { uint64_t logical, num, den; };
struct chunk_ratios {
	struct chunk_ratio *v;
	int n, cap;
	struct scrub_progress *p;
	uint64_t slot, slot_len;	/* the fsync log's reserved slot: no extent */
};

static int note_ratio(const struct chunk *ch, void *arg)
{
	struct chunk_ratios *r = arg;
	struct chunk_ratio *e;

	if (r->n == r->cap) {
		int nc = r->cap ? r->cap * 2 : 64;
		struct chunk_ratio *nv = realloc(r->v, (size_t)nc * sizeof(*nv));
		if (!nv)
			return -ENOMEM;	/* the rest count one copy: a progress figure */
		r->v = nv;
		r->cap = nc;
	}
	e = &r->v[r->n++];
	e->logical = ch->logical;
	e->num = (uint64_t)profile_copies(ch->type);
	e->den = 1;
	if ((ch->type & BG_PARITY) && ch->num_stripes > chunk_parity_count(ch->type)) {
		e->num = (uint64_t)ch->num_stripes;
		e->den = (uint64_t)(ch->num_stripes - chunk_parity_count(ch->type));
	}
	return 0;
}

/* Rows of k sectors with a used sector: what parity_scrub reads of bg.
 * One step per such row and per empty word, under the allocator's lock. */
static uint64_t rows_used(const struct bgroup *bg, uint64_t k)
{
	uint64_t rows = 0, last = UINT64_MAX;

	for (uint64_t w = 0; w < (bg->nbits + 63) / 64; w++) {
		uint64_t x = bg->used[w];
		while (x) {
			uint64_t row = (w * 64 + (uint64_t)__builtin_ctzll(x)) / k, next = (row + 1) * k;
			if (row != last)
				rows++;
			last = row;
			if (next >= (w + 1) * 64)
				break;
			x &= ~0ull << (next - w * 64);	/* the row's other sectors */
		}
	}
	return rows;
}

static int add_copies(const struct bgroup *bg, void *arg)
{
	struct chunk_ratios *r = arg;
	uint64_t num = 1, den = 1;

	/* chunk_for_each went in logical order: a binary search */
	for (int lo = 0, hi = r->n; lo < hi;) {
		int mid = lo + (hi - lo) / 2;
		if (r->v[mid].logical == bg->start) {
			num = r->v[mid].num;
			den = r->v[mid].den;
			break;
		}
		if (r->v[mid].logical < bg->start)
			lo = mid + 1;
		else
			hi = mid;
	}
	uint64_t add = den > 1 ? rows_used(bg, den) * num * SECT : bg->used_bytes * num;
	/* the slot the last commit named for the fsync log is used space
	 * with no extent item (nothing the walk reads): whole rows of its
	 * own on raid5/6 */
	if (r->slot_len && r->slot >= bg->start && r->slot - bg->start < bg->len) {
		uint64_t sect = r->slot_len / SECT, sub = den > 1 ?
			(sect + den - 1) / den * num * SECT : r->slot_len * num;
		add = add > sub ? add - sub : 0;
	}
	r->p->total_check_bytes += add;
	return 0;
}

static void count_check_bytes(struct core *c, struct scrub_progress *p)
{
	struct chunk_ratios r = { NULL, 0, 0, p, 0, 0 };

	/* named in the last superblock and reserved now (a read-only mount
	 * or fsync=commit does not reserve it) */
	if (c->sb.log_slot && alloc_is_used(c, c->sb.log_slot, c->sb.log_slot_len)) {
		r.slot = c->sb.log_slot;
		r.slot_len = c->sb.log_slot_len;
	}

	chunk_for_each(c, note_ratio, &r);
	alloc_for_each_bg(c, add_copies, &r);
	free(r.v);
}

/* Extents written after the totals were taken are scrubbed too: the
 * totals grow with them, so done never passes total. */
static void grow_totals(struct scrub_progress *p)
{
	uint64_t d = __atomic_load_n(&p->done_bytes, __ATOMIC_RELAXED);
	uint64_t k = __atomic_load_n(&p->checked_bytes, __ATOMIC_RELAXED);

	if (d > __atomic_load_n(&p->total_bytes, __ATOMIC_RELAXED))
		__atomic_store_n(&p->total_bytes, d, __ATOMIC_RELAXED);
	if (k > __atomic_load_n(&p->total_check_bytes, __ATOMIC_RELAXED))
		__atomic_store_n(&p->total_check_bytes, k, __ATOMIC_RELAXED);
}

int scrub_run(struct core *c, struct scrub_opts *o, struct scrub_progress *p)
{
	struct scrub s = { c, o, p, glock_now_ns(), 0, { NULL }, NULL, NULL };
	struct key cursor = { 0, 0, 0 }, keys[BATCH_ITEMS];
	uint64_t tot = 0, fr;
	bool end = false;
	int ret = 0;

	memset(p, 0, sizeof(*p));
	__atomic_store_n(&p->running, 1, __ATOMIC_RELAXED);
	/* the total below counts allocated space, which includes blocks of
	 * the running transaction that have no extent item yet (e.g. an
	 * atime update): commit first so that total and walk agree */
	if (!c->readonly && !c->aborted)
		txn_commit(c, COMMIT_OTHER);
	for (uint64_t ty = BG_DATA; ty <= BG_METADATA; ty <<= 1) {
		uint64_t t;
		alloc_space(c, ty, &t, &fr);
		tot += t - fr;
	}
	/* less the fsync log's slot: used, with no extent (count_check_bytes) */
	if (c->sb.log_slot && alloc_is_used(c, c->sb.log_slot, c->sb.log_slot_len) &&
	    tot >= c->sb.log_slot_len)
		tot -= c->sb.log_slot_len;
	__atomic_store_n(&p->total_bytes, tot, __ATOMIC_RELAXED);
	count_check_bytes(c, p);
	for (int m = 0; m < CHUNK_MAX_STRIPES; m++) {
		uint32_t sz = PIECE_SECTORS * SECT > c->nodesize ? PIECE_SECTORS * SECT : c->nodesize;
		s.buf[m] = malloc(sz);
		if (!s.buf[m])
			ret = -ENOMEM;
	}
	s.exp = malloc(PIECE_SECTORS * sizeof(*s.exp));
	s.have = malloc(PIECE_SECTORS);
	if (!s.exp || !s.have)
		ret = -ENOMEM;

	while (!ret && !end) {
		struct txn *t = NULL;
		int n;

		if (cancelled(&s)) {
			ret = -ECANCELED;
			break;
		}
		/* the batch's keys under a handle (no commit changes the extent
		 * tree meanwhile); each is scrubbed under one of its own */
		ret = hold(&s, &t);
		if (ret)
			break;
		n = collect(c, &cursor, keys, BATCH_ITEMS);
		ret = let_go(t, n < 0 ? n : 0);
		if (n < BATCH_ITEMS)
			end = true;
		for (int i = 0; i < n && n > 0 && !ret; i++) {
			if (keys[i].type == KEY_METADATA_ITEM) {
				ret = scrub_node_held(&s, keys[i].objectid);
				PADD(done_bytes, c->nodesize);
			} else {
				ret = scrub_data(&s, keys[i].objectid, keys[i].offset);
				PADD(done_bytes, keys[i].offset);
			}
		}
		if (n > 0) {
			/* continue after the last key seen */
			if (++cursor.offset == 0 && ++cursor.type == 0)
				cursor.objectid++;
		}
		grow_totals(p);
		if (PROBE_ON(SCRUB_PROGRESS))
			GLASSFS_SCRUB_PROGRESS(p->checked_bytes, p->corrected_bytes,
					       p->uncorrectable_bytes, p->total_check_bytes);
	}
	for (int m = 0; m < CHUNK_MAX_STRIPES; m++)
		free(s.buf[m]);
	free(s.exp);
	free(s.have);
	grow_totals(p);
	if (PROBE_ON(SCRUB_PROGRESS))
		GLASSFS_SCRUB_PROGRESS(p->checked_bytes, p->corrected_bytes,
				       p->uncorrectable_bytes, p->total_check_bytes);
	core_log(c, "scrub %s: %llu bytes checked, %llu corrected, %llu uncorrectable (%llu node, %llu data, %llu read errors), %llu freed while walked",
		 ret == -ECANCELED ? "cancelled" : ret ? "failed" : "done",
		 (unsigned long long)p->checked_bytes, (unsigned long long)p->corrected_bytes,
		 (unsigned long long)p->uncorrectable_bytes, (unsigned long long)p->meta_errors,
		 (unsigned long long)p->data_errors, (unsigned long long)p->read_errors,
		 (unsigned long long)p->skipped_bytes);
	__atomic_store_n(&p->result, ret, __ATOMIC_RELAXED);
	__atomic_store_n(&p->running, 0, __ATOMIC_RELAXED);
	return ret;
}

/* ---- the service: one scrub thread per mounted volume ------------------ */

struct scrub_service {
	struct glock lock;		/* guards the fields below */
	struct core *core;		/* fixed */
	pthread_t thread;
	bool joinable;			/* a thread was started and not yet joined */
	int running;			/* 1 from start until scrub_run returned (atomic) */
	uint32_t started;
	struct scrub_opts opts;
	struct scrub_progress prog;
	int64_t start_time;		/* wall clock, seconds, at the last start */
	uint64_t start_ns, end_ns;	/* glock_now_ns(); end_ns atomic, 0 while running */
};

struct scrub_service *scrub_service_new(struct core *c)
{
	struct scrub_service *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	glock_init(&s->lock, GLOCK_MUTEX, GLOCK_CLASS_MISC, 0, -1, -1);
	s->core = c;
	return s;
}

static void *scrub_thread(void *arg)
{
	struct scrub_service *s = arg;

	scrub_run(s->core, &s->opts, &s->prog);
	__atomic_store_n(&s->end_ns, glock_now_ns(), __ATOMIC_RELAXED);
	__atomic_store_n(&s->running, 0, __ATOMIC_RELEASE);
	return NULL;
}

int scrub_service_start(struct scrub_service *s, uint64_t rate)
{
	int ret = 0;

	if (!s)
		return -ENOMEM;
	if (core_readonly(s->core))
		return -EROFS;
	glock_write(&s->lock);
	if (s->joinable && __atomic_load_n(&s->running, __ATOMIC_ACQUIRE)) {
		ret = -EBUSY;
		goto out;
	}
	if (s->joinable) {
		pthread_join(s->thread, NULL);
		s->joinable = false;
	}
	memset(&s->opts, 0, sizeof(s->opts));
	memset(&s->prog, 0, sizeof(s->prog));
	s->opts.rate_bytes_per_s = rate;
	s->start_time = (int64_t)time(NULL);
	s->start_ns = glock_now_ns();
	s->end_ns = 0;
	s->running = 1;		/* before the thread: status sees it at once */
	ret = -pthread_create(&s->thread, NULL, scrub_thread, s);
	if (ret)
		s->running = 0;
	else {
		s->joinable = true;
		s->started++;
	}
out:
	glock_write_unlock(&s->lock);
	return ret;
}

void scrub_service_status(struct scrub_service *s, struct glassfs_ioc_scrub *o)
{
	struct scrub_progress p;

	memset(o, 0, sizeof(*o));
	o->version = 1;
	if (!s)
		return;
	glock_write(&s->lock);
	scrub_progress_read(&s->prog, &p);
	o->running = s->joinable && __atomic_load_n(&s->running, __ATOMIC_ACQUIRE);
	o->result = p.result;
	o->started = s->started;
	o->rate_bytes_per_s = s->opts.rate_bytes_per_s;
	o->total_bytes = p.total_bytes;
	o->done_bytes = p.done_bytes;
	o->checked_bytes = p.checked_bytes;
	o->corrected_bytes = p.corrected_bytes;
	o->uncorrectable_bytes = p.uncorrectable_bytes;
	o->meta_errors = p.meta_errors;
	o->data_errors = p.data_errors;
	o->read_errors = p.read_errors;
	o->parity_errors = p.parity_errors;
	o->skipped_bytes = p.skipped_bytes;
	o->nodes = p.nodes;
	o->extents = p.extents;
	/* a batch's extents may pass the totals before it grows them */
	o->total_bytes = p.total_bytes > p.done_bytes ? p.total_bytes : p.done_bytes;
	o->total_check_bytes = p.total_check_bytes > p.checked_bytes ? p.total_check_bytes :
								       p.checked_bytes;
	o->start_time = s->start_time;
	if (s->started) {
		uint64_t end = __atomic_load_n(&s->end_ns, __ATOMIC_RELAXED);
		o->duration_ns = (end ? end : glock_now_ns()) - s->start_ns;
	}
	glock_write_unlock(&s->lock);
}

int scrub_service_cancel(struct scrub_service *s)
{
	int ret = -ENOENT;

	if (!s)
		return ret;
	glock_write(&s->lock);
	if (s->joinable && __atomic_load_n(&s->running, __ATOMIC_ACQUIRE)) {
		scrub_cancel(&s->opts);
		ret = 0;
	}
	glock_write_unlock(&s->lock);
	return ret;
}

void scrub_service_free(struct scrub_service *s)
{
	if (!s)
		return;
	glock_write(&s->lock);
	if (s->joinable) {
		scrub_cancel(&s->opts);
		pthread_join(s->thread, NULL);
		s->joinable = false;
	}
	glock_write_unlock(&s->lock);
	free(s);
}
