// SPDX-License-Identifier: MIT
/*
 * alloc.c — block groups, in-memory free space bitmaps and the
 * pinned-extent rule (see alloc.h); their items (block-group items, the
 * free-space tree) are fs/trees/alloc_tree.c.
 */
#include "fs/core/core_types.h"
#include "fs/store/chunk.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SECT CORE_SECTORSIZE
#define MIB_BITS ((1ull << 20) / SECT)	/* sectors per MiB: split boundaries */
#define ELEM_BITS (CHUNK_STRIPE_LEN / SECT)	/* sectors per raid10 element */

static inline bool bit_get(const uint64_t *bm, uint64_t i)
{
	return (bm[i >> 6] >> (i & 63)) & 1;
}
static inline void bit_set(uint64_t *bm, uint64_t i) { bm[i >> 6] |= 1ull << (i & 63); }
static inline void bit_clr(uint64_t *bm, uint64_t i) { bm[i >> 6] &= ~(1ull << (i & 63)); }

static void range_set(uint64_t *bm, uint64_t s, uint64_t n)
{
	for (uint64_t i = s; i < s + n; i++)
		bit_set(bm, i);
}

static void range_clr(uint64_t *bm, uint64_t s, uint64_t n)
{
	for (uint64_t i = s; i < s + n; i++)
		bit_clr(bm, i);
}

static uint64_t range_count(const uint64_t *bm, uint64_t s, uint64_t n)
{
	uint64_t k = 0;
	for (uint64_t i = s; i < s + n; i++)
		k += bit_get(bm, i);
	return k;
}

void alloc_init(struct allocator *a)
{
	memset(a, 0, sizeof(*a));
	glock_init(&a->lock, GLOCK_MUTEX, GLOCK_CLASS_ALLOC, 0, -1, -1);
}

static void bg_free(struct bgroup *bg)
{
	if (!bg)
		return;
	free(bg->used);
	free(bg->pinned);
	free(bg->cpinned);
	free(bg->held);
	free(bg->seg_dirty);
	free(bg);
}

void alloc_destroy(struct allocator *a)
{
	for (int i = 0; i < a->n; i++)
		bg_free(a->bg[i]);
	free(a->bg);
	htable_set_destroy(&a->new_blocks);
	memset(a, 0, sizeof(*a));
}

struct bgroup *alloc_find_bg_locked(struct allocator *a, uint64_t logical)
{
	int lo = 0, hi = a->n - 1;

	while (lo <= hi) {
		int mid = (lo + hi) / 2;
		struct bgroup *bg = a->bg[mid];
		if (logical < bg->start)
			hi = mid - 1;
		else if (logical >= bg->start + bg->len)
			lo = mid + 1;
		else
			return bg;
	}
	return NULL;
}

static void mark_dirty(struct bgroup *bg, uint64_t s, uint64_t n)
{
	for (uint64_t seg = s / FST_SEG_SECTORS; seg <= (s + n - 1) / FST_SEG_SECTORS; seg++)
		bg->seg_dirty[seg] = 1;
	bg->dirty = true;
	bg->item_dirty = true;
}

int alloc_add_bg(struct core *c, uint64_t start, uint64_t len, uint64_t flags, bool fresh)
{
	struct allocator *a = &c->alloc;
	struct bgroup *bg = calloc(1, sizeof(*bg));
	size_t words;
	int pos, ret = 0;

	if (!bg)
		return -ENOMEM;
	bg->start = start;
	bg->len = len;
	bg->flags = flags;
	bg->nbits = len / SECT;
	bg->row = chunk_row_bytes(c, start) / SECT;
	words = (bg->nbits + 63) / 64;
	bg->nsegs = (uint32_t)((bg->nbits + FST_SEG_SECTORS - 1) / FST_SEG_SECTORS);
	bg->used = calloc(words, 8);
	bg->pinned = calloc(words, 8);
	bg->cpinned = calloc(words, 8);
	bg->held = calloc(words, 8);
	bg->seg_dirty = calloc(bg->nsegs, 1);
	if (!bg->used || !bg->pinned || !bg->cpinned || !bg->held || !bg->seg_dirty) {
		bg_free(bg);
		return -ENOMEM;
	}
	if (fresh) {
		/* every segment and the info item are written by the next commit */
		memset(bg->seg_dirty, 1, bg->nsegs);
		bg->dirty = bg->item_dirty = bg->fst_info_missing = true;
	}
	glock_lock(&a->lock, GLOCK_WRITE);
	if (a->n == a->cap) {
		int cap = a->cap ? a->cap * 2 : 16;
		struct bgroup **v = realloc(a->bg, (size_t)cap * sizeof(*v));
		if (!v) {
			ret = -ENOMEM;
			goto out;
		}
		a->bg = v;
		a->cap = cap;
	}
	for (pos = 0; pos < a->n && a->bg[pos]->start < start; pos++)
		;
	if (pos < a->n && a->bg[pos]->start == start) {
		ret = -EEXIST;
		goto out;
	}
	memmove(&a->bg[pos + 1], &a->bg[pos], (size_t)(a->n - pos) * sizeof(*a->bg));
	a->bg[pos] = bg;
	a->n++;
out:
	glock_unlock(&a->lock, GLOCK_WRITE);
	if (ret)
		bg_free(bg);
	return ret;
}

/* The n bits of src from bit `from` into dst from bit 0 (dst zeroed). */
static void bits_copy(uint64_t *dst, const uint64_t *src, uint64_t from, uint64_t n)
{
	if (from % 64 == 0) {
		memcpy(dst, src + from / 64, (n + 63) / 64 * 8);
		return;
	}
	for (uint64_t i = 0; i < n; i++)
		if (bit_get(src, from + i))
			bit_set(dst, i);
}

/*
 * Split the block group starting at start at offset at, any sector
 * (alloc.h).  The second half gets its own bitmaps; the first keeps its
 * arrays, cut short, the bits past the cut cleared.
 */
int alloc_split_bg(struct core *c, uint64_t start, uint64_t at)
{
	struct allocator *a = &c->alloc;
	struct bgroup *bg, *nb = NULL;
	uint64_t cut = at / SECT;
	int pos, ret = 0;

	if (at % SECT)
		return -EINVAL;
	glock_lock(&a->lock, GLOCK_WRITE);
	bg = alloc_find_bg_locked(a, start);
	if (!bg || bg->start != start || at == 0 || at >= bg->len) {
		ret = -EINVAL;
		goto out;
	}
	/* extents: the caller checked (alloc_fence); a run taken for a
	 * discard must be given back in one group */
	if (bit_get(bg->held, cut - 1) && bit_get(bg->held, cut)) {
		ret = -EBUSY;
		goto out;
	}
	if (a->n == a->cap) {
		int cap = a->cap * 2;
		struct bgroup **v = realloc(a->bg, (size_t)cap * sizeof(*v));
		if (!v) {
			ret = -ENOMEM;
			goto out;
		}
		a->bg = v;
		a->cap = cap;
	}
	nb = calloc(1, sizeof(*nb));
	if (!nb) {
		ret = -ENOMEM;
		goto out;
	}
	nb->start = start + at;
	nb->len = bg->len - at;
	nb->flags = bg->flags;
	nb->row = bg->row;
	nb->nbits = nb->len / SECT;
	nb->nsegs = (uint32_t)((nb->nbits + FST_SEG_SECTORS - 1) / FST_SEG_SECTORS);
	size_t words = (nb->nbits + 63) / 64;
	nb->used = calloc(words, 8);
	nb->pinned = calloc(words, 8);
	nb->cpinned = calloc(words, 8);
	nb->held = calloc(words, 8);
	nb->seg_dirty = malloc(nb->nsegs);
	if (!nb->used || !nb->pinned || !nb->cpinned || !nb->held || !nb->seg_dirty) {
		bg_free(nb);
		nb = NULL;
		ret = -ENOMEM;
		goto out;
	}
	bits_copy(nb->used, bg->used, cut, nb->nbits);
	bits_copy(nb->pinned, bg->pinned, cut, nb->nbits);
	bits_copy(nb->cpinned, bg->cpinned, cut, nb->nbits);
	bits_copy(nb->held, bg->held, cut, nb->nbits);
	nb->used_bytes = range_count(nb->used, 0, nb->nbits) * SECT;
	nb->pinned_bytes = range_count(nb->pinned, 0, nb->nbits) * SECT;
	nb->cpinned_bytes = range_count(nb->cpinned, 0, nb->nbits) * SECT;
	nb->held_bytes = range_count(nb->held, 0, nb->nbits) * SECT;
	nb->cursor = bg->cursor > cut ? bg->cursor - cut : 0;
	for (uint64_t i = cut; i % 64; i++) {	/* the first half's last word */
		bit_clr(bg->used, i);
		bit_clr(bg->pinned, i);
		bit_clr(bg->cpinned, i);
		bit_clr(bg->held, i);
	}
	bg->len = at;
	bg->nbits = cut;
	bg->nsegs = (uint32_t)((cut + FST_SEG_SECTORS - 1) / FST_SEG_SECTORS);
	bg->used_bytes -= nb->used_bytes;
	bg->pinned_bytes -= nb->pinned_bytes;
	bg->cpinned_bytes -= nb->cpinned_bytes;
	bg->held_bytes -= nb->held_bytes;
	if (bg->cursor > cut)
		bg->cursor = 0;
	bg->fence = 0;
	/* both halves' info, bitmaps and items are (re)written at commit;
	 * alloc_split_items deletes the old ones */
	for (struct bgroup *x = bg; x; x = x == bg ? nb : NULL) {
		memset(x->seg_dirty, 1, x->nsegs);
		x->dirty = x->item_dirty = x->fst_info_missing = true;
	}
	for (pos = 0; a->bg[pos] != bg; pos++)
		;
	pos++;
	memmove(&a->bg[pos + 1], &a->bg[pos], (size_t)(a->n - pos) * sizeof(*a->bg));
	a->bg[pos] = nb;
	a->n++;
out:
	glock_unlock(&a->lock, GLOCK_WRITE);
	return ret;
}

int alloc_fence(struct core *c, uint64_t start, uint64_t upto)
{
	struct bgroup *bg;
	int ret = -EINVAL;

	glock_lock(&c->alloc.lock, GLOCK_WRITE);
	bg = alloc_find_bg_locked(&c->alloc, start);
	if (bg && bg->start == start) {
		bg->fence = (upto < bg->len ? upto : bg->len) / SECT;
		ret = 0;
	}
	glock_unlock(&c->alloc.lock, GLOCK_WRITE);
	return ret;
}

/* First run of n clear bits at or after `from`, aligned to al bits
 * (relative to the group start).  Returns the bit or UINT64_MAX. */
int alloc_set_readonly(struct core *c, uint64_t start, bool ro)
{
	uint64_t row = ro ? 0 : chunk_row_bytes(c, start) / SECT;	/* chunks.lock before ours */
	struct bgroup *bg;
	int ret = -EINVAL;

	glock_lock(&c->alloc.lock, GLOCK_WRITE);
	bg = alloc_find_bg_locked(&c->alloc, start);
	if (bg && bg->start == start) {
		bg->readonly = ro;
		if (!ro) {
			bg->row = row;
			bg->cursor = 0;
		}
		ret = 0;
	}
	glock_unlock(&c->alloc.lock, GLOCK_WRITE);
	return ret;
}

bool alloc_is_readonly(struct core *c, uint64_t logical)
{
	struct bgroup *bg;
	bool ro;

	glock_lock(&c->alloc.lock, GLOCK_READ);
	bg = alloc_find_bg_locked(&c->alloc, logical);
	ro = bg && bg->readonly;
	glock_unlock(&c->alloc.lock, GLOCK_READ);
	return ro;
}

static uint64_t find_run(const struct bgroup *bg, uint64_t from, uint64_t to,
			 uint64_t n, uint64_t al, uint64_t keep)
{
	uint64_t i = (from + al - 1) / al * al;

	while (i + n <= to) {
		uint64_t j, b = (i / MIB_BITS + 1) * MIB_BITS, e = (i / ELEM_BITS + 1) * ELEM_BITS;
		if (i + n > b && b <= bg->fence) {	/* a split is being prepared at b */
			i = (b + al - 1) / al * al;
			continue;
		}
		if (i + keep > e) {	/* its first keep sectors stay in one element */
			i = (e + al - 1) / al * al;
			continue;
		}
		if (bg->used[i >> 6] == ~0ull && (i & 63) == 0) {
			i += 64;
			i = (i + al - 1) / al * al;
			continue;
		}
		for (j = 0; j < n && !bit_get(bg->used, i + j); j++)
			;
		if (j == n)
			return i;
		i = (i + j + 1 + al - 1) / al * al;
	}
	return UINT64_MAX;
}

/* Can a run of len bytes of type come from bg at all? */
static bool bg_takes(const struct bgroup *bg, uint64_t type, uint64_t len)
{
	return (bg->flags & BG_TYPE_MASK) == type && bg->len - bg->used_bytes >= len &&
	       !bg->readonly;
}

/* The run bg hands out for n sectors aligned to al: *rn sectors aligned
 * to *ral. */
static void run_shape(const struct bgroup *bg, uint64_t n, uint64_t al, uint64_t *rn,
		      uint64_t *ral, uint64_t *keep)
{
	*rn = n;
	*ral = al;
	*keep = 0;
	if (bg->row > 1) {
		/* raid5/6: whole free rows only (parity.c): the run is
		 * rounded up to rows and starts on one; the padding
		 * stays clear but no other run can start inside the
		 * row, so the row is reused only once all of it is free.
		 * A row start is alignment enough: a node (nodesize
		 * aligned elsewhere, so it never crosses a raid10
		 * element) may cross rows, and aligning its rows to the
		 * node size would leave whole free rows between nodes
		 * (3-sector rows, 4-sector nodes: 48 KiB a node).  But a
		 * node stays inside one 64 KiB element: meta_read, scrub
		 * and fsck read a node of a mirrored chunk in one piece,
		 * and a balance to raid10 keeps its address */
		*rn = (n + bg->row - 1) / bg->row * bg->row;
		*ral = bg->row;
		if ((bg->flags & BG_TYPE_MASK) != BG_DATA && n <= ELEM_BITS)
			*keep = n;
	}
}

/* Mark the n sectors at bit used; caller holds the lock.  Returns their
 * logical address.  (A raid5/6 run's row padding stays clear.) */
static uint64_t take_run(struct bgroup *bg, uint64_t bit, uint64_t n)
{
	range_set(bg->used, bit, n);
	bg->used_bytes += n * SECT;
	mark_dirty(bg, bit, n);
	return bg->start + bit * SECT;
}

/* alloc_reserve with the lock held. */
static int reserve_locked(struct allocator *a, uint64_t type, uint64_t len, uint64_t n,
			  uint64_t al, uint64_t *logical)
{
	for (int k = 0; k < a->n; k++) {
		/* start at the group used last for this type: fewer scans */
		int idx = (int)((a->meta_cursor_bg + (uint64_t)k) % (uint64_t)a->n);
		struct bgroup *bg = a->bg[idx];
		uint64_t bit, rn, ral, keep;

		if (!bg_takes(bg, type, len))
			continue;
		run_shape(bg, n, al, &rn, &ral, &keep);
		bit = find_run(bg, bg->cursor, bg->nbits, rn, ral, keep);
		if (bit == UINT64_MAX && bg->cursor)
			bit = find_run(bg, 0, bg->nbits, rn, ral, keep);
		if (bit == UINT64_MAX)
			continue;
		*logical = take_run(bg, bit, n);
		bg->cursor = bit + rn;
		if (type != BG_DATA)
			a->meta_cursor_bg = (uint64_t)idx;
		return 0;
	}
	return -ENOSPC;
}

int alloc_reserve(struct core *c, uint64_t type, uint64_t len, uint64_t align,
		  uint64_t *logical)
{
	struct allocator *a = &c->alloc;
	int ret;

	if (!len || len % SECT)
		return -EINVAL;
	glock_lock(&a->lock, GLOCK_WRITE);
	ret = reserve_locked(a, type, len, len / SECT, align > SECT ? align / SECT : 1, logical);
	glock_unlock(&a->lock, GLOCK_WRITE);
	return ret;
}

int alloc_reserve_goal(struct core *c, uint64_t type, uint64_t len, uint64_t align,
		       uint64_t goal, uint64_t *logical)
{
	struct allocator *a = &c->alloc;
	uint64_t n = len / SECT, al = align > SECT ? align / SECT : 1;
	struct bgroup *bg;
	int ret;

	if (!len || len % SECT)
		return -EINVAL;
	glock_lock(&a->lock, GLOCK_WRITE);
	bg = goal ? alloc_find_bg_locked(a, goal) : NULL;
	if (bg && bg_takes(bg, type, len) && (goal - bg->start) % SECT == 0) {
		uint64_t bit = (goal - bg->start) / SECT, rn, ral, keep;

		run_shape(bg, n, al, &rn, &ral, &keep);
		/* exactly the run at goal, or none: find_run over [bit,
		 * bit + rn) also refuses a misaligned start and a run
		 * crossing a split fence */
		if (bit % ral == 0 && bit + rn <= bg->nbits &&
		    find_run(bg, bit, bit + rn, rn, ral, keep) == bit) {
			*logical = take_run(bg, bit, n);
			/* the cursor only moves forward: the space a goal
			 * skipped stays for the file's earlier pieces */
			if (bit + rn > bg->cursor)
				bg->cursor = bit + rn;
			glock_unlock(&a->lock, GLOCK_WRITE);
			return 0;
		}
	}
	ret = reserve_locked(a, type, len, n, al, logical);
	glock_unlock(&a->lock, GLOCK_WRITE);
	return ret;
}

uint64_t alloc_next_fit(struct core *c, uint64_t type, uint64_t len)
{
	struct allocator *a = &c->alloc;
	uint64_t at = 0;

	glock_lock(&a->lock, GLOCK_WRITE);
	for (int k = 0; k < a->n && !at; k++) {
		struct bgroup *bg = a->bg[(a->meta_cursor_bg + (uint64_t)k) % (uint64_t)a->n];

		if (bg_takes(bg, type, len) && bg->cursor < bg->nbits)
			at = bg->start + bg->cursor * SECT;
	}
	glock_unlock(&a->lock, GLOCK_WRITE);
	return at;
}

int alloc_claim(struct core *c, uint64_t logical, uint64_t len)
{
	struct bgroup *bg;
	int ret = -EINVAL;

	glock_lock(&c->alloc.lock, GLOCK_WRITE);
	bg = alloc_find_bg_locked(&c->alloc, logical);
	if (bg && len && logical + len <= bg->start + bg->len && (logical - bg->start) % SECT == 0 &&
	    len % SECT == 0) {
		uint64_t s = (logical - bg->start) / SECT, n = len / SECT;
		if (range_count(bg->used, s, n)) {
			ret = -EEXIST;
		} else {
			range_set(bg->used, s, n);
			bg->used_bytes += len;
			mark_dirty(bg, s, n);
			ret = 0;
		}
	}
	glock_unlock(&c->alloc.lock, GLOCK_WRITE);
	return ret;
}

/* Caller holds the lock; returns the group after checking the range. */
static struct bgroup *range_bg(struct core *c, uint64_t logical, uint64_t len)
{
	struct bgroup *bg = alloc_find_bg_locked(&c->alloc, logical);

	if (!bg || logical + len > bg->start + bg->len || (logical - bg->start) % SECT ||
	    len % SECT) {
		core_corrupt(c, "alloc", "range %llu+%llu is not inside one block group",
			     (unsigned long long)logical, (unsigned long long)len);
		return NULL;
	}
	return bg;
}

void alloc_free_now(struct core *c, uint64_t logical, uint64_t len)
{
	struct bgroup *bg;

	glock_lock(&c->alloc.lock, GLOCK_WRITE);
	bg = range_bg(c, logical, len);
	if (bg) {
		uint64_t s = (logical - bg->start) / SECT, n = len / SECT;
		uint64_t was = range_count(bg->used, s, n);
		range_clr(bg->used, s, n);
		bg->used_bytes -= was * SECT;
		if (s < bg->cursor)
			bg->cursor = s;
		mark_dirty(bg, s, n);
	}
	glock_unlock(&c->alloc.lock, GLOCK_WRITE);
}

void alloc_pin(struct core *c, uint64_t logical, uint64_t len)
{
	struct bgroup *bg;

	glock_lock(&c->alloc.lock, GLOCK_WRITE);
	bg = range_bg(c, logical, len);
	if (bg) {
		uint64_t s = (logical - bg->start) / SECT, n = len / SECT;
		uint64_t was = range_count(bg->pinned, s, n);
		range_set(bg->pinned, s, n);
		bg->pinned_bytes += (n - was) * SECT;
		mark_dirty(bg, s, n);
	}
	glock_unlock(&c->alloc.lock, GLOCK_WRITE);
}

void alloc_capture_pins(struct core *c)
{
	struct allocator *a = &c->alloc;

	glock_lock(&a->lock, GLOCK_WRITE);
	for (int k = 0; k < a->n; k++) {
		struct bgroup *bg = a->bg[k];
		uint64_t words = (bg->nbits + 63) / 64;

		if (!bg->pinned_bytes)
			continue;
		if (!bg->cpinned_bytes) {	/* the usual case: the last commit unpinned */
			uint64_t *x = bg->cpinned;
			bg->cpinned = bg->pinned;
			bg->pinned = x;
		} else {
			for (uint64_t w = 0; w < words; w++) {
				bg->cpinned[w] |= bg->pinned[w];
				bg->pinned[w] = 0;
			}
		}
		bg->cpinned_bytes = range_count(bg->cpinned, 0, bg->nbits) * SECT;
		bg->pinned_bytes = 0;
	}
	glock_unlock(&a->lock, GLOCK_WRITE);
}

void alloc_unpin(struct core *c, bool (*fn)(void *arg, uint64_t logical, uint64_t len,
					    uint64_t flags), void *arg)
{
	struct allocator *a = &c->alloc;

	glock_lock(&a->lock, GLOCK_WRITE);
	for (int k = 0; k < a->n; k++) {
		struct bgroup *bg = a->bg[k];
		uint64_t i = 0;

		if (!bg->cpinned_bytes)
			continue;
		while (i < bg->nbits) {
			uint64_t j;
			bool keep = false;
			if (!bg->cpinned[i >> 6]) {
				i = (i | 63) + 1;
				continue;
			}
			if (!bit_get(bg->cpinned, i)) {
				i++;
				continue;
			}
			for (j = i; j < bg->nbits && bit_get(bg->cpinned, j); j++)
				;
			if (fn)
				keep = fn(arg, bg->start + i * SECT, (j - i) * SECT, bg->flags);
			range_clr(bg->cpinned, i, j - i);
			if (keep) {
				range_set(bg->held, i, j - i);
				bg->held_bytes += (j - i) * SECT;
			} else {
				range_clr(bg->used, i, j - i);
				bg->used_bytes -= (j - i) * SECT;
				a->given_back += (j - i) * SECT;
				if (i < bg->cursor)
					bg->cursor = i;
			}
			i = j;
		}
		bg->cpinned_bytes = 0;
	}
	glock_unlock(&a->lock, GLOCK_WRITE);
}

void alloc_release(struct core *c, uint64_t logical, uint64_t len)
{
	struct bgroup *bg;

	glock_lock(&c->alloc.lock, GLOCK_WRITE);
	bg = range_bg(c, logical, len);
	if (bg) {
		uint64_t s = (logical - bg->start) / SECT, n = len / SECT;
		range_clr(bg->used, s, n);
		range_clr(bg->held, s, n);
		bg->used_bytes -= len;
		bg->held_bytes -= len;
		c->alloc.given_back += len;
		if (s < bg->cursor)
			bg->cursor = s;
	}
	glock_unlock(&c->alloc.lock, GLOCK_WRITE);
}

uint64_t alloc_given_back(struct core *c)
{
	uint64_t n;

	glock_lock(&c->alloc.lock, GLOCK_WRITE);
	n = c->alloc.given_back;
	glock_unlock(&c->alloc.lock, GLOCK_WRITE);
	return n;
}

bool alloc_trim_take(struct core *c, uint64_t from, uint64_t maxlen, uint64_t *logical,
		     uint64_t *len)
{
	bool found = false;

	glock_lock(&c->alloc.lock, GLOCK_WRITE);
	for (int k = 0; k < c->alloc.n && !found; k++) {
		struct bgroup *bg = c->alloc.bg[k];
		uint64_t i;

		if (bg->start + bg->len <= from)
			continue;
		i = from > bg->start ? (from - bg->start) / SECT : 0;
		while (i < bg->nbits && bit_get(bg->used, i))
			i++;
		if (i >= bg->nbits)
			continue;
		uint64_t j = i;
		while (j < bg->nbits && !bit_get(bg->used, j) && (j - i) * SECT < maxlen &&
		       !(j > i && j % MIB_BITS == 0 && j <= bg->fence))
			j++;
		range_set(bg->used, i, j - i);
		range_set(bg->held, i, j - i);
		bg->used_bytes += (j - i) * SECT;
		bg->held_bytes += (j - i) * SECT;
		*logical = bg->start + i * SECT;
		*len = (j - i) * SECT;
		found = true;
	}
	glock_unlock(&c->alloc.lock, GLOCK_WRITE);
	return found;
}

/* How many of the range's *n sectors are allocated: false when the range
 * is not inside one block group. */
static bool used_sectors(struct core *c, uint64_t logical, uint64_t len, uint64_t *used,
			 uint64_t *n)
{
	struct bgroup *bg;
	bool in = false;

	glock_lock(&c->alloc.lock, GLOCK_READ);
	bg = alloc_find_bg_locked(&c->alloc, logical);
	if (bg && logical + len <= bg->start + bg->len) {
		uint64_t s = (logical - bg->start) / SECT;

		*n = (len + SECT - 1) / SECT;
		*used = range_count(bg->used, s, *n);
		in = true;
	}
	glock_unlock(&c->alloc.lock, GLOCK_READ);
	return in;
}

bool alloc_any_used(struct core *c, uint64_t logical, uint64_t len)
{
	uint64_t used, n;

	return !used_sectors(c, logical, len, &used, &n) || used != 0;
}

bool alloc_bg_is_new(struct core *c, uint64_t logical)
{
	struct bgroup *bg;
	bool ret;

	glock_lock(&c->alloc.lock, GLOCK_READ);
	bg = alloc_find_bg_locked(&c->alloc, logical);
	ret = !bg || bg->fst_info_missing;
	glock_unlock(&c->alloc.lock, GLOCK_READ);
	return ret;
}

bool alloc_is_used(struct core *c, uint64_t logical, uint64_t len)
{
	uint64_t used, n;

	return used_sectors(c, logical, len, &used, &n) && used == n;
}

/* ---- blocks allocated in the running transaction ----------------------- */

void alloc_note_new(struct core *c, uint64_t bytenr)
{
	glock_lock(&c->alloc.lock, GLOCK_WRITE);
	/* no memory: the block is only not noted, which costs reuse-at-once
	 * (it stays pinned until the commit) */
	(void)htable_set_add(&c->alloc.new_blocks, bytenr);
	glock_unlock(&c->alloc.lock, GLOCK_WRITE);
}

bool alloc_take_new(struct core *c, uint64_t bytenr)
{
	bool found;

	glock_lock(&c->alloc.lock, GLOCK_WRITE);
	found = htable_set_take(&c->alloc.new_blocks, bytenr);
	glock_unlock(&c->alloc.lock, GLOCK_WRITE);
	return found;
}

void alloc_clear_new(struct core *c)
{
	glock_lock(&c->alloc.lock, GLOCK_WRITE);
	htable_set_clear(&c->alloc.new_blocks);
	glock_unlock(&c->alloc.lock, GLOCK_WRITE);
}

static void space(struct core *c, uint64_t type, bool open, uint64_t *total, uint64_t *free_b)
{
	uint64_t t = 0, f = 0;

	glock_lock(&c->alloc.lock, GLOCK_WRITE);
	for (int k = 0; k < c->alloc.n; k++) {
		struct bgroup *bg = c->alloc.bg[k];
		if ((bg->flags & BG_TYPE_MASK) != type)
			continue;
		t += bg->len;
		if (!open || !bg->readonly)	/* held: free once discarded */
			f += bg->len - bg->used_bytes + bg->held_bytes;
	}
	glock_unlock(&c->alloc.lock, GLOCK_WRITE);
	*total = t;
	*free_b = f;
}

void alloc_space(struct core *c, uint64_t type, uint64_t *total, uint64_t *free_b)
{
	space(c, type, false, total, free_b);
}

void alloc_space_open(struct core *c, uint64_t type, uint64_t *total, uint64_t *free_b)
{
	space(c, type, true, total, free_b);
}

uint64_t alloc_bytes_used(struct core *c)
{
	uint64_t u = 0;

	glock_lock(&c->alloc.lock, GLOCK_WRITE);
	for (int k = 0; k < c->alloc.n; k++)
		u += c->alloc.bg[k]->used_bytes - c->alloc.bg[k]->pinned_bytes -
		     c->alloc.bg[k]->cpinned_bytes - c->alloc.bg[k]->held_bytes;
	glock_unlock(&c->alloc.lock, GLOCK_WRITE);
	return u;
}

int alloc_for_each_bg(struct core *c, int (*fn)(const struct bgroup *bg, void *arg), void *arg)
{
	int ret = 0;

	glock_lock(&c->alloc.lock, GLOCK_WRITE);
	for (int k = 0; k < c->alloc.n && !ret; k++)
		ret = fn(c->alloc.bg[k], arg);
	glock_unlock(&c->alloc.lock, GLOCK_WRITE);
	return ret;
}
