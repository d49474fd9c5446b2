// SPDX-License-Identifier: MIT
/*
 * volume_reloc.c — moving one chunk to new stripes, for device remove and
 * balance (volume.h has the design): its bytes copied segment by segment
 * and mended block by block from the other copies, the switch committed,
 * the chunk split first when it does not fit whole; and the list of
 * chunks an operation moves.
 *
 * A conversion that keeps old stripes (raid1 or dup to single, raid1c3
 * to raid1: chunk_reloc_begin) drops the others at the switch, so the
 * kept ones are verified too (reloc_keep) and their bad blocks rewritten
 * from a good copy first: a balance never turns an error a read could
 * correct into one it cannot.  A block no copy verifies was unreadable
 * before; it moves as it was, and is logged and counted (the operation
 * ends with -EIO naming the first, volume_lost_say) rather than
 * stopping every balance and device removal on it.
 */
#include "fs/trees/chunk_tree.h"
#include "fs/store/alloc.h"
#include "fs/store/chunk.h"
#include "fs/store/copy_fence.h"
#include "fs/store/dev.h"
#include "fs/store/parity.h"
#include "fs/trees/data.h"
#include "fs/btree/btree.h"
#include "fs/btree/node.h"
#include "fs/txn/txn.h"
#include "fs/base/crc32c.h"
#include "fs/base/probe.h"
#include "fs/services/volume.h"
#include "fs/services/volume_int.h"

#include <stdlib.h>
#include <string.h>

/* Does block [b, b + bs) of the segment verify?  Data: every sector with
 * a checksum matches it; metadata: a node for this address whose own
 * checksum matches, of the generation its extent item records when exp
 * is given (exp[0]: its low 32 bits, meta_load_live) — a copy of another
 * generation is a lost write, the block's bytes from an earlier life,
 * sound on their own.  Unused space verifies as data, never as a node. */
static bool block_ok(const uint8_t *b, uint64_t logical, uint32_t bs,
		     bool meta, const uint32_t *exp, const uint8_t *have)
{
	if (meta) {
		uint32_t want, got = crc32c(0, b + 32, bs - 32);
		uint64_t at;
		memcpy(&want, b, 4);
		memcpy(&at, b + 48, 8);
		return want == got && at == logical &&
		       (!exp || (uint32_t)nb_generation(b) == exp[0]);
	}
	for (uint32_t s = 0; s < bs / CORE_SECTORSIZE; s++)
		if (have[s] && crc32c(0, b + (size_t)s * CORE_SECTORSIZE, CORE_SECTORSIZE) != exp[s])
			return false;
	return true;
}

/* Does block [o, o + bs) of the segment hold something to verify?  Data:
 * a sector with a checksum; metadata: a node the extent tree lists, or,
 * with no list (have NULL), any block (best effort, as before lists). */
static bool block_live(uint64_t o, uint32_t bs, bool meta, const uint8_t *have)
{
	if (!have)
		return meta;
	if (meta)
		return have[o / CORE_SECTORSIZE] != 0;
	for (uint32_t s = 0; s < bs / CORE_SECTORSIZE; s++)
		if (have[o / CORE_SECTORSIZE + s])
			return true;
	return false;
}

/* What one segment's mending found: blocks no copy verifies (counted
 * only where the block is known live, have given), the first of them;
 * logged when say is set (a segment's second pass: reloc_copy). */
struct mend_loss {
	uint64_t n, first;
	bool say;
};

static void note_lost(struct core *c, struct mend_loss *ml, uint64_t logical, bool meta)
{
	if (!ml->n++)
		ml->first = logical;
	if (ml->say && ml->n <= 8)	/* a damaged range: the first few, then the count */
		core_log(c, "relocation: %s %llu: no copy verifies (unreadable before the move; "
			 "moved as it was)", meta ? "node" : "sector", (unsigned long long)logical);
}

/*
 * The segment in buf came from copy `from` of cp: where a live block
 * fails verification and another copy has it right, take that copy's
 * block, so a relocation never spreads a bad copy; fixed[block] (may be
 * NULL) says which.  A live block no copy verifies stays as read, in ml.
 */
static void mend_segment(struct core *c, uint8_t *buf, uint64_t logical, uint64_t n, bool meta,
			 const struct chunk_copy *cp, int ncp, int from,
			 const uint32_t *exp, const uint8_t *have, uint8_t *fixed,
			 struct mend_loss *ml)
{
	uint32_t bs = meta ? c->nodesize : CORE_SECTORSIZE;
	uint8_t *alt[CHUNK_MAX_STRIPES] = { NULL };
	bool tried[CHUNK_MAX_STRIPES] = { false };

	for (uint64_t o = 0; o + bs <= n; o += bs) {
		const uint32_t *e = exp ? exp + o / CORE_SECTORSIZE : NULL;
		const uint8_t *h = have ? have + o / CORE_SECTORSIZE : NULL;
		bool ok = false;

		if (!block_live(o, bs, meta, have) || block_ok(buf + o, logical + o, bs, meta, e, h))
			continue;
		for (int i = 0; i < ncp && !ok; i++) {
			if (i == from)
				continue;
			if (!tried[i]) {	/* the other copy's whole segment, once */
				tried[i] = true;
				alt[i] = aligned_alloc(4096, n);
				if (alt[i] && dev_read(cp[i].dev, cp[i].physical, alt[i], n)) {
					free(alt[i]);
					alt[i] = NULL;
				}
			}
			ok = alt[i] && block_ok(alt[i] + o, logical + o, bs, meta, e, h);
			if (!ok)
				continue;
			memcpy(buf + o, alt[i] + o, bs);
			if (fixed)
				fixed[o / bs] = 1;
			__atomic_fetch_add(&c->repaired, 1, __ATOMIC_RELAXED);
			core_log(c, "relocation: block %llu bad on %s, copied from %s",
				 (unsigned long long)(logical + o),
				 from >= 0 ? cp[from].dev->path : "every copy read", cp[i].dev->path);
		}
		if (!ok && have && ml)
			note_lost(c, ml, logical + o, meta);
	}
	for (int i = 0; i < CHUNK_MAX_STRIPES; i++)
		free(alt[i]);
}

static int node_at_ok(const void *b, uint64_t logical, void *arg)
{
	return block_ok(b, logical, *(const uint32_t *)arg, true, NULL, NULL) ? 0 : -EIO;
}

/*
 * A segment of a raid5/6 metadata chunk as parity_read gave it (missing
 * devices rebuilt, nothing verified): a node found in it (its header
 * names its own address; nodes start on rows, not at node-size
 * multiples) whose checksum fails is read again through
 * parity_read_verified, which rebuilds the column that is wrong.  Best
 * effort, as mend_segment: a node whose header is the damaged part, or
 * one crossing the segment's end, is copied as read.
 */
static void mend_parity_nodes(struct core *c, uint8_t *buf, uint64_t logical, uint64_t n)
{
	uint32_t bs = c->nodesize;
	uint8_t *tmp = NULL;

	for (uint64_t o = 0; o + bs <= n; o += CORE_SECTORSIZE) {
		uint64_t at;

		memcpy(&at, buf + o + 48, 8);
		if (at != logical + o || block_ok(buf + o, logical + o, bs, true, NULL, NULL))
			continue;
		/* into tmp: a freed node's header may be followed by a live
		 * node's bytes, which a failed rebuild must not touch */
		if (!tmp && !(tmp = aligned_alloc(4096, bs)))
			return;
		if (parity_read_verified(c, logical + o, bs, tmp, node_at_ok, &bs) == 0) {
			memcpy(buf + o, tmp, bs);
			__atomic_fetch_add(&c->repaired, 1, __ATOMIC_RELAXED);
			core_log(c, "relocation: node %llu rebuilt from parity",
				 (unsigned long long)(logical + o));
		}
	}
	free(tmp);
}

/*
 * Read [logical, +n) of a chunk into buf as it stands: a raid5/6 chunk
 * through parity_read (columns a missing or failing device holds, or
 * failing their checksum, rebuilt and verified); any other piece by
 * piece (a raid10 source: one element each) from any readable copy,
 * mended block by block from the others (mend_segment).  Inside the
 * segment's copy fence (copy_fence_begin).
 */
static int reloc_read(struct core *c, uint64_t logical, uint64_t n, uint8_t *buf, bool meta,
		      bool parity, const uint32_t *exp, const uint8_t *have, struct mend_loss *ml)
{
	int ret = 0;

	if (parity) {
		ret = parity_read(c, logical, n, buf, exp, have);
		if (!ret && meta)
			mend_parity_nodes(c, buf, logical, n);
		return ret;
	}
	for (uint64_t p = 0, m; p < n && !ret; p += m) {
		struct chunk_copy cp[CHUNK_MAX_STRIPES];
		int ncp, from = -1;

		m = chunk_map_piece(c, logical + p, n - p);
		ncp = chunk_map_lookup(c, logical + p, m, cp, NULL);
		ret = ncp < 0 ? ncp : -EIO;
		for (int i = 0; i < ncp; i++) {
			ret = dev_read(cp[i].dev, cp[i].physical, buf + p, m);
			if (!ret) {
				from = i;
				break;
			}
			core_log(c, "relocation: read error on %s at %llu: %s%s", cp[i].dev->path,
				 (unsigned long long)cp[i].physical, strerror(-ret),
				 i + 1 < ncp ? ", trying the next copy" : "");
		}
		if (!ret && ncp > 1)
			mend_segment(c, buf + p, logical + p, m, meta, cp, ncp, from,
				     exp ? exp + p / CORE_SECTORSIZE : NULL,
				     have ? have + p / CORE_SECTORSIZE : NULL, NULL, ml);
	}
	return ret;
}

/* Write the blocks fixed[] marks (or, fixed NULL, all n bytes) of buf to
 * [physical, +n) of dev: a kept stripe put right. */
static int keep_write(struct core *c, struct dev *dev, uint64_t physical, const uint8_t *buf,
		      uint64_t n, uint32_t bs, const uint8_t *fixed)
{
	for (uint64_t o = 0; o < n; o += fixed ? bs : n) {
		uint64_t m = fixed ? bs : n;
		int ret;

		if (fixed && !fixed[o / bs])
			continue;
		ret = dev_write(dev, physical + o, buf + o, m);
		if (ret) {
			core_log(c, "relocation: rewriting a kept copy on %s at %llu: %s", dev->path,
				 (unsigned long long)(physical + o), strerror(-ret));
			return ret;
		}
	}
	return 0;
}

/* The index in cp of the copy at (dev, physical); -1 when none is. */
static int copy_index(const struct chunk_copy *cp, int ncp, const struct dev *dev,
		      uint64_t physical)
{
	for (int i = 0; i < ncp; i++)
		if (cp[i].dev == dev && cp[i].physical == physical)
			return i;
	return -1;
}

/*
 * Kept stripe 0 of the segment [logical, +n) (chunk offset off) into
 * buf: read there and mended from every old copy, dropped ones too
 * (mend_segment), the mended blocks written back.  A read error reads
 * the segment from the other copies instead (reloc_read) and rewrites
 * it whole (a write may remap the sector that failed).
 */
static int keep_first(struct core *c, uint64_t logical, uint64_t off, uint64_t n, uint8_t *buf,
		      bool meta, const uint32_t *exp, const uint8_t *have,
		      const struct chunk_stripe *k, uint8_t *fixed, struct mend_loss *ml)
{
	uint32_t bs = meta ? c->nodesize : CORE_SECTORSIZE;
	struct chunk_copy cp[CHUNK_MAX_STRIPES];
	int ncp = chunk_map_lookup(c, logical, n, cp, NULL), ret;

	if (ncp < 0)
		return ncp;
	ret = dev_read(k->dev, k->physical + off, buf, n);
	if (ret) {
		core_log(c, "relocation: read error on kept copy %s at %llu: %s, reading the others",
			 k->dev->path, (unsigned long long)(k->physical + off), strerror(-ret));
		ret = reloc_read(c, logical, n, buf, meta, false, exp, have, ml);
		return ret ? ret : keep_write(c, k->dev, k->physical + off, buf, n, bs, NULL);
	}
	memset(fixed, 0, n / bs);
	mend_segment(c, buf, logical, n, meta, cp, ncp,
		     copy_index(cp, ncp, k->dev, k->physical + off), exp, have, fixed, ml);
	return keep_write(c, k->dev, k->physical + off, buf, n, bs, fixed);
}

/*
 * Another kept stripe: read into tmp and verified block by block, a bad
 * live block rewritten from buf (the mended segment: keep_first) where
 * buf's verifies (else no copy does: keep_first counted it).
 */
static int keep_other(struct core *c, uint64_t logical, uint64_t off, uint64_t n,
		      const uint8_t *buf, uint8_t *tmp, bool meta, const uint32_t *exp,
		      const uint8_t *have, const struct chunk_stripe *k, uint8_t *fixed)
{
	uint32_t bs = meta ? c->nodesize : CORE_SECTORSIZE;
	int ret = dev_read(k->dev, k->physical + off, tmp, n);

	if (ret) {
		core_log(c, "relocation: read error on kept copy %s at %llu: %s, rewriting it",
			 k->dev->path, (unsigned long long)(k->physical + off), strerror(-ret));
		return keep_write(c, k->dev, k->physical + off, buf, n, bs, NULL);
	}
	memset(fixed, 0, n / bs);
	for (uint64_t o = 0; o + bs <= n; o += bs) {
		const uint32_t *e = exp ? exp + o / CORE_SECTORSIZE : NULL;
		const uint8_t *h = have ? have + o / CORE_SECTORSIZE : NULL;

		if (!block_live(o, bs, meta, have) || block_ok(tmp + o, logical + o, bs, meta, e, h) ||
		    !block_ok(buf + o, logical + o, bs, meta, e, h))
			continue;
		fixed[o / bs] = 1;
		__atomic_fetch_add(&c->repaired, 1, __ATOMIC_RELAXED);
		core_log(c, "relocation: block %llu bad on kept copy %s, rewritten from a good one",
			 (unsigned long long)(logical + o), k->dev->path);
	}
	return keep_write(c, k->dev, k->physical + off, buf, n, bs, fixed);
}

/* Scratch for reloc_keep: another kept stripe's bytes, the blocks fixed. */
struct keep_buf {
	uint8_t *tmp, *fixed;
};

/*
 * The segment's kept stripes ns[0, nkeep) (whole copies of a whole-copy
 * source, chunk_reloc_begin): each verified and put right from a good
 * copy before the switch drops the others; buf ends as the segment's
 * best bytes, what the new stripes get.  Inside the segment's copy
 * fence, as the copy: no write of it lands meanwhile.
 */
static int reloc_keep(struct core *c, uint64_t logical, uint64_t off, uint64_t n, uint8_t *buf,
		      bool meta, const uint32_t *exp, const uint8_t *have,
		      const struct chunk_stripe *ns, int nkeep, struct keep_buf *kb,
		      struct mend_loss *ml)
{
	int ret = keep_first(c, logical, off, n, buf, meta, exp, have, &ns[0], kb->fixed, ml);

	for (int k = 1; !ret && k < nkeep; k++)
		ret = keep_other(c, logical, off, n, buf, kb->tmp, meta, exp, have, &ns[k], kb->fixed);
	return ret;
}

/*
 * Write [off, +n) of the chunk (buf) to its new stripes ns: a raid5/6
 * target as whole fresh rows with their parity (g; off starts a row and
 * n is whole rows), else each piece (a raid10 target: one element) to
 * the stripes holding it, but a kept stripe, which holds it already.
 */
static int reloc_write(struct core *c, uint64_t off, uint64_t n, const uint8_t *buf,
		       const struct chunk_stripe *ns, int nn, int nkeep, uint64_t new_type,
		       const struct chunk_geom *g)
{
	int ret = 0;

	if (new_type & BG_PARITY) {
		ret = parity_write_geom(c, g, off, buf, n);
		if (ret)
			core_log(c, "relocation: writing rows of chunk %llu at +%llu: %s",
				 (unsigned long long)g->logical, (unsigned long long)off, strerror(-ret));
		return ret;
	}
	for (uint64_t p = 0, m; p < n && !ret; p += m) {
		int idx[CHUNK_MAX_STRIPES], ni;
		uint64_t devoff;

		m = n - p;
		if ((new_type & BG_RAID10) && m > CHUNK_STRIPE_LEN - (off + p) % CHUNK_STRIPE_LEN)
			m = CHUNK_STRIPE_LEN - (off + p) % CHUNK_STRIPE_LEN;
		ni = chunk_stripe_map(new_type, nn, off + p, m, idx, &devoff);
		if (ni < 0)
			return -EINVAL;
		for (int k = 0; !ret && k < ni; k++) {
			const struct chunk_stripe *st = &ns[idx[k]];
			if (idx[k] < nkeep)
				continue;	/* kept: holds the bytes already */
			ret = dev_write(st->dev, st->physical + devoff, buf + p, m);
			if (ret)
				core_log(c, "relocation: write error on %s at %llu: %s",
					 st->dev->path, (unsigned long long)(st->physical + devoff),
					 strerror(-ret));
		}
	}
	return ret;
}

/*
 * have[i] = 1 where sector i of [logical, +nsect sectors) starts a node
 * the extent tree lists and the last commit wrote (a newer one may not
 * be on the devices yet: the commit writing it writes every stripe, old
 * and new, after this segment's fence), and gen[i] the low 32 bits of
 * the generation its item records (block_ok holds the node's header to
 * it: a transaction 2^32 commits apart is the only one it cannot tell).
 * Outside the copy fence, as the checksums: tree searches take tree
 * locks a writer waiting may hold.
 */
static int meta_load_live(struct core *c, uint64_t logical, uint32_t nsect, uint8_t *have,
			  uint32_t *gen)
{
	uint64_t end = logical + (uint64_t)nsect * CORE_SECTORSIZE;
	uint64_t durable = __atomic_load_n(&c->generation, __ATOMIC_ACQUIRE);
	struct key k = { logical, 0, 0 };
	struct path p;
	int ret;

	memset(have, 0, nsect);
	btree_path_init(&p);
	for (ret = btree_search_ge(core_tree(c, CT_EXTENT), &k, &p); !ret; ret = btree_next(&p)) {
		struct extent_item ei;
		uint32_t sz = 0;
		const void *v;

		btree_item_key(&p, p.slots[0], &k);
		if (k.objectid >= end)
			break;
		if (k.type != KEY_METADATA_ITEM || k.objectid < logical)
			continue;
		v = btree_item_ptr(&p, p.slots[0], &sz);
		if (sz < sizeof(ei))
			continue;
		memcpy(&ei, v, sizeof(ei));
		if (ei.generation <= durable) {
			have[(k.objectid - logical) / CORE_SECTORSIZE] = 1;
			gen[(k.objectid - logical) / CORE_SECTORSIZE] = (uint32_t)ei.generation;
		}
	}
	btree_path_release(&p);
	return ret < 0 ? ret : 0;
}

/* What reloc_copy knows of one chunk's move. */
struct reloc_job {
	uint64_t logical, type, new_type;
	const struct chunk_stripe *ns;
	int nn, nkeep;
	const struct chunk_geom *g;
};

/* Buffers for a segment: its bytes, what to expect (data: checksums;
 * metadata: node generations, meta_load_live) and the live map. */
struct reloc_bufs {
	uint8_t *buf, *have;
	uint32_t *exp;
	struct keep_buf kb;
};

/*
 * Segment [off, +n) of the chunk: what to verify (checksums or live
 * nodes) loaded first, then inside its copy fence the kept stripes
 * verified and mended (reloc_keep) or the segment read (reloc_read),
 * and written to the new stripes.
 */
static int reloc_segment(struct core *c, const struct reloc_job *j, uint64_t off, uint64_t n,
			 struct reloc_bufs *b, struct mend_loss *ml)
{
	uint32_t nsect = (uint32_t)(n / CORE_SECTORSIZE);
	bool meta = !(j->type & BG_DATA);
	bool parity = (j->type & BG_PARITY) != 0;
	uint64_t logical = j->logical + off;
	int ret;

	/* outside the copy fence: tree searches take tree locks, which a
	 * writer waiting for the segment may hold */
	if (meta && parity)
		ret = -EOPNOTSUPP;	/* its nodes are found in the rows: mend_parity_nodes */
	else
		ret = meta ? meta_load_live(c, logical, nsect, b->have, b->exp) :
			     data_load_csums(c, logical, nsect, b->exp, b->have);
	if (ret)
		memset(b->have, 0, VOLUME_SEG / CORE_SECTORSIZE);	/* unverified: copied as read */
	copy_fence_begin(c, logical, n);
	if (j->nkeep)
		ret = reloc_keep(c, logical, off, n, b->buf, meta, b->exp, b->have,
				 j->ns, j->nkeep, &b->kb, ml);
	else
		ret = reloc_read(c, logical, n, b->buf, meta, parity, meta && parity ? NULL : b->exp,
				 meta && parity ? NULL : b->have, ml);
	if (!ret && j->nn > j->nkeep)
		ret = reloc_write(c, off, n, b->buf, j->ns, j->nn, j->nkeep, j->new_type, j->g);
	copy_fence_end(c);
	return ret;
}

static void reloc_bufs_free(struct reloc_bufs *b)
{
	free(b->buf);
	free(b->exp);
	free(b->have);
	free(b->kb.tmp);
	free(b->kb.fixed);
}

static int reloc_bufs_alloc(struct reloc_bufs *b, int nkeep)
{
	uint32_t nsect = (uint32_t)(VOLUME_SEG / CORE_SECTORSIZE);

	memset(b, 0, sizeof(*b));
	b->buf = aligned_alloc(4096, VOLUME_SEG);
	b->exp = calloc(nsect, sizeof(*b->exp));
	b->have = calloc(nsect, 1);
	b->kb.fixed = calloc(nsect, 1);
	if (nkeep > 1)
		b->kb.tmp = aligned_alloc(4096, VOLUME_SEG);
	if (!b->buf || !b->exp || !b->have || !b->kb.fixed || (nkeep > 1 && !b->kb.tmp)) {
		reloc_bufs_free(b);
		return -ENOMEM;
	}
	return 0;
}

/* Blocks no copy verified: counted on the volume's operation, for its
 * end to say (volume_lost_say). */
static void note_loss(struct core *c, const struct mend_loss *ml)
{
	if (!ml->n || !c->vol)
		return;
	if (__atomic_fetch_add(&c->vol->lost_blocks, ml->n, __ATOMIC_RELAXED) == 0)
		__atomic_store_n(&c->vol->lost_first, ml->first, __ATOMIC_RELAXED);
	if (ml->n > 8)
		core_log(c, "relocation: %llu blocks from %llu on: no copy verifies",
			 (unsigned long long)ml->n, (unsigned long long)ml->first);
}

/*
 * Copy [logical, +len) of one chunk to its new stripes, segment by
 * segment (reloc_segment), the kept stripes verified and mended on the
 * way.  A raid5/6 target takes segments of whole rows (len is whole
 * rows: chunk_reloc_begin picked the stripe count so), each row written
 * once, fresh, with its parity.  A segment where a block no copy
 * verifies is done once more: its checksums were loaded before the
 * fence, and a sector freed and written anew since (a commit between)
 * fails them without being bad.  Returns 0, -ECANCELED when *cancel
 * was set, or the I/O error.
 */
static int reloc_copy(struct core *c, uint64_t logical, uint64_t len, uint64_t type,
		      const struct chunk_stripe *ns, int nn, int nkeep, uint64_t new_type,
		      const int *cancel)
{
	struct chunk_geom g = { 0 };
	struct reloc_job j = { logical, type, new_type, ns, nn, nkeep, &g };
	uint64_t seg = VOLUME_SEG;
	struct reloc_bufs b;
	int ret = 0;

	if (new_type & BG_PARITY) {
		g = (struct chunk_geom){ .logical = logical, .length = len, .type = new_type,
					 .num_stripes = nn, .nparity = chunk_parity_count(new_type) };
		g.ndata = nn - g.nparity;
		for (int i = 0; i < nn; i++)
			g.stripes[i] = (struct chunk_copy){ ns[i].dev, ns[i].physical };
		seg = VOLUME_SEG / ((uint64_t)g.ndata * CORE_SECTORSIZE) *
		      ((uint64_t)g.ndata * CORE_SECTORSIZE);
		if (g.ndata < 2 || len % ((uint64_t)g.ndata * CORE_SECTORSIZE))
			return -EINVAL;	/* chunk_reloc_begin picks whole rows */
	}
	if (reloc_bufs_alloc(&b, nkeep))
		return -ENOMEM;
	for (uint64_t off = 0, n = 0; off < len && !ret; off += n) {
		struct mend_loss ml = { 0, 0, false };

		n = len - off < seg ? len - off : seg;
		if (cancel && __atomic_load_n(cancel, __ATOMIC_RELAXED)) {
			ret = -ECANCELED;
			break;
		}
		ret = reloc_segment(c, &j, off, n, &b, &ml);
		if (!ret && ml.n) {
			ml = (struct mend_loss){ 0, 0, true };
			ret = reloc_segment(c, &j, off, n, &b, &ml);
			note_loss(c, &ml);
		}
		if (!ret && c->vol)	/* progress by bytes (volume_op_plan) */
			__atomic_fetch_add(&c->vol->bytes_done, n, __ATOMIC_RELAXED);
	}
	/* the new stripes, and the kept ones a mend wrote */
	for (int i = 0; !ret && i < nn; i++)
		ret = dev_flush(ns[i].dev);
	reloc_bufs_free(&b);
	return ret;
}

/* Free space of the open groups of a type but the one at skip. */
struct other_free {
	uint64_t type, skip, total, free;
};

static int note_other(const struct bgroup *bg, void *arg)
{
	struct other_free *o = arg;

	if ((bg->flags & BG_TYPE_MASK) != o->type)
		return 0;
	o->total += bg->len;
	if (bg->start != o->skip && !bg->readonly)
		o->free += bg->len - bg->used_bytes + bg->held_bytes;
	return 0;
}

/*
 * A metadata or system chunk about to hand out no nodes (its move to or
 * from raid5/6): the handles that joined before it stopped counted its
 * room in their reserve (txn.c), so the other groups of its type must
 * hold a reserve of their own first — twice the transaction reserve's
 * 1/16 of the type and 128 nodes (system: 32 nodes) — or a chunk, of the
 * type's profile now (the conversion's target), is made for them.
 */
static int room_elsewhere(struct core *c, uint64_t logical, uint64_t type)
{
	struct other_free o = { type, logical, 0, 0 };
	uint64_t want, l;
	struct txn *t;
	int ret;

	alloc_for_each_bg(c, note_other, &o);
	want = type == BG_SYSTEM ? (uint64_t)c->nodesize * 32 :
				   o.total / 8 + (uint64_t)c->nodesize * 128;
	if (o.free >= want)
		return 0;
	ret = txn_join(c, 0, TXN_USE_RESERVE, &t);
	if (ret)
		return ret;
	glock_lock(&c->chunk_alloc_lock, GLOCK_WRITE);
	ret = chunk_create(c, t, type, &l);
	glock_unlock(&c->chunk_alloc_lock, GLOCK_WRITE);
	int r2 = txn_end(t);
	return ret ? ret : r2;
}

/*
 * Move the chunk at logical to new stripes of profile prof, off exclude.
 * On failure the chunk keeps its stripes and nothing is lost.  Returns 1
 * (nothing said, nothing changed) when the new stripes do not fit whole:
 * *len is the chunk's length, *fit the longest that would fit.
 */
static int relocate_one(struct core *c, uint64_t logical, uint64_t old_type, uint64_t prof,
			const struct dev *exclude, const int *cancel, char *msg, size_t mlen,
			uint64_t *len, uint64_t *fit)
{
	struct chunk_stripe ns[CHUNK_MAX_STRIPES];
	uint64_t t0 = glock_now_ns();
	struct txn *t = NULL;
	int nn = 0, nkeep = 0, ret;
	/*
	 * To or from raid5/6: whole rows are copied with no writer beside
	 * the copy (a mirrored copy takes writes on both stripe sets, a row
	 * cannot).  The block group takes no new extents and fills no
	 * preallocated range in place (data_overwrite_ok) meanwhile, and a
	 * commit first lets every write begun before that land: the
	 * handles that reserved space or chose to write in place end before
	 * it does.
	 */
	bool rows = ((old_type | prof) & BG_PARITY) != 0;

	if (rows) {
		/* nodes (the commit's own, the switch's) go elsewhere
		 * meanwhile: room there first, for the handles that joined
		 * before the group stops; later handles' reserves leave it
		 * out (alloc_space_open) */
		ret = (old_type & BG_DATA) ? 0 : room_elsewhere(c, logical, old_type & BG_TYPE_MASK);
		if (!ret)
			ret = alloc_set_readonly(c, logical, true);
		if (!ret)
			ret = txn_commit(c, COMMIT_OTHER);
		if (ret) {
			alloc_set_readonly(c, logical, false);
			return volume_say(c, ret, msg, mlen, "chunk %llu: stopping its allocations: %s",
				   (unsigned long long)logical, strerror(-ret));
		}
	}
	/* exclusive: writes in flight finish, later ones see the new stripes */
	glock_write(&c->reloc_lock);
	ret = chunk_reloc_begin(c, logical, prof, exclude, ns, &nn, &nkeep, len, fit);
	glock_write_unlock(&c->reloc_lock);
	if (ret && rows)
		alloc_set_readonly(c, logical, false);
	if (ret == -ENOSPC)
		return 1;
	if (ret == -EINVAL)
		return volume_say(c, ret, msg, mlen, "%s needs at least %d devices to place chunk %llu on",
			   core_profile_name(prof), profile_min_devs(prof), (unsigned long long)logical);
	if (ret)
		return volume_say(c, ret, msg, mlen, "chunk %llu: %s", (unsigned long long)logical,
			   strerror(-ret));
	ret = reloc_copy(c, logical, *len, old_type, ns, nn, nkeep, (old_type & ~BG_PROFILE_MASK) | prof,
			 cancel);
	if (!ret && (ret = txn_join(c, 16, TXN_USE_RESERVE, &t)) != 0)
		t = NULL;
	if (t) {
		ret = chunk_reloc_switch(t, logical);
		if (ret)
			txn_abort(t, ret, "balance: switching a chunk to its new stripes");
		ret = volume_commit(c, t, ret, NULL, 0, NULL, NULL);
		/* a reader replying with spliced device ranges holds
		 * reloc_lock shared from mapping its pieces to the splice
		 * (fs/trees/data_span.h): once every such reader is gone,
		 * none reads the old stripes, and their space may be reused */
		glock_write(&c->reloc_lock);
		glock_write_unlock(&c->reloc_lock);
		if (!ret)
			chunk_reloc_done(c, logical);
	} else {
		chunk_reloc_abort(c, logical);
	}
	if (rows)	/* open again, rows of the profile it has now */
		alloc_set_readonly(c, logical, false);
	if (PROBE_ON(BALANCE_CHUNK))
		GLASSFS_BALANCE_CHUNK(logical, *len, old_type, (old_type & BG_TYPE_MASK) | prof, ret,
				      glock_now_ns() - t0);
	if (ret == -ECANCELED)
		return volume_say(c, ret, msg, mlen, "cancelled");
	if (ret)
		return volume_say(c, ret, msg, mlen, "chunk %llu could not be moved: %s (it keeps its old stripes)",
			   (unsigned long long)logical, strerror(-ret));
	return 0;
}

/* The widest raid10 row: CHUNK_MAX_STRIPES (4) make two mirrored pairs
 * of 64 KiB elements, and a raid10 chunk is whole rows long */
#define RAID10_ROW ((uint64_t)(CHUNK_MAX_STRIPES / 2) * CHUNK_STRIPE_LEN)

static uint64_t gcd64(uint64_t a, uint64_t b)
{
	while (b) {
		uint64_t r = a % b;
		a = b;
		b = r;
	}
	return a;
}

static uint64_t lcm64(uint64_t a, uint64_t b)
{
	return a / gcd64(a, b) * b;
}

/*
 * Where a chunk of type moving to profile prof may be cut: between the
 * source's elements (chunk_cut_unit) and so that both pieces are whole
 * target elements: a raid5/6 target whole rows of the fewest stripes
 * pick_stripes falls back to (2 data columns: 8 KiB), a raid10 target
 * whole rows of 64 KiB elements.  Metadata is cut at MiB only:
 * its group keeps allocating meanwhile, fenced off MiB boundaries
 * (alloc_fence).  0: no chunk there.
 */
static uint64_t cut_unit(struct core *c, uint64_t logical, uint64_t type, uint64_t prof)
{
	uint64_t src = chunk_cut_unit(c, logical), dst = CORE_SECTORSIZE;

	if (!(type & BG_DATA))
		dst = VOLUME_SEG;
	else if (prof & BG_RAID10)
		dst = RAID10_ROW;
	else if (prof & BG_PARITY)
		dst = 2 * CORE_SECTORSIZE;
	return src ? lcm64(src, dst) : 0;
}

/*
 * The chunk at logical (len bytes) does not fit whole on the devices it
 * must move to, but fit bytes would: split it at the largest cut at most
 * fit that no extent crosses, as btrfs shrinks a new chunk to the holes
 * there are.  The pieces keep their logical addresses, so extents, csums
 * and file items stay as they are.
 *
 * Why cuts between extents at any sector, and not the other ways out
 * (issue 21): cutting only at MiB boundaries failed on a packed chunk
 * (1 MiB write extents laid end to end from a sector that is no MiB
 * multiple cross every boundary).  Any extent's start is a cut no extent
 * crosses (extents never overlap), a raid5/6 group starts every extent
 * on a row, and a merge never makes an extent cross a multiple of 8 MiB
 * (data.h's DATA_MERGE_GRID: file.c merges a sequential write's 1 MiB
 * pieces up to that).  One piece of at most 1 MiB laid off the MiB grid
 * may still cross such a multiple on its own (it is then merged with
 * neither neighbour: test_powerloss convert_split has one over 40 MiB),
 * so a packed chunk of written data has a cut at each extent's start,
 * and one within 1 MiB below each such multiple: with fit at least
 * 9 MiB always one below fit where the unit takes it (always for a dup,
 * single or mirrored target: the unit is then the source's row); with
 * less when an extent starts below it.  Reads join extents back to
 * back on disk across the cut into one range (fs/items/file.c): their
 * pieces stop at each chunk's end (chunk_map_piece).
 * Letting an extent straddle two chunks would touch every reader of the
 * mapping (reads, scrub, fsck, log replay, the allocator's per-group
 * frees); relocating straddling extents to new addresses would rewrite
 * file items, csums and back references of every snapshot sharing them;
 * a target as large as the source cannot be had when the devices lack
 * the room (raid6 -> dup needs four times a stripe on one device); none
 * is needed for the chunks writes make.  What stays refused, said so:
 * one extent longer than fit covering every cut below it (a fallocate'd
 * range, up to 64 MiB, on devices with less room than that; a merged
 * write extent of up to 8 MiB on devices with less than that), and a cut
 * the unit's alignment finds in no gap (a raid10 or raid5/6 target,
 * whose cuts fall on a 128 KiB / 8 KiB grid an extent's start need not
 * be on).  Pieces cut at a unit below 128 KiB are whole rows of no
 * raid10 chunk: a later conversion to raid10 cannot take them (cuts
 * prefer MiB, then 128 KiB, so that happens only where nothing else was
 * free).
 *
 * A data group takes no new extents meanwhile (alloc_set_readonly: a new
 * extent could take any sector) and a commit puts every older one in the
 * extent tree, where chunk_split_point looks; a metadata group keeps
 * allocating, fenced off the MiB boundaries below fit (its nodes never
 * cross one).  Says why when it cannot split.
 */
static int split_to_fit(struct core *c, uint64_t logical, uint64_t len, uint64_t fit,
			uint64_t type, uint64_t prof, char *msg, size_t mlen)
{
	uint64_t upto = fit < len ? fit : len - VOLUME_SEG, cut = 0;
	uint64_t unit = cut_unit(c, logical, type, prof);
	bool data = (type & BG_DATA) != 0;
	struct txn *t;
	int ret = -ENOSPC;

	if (fit >= VOLUME_SEG && !(type & BG_SYSTEM) && unit) {
		ret = data ? alloc_set_readonly(c, logical, true) : alloc_fence(c, logical, upto);
		if (!ret)
			ret = txn_commit(c, COMMIT_OTHER);
		if (!ret)
			ret = volume_join(c, 16, &t, msg, mlen);
		if (ret) {
			if (data)
				alloc_set_readonly(c, logical, false);
			else
				alloc_fence(c, logical, 0);
			return volume_say(c, ret, msg, mlen, "splitting chunk %llu to fit: %s",
				   (unsigned long long)logical, strerror(-ret));
		}
		/* MiB cuts first (pieces as long as new chunks are), then
		 * whole raid10 rows (any later conversion can take both
		 * pieces), then any cut the unit allows */
		uint64_t tier[3] = { lcm64(unit, VOLUME_SEG), lcm64(unit, RAID10_ROW), unit };
		ret = -ENOSPC;
		for (int k = 0; k < 3 && ret == -ENOSPC; k++) {
			if (k && tier[k] == tier[k - 1])
				continue;
			for (ret = -EBUSY, cut = len; ret == -EBUSY;) {
				cut = chunk_split_point(c, logical, upto, cut, tier[k]);
				ret = cut ? chunk_split(t, logical, cut) : -ENOSPC;
			}
		}
		if (data)	/* the first piece; the rest never was read-only */
			alloc_set_readonly(c, logical, false);
		else if (ret)
			alloc_fence(c, logical, 0);
		if (ret == -ENOSPC) {	/* nothing changed */
			txn_end(t);
		} else {
			ret = volume_commit(c, t, ret, msg, mlen, "splitting a chunk to fit", NULL);
			if (!ret)
				core_log(c, "chunk %llu (%llu MiB) split at %llu KiB: no hole for all of it",
					 (unsigned long long)logical, (unsigned long long)(len >> 20),
					 (unsigned long long)(cut >> 10));
			return ret;
		}
	}
	return volume_say(c, ret, msg, mlen, "no room for chunk %llu (%s %s, %llu MiB) on the other devices: "
		   "their largest free hole is %llu MiB (%llu MiB unallocated on all devices)%s",
		   (unsigned long long)logical, core_profile_name(prof),
		   data ? "data" : (type & BG_SYSTEM) ? "system" : "metadata",
		   (unsigned long long)(len >> 20), (unsigned long long)(fit >> 20),
		   (unsigned long long)(chunk_unallocated(c) >> 20),
		   fit < VOLUME_SEG ? "" : (type & BG_SYSTEM) ? ", and a system chunk is not split" :
		   data ? ", and extents cover every cut below that (a row the new profile "
			  "can start a chunk at) where it could be split" :
		   ", and extents cross every MiB boundary below that, where it could be split");
}

/* Relocate the chunk at logical, split into pieces that fit when needed. */
int volume_relocate(struct core *c, uint64_t logical, uint64_t old_type, uint64_t prof,
		    const struct dev *exclude, const int *cancel, char *msg, size_t mlen)
{
	uint64_t end = 0;

	for (;;) {
		uint64_t len = 0, fit = 0;
		int ret = relocate_one(c, logical, old_type, prof, exclude, cancel, msg, mlen,
				       &len, &fit);
		if (!end)
			end = logical + len;
		if (ret == 1)
			ret = split_to_fit(c, logical, len, fit, old_type, prof, msg, mlen);
		else if (!ret)
			logical += len;
		if (ret || logical >= end)
			return ret;
	}
}

/* chunk_for_each callback: the chunks l asks for (volume_int.h). */
int volume_collect(const struct chunk *ch, void *arg)
{
	struct chunk_list *l = arg;
	bool on = false, present = false;

	for (int i = 0; i < ch->num_stripes; i++) {
		const struct chunk_stripe *st = &ch->stripes[i];
		on |= l->dev && st->dev == l->dev;
		present |= st->dev != NULL;
		if (l->missing && !st->dev) {
			on = true;
			int k = 0;
			while (k < l->nmissing && l->missing_ids[k] != st->devid)
				k++;
			if (k == l->nmissing && k < CORE_MAX_DEVS)
				l->missing_ids[l->nmissing++] = st->devid;
		}
	}
	if ((l->dev || l->missing) && !on)
		return 0;
	if (!present && !l->lost++) {
		l->lost_logical = ch->logical;
		l->lost_type = ch->type;
	}
	if (volume_grow((void **)&l->v, &l->cap, l->n, sizeof(*l->v)))
		return -ENOMEM;
	l->v[l->n++] = (struct chunk_ref){ ch->logical, ch->length, ch->type, on };
	return 0;
}

/* Present devices that can take new stripes (not being removed, not excluded). */
int volume_usable_devs(struct core *c, const struct dev *exclude)
{
	int n = 0;

	for (int i = 0; i < c->ndevs; i++)
		n += c->devs[i] != exclude && !c->devs[i]->removing;
	return n;
}
