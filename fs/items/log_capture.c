// SPDX-License-Identifier: MIT
/*
 * log_capture.c — building an fsync record: an inode's items as the
 * running transaction has them (log.c writes the record; log_int.h).
 *
 * A record holds the inode's whole state, so capture reading the inode's
 * items afresh at every fsync costs what the transaction changed so far
 * plus a search per committed leaf: after fio's random writes into a
 * 512 MiB file, ~1,300 leaf searches and ~14,500 items per fsync, 1-2 ms
 * of CPU, more than its flush.  So the last capture of a few inodes
 * (LOG_ICACHE_N, the least recently fsync'd goes) is kept for the
 * running transaction as entries — items of this transaction and runs
 * of committed ones, ascending by file offset, no run wider than one
 * leaf, in chunks (log_cseq.c) — and file.c notes, under the inode's lock, the offset of every
 * extent item it writes or deletes (log_note_extent).  The next fsync
 * reads again only each noted offset and the entries whose ranges hold
 * it (update_extents): an entry no note falls in describes items that
 * did not change.  When the last capture went into the log, the record
 * is a delta of it (log.c): the entries at the noted offsets alone;
 * otherwise a whole record of all entries (the runs joined where one
 * ends where the next starts).
 * Each item's checksum items are read once and kept with it (checksums
 * of data written in this transaction do not change: a sector is written
 * once, and a write in place changes the item reading it).  A commit, a
 * new transaction, a failed capture or too many notes (LOG_ICACHE_NOTES)
 * forget the kept capture (one grown past LOG_ICACHE_BYTES asks for a
 * commit, log.c); the inode's generation must match too.
 * GLASSFS_LOG_VERIFY checks the kept entries whole against a fresh
 * capture for a delta too (check_reuse): a change nobody noted would
 * leave a stale item beside the delta's.
 *
 */
#include "fs/items/log_int.h"


/* Room for need bytes in the buffer *p of capacity *cap: doubled (from
 * first when empty) until need fits.  0 or -ENOMEM (*p unchanged). */
int log_bytes_reserve(char **p, size_t *cap, size_t need, size_t first)
{
	if (need <= *cap)
		return 0;
	size_t nc = *cap ? *cap * 2 : first;
	while (nc < need)
		nc *= 2;
	char *np = realloc(*p, nc);
	if (!np)
		return -ENOMEM;
	*p = np;
	*cap = nc;
	return 0;
}

void *log_buf_grow(struct buf *b, size_t n)
{
	if (b->err)
		return NULL;
	if (b->len + n > LOG_MAX_RECORD && !b->unbounded) {
		b->err = -E2BIG;
		return NULL;
	}
	if (log_bytes_reserve(&b->p, &b->cap, b->len + n, 4096)) {
		b->err = -ENOMEM;
		return NULL;
	}
	void *r = b->p + b->len;
	b->len += n;
	return r;
}

static void put_item(struct buf *b, uint32_t *nitems, int kind, const struct key *k,
		     const void *data, uint32_t size)
{
	struct log_item_hdr *h = log_buf_grow(b, sizeof(*h) + size);

	if (!h)
		return;
	h->kind = (uint8_t)kind;
	h->key = (struct disk_key){ k->objectid, k->type, k->offset };
	h->size = size;
	memcpy(h + 1, data, size);
	(*nitems)++;
}

struct ext_ref {
	uint64_t logical, len;
	uint64_t extent;	/* the data extent's start (disk_logical) */
};

/* Add [start, end) of COUNT committed items to the runs: the last run
 * grows when GROW (it ends where this starts, nothing logged since),
 * else a new run is appended.  -ENOMEM when the array cannot grow. */
static int keep_run_add(struct log_keep_run **keep, size_t *nkeep, size_t *cap, bool grow,
			uint64_t start, uint64_t end, uint64_t count)
{
	if (grow) {
		(*keep)[*nkeep - 1].end = end;
		(*keep)[*nkeep - 1].count += count;
		return 0;
	}
	if (*nkeep == *cap) {
		size_t nc = *cap ? *cap * 2 : 16;
		struct log_keep_run *nk = realloc(*keep, nc * sizeof(*nk));

		if (!nk)
			return -ENOMEM;
		*keep = nk;
		*cap = nc;
	}
	(*keep)[(*nkeep)++] = (struct log_keep_run){ start, end, count };
	return 0;
}

/*
 * The items of ino before its extents (inode item, names, xattrs), in
 * full; its names' parents to parents.  Back references only for a new
 * inode (names: replay gives it its names from them): an inode the log
 * covers otherwise has the names of the last commit (a link, unlink or
 * rename makes its fsync commit: log.h), which replay keeps.  A new
 * inode's names are plain INODE_REFs (its first name always is, and a
 * second one makes its fsync commit), so extended refs never go in: a
 * file with thousands of names logs what a file with one does, where its
 * full INODE_REF alone (up to the largest item, 64 KiB at 64 KiB nodes)
 * once passed LOG_RECORD_COMMIT and made every fsync of it commit.
 */
static int capture_head(struct fsctx *fs, uint64_t ino, bool names, struct buf *b,
			uint32_t *nitems, uint64_t *parents, int *nparents, int maxparents,
			uint64_t *walked)
{
	struct path p;
	struct key k = mkkey(ino, 0, 0), ik;
	int ret;

	btree_path_init(&p);
	ret = fsctx_search_ge(fs, &k, &p);
	while (ret == 0) {
		uint32_t size;

		btree_item_key(&p, p.slots[0], &ik);
		if (ik.objectid != ino || ik.type >= KEY_EXTENT_DATA)
			break;
		(*walked)++;
		if (ik.type == KEY_INODE_EXTREF || (!names && ik.type == KEY_INODE_REF)) {
			ret = btree_next(&p);
			continue;
		}
		const void *ptr = btree_item_ptr(&p, p.slots[0], &size);
		put_item(b, nitems, LOG_FS_ITEM, &ik, ptr, size);
		if (ik.type == KEY_INODE_REF) {
			if (*nparents < maxparents)
				parents[(*nparents)++] = ik.offset;
			else
				b->err = -E2BIG;
		}
		if (b->err)
			break;
		ret = btree_next(&p);
	}
	btree_path_release(&p);
	if (ret < 0)
		return ret;
	return b->err;
}

static int cvec_push(struct cvec *v, const struct centry *x)
{
	if (log_bytes_reserve((char **)&v->e, &v->cap, (v->n + 1) * sizeof(*v->e),
			      64 * sizeof(*v->e)))
		return -ENOMEM;
	v->e[v->n++] = *x;
	return 0;
}

/*
 * Entries for the EXTENT_DATA items of ino with offsets in [lo, hi) (hi
 * UINT64_MAX: to its last), appended to v.  With `leaves`, a leaf the
 * last commit wrote (older than this transaction: a change copies it
 * first) whose items from here on are all this file's extents holds
 * exactly the committed items with offsets from here to its last one:
 * one run for all of them, without reading each (a fragmented file's
 * fsync walked every item: 60,000 per fsync after fio's random writes).
 * Committed items read one by one join the run before them in the same
 * leaf when it ends where they start; an item of this transaction is
 * kept whole.
 */
static int scan_extents(struct fsctx *fs, uint64_t ino, uint64_t transid, uint64_t lo,
			uint64_t hi, bool leaves, struct cvec *v, uint64_t *walked)
{
	struct path p;
	struct key k = mkkey(ino, KEY_EXTENT_DATA, lo), ik;
	int ret;

	btree_path_init(&p);
	ret = fsctx_search_ge(fs, &k, &p);
	while (ret == 0) {
		uint32_t size;
		void *ptr;

		btree_item_key(&p, p.slots[0], &ik);
		if (ik.objectid != ino || ik.type != KEY_EXTENT_DATA ||
		    (hi != UINT64_MAX && ik.offset >= hi))
			break;
		if (ik.offset == UINT64_MAX) {	/* no room for a key range: commit */
			ret = -E2BIG;
			break;
		}
		uint32_t nr = btree_nritems(&p);
		struct key lk;
		if (leaves && btree_leaf_generation(&p) < transid &&
		    nr > (uint32_t)p.slots[0] + 1 &&
		    (btree_item_key(&p, (int)nr - 1, &lk), lk.objectid == ino) &&
		    lk.type == KEY_EXTENT_DATA && lk.offset != UINT64_MAX) {
			const struct file_extent *fe = btree_item_ptr(&p, (int)nr - 1, &size);
			uint64_t end = lk.offset + 1;
			if (size >= sizeof(*fe) && fe->type != FE_INLINE && fe->num_bytes)
				end = lk.offset + fe->num_bytes;
			struct centry x = { .start = ik.offset, .end = end,
					    .count = nr - (uint32_t)p.slots[0], .leaf = p.nodes[0],
					    .ext_old = -1, .jf = true, .jb = end > lk.offset + 1 };
			if ((ret = cvec_push(v, &x)))
				break;
			k = mkkey(ino, KEY_EXTENT_DATA, lk.offset + 1);
			btree_path_release(&p);
			btree_path_init(&p);
			ret = fsctx_search_ge(fs, &k, &p);
			continue;
		}
		(*walked)++;
		ptr = btree_item_ptr(&p, p.slots[0], &size);
		if (size >= FE_INLINE_HDR &&
		    ((const struct file_extent *)ptr)->generation != transid) {
			/* as committed: a place in a run is enough */
			const struct file_extent *fe = ptr;
			uint64_t end = ik.offset + 1;	/* inline, or empty: its key alone */
			if (size >= sizeof(*fe) && fe->type != FE_INLINE && fe->num_bytes)
				end = ik.offset + fe->num_bytes;
			/* a run ends at an inline or empty item: its end is not
			 * where its bytes end */
			bool real = end > ik.offset + 1;
			struct centry *last = v->n ? &v->e[v->n - 1] : NULL;
			if (last && last->count && last->leaf == p.nodes[0] && last->jb && real &&
			    last->end == ik.offset) {
				last->end = end;
				last->count++;
			} else {
				struct centry x = { .start = ik.offset, .end = end, .count = 1,
						    .leaf = p.nodes[0], .ext_old = -1, .jf = real,
						    .jb = real };
				if ((ret = cvec_push(v, &x)))
					break;
			}
		} else {
			struct centry x = { .start = ik.offset, .end = ik.offset + 1, .size = size,
					    .ext_old = -1 };
			x.item = malloc(size ? size : 1);
			if (!x.item) {
				ret = -ENOMEM;
				break;
			}
			memcpy(x.item, ptr, size);
			if ((ret = cvec_push(v, &x))) {
				free(x.item);
				break;
			}
		}
		ret = btree_next(&p);
	}
	btree_path_release(&p);
	return ret < 0 ? ret : 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * The entries of the last capture brought up to date: each noted offset
 * (an item written or deleted there since) and the entries whose key
 * ranges hold it are read again, from the lowest start to the highest
 * end among them; the entries elsewhere stand (nothing with a key in
 * them changed).  Takes v's entries.
 */
static int update_extents_copy(struct fsctx *fs, uint64_t ino, uint64_t transid,
			       struct cseq *v, uint64_t *notes, size_t nnotes, uint64_t *walked)
{
	struct cvec nv = { 0 };
	struct cpos i = { 0, 0 };
	struct centry *y;	/* the kept entry at i */
	int ret = 0;

	qsort(notes, nnotes, sizeof(*notes), cmp_u64);
	for (size_t j = 0; j < nnotes && !ret; j++) {
		uint64_t lo = notes[j], hi = lo + 1;
		if (lo == UINT64_MAX) {
			ret = -E2BIG;
			break;
		}
		/* what the last interval's reading made past its end */
		while (nv.n && nv.e[nv.n - 1].end > lo) {
			struct centry *x = &nv.e[--nv.n];
			if (x->start < lo)
				lo = x->start;
			log_centries_free(x, 1);
		}
		for (; (y = log_cseq_at(v, i)) && y->end <= lo; log_cseq_next(v, &i)) {
			if ((ret = cvec_push(&nv, y)))
				break;
			*y = (struct centry){ 0 };
		}
		if (ret)
			break;
		for (; (y = log_cseq_at(v, i)) && y->start < hi; log_cseq_next(v, &i)) {
			if (y->start < lo)
				lo = y->start;
			if (y->end > hi)
				hi = y->end;
			log_centries_free(y, 1);
			*y = (struct centry){ 0 };
		}
		while (j + 1 < nnotes && notes[j + 1] < hi)
			j++;
		ret = scan_extents(fs, ino, transid, lo, hi, false, &nv, walked);
	}
	for (; !ret && (y = log_cseq_at(v, i)); log_cseq_next(v, &i)) {
		if ((ret = cvec_push(&nv, y)))
			break;
		*y = (struct centry){ 0 };
	}
	log_cseq_free(v);
	if (ret) {
		log_centries_free(nv.e, nv.n);
		free(nv.e);
		return ret;
	}
	return log_cseq_from_vec(v, &nv);
}

/*
 * update_extents_copy's result, in place: the entries each noted offset
 * falls in (found by binary search) are replaced by a reading of their
 * key range, from the last range back, so the entries before a range
 * keep their keys (each range's entries are found again by key).  A
 * fsync of one 4 KiB write costs a search and a change of one chunk of
 * the sequence (log_cseq.c), not a move of every entry after it (a
 * transaction of thousands of fsyncs keeps tens of thousands of them).
 * A reading that ends past its range (not expected: a committed item
 * read there was in an entry of the range) goes the copying way.  Sorts
 * notes.
 */
static int update_extents(struct fsctx *fs, uint64_t ino, uint64_t transid, struct cseq *v,
			  uint64_t *notes, size_t nnotes, uint64_t *walked)
{
	struct range { uint64_t lo, hi; } *r = malloc(nnotes * sizeof(*r));
	size_t nr = 0;
	int ret = 0;

	if (!r)
		return -ENOMEM;
	qsort(notes, nnotes, sizeof(*notes), cmp_u64);
	for (size_t j = 0; j < nnotes; j++) {
		uint64_t lo = notes[j], hi = lo + 1;
		if (lo == UINT64_MAX) {
			free(r);
			return -E2BIG;
		}
		struct cpos p = log_cseq_find(v, lo);
		struct centry *x;
		for (; (x = log_cseq_at(v, p)) && x->start < hi; log_cseq_next(v, &p)) {
			if (x->start < lo)
				lo = x->start;
			if (x->end > hi)
				hi = x->end;
		}
		/* notes ascend: a range that shares an entry with the one
		 * before starts below that one's end */
		if (nr && lo < r[nr - 1].hi) {
			if (lo < r[nr - 1].lo)
				r[nr - 1].lo = lo;
			if (hi > r[nr - 1].hi)
				r[nr - 1].hi = hi;
		} else {
			r[nr++] = (struct range){ lo, hi };
		}
	}
	for (size_t k = nr; k-- > 0 && !ret;) {
		struct cvec nv = { 0 };
		/* the range's entries: from the first ending past lo, while
		 * they start below hi (no entry straddles either end) */
		struct cpos p0 = log_cseq_find(v, r[k].lo), p = p0;
		size_t count = 0;
		struct centry *x;
		for (; (x = log_cseq_at(v, p)) && x->start < r[k].hi; log_cseq_next(v, &p))
			count++;
		ret = scan_extents(fs, ino, transid, r[k].lo, r[k].hi, false, &nv, walked);
		if (!ret && nv.n && nv.e[nv.n - 1].end > r[k].hi)
			ret = 1;	/* past its range: the copying way */
		if (!ret)
			ret = log_cseq_replace(v, p0, count, nv.e, nv.n);
		if (ret)
			log_centries_free(nv.e, nv.n);
		free(nv.e);
	}
	free(r);
	if (ret == 1) {
		/* ranges from the last one back stand replaced: reading the
		 * notes again from the start is still right (an entry read
		 * again is read as it is now) */
		return update_extents_copy(fs, ino, transid, v, notes, nnotes, walked);
	}
	return ret;
}

static bool inplace_in(struct log_state *ls, uint64_t transid, uint64_t from, uint64_t to)
{
	bool inplace;

	glock_write(&ls->lock);
	log_sync_transid(ls, transid);
	inplace = ls->inplace_oom;
	for (uint64_t m = from >> LOG_INPLACE_SHIFT; !inplace && m <= (to - 1) >> LOG_INPLACE_SHIFT;
	     m++)
		inplace = htable_set_has(&ls->inplace, m);
	glock_write_unlock(&ls->lock);
	return inplace;
}

static int capture_csums(struct core *c, const struct ext_ref *e, struct buf *b,
			 uint32_t *nitems);

/*
 * The record's part for ino's extents, from the entries: the items of
 * this transaction in full, the runs (joined where one ends where the
 * next starts) in one LOG_EXT_RUNS item, then the checksums of the data
 * those items read, each entry's read once and kept with it.
 * Checksums are logged for the data written since the last commit only:
 * not for the committed pieces a write leaves on either side of it (the
 * extent is in the last commit and nothing went in place there since).
 * only (a delta): the items at these nonly offsets alone (nonly may be
 * 0), no runs.
 */
static int emit_extents(struct core *c, struct log_state *ls, uint64_t ino, uint64_t transid,
			struct cseq *v, const uint64_t *only, size_t nonly, struct buf *b,
			uint32_t *nitems, bool *parity)
{
	struct log_keep_run *keep = NULL;
	size_t nkeep = 0, keepcap = 0, nix = 0, most = only ? nonly : v->n;
	struct centry **ix = NULL;
	struct ext_ref *exts = NULL;
	bool extend = false;	/* the last run may grow: nothing logged since it */
	struct cpos at = { 0, 0 };
	int ret = 0;

	/* a delta's items are its noted offsets' alone: room for those, not
	 * for the whole capture at every fsync */
	if (most) {
		ix = malloc(most * sizeof(*ix));
		exts = malloc(most * sizeof(*exts));
		if (!ix || !exts) {
			free(ix);
			free(exts);
			return -ENOMEM;
		}
	}
	for (size_t s = 0; s < most && !ret && !b->err; s++) {
		struct centry *x;
		if (only) {	/* a delta: the items at the noted offsets alone */
			x = log_cseq_at(v, log_cseq_find(v, only[s]));
			if (!x || x->count || x->start != only[s])
				continue;
		} else {
			x = log_cseq_at(v, at);
			log_cseq_next(v, &at);
		}
		if (x->count) {
			ret = keep_run_add(&keep, &nkeep, &keepcap,
					   extend && x->jf && keep[nkeep - 1].end == x->start,
					   x->start, x->end, x->count);
			extend = x->jb;
			continue;
		}
		extend = false;
		struct key ik = mkkey(ino, KEY_EXTENT_DATA, x->start);
		put_item(b, nitems, LOG_FS_ITEM, &ik, x->item, x->size);
		const struct file_extent *fe = x->item;
		if (x->size < sizeof(*fe) || fe->type == FE_INLINE || fe->generation != transid ||
		    !fe->disk_logical)
			continue;
		/* in a chunk created since the last commit: replay could not
		 * claim it, so commit instead */
		if (alloc_bg_is_new(c, fe->disk_logical)) {
			b->err = -E2BIG;
			break;
		}
		/* the sectors the item reads, not its whole disk extent: a
		 * piece of a 64 MiB extent filled in 1 MiB at a time logged
		 * 64 KiB of checksums and never fit a record */
		uint64_t rs = (fe->disk_logical + fe->offset) & ~(uint64_t)(CORE_SECTORSIZE - 1);
		uint64_t re = (fe->disk_logical + fe->offset + fe->num_bytes + CORE_SECTORSIZE - 1) &
			      ~(uint64_t)(CORE_SECTORSIZE - 1);
		bool dup = false;
		for (size_t k = 0; k < nix && !dup; k++)
			dup = exts[k].logical == rs && exts[k].len == re - rs;
		if (!dup) {
			exts[nix] = (struct ext_ref){ rs, re - rs, fe->disk_logical };
			ix[nix++] = x;
			*parity |= chunk_map_is_parity(c, rs);
		}
	}
	if (!ret && nkeep && !b->err) {
		struct key k = mkkey(ino, KEY_EXTENT_DATA, 0);
		if (nkeep * sizeof(*keep) > LOG_MAX_RECORD)
			b->err = -E2BIG;
		else
			put_item(b, nitems, LOG_EXT_RUNS, &k, keep, (uint32_t)(nkeep * sizeof(*keep)));
	}
	for (size_t k = 0; k < nix && !ret && !b->err; k++) {
		struct centry *x = ix[k];
		if (x->ext_old < 0) {
			struct extent_item ei;
			uint64_t len;
			x->ext_old = !extent_lookup(c, exts[k].extent, true, &ei, &len) &&
				     ei.generation < transid;
		}
		if (x->ext_old && exts[k].len && !inplace_in(ls, transid, exts[k].logical,
							     exts[k].logical + exts[k].len))
			continue;	/* replay keeps the committed checksums */
		if (!x->csums) {
			struct buf cb = { 0 };
			uint32_t cn = 0;
			ret = capture_csums(c, &exts[k], &cb, &cn);
			if (ret) {
				free(cb.p);
				break;
			}
			x->csums = cb.p;
			x->csum_len = (uint32_t)cb.len;
			x->csum_items = cn;
			log_cseq_account_csums(v, x);
		}
		void *to = log_buf_grow(b, x->csum_len);
		if (to) {
			memcpy(to, x->csums, x->csum_len);
			*nitems += x->csum_items;
		}
	}
	free(keep);
	free(exts);
	free(ix);
	return ret ? ret : b->err;
}

/*
 * The record's items for ino: its head, then its extents from the
 * inode's last capture in this transaction when there is one (only what
 * was noted since is read), else from a reading of them all; the
 * capture is kept for the next fsync.  Caller holds the inode's lock
 * (shared: no writer) and ls->cap_lock.
 */
static int check_reuse(struct fsctx *fs, struct log_state *ls, uint64_t ino, uint64_t transid,
		       const struct buf *b, size_t from, uint32_t nitems);

/*
 * Can the record be a delta of the inode's record before (sorted notes
 * deduplicated in place, *nd of them)?  Only when every noted offset is
 * now an item of this transaction (logged in full) or no item's key: a
 * noted offset inside a run of committed items would need that item's
 * bytes, which the capture does not keep.
 */
static bool delta_ok(const struct cseq *v, uint64_t *notes, size_t nnotes, size_t *nd)
{
	size_t n = 0;

	for (size_t j = 0; j < nnotes; j++)
		if (!n || notes[n - 1] != notes[j])
			notes[n++] = notes[j];
	*nd = n;
	for (size_t j = 0; j < n; j++) {
		const struct centry *x = log_cseq_at(v, log_cseq_find(v, notes[j]));
		if (x && x->count && x->start <= notes[j])
			return false;
	}
	return true;
}

int log_capture_inode(struct fsctx *fs, struct inode *ip, uint64_t transid, struct buf *b,
			 uint32_t *nitems, uint64_t *parents, int *nparents, int maxparents,
			 uint64_t *walked, bool *reused, bool *delta, bool *parity)
{
	struct core *c = fs->core;
	struct log_state *ls = c->log;
	uint64_t ino = ip->ino, gen = ip->item.generation, *notes = NULL;
	size_t nnotes = 0, nd = 0;
	struct capcache *ic = NULL, *victim = NULL;
	bool full, logged;
	int ret;

	*delta = false;
	ret = capture_head(fs, ino, gen == transid, b, nitems, parents, nparents, maxparents,
			   walked);
	if (ret)
		return ret;
	glock_write(&ls->lock);
	log_sync_transid(ls, transid);
	for (int i = 0; i < LOG_ICACHE_N && !ic; i++) {
		struct capcache *x = &ls->ic[i];
		if (x->ino == ino)
			ic = x;
		else if (!victim || !x->ino || (victim->ino && x->used < victim->used))
			victim = x;
	}
	full = !ic || ic->gen != gen || ic->transid != transid;
	if (!ic) {
		ic = victim;
		log_capcache_free(ic);
		__atomic_store_n(&ic->ino, ino, __ATOMIC_RELEASE);
	}
	if (full)
		log_cseq_free(&ic->e);
	/* this capture is not in the log until log_fsync queues its record */
	logged = !full && ic->logged;
	ic->logged = false;
	ic->gen = gen;
	ic->transid = transid;
	notes = ic->notes;
	nnotes = ic->nnotes;
	ic->notes = NULL;
	ic->nnotes = ic->notecap = 0;
	ic->used = ++ls->ic_clock;
	glock_write_unlock(&ls->lock);

	/* no note can come while we read: writers hold the inode's lock */
	struct cseq v = ic->e;
	if (full) {
		struct cvec fv = { 0 };
		ret = scan_extents(fs, ino, transid, 0, UINT64_MAX, true, &fv, walked);
		if (!ret)
			ret = log_cseq_from_vec(&v, &fv);
		log_centries_free(fv.e, fv.n);	/* left by a failed scan */
		free(fv.e);
	} else if (nnotes)
		ret = update_extents(fs, ino, transid, &v, notes, nnotes, walked);
	*reused = !full;
	size_t from = b->len;
	uint32_t n0 = *nitems;
	/* a delta: the items at the offsets noted since the inode's last
	 * record, which the log holds (every extent change notes its offset,
	 * so the items elsewhere are as that record left them) */
	uint64_t dfrom = __atomic_load_n(&ls->delta_from, __ATOMIC_ACQUIRE);
	if (!ret && logged && dfrom && transid >= dfrom && delta_ok(&v, notes, nnotes, &nd)) {
		struct key k = mkkey(ino, KEY_EXTENT_DATA, 0);
		put_item(b, nitems, LOG_EXT_DELTA, &k, nd ? (const void *)notes : (const void *)&k,
			 (uint32_t)(nd * sizeof(*notes)));
		ret = b->err;
		if (!ret)
			ret = emit_extents(c, ls, ino, transid, &v, nd ? notes : &k.offset, nd, b,
					   nitems, parity);
		*delta = true;
	} else if (!ret) {
		ret = emit_extents(c, ls, ino, transid, &v, NULL, 0, b, nitems, parity);
	}
	free(notes);
	if (!ret && !full && ls->verify && !b->err) {
		if (*delta) {
			/* the kept entries, written out whole, against a fresh
			 * capture: a change nobody noted shows there */
			struct buf whole = { .unbounded = true };
			uint32_t wn = 0;
			bool wp = false;
			ret = emit_extents(c, ls, ino, transid, &v, NULL, 0, &whole, &wn, &wp);
			if (!ret)
				ret = check_reuse(fs, ls, ino, transid, &whole, 0, wn);
			free(whole.p);
		} else {
			ret = check_reuse(fs, ls, ino, transid, b, from, *nitems - n0);
		}
	}
	glock_write(&ls->lock);
	ic->e = v;
	if (ret)
		log_capcache_free(ic);	/* a commit follows, or the next reads all */
	glock_write_unlock(&ls->lock);
	return ret;
}

/*
 * GLASSFS_LOG_VERIFY (the tests set it): a capture that started from the
 * kept one must log exactly what a capture reading every item logs — the
 * part for ino's extents, [from, b->len) of b, from nitems items.  A
 * difference is an extent change file.c did not note (log_note_extent),
 * which would replay a stale file: abort, so the test that made it fails
 * where it happened.
 */
static int check_reuse(struct fsctx *fs, struct log_state *ls, uint64_t ino, uint64_t transid,
		       const struct buf *b, size_t from, uint32_t nitems)
{
	struct cvec fv = { 0 };
	struct cseq v = { 0 };
	struct buf full = { .unbounded = true };
	uint32_t n = 0;
	uint64_t walked = 0;
	bool parity = false;
	int ret;

	ret = scan_extents(fs, ino, transid, 0, UINT64_MAX, true, &fv, &walked);
	if (!ret)
		ret = log_cseq_from_vec(&v, &fv);
	log_centries_free(fv.e, fv.n);
	free(fv.e);
	if (!ret)
		ret = emit_extents(fs->core, ls, ino, transid, &v, NULL, 0, &full, &n, &parity);
	if (!ret && (n != nitems || full.len != b->len - from ||
		     memcmp(full.p, b->p + from, full.len))) {
		fprintf(stderr, "glassfs: fsync log: the reused capture of inode %llu logs %u items "
			"in %zu bytes, a full capture %u in %zu%s\n", (unsigned long long)ino,
			nitems, b->len - from, n, full.len,
			n == nitems && full.len == b->len - from ? " (other bytes)" : "");
		abort();
	}
	log_cseq_free(&v);
	free(full.p);
	return ret;
}

/*
 * The csum items of the data range [logical, +len), and a LOG_CSUM_RESET
 * before them for the range they start in: from the start of an item
 * that begins before logical and covers it (so replay, which deletes the
 * items starting in the reset range, deletes exactly the items logged).
 */
static int capture_csums(struct core *c, const struct ext_ref *e, struct buf *b,
			 uint32_t *nitems)
{
	struct root *r = core_tree(c, CT_CSUM);
	struct key k = { CSUM_OBJECTID, KEY_EXTENT_CSUM, e->logical }, ik;
	uint64_t from = e->logical, len;
	struct path p;
	int ret;

	btree_path_init(&p);
	ret = btree_search(NULL, r, &k, &p, 0, 0);
	if (ret == 1 && btree_prev(&p) == 0) {
		uint32_t size;
		btree_item_key(&p, p.slots[0], &ik);
		btree_item_ptr(&p, p.slots[0], &size);
		if (ik.objectid == CSUM_OBJECTID && ik.type == KEY_EXTENT_CSUM &&
		    ik.offset + (uint64_t)(size / CSUM_SIZE) * CORE_SECTORSIZE > e->logical)
			from = ik.offset;
	}
	btree_path_release(&p);
	if (ret < 0)
		return ret;
	k.offset = from;
	len = e->logical + e->len - from;
	put_item(b, nitems, LOG_CSUM_RESET, &k, &len, sizeof(len));
	btree_path_init(&p);
	ret = btree_search_ge(r, &k, &p);
	while (ret == 0) {
		uint32_t size;
		void *ptr;

		btree_item_key(&p, p.slots[0], &ik);
		if (ik.objectid != CSUM_OBJECTID || ik.type != KEY_EXTENT_CSUM ||
		    ik.offset >= e->logical + e->len)
			break;
		ptr = btree_item_ptr(&p, p.slots[0], &size);
		put_item(b, nitems, LOG_CSUM_ITEM, &ik, ptr, size);
		if (b->err)
			break;
		ret = btree_next(&p);
	}
	btree_path_release(&p);
	if (ret < 0)
		return ret;
	return b->err;
}
