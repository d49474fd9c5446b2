// SPDX-License-Identifier: MIT
/*
 * log_cseq.c — the entries of a kept capture (log_capture.c) as a
 * sequence in chunks: ascending and disjoint as struct centry says, at
 * most CSEQ_CHUNK entries a chunk, no chunk empty, an array of chunk
 * pointers in order.
 *
 * Why not one sorted array: a kept capture grows by about two entries at
 * every 4 KiB random write (a committed run split around the new item),
 * and each fsync replaced the entries of the noted offsets in place, a
 * memmove of every entry after them.  At fio's --fsync=1 rate that is a
 * capture of ~30,000 entries before the log's size asks for a commit and
 * 0.8 MB moved per fsync; so a capture of 4,096 entries asked for a
 * commit instead (a commit every ~1,300-1,500 fsyncs).  Here a change
 * moves the entries of one chunk (a few more when it spills into new
 * chunks) and, when the number of chunks changes, the chunk pointers:
 * 1/CSEQ_CHUNK of the entries.  Finding an offset is a binary search over
 * the chunks' last ends (an array of their own, `last`: a search over the
 * chunks themselves missed the cache at every step, two loads of a chunk
 * each, 1.6 % of an fsync's time in fio's pattern), then inside one chunk.
 *
 * The sequence also counts the memory it holds (bytes: its chunks, and
 * each item's bytes and checksums with a malloc header each) so the log
 * can bound a capture by memory rather than by length (log.c).
 */
#include "fs/items/log_int.h"

#define MALLOC_HDR 16u	/* what an allocation costs beyond its bytes, roughly */

static size_t entry_bytes(const struct centry *x)
{
	return (x->item ? x->size + MALLOC_HDR : 0) + (x->csums ? x->csum_len + MALLOC_HDR : 0);
}

void log_cseq_account_csums(struct cseq *s, const struct centry *x)
{
	s->bytes += x->csum_len + MALLOC_HDR;
}

void log_cseq_free(struct cseq *s)
{
	for (size_t k = 0; k < s->nc; k++) {
		log_centries_free(s->c[k]->e, s->c[k]->n);
		free(s->c[k]);
	}
	free(s->c);
	free(s->last);
	*s = (struct cseq){ 0 };
}

struct cpos log_cseq_find(const struct cseq *s, uint64_t off)
{
	size_t lo = 0, hi = s->nc;

	while (lo < hi) {	/* the first chunk whose last entry ends past off */
		size_t mid = (lo + hi) / 2;
		if (s->last[mid] <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == s->nc)
		return (struct cpos){ s->nc, 0 };
	const struct cchunk *ch = s->c[lo];
	size_t a = 0, b = ch->n;
	while (a < b) {
		size_t mid = (a + b) / 2;
		if (ch->e[mid].end <= off)
			a = mid + 1;
		else
			b = mid;
	}
	return (struct cpos){ lo, a };
}

struct centry *log_cseq_at(const struct cseq *s, struct cpos p)
{
	return p.c < s->nc ? &s->c[p.c]->e[p.i] : NULL;
}

void log_cseq_next(const struct cseq *s, struct cpos *p)
{
	if (p->c < s->nc && ++p->i == s->c[p->c]->n) {
		p->c++;
		p->i = 0;
	}
}

/* Room for need chunk pointers.  0 or -ENOMEM. */
static int index_reserve(struct cseq *s, size_t need)
{
	if (need <= s->ccap)
		return 0;
	size_t nc = s->ccap ? s->ccap * 2 : 16;
	while (nc < need)
		nc *= 2;
	struct cchunk **np = realloc(s->c, nc * sizeof(*np));
	if (!np)
		return -ENOMEM;
	s->c = np;
	uint64_t *nl = realloc(s->last, nc * sizeof(*nl));
	if (!nl)
		return -ENOMEM;	/* c grown, ccap not: the next call grows both */
	s->last = nl;
	s->ccap = nc;
	return 0;
}

int log_cseq_replace(struct cseq *s, struct cpos from, size_t count, struct centry *nv, size_t n)
{
	size_t a = from.c, i = from.i;

	if (a == s->nc && s->nc) {	/* the end: the end of the last chunk */
		a = s->nc - 1;
		i = s->c[a]->n;
	}
	/* the common case (a run split around a new item): inside one chunk */
	if (a < s->nc && i + count <= s->c[a]->n && s->c[a]->n - count + n <= CSEQ_CHUNK &&
	    s->c[a]->n - count + n > 0) {
		struct cchunk *ch = s->c[a];
		for (size_t j = i; j < i + count; j++)
			s->bytes -= entry_bytes(&ch->e[j]);
		log_centries_free(ch->e + i, count);
		memmove(ch->e + i + n, ch->e + i + count, (ch->n - i - count) * sizeof(*ch->e));
		if (n)
			memcpy(ch->e + i, nv, n * sizeof(*nv));
		ch->n = (uint32_t)(ch->n - count + n);
		s->last[a] = ch->e[ch->n - 1].end;
		s->n = s->n - count + n;
		for (size_t j = 0; j < n; j++)
			s->bytes += entry_bytes(&nv[j]);
		return 0;
	}
	/* chunks a..b-1 hold the head before i, the removed entries and the
	 * tail after them (tail: from t in chunk b-1) */
	size_t b = a, t = i, left = count;
	if (a < s->nc) {
		b = a + 1;
		while (left > s->c[b - 1]->n - t) {
			left -= s->c[b - 1]->n - t;
			t = 0;
			b++;
			if (b > s->nc)
				return -EINVAL;	/* count past the end: a caller's bug */
		}
		t += left;
	}
	size_t tailn = b > a ? s->c[b - 1]->n - t : 0;
	size_t m = i + n + tailn, k = (m + CSEQ_CHUNK - 1) / CSEQ_CHUNK, old = b - a;
	/* everything that can fail first: the volume's state is untouched on
	 * -ENOMEM (the caller forgets the capture) */
	struct centry *tmp = m ? malloc(m * sizeof(*tmp)) : NULL;
	struct cchunk **fresh = k > old ? calloc(k - old, sizeof(*fresh)) : NULL;
	int ret = (m && !tmp) || (k > old && !fresh) ? -ENOMEM : 0;
	for (size_t j = 0; !ret && j + old < k; j++)
		if (!(fresh[j] = malloc(sizeof(**fresh))))
			ret = -ENOMEM;
	if (!ret && k > old)
		ret = index_reserve(s, s->nc + k - old);
	if (ret) {
		for (size_t j = 0; fresh && j + old < k; j++)
			free(fresh[j]);
		free(fresh);
		free(tmp);
		return ret;
	}
	if (i)
		memcpy(tmp, s->c[a]->e, i * sizeof(*tmp));
	if (n)
		memcpy(tmp + i, nv, n * sizeof(*nv));
	if (tailn)
		memcpy(tmp + i + n, s->c[b - 1]->e + t, tailn * sizeof(*tmp));
	/* the removed entries: from i in chunk a to t in chunk b-1 */
	for (size_t c = a, j = i; c < b; c++, j = 0) {
		size_t end = c == b - 1 ? t : s->c[c]->n;
		for (size_t x = j; x < end; x++)
			s->bytes -= entry_bytes(&s->c[c]->e[x]);
		log_centries_free(s->c[c]->e + j, end - j);
	}
	for (size_t j = 0; j < n; j++)
		s->bytes += entry_bytes(&nv[j]);
	/* chunks a..a+k-1: the old ones first, then the fresh */
	if (k > old) {
		memmove(s->c + b + (k - old), s->c + b, (s->nc - b) * sizeof(*s->c));
		memmove(s->last + b + (k - old), s->last + b, (s->nc - b) * sizeof(*s->last));
		memcpy(s->c + b, fresh, (k - old) * sizeof(*fresh));
	} else if (k < old) {
		for (size_t c = a + k; c < b; c++)
			free(s->c[c]);
		memmove(s->c + a + k, s->c + b, (s->nc - b) * sizeof(*s->c));
		memmove(s->last + a + k, s->last + b, (s->nc - b) * sizeof(*s->last));
	}
	s->nc = s->nc + k - old;
	if (k > old)
		s->bytes += (k - old) * sizeof(struct cchunk);
	else
		s->bytes -= (old - k) * sizeof(struct cchunk);
	for (size_t c = 0, done = 0; c < k; c++) {
		size_t take = (m - done) / (k - c);	/* even: no chunk left nearly empty */
		s->c[a + c]->n = (uint32_t)take;
		memcpy(s->c[a + c]->e, tmp + done, take * sizeof(*tmp));
		done += take;
		s->last[a + c] = tmp[done - 1].end;
	}
	s->n = s->n - count + n;
	free(tmp);
	free(fresh);
	return 0;
}

int log_cseq_from_vec(struct cseq *s, struct cvec *v)
{
	int ret = log_cseq_replace(s, (struct cpos){ s->nc, 0 }, 0, v->e, v->n);

	if (ret)
		log_centries_free(v->e, v->n);
	free(v->e);
	*v = (struct cvec){ 0 };
	return ret;
}
