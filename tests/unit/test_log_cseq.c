// SPDX-License-Identifier: MIT
/*
 * test_log_cseq.c — a kept capture's entries in chunks (fs/items/log_cseq.c)
 * under ASan, against a flat array doing the same: random replacements
 * (inside a chunk, across chunk boundaries, emptying chunks, appending
 * more than a chunk holds), then the order of the entries, the
 * chunks' shape (none empty, none over CSEQ_CHUNK), the memory counted,
 * and log_cseq_find for every offset.  Items are allocated, so ASan sees
 * an entry freed twice or lost.  SEED=n replays.
 */
#include "fs/items/log_int.h"
#include "check.h"

#include <time.h>
#include <unistd.h>

#define MUST(expr) do { long _r = (long)(expr); if (_r < 0) { \
	printf("FAIL: %s:%d: %s = %ld\n", __FILE__, __LINE__, #expr, _r); \
	fails++; goto out; } } while (0)

static unsigned t_seed;

static unsigned t_rand(void)
{
	t_seed = t_seed * 1103515245u + 12345u;
	return (t_seed >> 8) & 0xffffff;
}

#define MALLOC_HDR 16u	/* log_cseq.c's count of an allocation's header */

static uint32_t next_id = 1;

static struct centry mk(void)
{
	struct centry x = { .ext_old = -1, .csum_items = next_id++ };

	if (t_rand() % 3) {	/* an item of this transaction: its bytes */
		x.size = 1 + t_rand() % 100;
		x.item = malloc(x.size);
		if (!x.item)
			abort();
	} else {		/* a run of committed items */
		x.count = 1 + t_rand() % 50;
	}
	return x;
}

/* Entry k (of the model's order) gets keys [2k, 2k+1): ascending, gaps
 * between, so log_cseq_find(2k) is entry k and log_cseq_find(2k+1) k+1. */
static bool check(struct cseq *s, const uint32_t *ids, size_t n)
{
	size_t k = 0, bytes = 0, total = 0;
	bool ok = s->n == n;

	for (size_t c = 0; c < s->nc; c++) {
		struct cchunk *ch = s->c[c];
		ok &= ch->n >= 1 && ch->n <= CSEQ_CHUNK;
		/* the search's index of last ends, as the keys stood */
		ok &= ch->n >= 1 && s->last[c] == ch->e[ch->n - 1].end;
		total += ch->n;
		bytes += sizeof(*ch);
		for (uint32_t i = 0; i < ch->n; i++, k++) {
			struct centry *x = &ch->e[i];
			ok &= k < n && x->csum_items == ids[k];
			bytes += x->item ? x->size + MALLOC_HDR : 0;
			x->start = 2 * k;
			x->end = 2 * k + 1;
		}
		s->last[c] = 2 * k - 1;	/* keys renumbered: the index with them */
	}
	ok &= total == n && bytes == s->bytes;
	for (size_t off = 0; ok && off <= 2 * n; off++) {
		struct centry *x = log_cseq_at(s, log_cseq_find(s, off));
		size_t want = (off + 1) / 2;	/* the first entry ending past off */
		ok &= want < n ? x && x->csum_items == ids[want] : x == NULL;
	}
	return ok;
}

int main(void)
{
	struct cseq s = { 0 };
	size_t cap = 1 << 16, n = 0;
	uint32_t *ids = malloc(cap * sizeof(*ids));
	struct centry nv[3 * CSEQ_CHUNK];
	bool ok = true;
	int splits = 0, spans = 0, empties = 0;

	const char *e = getenv("SEED");
	t_seed = e ? (unsigned)strtoul(e, NULL, 0) : (unsigned)(time(NULL) ^ getpid());
	printf("seed: %u\n", t_seed);
	MUST(ids ? 0 : -ENOMEM);
	/* a capture read whole: more than a chunk's worth at once */
	size_t first = 5 * CSEQ_CHUNK / 2;
	struct cvec v = { 0 };
	for (size_t i = 0; i < first; i++) {
		MUST(log_bytes_reserve((char **)&v.e, &v.cap, (v.n + 1) * sizeof(*v.e),
				       64 * sizeof(*v.e)));
		v.e[v.n++] = mk();
		ids[n++] = v.e[v.n - 1].csum_items;
	}
	MUST(log_cseq_from_vec(&s, &v));
	CHECK("a capture read whole: in order, in chunks", check(&s, ids, n));
	for (int op = 0; op < 4000 && ok; op++) {
		size_t at = n ? t_rand() % (n + 1) : 0, count = 0, add;
		unsigned kind = t_rand() % 16;
		if (at < n)
			count = kind == 0 || n > 1500 ? t_rand() % (2 * CSEQ_CHUNK) : t_rand() % 3;
		if (count > n - at)
			count = n - at;
		/* mostly a run split around a new item (one entry for three), now
		 * and then a range read again into many */
		add = kind == 1 ? t_rand() % (3 * CSEQ_CHUNK) : t_rand() % 4;
		if (n - count + add >= cap)
			add = 0;
		for (size_t i = 0; i < add; i++)
			nv[i] = mk();
		struct cpos p = log_cseq_find(&s, 2 * at);	/* entry `at` */
		size_t nc0 = s.nc;
		bool span = at < n && p.i + count > s.c[p.c]->n;
		MUST(log_cseq_replace(&s, p, count, nv, add));
		memmove(ids + at + add, ids + at + count, (n - at - count) * sizeof(*ids));
		for (size_t i = 0; i < add; i++)
			ids[at + i] = nv[i].csum_items;
		n = n - count + add;
		splits += s.nc > nc0;
		empties += s.nc < nc0;
		spans += span;
		ok = check(&s, ids, n);
	}
	printf("# %zu entries in %zu chunks; %d replacements added chunks, %d dropped some, "
	       "%d spanned chunks\n", n, s.nc, splits, empties, spans);
	CHECK("4000 random replacements: in order, chunks neither empty nor over full, "
	      "memory counted, every offset found", ok);
	CHECK("the replacements split chunks, emptied chunks and spanned them",
	      splits > 0 && empties > 0 && spans > 0);
	/* every entry gone: no chunk left */
	MUST(log_cseq_replace(&s, log_cseq_find(&s, 0), n, NULL, 0));
	CHECK("every entry replaced by none: no chunk, no memory", s.nc == 0 && s.n == 0 &&
	      s.bytes == 0);
out:
	log_cseq_free(&s);
	free(ids);
	return fails != 0;
}
