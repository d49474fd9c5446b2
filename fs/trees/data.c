// SPDX-License-Identifier: MIT
/*
 * data.c — data extents: allocation, checksummed writes and reads,
 * reference counts (see data.h).
 *
 * Checksums: one crc32c per 4 KiB sector in EXTENT_CSUM items of the csum
 * tree (format.h).  Each data_write adds items for exactly the sectors it
 * wrote, at most CSUM_ITEM_SECTORS per item; writes inside one extent in
 * one transaction must not overlap except by rewriting the same range.
 *
 * Every sector data_write writes gets its checksum in the same
 * transaction, and nothing writes file data another way: no mount option
 * or inode flag turns checksums off, inline data lives in its (checked)
 * leaf, and preallocated ranges are file extents of their own type that
 * the items layer reads as zeros without calling data_read.  So a sector
 * data_read is asked for that has no checksum is written data whose
 * checksum was lost: it reads -EIO, as a mismatch does, never as zeros
 * (docs/engine.md, "Data checksums").
 */
#include "fs/core/core_types.h"
#include "fs/trees/chunk_tree.h"
#include "fs/trees/data.h"
#include "fs/store/alloc.h"
#include "fs/store/chunk.h"
#include "fs/store/dev.h"
#include "fs/store/dev_readahead.h"
#include "fs/store/discard.h"
#include "fs/store/meta_io.h"
#include "fs/store/parity.h"
#include "fs/trees/extent.h"
#include "fs/btree/btree.h"
#include "fs/base/crc32c.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SECT CORE_SECTORSIZE
#define CSUM_ITEM_SECTORS 256u	/* 1 KiB items: fits every node size */
#define PIECE_SECTS 256u	/* a read piece: 1 MiB, the largest FUSE READ */

uint64_t data_next_fit(struct txn *t, uint64_t len)
{
	return alloc_next_fit(txn_core(t), BG_DATA, len);
}

int data_alloc(struct txn *t, uint64_t len, uint64_t *logical)
{
	return data_alloc_goal(t, len, 0, logical);
}

int data_alloc_goal(struct txn *t, uint64_t len, uint64_t goal, uint64_t *logical)
{
	struct core *c = txn_core(t);
	struct dref d;
	int ret;

	if (!len || len % SECT)
		return -EINVAL;
	if (c->aborted)
		return -EROFS;
	ret = alloc_reserve_goal(c, BG_DATA, len, SECT, goal, logical);
	if (ret == -ENOSPC) {
		/* grow: one thread creates the chunk, the others retry after it */
		glock_lock(&c->chunk_alloc_lock, GLOCK_WRITE);
		ret = alloc_reserve(c, BG_DATA, len, SECT, logical);
		if (ret == -ENOSPC) {
			uint64_t l;
			ret = chunk_create(c, t, BG_DATA, &l);
			if (!ret)
				ret = alloc_reserve(c, BG_DATA, len, SECT, logical);
		}
		glock_unlock(&c->chunk_alloc_lock, GLOCK_WRITE);
	}
	if (ret == -ENOSPC && discard_wait_inflight(c, txn_transid(t)))
		ret = alloc_reserve(c, BG_DATA, len, SECT, logical);
	if (ret)
		return ret;
	d = (struct dref){ *logical, len, 0, -1, +1, true, true };
	ret = extent_ref_add(c, &d);
	if (ret)
		alloc_free_now(c, *logical, len);
	return ret;
}

int data_ref(struct txn *t, uint64_t logical, uint64_t len, int64_t delta)
{
	struct core *c = txn_core(t);
	struct dref d = { logical, len, 0, -1, delta, true, false };

	if (!logical || !len || len % SECT)
		return -EINVAL;
	if (c->aborted)
		return -EROFS;
	return extent_ref_add(c, &d);
}

int data_merge(struct txn *t, uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
	struct core *c = txn_core(t);
	struct chunk_copy cp[2 * CHUNK_MAX_STRIPES];

	if (a + alen != b || c->aborted)
		return 0;
	/* never across a DATA_MERGE_GRID boundary: a packed chunk of
	 * written data keeps a cut no extent crosses at least that often,
	 * for a relocation that must split it to fit (volume_reloc.c) */
	if (a / DATA_MERGE_GRID != (b + blen - 1) / DATA_MERGE_GRID)
		return 0;
	/* one extent is read and checked as one range of one chunk (and
	 * one raid10 element); raid5/6 rows are written whole, once */
	if (chunk_map_is_parity(c, a) || chunk_map_lookup(c, a, alen + blen, cp, NULL) < 0)
		return 0;
	return extent_ref_merge(c, a, alen, b, blen);
}

bool data_overwrite_ok(struct txn *t, uint64_t logical)
{
	/* nor while its chunk moves to or from raid5/6 (alloc_set_readonly):
	 * that copy takes whole rows with no writer beside it */
	return !chunk_map_is_parity(txn_core(t), logical) && !alloc_is_readonly(txn_core(t), logical);
}

bool data_rewrite_ok(struct txn *t, uint64_t logical, uint64_t len)
{
	return data_overwrite_ok(t, logical) && extent_ref_sole_new(txn_core(t), logical, len);
}

/*
 * The checksums of sectors [logical, +len) of buf, written into the
 * items that hold them (each found by key: the one keyed at the sector,
 * else the one before it), in place through a copy-on-write search: one
 * search an item (two more when the search's leaf starts past at).
 */
static int csum_patch(struct txn *t, uint64_t logical, const void *buf, uint64_t len)
{
	struct root *r = core_tree(txn_core(t), CT_CSUM);
	uint64_t at = logical, end = logical + len;

	while (at < end) {
		struct key k = { CSUM_OBJECTID, KEY_EXTENT_CSUM, at }, ik;
		struct path p;
		uint32_t size;
		int ret;

		btree_path_init(&p);
		ret = btree_search(t, r, &k, &p, 0, 1);
		if (ret == 1 && p.slots[0] > 0) {
			p.slots[0]--;	/* the item before, in the same leaf */
			ret = 0;
		} else if (ret == 1) {
			/* at slot 0: the item holding at, if any, is in the
			 * leaf before (a search lands past the end of the leaf
			 * whose last key is below at, so only a leaf whose
			 * parent's key sits below its first comes here): find
			 * its key (a copy-on-write path cannot step back), then
			 * go there */
			btree_path_release(&p);
			btree_path_init(&p);
			ret = btree_search(NULL, r, &k, &p, 0, 0);
			if (ret == 1)
				ret = btree_prev(&p);
			if (ret == 0)
				btree_item_key(&p, p.slots[0], &k);
			btree_path_release(&p);
			if (ret)
				return ret < 0 ? ret : -EUCLEAN;
			btree_path_init(&p);
			ret = btree_search(t, r, &k, &p, 0, 1);
			if (ret == 1)
				ret = -EUCLEAN;
		}
		if (ret) {
			btree_path_release(&p);
			return ret;
		}
		btree_item_key(&p, p.slots[0], &ik);
		uint8_t *item = btree_item_ptr(&p, p.slots[0], &size);
		uint64_t iend = ik.offset + (uint64_t)(size / CSUM_SIZE) * SECT;
		if (ik.objectid != CSUM_OBJECTID || ik.type != KEY_EXTENT_CSUM || iend <= at) {
			btree_path_release(&p);
			return -EUCLEAN;
		}
		for (; at < end && at < iend; at += SECT) {
			uint32_t crc = crc32c(0, (const uint8_t *)buf + (at - logical), SECT);
			memcpy(item + (at - ik.offset) / SECT * CSUM_SIZE, &crc, CSUM_SIZE);
		}
		btree_path_release(&p);
	}
	return 0;
}

int data_rewrite(struct txn *t, uint64_t ext, uint64_t ext_len, uint64_t logical,
		 const void *buf, uint64_t len)
{
	struct core *c = txn_core(t);
	int ret = 0;

	if (logical < ext || len > ext_len || logical - ext > ext_len - len || !len ||
	    len % SECT || logical % SECT)
		return -EINVAL;
	if (c->aborted)
		return -EROFS;
	if (logical != ext || len != ext_len) {
		/* a part: its sectors' checksums in the items that hold
		 * them (data_write would add items over theirs) */
		ret = meta_write_copies(c, logical, buf, len, "data block");
		if (ret)
			core_log(c, "data write at logical %llu+%llu failed: %s",
				 (unsigned long long)logical, (unsigned long long)len,
				 strerror(-ret));
		if (!ret)
			ret = csum_patch(t, logical, buf, len);
	} else {
		/* one sector: its one checksum item, keyed at logical, is
		 * replaced by data_write's update; a longer extent may hold
		 * the items of the pieces merged into it, at other keys: gone
		 * first */
		if (len > SECT)
			ret = data_csum_delete(t, logical, len);
		if (!ret)
			ret = data_write(t, logical, buf, len);
	}
	if (!ret)
		__atomic_fetch_add(&c->data_rewrites, 1, __ATOMIC_RELAXED);
	return ret;
}

int data_write(struct txn *t, uint64_t logical, const void *buf, uint64_t len)
{
	struct core *c = txn_core(t);
	uint32_t csums[CSUM_ITEM_SECTORS];
	uint32_t per_item = CSUM_ITEM_SECTORS;
	int ret;

	if (!len || len % SECT || logical % SECT)
		return -EINVAL;
	if (c->aborted)
		return -EROFS;
	if (btree_max_item_size(core_tree(c, CT_CSUM)) / CSUM_SIZE < per_item)
		per_item = btree_max_item_size(core_tree(c, CT_CSUM)) / CSUM_SIZE;
	ret = meta_write_copies(c, logical, buf, len, "data block");
	if (ret) {
		core_log(c, "data write at logical %llu+%llu failed: %s",
			 (unsigned long long)logical, (unsigned long long)len, strerror(-ret));
		return ret;
	}
	for (uint64_t off = 0; off < len;) {
		uint32_t n = (uint32_t)((len - off) / SECT);
		if (n > per_item)
			n = per_item;
		for (uint32_t i = 0; i < n; i++)
			csums[i] = crc32c(0, (const uint8_t *)buf + off + (uint64_t)i * SECT, SECT);
		struct key k = { CSUM_OBJECTID, KEY_EXTENT_CSUM, logical + off };
		ret = btree_update(t, core_tree(c, CT_CSUM), &k, csums, n * CSUM_SIZE);
		if (ret)
			return ret;
		off += (uint64_t)n * SECT;
	}
	return 0;
}

/*
 * Expected checksums of sectors [start, start + n*SECT): have[i] = 1 and
 * exp[i] set where an item covers the sector.
 */
int data_load_csums(struct core *c, uint64_t start, uint32_t n, uint32_t *exp, uint8_t *have)
{
	struct root *r = core_tree(c, CT_CSUM);
	struct key k = { CSUM_OBJECTID, KEY_EXTENT_CSUM, start }, ik;
	uint64_t end = start + (uint64_t)n * SECT;
	struct path p;
	int ret;

	memset(have, 0, n);
	btree_path_init(&p);
	ret = btree_search(NULL, r, &k, &p, 0, 0);
	if (ret < 0)
		goto out;
	if (ret == 1) {
		/* the item before may cover start */
		ret = btree_prev(&p);
		if (ret < 0)
			goto out;
		if (ret == 1) {	/* nothing before: restart at the first item */
			btree_path_release(&p);
			btree_path_init(&p);
			ret = btree_search(NULL, r, &k, &p, 0, 0);
			if (ret < 0)
				goto out;
		}
	}
	if (p.slots[0] >= (int)btree_nritems(&p)) {
		ret = btree_next(&p);
		if (ret) {
			ret = ret > 0 ? 0 : ret;
			goto out;
		}
	}
	for (;;) {
		uint32_t size;
		const uint8_t *item;

		btree_item_key(&p, p.slots[0], &ik);
		if (ik.objectid != CSUM_OBJECTID || ik.type != KEY_EXTENT_CSUM || ik.offset >= end)
			break;
		item = btree_item_ptr(&p, p.slots[0], &size);
		for (uint32_t i = 0; i < size / CSUM_SIZE; i++) {
			uint64_t s = ik.offset + (uint64_t)i * SECT;
			if (s < start || s >= end)
				continue;
			memcpy(&exp[(s - start) / SECT], item + i * CSUM_SIZE, CSUM_SIZE);
			have[(s - start) / SECT] = 1;
		}
		ret = btree_next(&p);
		if (ret)
			break;
	}
	ret = ret > 0 ? 0 : ret;
out:
	btree_path_release(&p);
	return ret;
}

/* The checksums of sectors [start, +n): from k when the caller has them
 * (data_read_csums), else from the checksum tree. */
static int csums_of(struct core *c, uint64_t start, uint32_t n, uint32_t *exp, uint8_t *have,
		    const struct data_csums *k)
{
	uint64_t i;

	if (!k)
		return data_load_csums(c, start, n, exp, have);
	if (start < k->start || (start - k->start) / SECT + n > k->n)
		return -EINVAL;
	i = (start - k->start) / SECT;
	memcpy(exp, k->exp + i, n * sizeof(*exp));
	memcpy(have, k->have + i, n * sizeof(*have));
	return 0;
}

/*
 * Read and verify whole sectors [start, start + n*SECT) into buf, in
 * place: the checksums are checked on the bytes in buf and a bad sector is
 * read again from the next copy into the same place.  n is at most
 * PIECE_SECTS, so the expected checksums fit on the stack.
 */
static int read_sectors(struct core *c, uint64_t start, uint32_t n, uint8_t *buf,
			const struct data_csums *k)
{
	struct chunk_copy cp[CHUNK_MAX_STRIPES];
	uint32_t exp[PIECE_SECTS];
	uint8_t have[PIECE_SECTS];
	int ncp, ret;

	if (n > PIECE_SECTS)
		return -EINVAL;
	if (chunk_map_is_parity(c, start)) {	/* raid5/6: rebuilt from parity as needed */
		ret = csums_of(c, start, n, exp, have, k);
		if (!ret)
			ret = parity_read(c, start, (uint64_t)n * SECT, buf, exp, have);
		for (uint32_t i = 0; !ret && i < n; i++)
			if (!have[i])
				memset(buf + (uint64_t)i * SECT, 0, SECT);	/* never written */
		goto out;
	}
	ncp = chunk_map_lookup(c, start, (uint64_t)n * SECT, cp, NULL);
	if (ncp < 0) {
		core_log(c, "data read: logical %llu+%llu is not inside one chunk",
			 (unsigned long long)start, (unsigned long long)n * SECT);
		ret = -EIO;
		goto out;
	}
	ret = csums_of(c, start, n, exp, have, k);
	if (ret)
		goto out;
	/* the first copy that reads without an I/O error is the primary */
	int first = -1;
	for (int m = 0; m < ncp && first < 0; m++) {
		ret = dev_read(cp[m].dev, cp[m].physical, buf, (uint64_t)n * SECT);
		if (!ret) {
			first = m;
			/* a sequential reader's next bytes: asked for ahead */
			dev_readahead_note(c, cp[m].dev, cp[m].physical, (uint64_t)n * SECT);
			break;
		}
		core_log(c, "data read error on %s at %llu (logical %llu+%llu): %s%s",
			 cp[m].dev->path, (unsigned long long)cp[m].physical,
			 (unsigned long long)start, (unsigned long long)n * SECT, strerror(-ret),
			 m + 1 < ncp ? ", trying the next copy" : "");
	}
	if (first < 0) {
		ret = -EIO;
		goto out;
	}
	if (first > 0) {
		__atomic_fetch_add(&c->degraded, 1, __ATOMIC_RELAXED);
		core_log(c, "data logical %llu+%llu: degraded, served from copy %d on %s",
			 (unsigned long long)start, (unsigned long long)n * SECT, first + 1,
			 cp[first].dev->path);
	}
	for (uint32_t i = 0; i < n; i++) {
		uint8_t *b = buf + (uint64_t)i * SECT;
		uint32_t found;

		if (!have[i]) {		/* written data, its checksum lost (above) */
			__atomic_fetch_add(&c->csum_errors, 1, __ATOMIC_RELAXED);
			core_log(c, "data logical %llu has no checksum: its checksum item is missing "
				 "(fsck.glassfs reports it); read error",
				 (unsigned long long)(start + (uint64_t)i * SECT));
			ret = -EIO;
			break;
		}
		found = crc32c(0, b, SECT);
		if (found == exp[i])
			continue;
		__atomic_fetch_add(&c->csum_errors, 1, __ATOMIC_RELAXED);
		dev_note_error(cp[first].dev, DEV_ERR_CORRUPTION);
		core_log(c, "data checksum error: device %s physical %llu logical %llu: expected crc32c %08x, found %08x%s",
			 cp[first].dev->path,
			 (unsigned long long)(cp[first].physical + (uint64_t)i * SECT),
			 (unsigned long long)(start + (uint64_t)i * SECT), exp[i], found,
			 first + 1 < ncp ? ", trying the next copy" : "");
		/* try the other copies of this sector */
		int ok = -1;
		for (int m = first + 1; m < ncp && ok < 0; m++) {
			if (dev_read(cp[m].dev, cp[m].physical + (uint64_t)i * SECT, b, SECT) == 0 &&
			    crc32c(0, b, SECT) == exp[i])
				ok = m;
		}
		if (ok >= 0) {
			__atomic_fetch_add(&c->degraded, 1, __ATOMIC_RELAXED);
			core_log(c, "data logical %llu: degraded, served from copy %d on %s",
				 (unsigned long long)(start + (uint64_t)i * SECT), ok + 1,
				 cp[ok].dev->path);
			continue;
		}
		ret = -EIO;
		break;
	}
out:
	return ret;
}

/*
 * Whole sectors [s, e) into out, in pieces of at most PIECE_SECTS sectors,
 * each inside one chunk and, on raid10, inside one stripe element
 * (chunk_map_piece cuts both).  An extent never crosses a chunk, but the
 * range may hold several extents back to back on disk (a file read's
 * run), and those can lie in two chunks whose logical ranges touch.
 */
static int read_whole(struct core *c, uint64_t s, uint64_t e, uint8_t *out,
		      const struct data_csums *k)
{
	int ret = 0;

	for (uint64_t pos = s; pos < e && !ret;) {
		uint64_t pe = pos + (uint64_t)PIECE_SECTS * SECT;
		if (pe > e)
			pe = e;
		pe = pos + chunk_map_piece(c, pos, pe - pos);
		ret = read_sectors(c, pos, (uint32_t)((pe - pos) / SECT), out + (pos - s), k);
		pos = pe;
	}
	return ret;
}

/*
 * The whole sectors of the range are read and verified straight in the
 * caller's buffer (for a FUSE READ, the reply buffer): no allocation and no
 * second copy.  Only a partial first or last sector goes through one sector
 * on the stack, so an unaligned range never sees bytes outside it.
 */
static int read_range(struct core *c, uint64_t logical, void *buf, uint64_t len,
		      const struct data_csums *k)
{
	uint64_t end = logical + len;
	uint64_t a = (logical + SECT - 1) & ~(uint64_t)(SECT - 1);	/* first whole sector */
	uint64_t b = end & ~(uint64_t)(SECT - 1);			/* end of the last */
	uint8_t *out = buf;
	uint8_t sect[SECT];
	int ret = 0;

	if (!len)
		return 0;
	if (!logical)
		return -EINVAL;
	if (a > b) {		/* inside one sector */
		ret = read_sectors(c, b, 1, sect, k);
		if (!ret)
			memcpy(out, sect + (logical - b), len);
		goto out;
	}
	if (logical < a) {	/* partial first sector */
		ret = read_sectors(c, a - SECT, 1, sect, k);
		if (ret)
			goto out;
		memcpy(out, sect + SECT - (a - logical), a - logical);
	}
	if (a < b) {
		ret = read_whole(c, a, b, out + (a - logical), k);
		if (ret)
			goto out;
	}
	if (b < end) {		/* partial last sector */
		ret = read_sectors(c, b, 1, sect, k);
		if (!ret)
			memcpy(out + (b - logical), sect, end - b);
	}
out:
	if (ret)
		memset(buf, 0, len);	/* never the bad bytes */
	return ret;
}

int data_read(struct core *c, uint64_t logical, void *buf, uint64_t len)
{
	return read_range(c, logical, buf, len, NULL);
}

int data_read_csums(struct core *c, uint64_t logical, void *buf, uint64_t len,
		    const struct data_csums *k)
{
	return read_range(c, logical, buf, len, k);
}

/*
 * The common case in one search: data_write put the extent's first item at
 * its start, so a deleting search for that key finds it, deletes it and
 * looks at the item after it in the leaf.  1: no item of the range is
 * left; 0: look (an extent of several items, or one whose next item is in
 * another leaf); -errno.  A freed 4 KiB extent (each random overwrite
 * frees one, issue 22) cost three searches at commit: a lookup, the
 * delete's and a lookup finding nothing more.
 */
static int csum_delete_first(struct txn *t, struct root *r, uint64_t logical, uint64_t len)
{
	struct key k = { CSUM_OBJECTID, KEY_EXTENT_CSUM, logical }, ik;
	struct path p;
	int ret;

	btree_path_init(&p);
	ret = btree_search(t, r, &k, &p, -1, 1);
	if (ret == 0) {
		ret = btree_del_items(t, r, &p, 1);
		if (ret == 0 && p.nodes[0] && p.slots[0] < (int)btree_nritems(&p)) {
			btree_item_key(&p, p.slots[0], &ik);
			ret = ik.objectid != CSUM_OBJECTID || ik.type != KEY_EXTENT_CSUM ||
			      ik.offset >= logical + len;
		}
	} else if (ret == 1) {
		ret = 0;
	}
	btree_path_release(&p);
	return ret;
}

int data_csum_delete(struct txn *t, uint64_t logical, uint64_t len)
{
	struct core *c = txn_core(t);
	struct root *r = core_tree(c, CT_CSUM);
	int first = csum_delete_first(t, r, logical, len);

	if (first)
		return first < 0 ? first : 0;
	for (;;) {
		struct key k = { CSUM_OBJECTID, KEY_EXTENT_CSUM, logical }, ik;
		struct path p;
		int ret;

		btree_path_init(&p);
		ret = btree_search(NULL, r, &k, &p, 0, 0);
		if (ret >= 0 && p.slots[0] >= (int)btree_nritems(&p)) {
			ret = btree_next(&p);
			if (ret == 1) {		/* no item at or after logical */
				btree_path_release(&p);
				return 0;
			}
		}
		if (ret < 0) {
			btree_path_release(&p);
			return ret;
		}
		btree_item_key(&p, p.slots[0], &ik);
		btree_path_release(&p);
		if (ik.objectid != CSUM_OBJECTID || ik.type != KEY_EXTENT_CSUM ||
		    ik.offset >= logical + len)
			return 0;
		ret = btree_delete(t, r, &ik);
		if (ret)
			return ret;
	}
}
