// SPDX-License-Identifier: MIT
/*
 * data_span.c — reads as spans of verified device bytes (data_span.h).
 */
#include "fs/core/core_types.h"
#include "fs/trees/data.h"
#include "fs/trees/data_span.h"
#include "fs/store/chunk.h"
#include "fs/store/dev_map.h"
#include "fs/store/dev_readahead.h"

#include <errno.h>
#include <string.h>

#define SECT CORE_SECTORSIZE
#define RDOWN(x) ((x) & ~(uint64_t)(SECT - 1))
#define RUP(x) (((x) + SECT - 1) & ~(uint64_t)(SECT - 1))
#define PENDING (-2)		/* in[]: a disk piece, not mapped yet */

void data_spans_init(struct data_spans *sp)
{
	sp->n = sp->nin = 0;
	sp->nsect = 0;
	sp->held = false;
	sp->copied = false;
}

int data_spans_add_mem(struct data_spans *sp, const void *mem, uint64_t len)
{
	struct data_span *last = sp->nin ? &sp->in[sp->nin - 1] : NULL;

	if (!len)
		return 0;
	if (last && last->fd == -1 && (const char *)last->mem + last->len == (const char *)mem) {
		last->len += len;
		return 0;
	}
	if (sp->nin == DATA_SPANS_MAX)
		return -EAGAIN;
	sp->in[sp->nin++] = (struct data_span){ len, -1, 0, mem };
	return 0;
}

int data_spans_add(struct core *c, struct data_spans *sp, uint64_t logical, uint64_t len)
{
	uint64_t a = RDOWN(logical), b = RUP(logical + len);
	uint32_t n = (uint32_t)((b - a) / SECT);
	int ret;

	if (!len)
		return 0;
	if (!logical || sp->nin == DATA_SPANS_MAX || (b - a) / SECT > DATA_SPANS_SECTS - sp->nsect ||
	    chunk_map_is_parity(c, a))
		return -EAGAIN;
	ret = data_load_csums(c, a, n, sp->exp + sp->nsect, sp->have + sp->nsect);
	if (ret)
		return ret;
	sp->logical[sp->nin] = logical;
	sp->sect0[sp->nin] = sp->nsect;
	sp->in[sp->nin++] = (struct data_span){ len, PENDING, 0, NULL };
	sp->nsect += n;
	return 0;
}

static int out_add(struct data_spans *sp, const struct data_span *s)
{
	struct data_span *last = sp->n ? &sp->v[sp->n - 1] : NULL;

	if (last && s->fd >= 0 && last->fd == s->fd && last->pos + last->len == s->pos) {
		last->len += s->len;
		return 0;
	}
	if (sp->n == DATA_SPANS_MAX)
		return -EAGAIN;
	sp->v[sp->n++] = *s;
	return 0;
}

/* Sectors [p, q) of the piece whose first covering sector is a (its
 * checksums from exp/have at k), all on the first copy: checked, and the
 * bytes of [s, x) among them added as a span of that copy's device. */
static int map_piece(struct core *c, struct data_spans *sp, uint64_t a, uint32_t k,
		     uint64_t p, uint64_t q, uint64_t s, uint64_t x)
{
	struct chunk_copy cp[CHUNK_MAX_STRIPES];
	uint32_t got[DEV_MAP_MAX_SECTS];
	uint32_t i0 = k + (uint32_t)((p - a) / SECT);
	uint32_t n = (uint32_t)((q - p) / SECT);
	int ncp = chunk_map_lookup(c, p, q - p, cp, NULL);

	if (ncp < 1 || chunk_map_is_parity(c, p))
		return -EAGAIN;
	for (uint32_t i = 0; i < n; i += DEV_MAP_MAX_SECTS) {
		uint32_t m = n - i < DEV_MAP_MAX_SECTS ? n - i : DEV_MAP_MAX_SECTS;
		if (dev_map_crc(cp[0].dev, cp[0].physical + (uint64_t)i * SECT, m, got))
			return -EAGAIN;
		for (uint32_t j = 0; j < m; j++)
			if (!sp->have[i0 + i + j] || got[j] != sp->exp[i0 + i + j])
				return -EAGAIN;	/* the ordinary read says why */
	}
	/* a sequential reader's next bytes: asked for ahead (as read_sectors) */
	dev_readahead_note(c, cp[0].dev, cp[0].physical, q - p);
	return out_add(sp, &(struct data_span){ x - s, cp[0].dev->fd, cp[0].physical + (s - p), NULL });
}

int data_spans_map(struct core *c, struct data_spans *sp)
{
	uint64_t bytes = 0;
	int ret = 0;

	if (sp->copied)		/* read the ordinary way already */
		return 0;

	/*
	 * Never wait here: a relocation holds the lock exclusively while it
	 * starts or switches a chunk, waiting for the writes in flight (a
	 * modelled slow device: 40 ms each), and the ordinary read path
	 * takes no such lock — waiting, when each segment's copy held it too,
	 * made a 24 MB read during a resync 10x slower (volume3.test's
	 * bgresync-killed-midway).  Busy: the ordinary read.
	 */
	if (!glock_trylock(&c->reloc_lock, GLOCK_READ)) {
		__atomic_fetch_add(&c->span_fallbacks, 1, __ATOMIC_RELAXED);
		return -EAGAIN;
	}
	sp->held = true;
	sp->n = 0;
	for (int i = 0; i < sp->nin && !ret; i++) {
		const struct data_span *in = &sp->in[i];
		uint64_t lg = sp->logical[i], end = lg + in->len, a = RDOWN(lg), b = RUP(end);

		if (in->fd != PENDING) {
			ret = out_add(sp, in);
			continue;
		}
		bytes += in->len;
		/* pieces inside one chunk and one raid10 element, as
		 * read_whole: a run of extents may span two chunks */
		for (uint64_t p = a; p < b && !ret;) {
			uint64_t q = p + chunk_map_piece(c, p, b - p);
			if (q <= p)
				ret = -EAGAIN;
			else
				ret = map_piece(c, sp, a, sp->sect0[i], p, q, p > lg ? p : lg,
						q < end ? q : end);
			p = q;
		}
	}
	if (ret) {
		data_spans_done(c, sp);
		__atomic_fetch_add(&c->span_fallbacks, 1, __ATOMIC_RELAXED);
		return -EAGAIN;
	}
	if (bytes) {
		__atomic_fetch_add(&c->span_reads, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&c->span_bytes, bytes, __ATOMIC_RELAXED);
	}
	return 0;
}

void data_spans_fallback(struct core *c)
{
	__atomic_fetch_add(&c->span_fallbacks, 1, __ATOMIC_RELAXED);
}

int data_spans_read(struct core *c, struct data_spans *sp, void *buf)
{
	uint64_t at = 0;
	int ret = 0;

	for (int i = 0; i < sp->nin && !ret; at += sp->in[i].len, i++)
		if (sp->in[i].fd == PENDING) {
			uint64_t lg = sp->logical[i], len = sp->in[i].len;
			struct data_csums k = {
				RDOWN(lg), (uint32_t)((RUP(lg + len) - RDOWN(lg)) / SECT),
				sp->exp + sp->sect0[i], sp->have + sp->sect0[i],
			};
			ret = data_read_csums(c, lg, (char *)buf + at, len, &k);
		}
	if (!ret)
		data_spans_set_mem(sp, buf, at);
	return ret;
}

void data_spans_set_mem(struct data_spans *sp, const void *buf, uint64_t len)
{
	data_spans_init(sp);
	sp->copied = true;
	if (len)
		sp->v[sp->n++] = (struct data_span){ len, -1, 0, buf };
}

void data_spans_done(struct core *c, struct data_spans *sp)
{
	if (!sp->held)
		return;
	sp->held = false;
	glock_read_unlock(&c->reloc_lock);
}
