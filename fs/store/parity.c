// SPDX-License-Identifier: MIT
/*
 * parity.c — raid5 and raid6 chunks (see parity.h; the layout is
 * format.h's profile table).
 *
 * ## No write hole: a live stripe is never updated in place
 *
 * btrfs and md update a stripe in place: a write of part of a row reads
 * the rest, computes new parity and writes the changed data and the
 * parity.  A crash between those writes leaves parity that matches
 * neither the old row nor the new one, and a later device loss rebuilds
 * garbage into sectors the write never touched (the write hole).
 *
 * glassfs never writes into a row that holds live data:
 *
 * - The allocator (alloc.c) hands out whole rows of a raid5/6 block
 *   group: a request is rounded up to the row's data width (k sectors)
 *   and starts on a row boundary, so one extent owns each of its rows;
 *   the padding after its last sector stays unowned.  A row is handed
 *   out again only when every sector of it is free, so a partly freed
 *   row is never reused while part of it lives.  (glassfs frees data
 *   only as whole extents: a punched hole, a partial overwrite or a
 *   truncate keep the extent referenced by the pieces of file left, as
 *   btrfs's bookends, until no file-extent item points into it —
 *   extent.c frees [disk_logical, +disk_len) when its refs reach 0.)
 * - Every write of file data is a new extent (copy on write; file.c
 *   writes into a preallocated extent in place only on other profiles),
 *   so parity_write always writes whole fresh rows, its parity computed
 *   from the bytes being written (the padding is zeros): no read, no
 *   read-modify-write.  A crash before the commit that references the
 *   extent leaves rows nobody references; after it, rows whose data and
 *   parity were all flushed before that commit's superblock.
 * - Metadata the same way: a node block (and an fsync log segment) is
 *   a run of the allocator like an extent, whole rows of its own,
 *   written once by the commit that made it (meta_write_copies), never
 *   again while a tree references it; a run starts on any row but never
 *   crosses a 64 KiB element (alloc.c).  A node has one checksum, not
 *   one a sector, so parity_read_verified finds a column that reads but
 *   holds wrong bytes by rebuilding each set of stripes parity covers
 *   until the node verifies.
 * - Scrub repairs rewrite a sector with the bytes it must hold (a data
 *   sector rebuilt and verified against its checksum, a parity sector
 *   recomputed from verified data — never from a row holding a live
 *   sector the check did not verify: unverified_live): a crash leaves
 *   the old or the repaired bytes, each consistent with the row's live
 *   data.
 *
 * What this costs: space (up to k - 1 sectors of padding per extent) and
 * no fallocate reservation on raid5/6 (a write into a preallocated range
 * allocates new rows).  The same is done by ZFS RAID-Z (variable-width
 * stripes padded to whole rows) and bcachefs (erasure-coded buckets).
 *
 * ## Arithmetic
 *
 * Intel ISA-L: gf_gen_rs_matrix's rows k (all ones: P is the XOR) and
 * k + 1 (2^j: Q, md's raid6 syndrome) encode a row with ec_encode_data;
 * a row missing up to nparity columns is rebuilt by inverting the k x k
 * matrix of the columns left (gf_invert_matrix) and encoding with its
 * rows.  Rows are read and written in batches, each stripe's part of a
 * batch in one I/O (a stripe holds its rows contiguously).
 */
#include "fs/core/core_types.h"
#include "fs/base/crc32c.h"
#include "fs/base/probe.h"
#include "fs/store/alloc.h"
#include "fs/store/chunk.h"
#include "fs/store/dev.h"
#include "fs/store/parity.h"

#include <errno.h>
#include <isa-l/erasure_code.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define SECT CORE_SECTORSIZE
#define BATCH_ROWS 128u
#define MAXS CHUNK_MAX_STRIPES

/* The encode matrix and parity tables of one chunk's geometry. */
struct codec {
	int k, p, n;
	uint8_t enc[MAXS * MAXS];
	uint8_t tbl[32 * MAXS * 2];
};

static void codec_init(struct codec *cd, const struct chunk_geom *g)
{
	cd->k = g->ndata;
	cd->p = g->nparity;
	cd->n = g->num_stripes;
	gf_gen_rs_matrix(cd->enc, cd->n, cd->k);
	ec_init_tables(cd->k, cd->p, cd->enc + cd->k * cd->k, cd->tbl);
}

/* The stripe holding column j (0..k-1 data, k.. parity) of row r. */
static int stripe_of(const struct codec *cd, uint64_t r, int j)
{
	return (int)((r + (uint64_t)j) % (uint64_t)cd->n);
}

/* A batch of rows in memory: stripe d's sectors of rows [r0, r0 + nr). */
struct batch {
	uint8_t *col[MAXS];
	uint64_t r0, nr;
	unsigned bad;		/* stripes missing, failing to read, or stale */
	unsigned rerr;		/* stripes that failed to read */
	bool trust_stale;	/* batch_read: read a stale device's columns as they are */
};

/*
 * Columns for up to `rows` rows (at most BATCH_ROWS), kept per thread and
 * reused: a fresh 512 KiB buffer per call is an mmap, page faults and an
 * munmap each time (a quarter of a raid5 write's time).  One batch per
 * thread at a time: nothing here nests.
 */
static __thread uint8_t *tl_col[MAXS];
static __thread uint64_t tl_rows;
static pthread_key_t tl_key;
static pthread_once_t tl_once = PTHREAD_ONCE_INIT;

/* At thread exit (tl_key's destructor): the thread's buffers go. */
static void tl_release(void *arg)
{
	(void)arg;
	for (int d = 0; d < MAXS; d++) {
		free(tl_col[d]);
		tl_col[d] = NULL;
	}
	tl_rows = 0;
}

static void tl_key_init(void)
{
	(void)pthread_key_create(&tl_key, tl_release);
}

static int batch_alloc(struct batch *b, int n, uint64_t rows)
{
	memset(b, 0, sizeof(*b));
	if (rows > BATCH_ROWS)
		rows = BATCH_ROWS;
	if (rows > tl_rows) {
		pthread_once(&tl_once, tl_key_init);
		pthread_setspecific(tl_key, tl_col);	/* non-NULL: the destructor runs */
		for (int d = 0; d < MAXS; d++) {
			free(tl_col[d]);
			tl_col[d] = NULL;
		}
		tl_rows = 0;
		for (int d = 0; d < MAXS; d++) {
			tl_col[d] = aligned_alloc(4096, rows * SECT);
			if (!tl_col[d])
				return -ENOMEM;
		}
		tl_rows = rows;
	}
	for (int d = 0; d < n; d++)
		b->col[d] = tl_col[d];
	return 0;
}

static void batch_free(struct batch *b)
{
	(void)b;	/* the thread's buffers stay for its next batch */
}

/* Pointers to the columns of row i of the batch, by column index. */
static void row_cols(const struct codec *cd, const struct batch *b, uint64_t i, uint8_t **cols)
{
	for (int j = 0; j < cd->n; j++)
		cols[j] = b->col[stripe_of(cd, b->r0 + i, j)] + i * SECT;
}

/* Compute the parity columns of a row from its data columns into par. */
static void encode_row(const struct codec *cd, uint8_t **cols, uint8_t **par)
{
	ec_encode_data((int)SECT, cd->k, cd->p, (unsigned char *)cd->tbl, cols, par);
}

/*
 * Rebuild the columns in erased (bit j: column j) of a row from the
 * others.  -EIO when more than p are erased or the matrix is singular.
 */
static int decode_row(const struct codec *cd, uint8_t **cols, unsigned erased)
{
	int k = cd->k, src[MAXS], ns = 0, nerr = 0;
	uint8_t b[MAXS * MAXS], inv[MAXS * MAXS], dm[MAXS * MAXS], tbl[32 * MAXS * MAXS];
	uint8_t *in[MAXS], *out[MAXS], pbuf[2][SECT], *par[2] = { pbuf[0], pbuf[1] };

	if (__builtin_popcount(erased) > cd->p)
		return -EIO;
	for (int j = 0; j < cd->n && ns < k; j++)
		if (!(erased & (1u << j)))
			src[ns++] = j;
	if (ns < k)
		return -EIO;
	for (int i = 0; i < k; i++)
		memcpy(b + i * k, cd->enc + src[i] * k, (size_t)k);
	if (gf_invert_matrix(b, inv, k))
		return -EIO;
	for (int j = 0; j < k; j++)
		if (erased & (1u << j)) {
			memcpy(dm + nerr * k, inv + j * k, (size_t)k);
			out[nerr++] = cols[j];
		}
	if (nerr) {
		for (int i = 0; i < k; i++)
			in[i] = cols[src[i]];
		ec_init_tables(k, nerr, dm, tbl);
		ec_encode_data((int)SECT, k, nerr, tbl, in, out);
	}
	if (erased >> k) {	/* parity columns: recomputed from the data */
		encode_row(cd, cols, par);
		for (int q = 0; q < cd->p; q++)
			if (erased & (1u << (k + q)))
				memcpy(cols[k + q], par[q], SECT);
	}
	return 0;
}

/* Read rows [r0, r0 + nr) of every present stripe into b (b->trust_stale:
 * a stale device's columns count as read). */
static void batch_read(struct core *c, const struct chunk_geom *g, struct batch *b, uint64_t r0,
		       uint64_t nr)
{
	b->r0 = r0;
	b->nr = nr;
	b->bad = b->rerr = 0;
	for (int d = 0; d < g->num_stripes; d++) {
		struct dev *dv = g->stripes[d].dev;
		int ret = dv ? dev_read(dv, g->stripes[d].physical + r0 * SECT, b->col[d], nr * SECT) : -ENODEV;
		if (ret) {
			b->bad |= 1u << d;
			b->rerr |= dv ? 1u << d : 0;
			if (dv)
				core_log(c, "raid%d: read error on %s at %llu+%llu: %s; rebuilding from "
					 "parity", g->nparity == 2 ? 6 : 5, dv->path,
					 (unsigned long long)(g->stripes[d].physical + r0 * SECT),
					 (unsigned long long)(nr * SECT), strerror(-ret));
		}
	}
	/* a device whose superblock missed commits missed rows too: its
	 * columns are rebuilt rather than trusted while parity allows */
	unsigned stale = 0;
	for (int d = 0; d < g->num_stripes; d++)
		if (g->stripes[d].dev && g->stripes[d].dev->stale)
			stale |= 1u << d;
	if (!b->trust_stale && __builtin_popcount(b->bad | stale) <= g->nparity)
		b->bad |= stale;
}

/* Columns of row r living on the stripes in the mask. */
static unsigned cols_on(const struct codec *cd, uint64_t r, unsigned stripes)
{
	unsigned m = 0;

	for (int j = 0; j < cd->n; j++)
		if (stripes & (1u << stripe_of(cd, r, j)))
			m |= 1u << j;
	return m;
}

/* Copy the data columns of row r that fall in the chunk sectors [s0, +n)
 * to their place in buf (which starts at sector s0). */
static void row_copy_out(const struct codec *cd, uint8_t **cols, uint64_t r, uint64_t s0,
			 uint64_t n, uint8_t *buf)
{
	for (int j = 0; j < cd->k; j++) {
		uint64_t s = r * (uint64_t)cd->k + (uint64_t)j;
		if (s >= s0 && s < s0 + n)
			memcpy(buf + (s - s0) * SECT, cols[j], SECT);
	}
}

int parity_write(struct core *c, uint64_t logical, const void *buf, uint64_t len)
{
	struct chunk_geom g;

	if (chunk_map_geometry(c, logical, &g) || !g.nparity)
		return -EIO;
	return parity_write_geom(c, &g, logical - g.logical, buf, len);
}

int parity_write_geom(struct core *c, const struct chunk_geom *gp, uint64_t off, const void *buf,
		      uint64_t len)
{
	const struct chunk_geom g = *gp;
	uint64_t logical = g.logical + off;
	struct codec cd;
	struct batch b;
	uint64_t row, rows;
	int ret;

	if (!g.nparity || g.ndata < 2)
		return -EINVAL;
	row = (uint64_t)g.ndata * SECT;
	if (off % row || off + len > g.length) {
		core_log(c, "raid%d write at logical %llu+%llu is not whole rows of its chunk",
			 g.nparity == 2 ? 6 : 5, (unsigned long long)logical, (unsigned long long)len);
		return -EINVAL;
	}
	codec_init(&cd, &g);
	rows = (len + row - 1) / row;
	ret = batch_alloc(&b, g.num_stripes, rows);
	for (uint64_t done = 0; !ret && done < rows;) {
		uint64_t nr = rows - done < BATCH_ROWS ? rows - done : BATCH_ROWS;
		unsigned failed = 0;

		b.r0 = off / row + done;
		b.nr = nr;
		for (uint64_t i = 0; i < nr; i++) {
			uint8_t *cols[MAXS];
			uint64_t at = (done + i) * row;

			row_cols(&cd, &b, i, cols);
			for (int j = 0; j < cd.k; j++, at += SECT) {
				uint64_t have = at < len ? (len - at < SECT ? len - at : SECT) : 0;
				if (have)
					memcpy(cols[j], (const uint8_t *)buf + at, have);
				memset(cols[j] + have, 0, SECT - have);	/* the row's padding */
			}
			encode_row(&cd, cols, cols + cd.k);
		}
		for (int d = 0; d < g.num_stripes; d++) {
			struct dev *dv = g.stripes[d].dev;
			int r = dv ? dev_write(dv, g.stripes[d].physical + b.r0 * SECT, b.col[d], nr * SECT)
				   : -ENODEV;
			if (r) {
				failed |= 1u << d;
				if (dv)
					core_log(c, "raid%d: write error on %s at %llu: %s",
						 g.nparity == 2 ? 6 : 5, dv->path,
						 (unsigned long long)(g.stripes[d].physical + b.r0 * SECT),
						 strerror(-r));
				if (__builtin_popcount(failed) > g.nparity)
					ret = dv ? r : -EIO;
			}
		}
		if (failed && !ret)
			__atomic_fetch_add(&c->degraded, 1, __ATOMIC_RELAXED);
		if (PROBE_ON(STRIPE_WRITE))
			GLASSFS_STRIPE_WRITE(logical, b.r0, nr, g.num_stripes, (int)failed);
		done += nr;
	}
	batch_free(&b);
	return ret;
}

/*
 * Bring row i of b to verified data: rebuild the columns on bad stripes,
 * then any data column failing its checksum.  sec0 is the chunk sector
 * of the batch's first row's column 0; exp/have index sectors from s0,
 * n of them.  Returns the columns rebuilt (mask) or -EIO; *bad gets the
 * data columns that failed their checksum as read.
 */
static int settle_row(struct core *c, const struct codec *cd, struct batch *b, uint64_t i,
		      uint64_t s0, uint64_t n, const uint32_t *exp, const uint8_t *have,
		      unsigned *bad)
{
	uint8_t *cols[MAXS];
	uint64_t r = b->r0 + i;
	unsigned erased = cols_on(cd, r, b->bad), mism = 0;
	int rebuilt = 0;

	row_cols(cd, b, i, cols);
	if (erased) {
		if (decode_row(cd, cols, erased))
			return -EIO;
		rebuilt = (int)erased;
	}
	for (int j = 0; j < cd->k; j++) {
		uint64_t s = r * (uint64_t)cd->k + (uint64_t)j;
		if (s < s0 || s >= s0 + n || !have || !have[s - s0])
			continue;
		if (crc32c(0, cols[j], SECT) != exp[s - s0])
			mism |= 1u << j;
	}
	*bad = mism & ~erased;
	if (!mism)
		return rebuilt;
	__atomic_fetch_add(&c->csum_errors, __builtin_popcount(mism), __ATOMIC_RELAXED);
	/* erase the mismatches too; with parity to spare, also each other
	 * column in turn (a bad P the first try used: raid6 gets past it
	 * with Q) until the row verifies */
	for (int extra = -1; extra < cd->n; extra++) {
		unsigned e = erased | mism | (extra >= 0 ? 1u << extra : 0);
		bool ok = true;

		if ((extra >= 0 && ((erased | mism) & (1u << extra))) ||
		    __builtin_popcount(e) > cd->p)
			continue;
		if (decode_row(cd, cols, e))
			continue;
		for (int j = 0; j < cd->k && ok; j++) {
			uint64_t s = r * (uint64_t)cd->k + (uint64_t)j;
			if (s >= s0 && s < s0 + n && have && have[s - s0])
				ok = crc32c(0, cols[j], SECT) == exp[s - s0];
		}
		if (ok)
			return (int)e;
	}
	return -EIO;
}

/*
 * A reader's rows: the raid5/6 chunk's geometry and codec, the chunk
 * sectors [s0, s0 + n) it reads, the rows [r0, r1) they touch, and the
 * batch of them read last, rows [r, r + nr) in b.  Every reader walks
 * them as
 *
 *	while (!ret && span_next(c, &sp))
 *		for (uint64_t i = 0; i < sp.nr; i++) ... row sp.r + i ...
 */
struct span {
	struct chunk_geom g;
	struct codec cd;
	struct batch b;
	uint64_t s0, n, r0, r1;
	uint64_t r, nr;
};

/* The rows [r0, r1) of g, before their first batch. */
static int span_rows(struct span *sp, uint64_t r0, uint64_t r1)
{
	codec_init(&sp->cd, &sp->g);
	sp->r0 = sp->r = r0;
	sp->r1 = r1;
	sp->nr = 0;
	return batch_alloc(&sp->b, sp->g.num_stripes, r1 - r0);
}

/* The span of the sectors [logical, +len); -EIO when they are not inside
 * one raid5/6 chunk. */
static int span_open(struct core *c, uint64_t logical, uint64_t len, struct span *sp)
{
	struct chunk_geom *g = &sp->g;

	if (chunk_map_geometry(c, logical, g) || !g->nparity || len % SECT ||
	    logical + len > g->logical + g->length)
		return -EIO;
	sp->s0 = (logical - g->logical) / SECT;
	sp->n = len / SECT;
	return span_rows(sp, sp->s0 / (uint64_t)g->ndata,
			 (sp->s0 + sp->n + (uint64_t)g->ndata - 1) / (uint64_t)g->ndata);
}

/* Read the next batch, up to BATCH_ROWS of the rows left; false when
 * none is left. */
static bool span_next(struct core *c, struct span *sp)
{
	sp->r += sp->nr;
	if (sp->r >= sp->r1)
		return false;
	sp->nr = sp->r1 - sp->r < BATCH_ROWS ? sp->r1 - sp->r : BATCH_ROWS;
	batch_read(c, &sp->g, &sp->b, sp->r, sp->nr);
	return true;
}

int parity_read(struct core *c, uint64_t logical, uint64_t len, void *buf, const uint32_t *exp,
		const uint8_t *have)
{
	struct span sp;
	int ret = span_open(c, logical, len, &sp);

	if (ret)
		return ret;
	while (!ret && span_next(c, &sp)) {
		for (uint64_t i = 0; i < sp.nr && !ret; i++) {
			uint8_t *cols[MAXS];
			unsigned bad;
			int rb = settle_row(c, &sp.cd, &sp.b, i, sp.s0, sp.n, exp, have, &bad);

			if (rb < 0) {
				core_log(c, "raid%d: data logical %llu+%llu: row %llu cannot be rebuilt "
					 "(stripes failing: %#x)", sp.g.nparity == 2 ? 6 : 5,
					 (unsigned long long)logical, (unsigned long long)len,
					 (unsigned long long)(sp.r + i), sp.b.bad);
				ret = -EIO;
				break;
			}
			if (rb) {
				__atomic_fetch_add(&c->degraded, 1, __ATOMIC_RELAXED);
				if (PROBE_ON(STRIPE_REBUILD))
					GLASSFS_STRIPE_REBUILD(sp.g.logical + (sp.r + i) * (uint64_t)sp.cd.k * SECT, rb);
			}
			row_cols(&sp.cd, &sp.b, i, cols);
			row_copy_out(&sp.cd, cols, sp.r + i, sp.s0, sp.n, buf);
		}
	}
	batch_free(&sp.b);
	if (ret)
		memset(buf, 0, len);	/* never the bad bytes */
	return ret;
}

/*
 * Rows [r0, r0 + nr) of g read into b with the stripes in `erase` (and
 * those batch_read found bad) rebuilt from the rest, the data sectors
 * [s0, +n) copied to buf.  -EIO when a row lacks more than p columns.
 */
static int assemble(struct core *c, const struct chunk_geom *g, const struct codec *cd,
		    struct batch *b, uint64_t r0, uint64_t nr, unsigned erase, uint64_t s0,
		    uint64_t n, uint8_t *buf)
{
	batch_read(c, g, b, r0, nr);
	b->bad |= erase;
	if (__builtin_popcount(b->bad) > cd->p)
		return -EIO;
	for (uint64_t i = 0; i < nr; i++) {
		uint8_t *cols[MAXS];
		unsigned er = cols_on(cd, r0 + i, b->bad);

		row_cols(cd, b, i, cols);
		if (er && decode_row(cd, cols, er))
			return -EIO;
		row_copy_out(cd, cols, r0 + i, s0, n, buf);
	}
	return 0;
}

/*
 * parity_read_verified's search: the rows as batch_read sees them, then
 * with each set of further stripes rebuilt that parity still covers,
 * fewest first, until verify passes.  0 with buf verified, else -EIO.
 */
static int read_search(struct core *c, const struct chunk_geom *g, const struct codec *cd,
		       struct batch *b, uint64_t r0, uint64_t r1, uint64_t s0, uint64_t n,
		       uint64_t logical, uint64_t len, void *buf,
		       int (*verify)(const void *buf, uint64_t logical, void *arg), void *arg)
{
	unsigned tried_bad = 0;
	int ret = -EIO;

	for (int extra = 0; extra <= cd->p && ret; extra++) {
		for (unsigned e = 0; e < (1u << cd->n) && ret; e++) {
			if (__builtin_popcount(e) != extra || (e & tried_bad))
				continue;
			if (assemble(c, g, cd, b, r0, r1 - r0, e, s0, n, buf))
				continue;
			if (!extra)
				tried_bad = b->bad;	/* rebuilt already: not "extra" */
			if (verify(buf, logical, arg))
				continue;
			ret = 0;
			if (e) {
				__atomic_fetch_add(&c->csum_errors, 1, __ATOMIC_RELAXED);
				core_log(c, "raid%d: block %llu+%llu fails its checksum as read; "
					 "good with stripe(s) %#x rebuilt from parity",
					 g->nparity == 2 ? 6 : 5, (unsigned long long)logical,
					 (unsigned long long)len, e);
			}
			if (b->bad) {
				__atomic_fetch_add(&c->degraded, 1, __ATOMIC_RELAXED);
				if (PROBE_ON(STRIPE_REBUILD))
					GLASSFS_STRIPE_REBUILD(logical, (int)b->bad);
			}
		}
	}
	return ret;
}

int parity_read_verified(struct core *c, uint64_t logical, uint64_t len, void *buf,
			 int (*verify)(const void *buf, uint64_t logical, void *arg), void *arg)
{
	struct span sp;
	int ret = span_open(c, logical, len, &sp);

	if (ret)
		return -EIO;
	if (sp.r1 - sp.r0 > BATCH_ROWS) {
		/* a long log segment: missing devices rebuilt, no search */
		batch_free(&sp.b);
		ret = parity_read(c, logical, len, buf, NULL, NULL);
		if (!ret && verify(buf, logical, arg)) {
			memset(buf, 0, len);
			ret = -EIO;
		}
		return ret;
	}
	/*
	 * The block as read (the columns of a missing, failing or stale
	 * device rebuilt), then with each set of further stripes rebuilt
	 * that parity still covers, fewest first: a column that reads
	 * fine but holds wrong bytes shows only as the block's own
	 * checksum failing, and only erasing its stripe finds it.  When
	 * no set verifies, once more with a stale device's columns taken
	 * as they are: a block older than its absence is still right
	 * there, and may be the only way past a bad column elsewhere (a
	 * raid5 node damaged on a fresh device before the resync).
	 */
	ret = -EIO;
	bool any_stale = false;
	for (int d = 0; d < sp.g.num_stripes; d++)
		any_stale |= sp.g.stripes[d].dev && sp.g.stripes[d].dev->stale;
	for (int pass = 0; pass < 1 + any_stale && ret; pass++) {
		sp.b.trust_stale = pass == 1;
		ret = read_search(c, &sp.g, &sp.cd, &sp.b, sp.r0, sp.r1, sp.s0, sp.n, logical, len,
				  buf, verify, arg);
	}
	batch_free(&sp.b);
	if (ret)
		memset(buf, 0, len);	/* never the bad bytes; the caller says it */
	return ret;
}

int parity_check_block(struct core *c, uint64_t logical, uint64_t len, const void *good,
		       bool readonly, struct parity_scrub_stats *st)
{
	uint64_t ns = len / SECT;
	uint32_t exp[64];
	uint8_t have[64];

	if (len % SECT || ns > 64)
		return -EINVAL;
	for (uint64_t i = 0; i < ns; i++) {
		exp[i] = crc32c(0, (const uint8_t *)good + i * SECT, SECT);
		have[i] = 1;
	}
	return parity_scrub(c, logical, len, exp, have, readonly, st);
}

/* Does row r (of the rows from row0, nrows of them) hold a sector marked
 * PARITY_UNVERIFIED? */
static bool row_unverified(const struct codec *cd, uint64_t r, uint64_t row0, uint64_t nrows,
			   const uint8_t *have)
{
	for (int j = 0; j < cd->k && r >= row0 && r < row0 + nrows; j++)
		if (have[(r - row0) * (uint64_t)cd->k + (uint64_t)j] == PARITY_UNVERIFIED)
			return true;
	return false;
}

int parity_rebuild(struct core *c, uint64_t chunk_logical, int stripe, uint64_t row0,
		   uint64_t nrows, const uint32_t *exp, const uint8_t *have, uint64_t *mismatch)
{
	struct span sp;
	uint8_t own[SECT];
	int ret;

	if (chunk_map_geometry(c, chunk_logical, &sp.g) || !sp.g.nparity || stripe < 0 ||
	    stripe >= sp.g.num_stripes || !sp.g.stripes[stripe].dev)
		return -EIO;
	ret = span_rows(&sp, row0, row0 + nrows);
	while (!ret && span_next(c, &sp)) {
		sp.b.bad |= 1u << stripe;	/* its bytes are what we replace */
		for (uint64_t i = 0; i < sp.nr && !ret; i++) {
			uint8_t *cols[MAXS];
			unsigned bad;

			if (!exp) {
				row_cols(&sp.cd, &sp.b, i, cols);
				ret = decode_row(&sp.cd, cols, cols_on(&sp.cd, sp.r + i, sp.b.bad));
				continue;
			}
			/* rebuilt and verified against the checksums (settle_row
			 * gets past one more bad column where parity allows); a
			 * row that verifies no way keeps the device's own bytes:
			 * never rebuilt garbage over what may still be right */
			memcpy(own, sp.b.col[stripe] + i * SECT, SECT);
			if (row_unverified(&sp.cd, sp.r + i, row0, nrows, have)) {
				/* nothing to check it by: the plain rebuild stands
				 * only where it is what the device holds already */
				row_cols(&sp.cd, &sp.b, i, cols);
				ret = decode_row(&sp.cd, cols, cols_on(&sp.cd, sp.r + i, sp.b.bad));
				if (!ret && memcmp(own, sp.b.col[stripe] + i * SECT, SECT)) {
					memcpy(sp.b.col[stripe] + i * SECT, own, SECT);
					(*mismatch)++;
					core_log(c, "resync: raid%d row %llu of chunk %llu holds a block "
						 "that verifies no way; %s keeps its own bytes there",
						 sp.g.nparity == 2 ? 6 : 5, (unsigned long long)(sp.r + i),
						 (unsigned long long)sp.g.logical, sp.g.stripes[stripe].dev->path);
				}
				continue;
			}
			if (settle_row(c, &sp.cd, &sp.b, i, row0 * (uint64_t)sp.cd.k,
				       nrows * (uint64_t)sp.cd.k, exp, have, &bad) < 0) {
				memcpy(sp.b.col[stripe] + i * SECT, own, SECT);
				(*mismatch)++;
				core_log(c, "resync: raid%d row %llu of chunk %llu: the rebuilt row fails its "
					 "checksums however rebuilt; %s keeps its own bytes there",
					 sp.g.nparity == 2 ? 6 : 5, (unsigned long long)(sp.r + i),
					 (unsigned long long)sp.g.logical, sp.g.stripes[stripe].dev->path);
			}
		}
		if (!ret)
			ret = dev_write(sp.g.stripes[stripe].dev,
					sp.g.stripes[stripe].physical + sp.r * SECT, sp.b.col[stripe],
					sp.nr * SECT);
		if (!ret && PROBE_ON(STRIPE_REBUILD))
			GLASSFS_STRIPE_REBUILD(sp.g.logical + sp.r * (uint64_t)sp.cd.k * SECT,
					       (int)cols_on(&sp.cd, sp.r, 1u << stripe));
	}
	batch_free(&sp.b);
	return ret;
}

/*
 * Does row rr hold a data sector in use that this check did not verify
 * (outside [s0, +n), or without a checksum)?  Then parity that does not
 * match the row may be right and that sector wrong — a row a conversion
 * left shared by two nodes or extents — and recomputing parity from it
 * would make the bad sector the row's truth, so that its owner's own
 * check could no longer rebuild it.
 */
static bool unverified_live(struct core *c, const struct chunk_geom *g, const struct codec *cd,
			    uint64_t rr, uint64_t s0, uint64_t n, const uint8_t *have)
{
	for (int j = 0; j < cd->k; j++) {
		uint64_t s = rr * (uint64_t)cd->k + (uint64_t)j;
		if (s >= s0 && s < s0 + n && have && have[s - s0])
			continue;
		if (alloc_is_used(c, g->logical + s * SECT, SECT))
			return true;
	}
	return false;
}

int parity_scrub(struct core *c, uint64_t logical, uint64_t len, const uint32_t *exp,
		 const uint8_t *have, bool readonly, struct parity_scrub_stats *st)
{
	struct span sp;
	int ret = span_open(c, logical, len, &sp);

	if (ret)
		return ret;
	while (!ret && span_next(c, &sp)) {
		unsigned missing = 0;

		for (int d = 0; d < sp.g.num_stripes; d++) {
			if (!sp.g.stripes[d].dev)
				missing |= 1u << d;	/* redundancy lost, nothing to rewrite */
			else if (sp.b.rerr & (1u << d))
				st->read_errors++;
			else
				st->checked_bytes += sp.nr * SECT;
		}
		for (uint64_t i = 0; i < sp.nr; i++) {
			uint8_t *cols[MAXS], pbuf[2][SECT], *par[2] = { pbuf[0], pbuf[1] };
			uint64_t rr = sp.r + i;
			unsigned bad, fix;
			int rb = settle_row(c, &sp.cd, &sp.b, i, sp.s0, sp.n, exp, have, &bad);

			st->data_errors += (uint64_t)__builtin_popcount(bad);
			if (rb < 0) {
				for (int j = 0; j < sp.cd.k; j++) {
					uint64_t s = rr * (uint64_t)sp.cd.k + (uint64_t)j;
					st->uncorrectable_bytes += s >= sp.s0 && s < sp.s0 + sp.n && have && have[s - sp.s0] ?
								   SECT : 0;
				}
				core_log(c, "scrub: raid%d row %llu of chunk %llu: more columns bad than "
					 "parity can rebuild (uncorrectable)", sp.g.nparity == 2 ? 6 : 5,
					 (unsigned long long)rr, (unsigned long long)sp.g.logical);
				continue;
			}
			/* data verified (or rebuilt): parity as stored against parity recomputed */
			row_cols(&sp.cd, &sp.b, i, cols);
			fix = (unsigned)rb & ~cols_on(&sp.cd, rr, missing);
			encode_row(&sp.cd, cols, par);
			for (int q = 0; q < sp.cd.p; q++) {
				if (rb & (1u << (sp.cd.k + q)))
					continue;	/* rebuilt: recomputed already */
				if (memcmp(par[q], cols[sp.cd.k + q], SECT)) {
						st->parity_errors++;
						if (unverified_live(c, &sp.g, &sp.cd, rr, sp.s0, sp.n, have)) {
							core_log(c, "scrub: raid%d row %llu of chunk %llu: "
								 "%s does not match the row, which holds "
								 "live sectors this check did not verify: "
								 "left as it is", sp.g.nparity == 2 ? 6 : 5,
								 (unsigned long long)rr,
								 (unsigned long long)sp.g.logical, q ? "Q" : "P");
							continue;
						}
						memcpy(cols[sp.cd.k + q], par[q], SECT);
						fix |= 1u << (sp.cd.k + q);
						core_log(c, "scrub: raid%d row %llu of chunk %llu: %s does not "
							 "match the row's data", sp.g.nparity == 2 ? 6 : 5,
							 (unsigned long long)rr, (unsigned long long)sp.g.logical,
							 q ? "Q" : "P");
				}
			}
			for (int j = 0; j < sp.cd.n && !readonly; j++) {
				int d = stripe_of(&sp.cd, rr, j);
				if (!(fix & (1u << j)))
					continue;
				if (dev_write(sp.g.stripes[d].dev, sp.g.stripes[d].physical + rr * SECT, cols[j],
					      SECT) == 0) {
					st->corrected_bytes += SECT;
					__atomic_fetch_add(&c->repaired, 1, __ATOMIC_RELAXED);
					if (PROBE_ON(PARITY_REPAIR))
						GLASSFS_PARITY_REPAIR(sp.g.logical, rr, j, j >= sp.cd.k);
				}
			}
		}
	}
	batch_free(&sp.b);
	return ret;
}

/*
 * Does row i of the batch agree with its parity?  Columns in erased were
 * rebuilt (decode_row) and prove nothing; every other parity column must
 * equal the one recomputed from the data.
 */
static bool row_consistent(const struct codec *cd, uint8_t **cols, unsigned erased)
{
	uint8_t pbuf[2][SECT], *par[2] = { pbuf[0], pbuf[1] };

	encode_row(cd, cols, par);
	for (int q = 0; q < cd->p; q++)
		if (!(erased & (1u << (cd->k + q))) && memcmp(par[q], cols[cd->k + q], SECT))
			return false;
	return true;
}

int parity_read_unsummed(struct core *c, uint64_t logical, uint64_t len, void *buf, bool readonly,
			 uint64_t *fixed, uint64_t *where)
{
	struct span sp;
	uint8_t save[SECT];
	int ret = span_open(c, logical, len, &sp);

	*fixed = 0;
	if (ret)
		return ret;
	while (!ret && span_next(c, &sp)) {
		for (uint64_t i = 0; i < sp.nr && !ret; i++) {
			uint8_t *cols[MAXS];
			uint64_t rr = sp.r + i;
			unsigned erased = cols_on(&sp.cd, rr, sp.b.bad);
			int culprit = -1, found = 0;

			row_cols(&sp.cd, &sp.b, i, cols);
			*where = sp.g.logical + rr * (uint64_t)sp.cd.k * SECT;
			if (__builtin_popcount(erased) >= sp.cd.p) {
				ret = -EILSEQ;	/* no parity left over to check the row with */
				break;
			}
			if (erased && decode_row(&sp.cd, cols, erased)) {
				ret = -EIO;
				break;
			}
			if (!row_consistent(&sp.cd, cols, erased)) {
				/* one column to blame, if parity to spare finds exactly
				 * one whose rebuild makes the row agree (raid6 with every
				 * device there, as md's raid6check) */
				for (int j = 0; j < sp.cd.n && sp.cd.p - __builtin_popcount(erased) >= 2; j++) {
					if (erased & (1u << j))
						continue;
					memcpy(save, cols[j], SECT);
					if (!decode_row(&sp.cd, cols, erased | 1u << j) &&
					    row_consistent(&sp.cd, cols, erased | 1u << j)) {
						culprit = j;
						found++;
					}
					memcpy(cols[j], save, SECT);
				}
				if (found != 1) {
					ret = -EILSEQ;
					break;
				}
				decode_row(&sp.cd, cols, erased | 1u << culprit);
				int d = stripe_of(&sp.cd, rr, culprit);
				if (!readonly) {
					ret = dev_write(sp.g.stripes[d].dev, sp.g.stripes[d].physical + rr * SECT,
							cols[culprit], SECT);
					if (ret)
						break;
					__atomic_fetch_add(&c->repaired, 1, __ATOMIC_RELAXED);
					if (PROBE_ON(PARITY_REPAIR))
						GLASSFS_PARITY_REPAIR(sp.g.logical, rr, culprit, culprit >= sp.cd.k);
				}
				core_log(c, "raid%d row %llu of chunk %llu: %s column %d on %s disagreed with "
					 "the rest of the row; %s from them", sp.g.nparity == 2 ? 6 : 5,
					 (unsigned long long)rr, (unsigned long long)sp.g.logical,
					 culprit >= sp.cd.k ? "parity" : "data", culprit, sp.g.stripes[d].dev->path,
					 readonly ? "it would be rebuilt" : "rebuilt");
				(*fixed)++;
			}
			row_copy_out(&sp.cd, cols, rr, sp.s0, sp.n, buf);
		}
	}
	batch_free(&sp.b);
	return ret;
}
