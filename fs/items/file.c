// SPDX-License-Identifier: MIT
/*
 * file.c — file data over copy-on-write extents (see file.h and the
 * EXTENT_DATA table in items_format.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs/items/file.h"
#include "fs/trees/data.h"
#include "fs/trees/data_span.h"
#include "fs/items/subvol.h"
#include "fs/items/log.h"
#include "fs/txn/txn.h"

#define BS		CORE_SECTORSIZE
#define RDOWN(x)	((x) & ~(uint64_t)(BS - 1))
#define RUP(x)		(((x) + BS - 1) & ~(uint64_t)(BS - 1))
#define MAX_EXTENT	(1024ULL * 1024)	/* bytes per data extent on write */
#define MAX_PREALLOC	(64ULL * 1024 * 1024)
#define BATCH		64

/* A copied file-extent item. */
struct fext {
	uint64_t off;		/* file offset (key) */
	uint64_t len;		/* file bytes covered */
	uint8_t type;
	uint64_t disk_logical, disk_len, doff;
	uint64_t generation;
	char *idata;		/* inline bytes (len of them), malloc'd */
};

static void fext_free(struct fext *v, int n)
{
	for (int i = 0; i < n; i++) {
		free(v[i].idata);
		v[i].idata = NULL;
	}
}

/* Parse the item at the path into e; 0, or -EIO for a malformed item. */
static int fext_parse(const struct path *p, uint64_t off, struct fext *e)
{
	uint32_t size;
	const struct file_extent *fe = btree_item_ptr(p, p->slots[0], &size);

	memset(e, 0, sizeof(*e));
	e->off = off;
	if (size < FE_INLINE_HDR)
		return -EIO;
	e->type = fe->type;
	e->generation = fe->generation;
	if (fe->type == FE_INLINE) {
		uint64_t n = size - FE_INLINE_HDR;
		if (fe->ram_bytes < n)
			n = fe->ram_bytes;
		e->len = n;
		e->idata = malloc(n ? n : 1);
		if (!e->idata)
			return -ENOMEM;
		memcpy(e->idata, (const char *)fe + FE_INLINE_HDR, n);
		return 0;
	}
	if (size < sizeof(*fe) || (fe->type != FE_REG && fe->type != FE_PREALLOC))
		return -EIO;
	e->len = fe->num_bytes;
	e->disk_logical = fe->disk_logical;
	e->disk_len = fe->disk_len;
	e->doff = fe->offset;
	return 0;
}

static bool is_ext(const struct key *k, uint64_t ino)
{
	return k->objectid == ino && k->type == KEY_EXTENT_DATA;
}

/*
 * Copy up to max file-extent items of ino that overlap [start, end), in
 * offset order.  Returns the count or -errno.
 */
static int ext_collect(struct fsctx *fs, uint64_t ino, uint64_t start, uint64_t end,
		       struct fext *v, int max)
{
	struct path p;
	struct key k = mkkey(ino, KEY_EXTENT_DATA, start), ik;
	int n = 0, ret;

	btree_path_init(&p);
	ret = btree_search(NULL, fs->root, &k, &p, 0, 0);
	if (ret < 0)
		goto out;
	if (ret == 1) {
		/* an item starting before start may reach into the range */
		int r = btree_prev(&p);
		if (r < 0) {
			ret = r;
			goto out;
		}
		if (r == 0) {
			btree_item_key(&p, p.slots[0], &ik);
			if (is_ext(&ik, ino)) {
				ret = fext_parse(&p, ik.offset, &v[n]);
				if (ret < 0)
					goto out;
				if (v[n].off + v[n].len > start)
					n++;
				else
					fext_free(&v[n], 1);
			}
			/* the item after the last one below k is the first at or
			 * past it: a step in the leaf held, not a second search
			 * from the root (half of a 4 KiB write's lookups) */
			ret = btree_next(&p);
		} else {
			btree_path_release(&p);
			btree_path_init(&p);
			ret = fsctx_search_ge(fs, &k, &p);
		}
	}
	while (ret == 0 && n < max) {
		btree_item_key(&p, p.slots[0], &ik);
		if (!is_ext(&ik, ino) || ik.offset >= end)
			break;
		ret = fext_parse(&p, ik.offset, &v[n]);
		if (ret < 0)
			goto out;
		n++;
		ret = btree_next(&p);
	}
	ret = ret < 0 ? ret : n;
out:
	btree_path_release(&p);
	if (ret < 0)
		fext_free(v, n);
	return ret;
}

static struct file_extent fe_item(struct txn *t, const struct fext *e)
{
	return (struct file_extent){
		.generation = txn_transid(t),
		.ram_bytes = e->disk_len,
		.type = e->type,
		.disk_logical = e->disk_logical,
		.disk_len = e->disk_len,
		.offset = e->doff,
		.num_bytes = e->len,
	};
}

static int fe_write(struct txn *t, struct fsctx *fs, uint64_t ino, const struct fext *e)
{
	struct file_extent fe = fe_item(t, e);
	struct key k = mkkey(ino, KEY_EXTENT_DATA, e->off);
	log_note_extent(t, ino, e->off);
	return btree_update(t, fs->root, &k, &fe, sizeof(fe));
}

/*
 * Write the new items a and b (a->off < b->off, neither present, nothing
 * between them) in one descent when they land in one leaf: a write in
 * the middle of an extent inserts its own item and the old extent's tail
 * side by side (issue 22: one search of three saved).
 */
static int fe_write_two(struct txn *t, struct fsctx *fs, uint64_t ino, const struct fext *a,
			const struct fext *b)
{
	struct file_extent fa = fe_item(t, a), fb = fe_item(t, b);
	struct key ka = mkkey(ino, KEY_EXTENT_DATA, a->off), kb = mkkey(ino, KEY_EXTENT_DATA, b->off);
	int ret;

	log_note_extent(t, ino, a->off);
	log_note_extent(t, ino, b->off);
	ret = btree_insert_two(t, fs->root, &ka, &fa, sizeof(fa), &kb, &fb, sizeof(fb));
	return ret == 1 ? fe_write(t, fs, ino, a) : ret;
}

static int fail(struct txn *t, int err, const char *where)
{
	txn_abort(t, err, where);
	return err;
}

/*
 * Remove the file's mapping of [start, end) held by the items v[0..n)
 * (those ext_collect found overlapping it), splitting items that straddle
 * an edge.  Inline items overlapping the range are deleted whole.
 * fill: the item the caller maps [start, end) with next, or NULL.  A
 * regular item starting at start is left for the caller's fe_write to
 * overwrite in place: one search instead of a delete and an insert (a
 * random 4 KiB overwrite of a block an earlier one split off, issue 22);
 * its reference is dropped or kept as if it were deleted.  An item
 * straddling both edges: fill goes in here with the tail, in one descent
 * (*filled set).
 */
static int drop_items(struct txn *t, struct fsctx *fs, struct inode *ip,
		      uint64_t start, uint64_t end, const struct fext *v, int n,
		      const struct fext *fill, bool *filled)
{
	int ret = 0;
	bool refill = fill != NULL;

	for (int i = 0; i < n && ret == 0; i++) {
		const struct fext *e = &v[i];
		uint64_t eend = e->off + e->len;
		struct key k = mkkey(ip->ino, KEY_EXTENT_DATA, e->off);

		if (e->type == FE_INLINE) {
			log_note_extent(t, ip->ino, e->off);
			ret = btree_delete(t, fs->root, &k);
			ip->item.nbytes -= ip->item.nbytes >= e->len ? e->len : ip->item.nbytes;
			continue;
		}
		uint64_t cut0 = e->off > start ? e->off : start;
		uint64_t cut1 = eend < end ? eend : end;
		ip->item.nbytes -= ip->item.nbytes >= cut1 - cut0 ? cut1 - cut0 : ip->item.nbytes;
		if (e->off < start) {
			struct fext front = *e;
			front.len = start - e->off;
			ret = fe_write(t, fs, ip->ino, &front);
			if (ret == 0 && eend > end) {
				struct fext tail = *e;
				tail.off = end;
				tail.doff = e->doff + (end - e->off);
				tail.len = eend - end;
				if (fill && fill->off == start && fill->off + fill->len == end) {
					ret = fe_write_two(t, fs, ip->ino, fill, &tail);
					*filled = true;
				} else {
					ret = fe_write(t, fs, ip->ino, &tail);
				}
				if (ret == 0)
					ret = data_ref(t, e->disk_logical, e->disk_len, 1);
			}
		} else {
			log_note_extent(t, ip->ino, e->off);
			if (!(refill && e->off == start))
				ret = btree_delete(t, fs->root, &k);
			if (ret == 0 && eend > end) {
				struct fext tail = *e;
				tail.off = end;
				tail.doff = e->doff + (end - e->off);
				tail.len = eend - end;
				ret = fe_write(t, fs, ip->ino, &tail);
			} else if (ret == 0) {
				ret = data_ref(t, e->disk_logical, e->disk_len, -1);
			}
		}
	}
	return ret;
}

/*
 * Remove the file's mapping of [start, end) (block-aligned, end may be
 * UINT64_MAX), BATCH items at a time.
 */
static int drop_range(struct txn *t, struct fsctx *fs, struct inode *ip,
		      uint64_t start, uint64_t end)
{
	struct fext v[BATCH];
	int n, ret;

	do {
		n = ext_collect(fs, ip->ino, start, end, v, BATCH);
		if (n < 0)
			return n;
		ret = drop_items(t, fs, ip, start, end, v, n, NULL, NULL);
		fext_free(v, n);
		if (ret < 0)
			return ret;
	} while (n == BATCH);
	return 0;
}

/*
 * The disk byte of file offset x if extent e (regular or preallocated)
 * continued over it, or 0.
 */
static uint64_t ext_disk_at(const struct fext *e, uint64_t x)
{
	uint64_t base = e->disk_logical + e->doff;	/* disk byte of file offset e->off */

	if (e->type == FE_INLINE || !e->disk_logical)
		return 0;
	if (x >= e->off)
		return base + (x - e->off);
	return base > e->off - x ? base - (e->off - x) : 0;
}

/* The extent item covering file byte x, or none: 1 and *e, 0, -errno. */
static int ext_at(struct fsctx *fs, struct inode *ip, uint64_t x, struct fext *e)
{
	int n = ext_collect(fs, ip->ino, x, x + 1, e, 1);

	if (n == 1 && (e->off > x || e->off + e->len <= x)) {
		fext_free(e, 1);
		n = 0;
	}
	return n;
}

/*
 * Where on disk the extent for [a, a+len) should go: where the file's
 * layout continues, as ext4's goal block.  The writeback cache sends a
 * sequential file's pieces from several threads, which take the inode
 * lock in any order (up to ~24 MiB apart, traced), so each piece looks
 * for its own place beside its neighbours rather than after whatever
 * came last:
 *   - right after the last piece written (the sequential case, no
 *     lookup, for pieces of any size);
 *   - after the extent holding the byte before a;
 *   - before the extent holding the byte after the range;
 *   - where the last piece written puts it by the distance in the file,
 *     within GOAL_REACH (neighbours still on their way);
 *   - a file with none of these starts at the allocator's next-fit point
 *     plus a, so the pieces before a find room in front of it.
 * 0: no goal (a sparse write far away, or a piece under GOAL_MIN bytes).
 * Only a hint: a goal run that is taken falls back to any free space
 * (alloc_reserve_goal).  Writeback sends a sequential file's dirty pages
 * as pieces of up to 1 MiB; a small write elsewhere stays with next-fit:
 * random 4 KiB writes go to the disk one after another instead of being
 * scattered by goals around their old blocks, and pay no B-tree search.
 */
#define GOAL_REACH	(64 * MAX_EXTENT)
#define GOAL_MIN	(64 * 1024)
static uint64_t data_goal(struct txn *t, struct fsctx *fs, struct inode *ip, uint64_t a,
			  uint64_t len)
{
	uint64_t eoff = ip->data_end_off, edisk = ip->data_end_disk, g = 0;
	struct fext e;

	if (edisk && eoff == a)
		return edisk;
	if (len < GOAL_MIN)
		return 0;
	if (a && ext_at(fs, ip, a - 1, &e) == 1) {
		g = ext_disk_at(&e, a);
		fext_free(&e, 1);
	} else if (ext_at(fs, ip, a + len, &e) == 1) {
		g = ext_disk_at(&e, a);
		fext_free(&e, 1);
	}
	if (g)
		return g;
	if (edisk) {
		if (a >= eoff)
			return a - eoff <= GOAL_REACH ? edisk + (a - eoff) : 0;
		return eoff - a <= GOAL_REACH && eoff - a < edisk ? edisk - (eoff - a) : 0;
	}
	g = a < GOAL_REACH ? data_next_fit(t, len) : 0;
	return g ? g + a : 0;
}

/*
 * The new extent [logical, +len) for file bytes [a, a+len) continues the
 * file's extent before a on disk and in the file: make them one extent and its
 * item one item (data_merge), so a sequential write makes extents of up
 * to DATA_MERGE_GRID, not one per 1 MiB WRITE (issue 22: 259 extents for
 * 256 MiB).  Only an item of this transaction that maps its whole
 * extent, and none an fsync log record may hold (file_fsync_begin): a
 * replay claims the extent's length as the record says it.  1 merged
 * (the item written), 0 not, -errno.
 */
static int merge_last(struct txn *t, struct fsctx *fs, struct inode *ip, uint64_t a,
		      uint64_t logical, uint64_t len)
{
	struct fext p;
	int ret;

	/* the next piece of a sequential write, or any large one (the
	 * writeback cache's pieces come out of order; a 4 KiB write pays
	 * no lookup) */
	if (!a || ip->fsyncing || txn_transid(t) <= ip->fsync_transid ||
	    (len < GOAL_MIN && (a != ip->data_end_off || logical != ip->data_end_disk)))
		return 0;
	ret = ext_at(fs, ip, a - 1, &p);
	if (ret <= 0)
		return ret;
	ret = 0;
	if (p.type == FE_REG && p.generation == txn_transid(t) && !p.doff &&
	    p.len == p.disk_len && p.off + p.len == a && p.disk_logical + p.disk_len == logical)
		ret = data_merge(t, p.disk_logical, p.disk_len, logical, len);
	if (ret == 1) {
		p.len += len;
		p.disk_len += len;
		int r = fe_write(t, fs, ip->ino, &p);
		if (r < 0)
			ret = r;
	}
	fext_free(&p, 1);
	return ret;
}

/*
 * Map [a, a+len) (aligned) to a new extent holding buf.  old[0..nold):
 * the items overlapping the range, as the caller collected them (nold
 * under BATCH: all of them), or old NULL: looked up here.
 */
static int write_blocks_over(struct txn *t, struct fsctx *fs, struct inode *ip,
			     uint64_t a, const void *buf, uint64_t len,
			     const struct fext *old, int nold)
{
	uint64_t logical;
	bool filled = false;
	int ret = data_alloc_goal(t, len, data_goal(t, fs, ip, a, len), &logical);

	if (ret < 0)
		return ret;
	struct fext e = { .off = a, .len = len, .type = FE_REG,
			  .disk_logical = logical, .disk_len = len };
	ret = data_write(t, logical, buf, len);
	if (ret == 0 && old && nold < BATCH)
		ret = drop_items(t, fs, ip, a, a + len, old, nold, &e, &filled);
	else if (ret == 0)
		ret = drop_range(t, fs, ip, a, a + len);
	if (ret == 0 && !filled) {
		ret = merge_last(t, fs, ip, a, logical, len);
		if (ret == 1 && old && nold < BATCH) {
			/* drop_items left an item starting at a for e to
			 * overwrite (its reference already dropped or passed to
			 * its tail); merged, e is not written: delete it */
			for (int i = 0; i < nold && ret == 1; i++)
				if (old[i].off == a && old[i].type != FE_INLINE) {
					struct key k = mkkey(ip->ino, KEY_EXTENT_DATA, a);
					ret = btree_delete(t, fs->root, &k);
					ret = ret ? ret : 1;
				}
		}
		ret = ret == 0 ? fe_write(t, fs, ip->ino, &e) : ret < 0 ? ret : 0;
	}
	if (ret < 0)
		return fail(t, ret, "file write_blocks");
	ip->item.nbytes += len;
	ip->data_end_off = a + len;
	ip->data_end_disk = logical + len;
	return 0;
}

void file_fsync_begin(struct inode *ip)
{
	inode_lock(ip);
	ip->fsyncing++;
	inode_unlock(ip);
}

void file_fsync_end(struct fsctx *fs, struct inode *ip)
{
	/* the fsync's capture ran in a transaction no newer than this */
	uint64_t newest = txn_newest(fs->core);

	inode_lock(ip);
	ip->fsyncing--;
	if (newest > ip->fsync_transid)
		ip->fsync_transid = newest;
	inode_unlock(ip);
}

static int write_blocks(struct txn *t, struct fsctx *fs, struct inode *ip,
			uint64_t a, const void *buf, uint64_t len)
{
	return write_blocks_over(t, fs, ip, a, buf, len, NULL, 0);
}

/*
 * Write [a, a+len) (aligned) in place when extents of the running
 * transaction map all of it, each item mapping its whole extent: the
 * blocks random overwrites got from their copy on write earlier in the
 * transaction (issue 22: ~58% of a 5 s run of random 4 KiB writes), one
 * or several (the writeback cache merges adjacent dirty pages into one
 * WRITE, and each page may have been copied by a WRITE of its own), or
 * a part of a longer one (a file written in this transaction and then
 * overwritten here and there: copying that part on write split the
 * extent, and its pieces, each a reference of one extent, were never
 * in place again).  No commit points at them and only this file's one
 * item ever did (data_rewrite_ok, asked of every extent before any is
 * written); no fsync log record may hold them either — a crash would
 * replay the record with the checksums of the bytes written over — so
 * never once the file was fsynced in this transaction (merge_last's
 * rule, ip->fsync_transid).  Copying on write again cost a new block (in
 * a sparse image, a hole: the host allocates), two reference changes
 * per extent and the items' rewrite (three items for a split), and grew
 * the image by the write until the commit.  In place, the items stay as
 * they are: nothing for log_note_extent.  v[0..n): the items overlapping
 * the range.  1 written, 0 not (the caller copies on write), -errno.
 */
static int write_again(struct txn *t, struct inode *ip, uint64_t a, const char *buf,
		       uint64_t len, const struct fext *v, int n)
{
	uint64_t cur = a, end = a + len;
	int ret = 0;

	if (n < 1 || ip->fsyncing || txn_transid(t) <= ip->fsync_transid)
		return 0;
	for (int i = 0; i < n && cur < end; i++) {
		const struct fext *e = &v[i];
		if (e->type != FE_REG || e->generation != txn_transid(t) || e->off > cur ||
		    e->off + e->len <= cur || e->doff || e->disk_len != e->len ||
		    !data_rewrite_ok(t, e->disk_logical, e->disk_len))
			return 0;
		cur = e->off + e->len;
	}
	if (cur < end)
		return 0;
	for (int i = 0; i < n && ret == 0; i++) {
		const struct fext *e = &v[i];
		uint64_t s = e->off > a ? e->off : a;
		uint64_t x = e->off + e->len < end ? e->off + e->len : end;
		if (s < x)
			ret = data_rewrite(t, e->disk_logical, e->disk_len,
					   e->disk_logical + (s - e->off), buf + (s - a), x - s);
	}
	return ret < 0 ? fail(t, ret, "file write again") : 1;
}

/*
 * Write [a, a+len) (aligned) in place when PREALLOC extents map all of it:
 * fallocate reserved those blocks, so the write must not need new space
 * (no ENOSPC).  Safe against a crash: the committed items still say
 * PREALLOC (reads as zeros) until this transaction's items, which turn
 * the written part into REG, are committed.  v[0..n): the items
 * overlapping the range (ext_collect, up to BATCH).  Returns 1 when
 * written, 0 when the range is not all preallocated (the caller copies
 * on write), -errno.
 */
static int write_prealloc(struct txn *t, struct fsctx *fs, struct inode *ip,
			  uint64_t a, const char *buf, uint64_t len, const struct fext *v, int n)
{
	uint64_t end = a + len, cur = a;
	int ret = 0;

	if (n == 0)
		return 0;	/* a hole or past the end: nothing preallocated */
	for (int i = 0; i < n; i++)
		if (v[i].type != FE_PREALLOC || v[i].off > cur ||
		    (cur = v[i].off + v[i].len) < v[i].off ||
		    !subvol_extent_exclusive(fs, v[i].disk_logical) ||	/* a snapshot may share it */
		    !data_overwrite_ok(t, v[i].disk_logical))	/* raid5/6: never in place */
			goto cow;
	if (cur < end)
		goto cow;
	for (int i = 0; i < n && ret == 0; i++) {
		const struct fext *e = &v[i];
		uint64_t s = e->off > a ? e->off : a;
		uint64_t x = e->off + e->len < end ? e->off + e->len : end;
		uint64_t disk = e->disk_logical + e->doff + (s - e->off);
		int pieces = 0;

		log_note_inplace(t, disk, x - s);	/* before the write: an fsync's record logs it */
		ret = data_write(t, disk, buf + (s - a), x - s);
		if (ret == 0 && e->off < s) {
			struct fext front = *e;
			front.len = s - e->off;
			ret = fe_write(t, fs, ip->ino, &front);	/* key e->off: replaces */
			pieces++;
		}
		if (ret == 0) {
			struct fext mid = *e;
			mid.type = FE_REG;
			mid.off = s;
			mid.doff = e->doff + (s - e->off);
			mid.len = x - s;
			ret = fe_write(t, fs, ip->ino, &mid);
			pieces++;
		}
		if (ret == 0 && x < e->off + e->len) {
			struct fext tail = *e;
			tail.off = x;
			tail.doff = e->doff + (x - e->off);
			tail.len = e->off + e->len - x;
			ret = fe_write(t, fs, ip->ino, &tail);
			pieces++;
		}
		if (ret == 0 && pieces > 1)	/* each item holds one reference */
			ret = data_ref(t, e->disk_logical, e->disk_len, pieces - 1);
	}
	return ret < 0 ? fail(t, ret, "file write into prealloc") : 1;
cow:
	return 0;
}

/*
 * A run of file bytes whose disk addresses follow each other, read by one
 * data_read: extents written one after another (the writeback cache sends
 * a sequential writer's bytes as WRITEs of any size, each its own extent)
 * lie back to back on disk, and reading them as one range costs one
 * checksum lookup and one device read per 1 MiB instead of one per extent.
 * data_read verifies whole blocks in out itself: no copy or allocation.
 * With spans (file_read_spans) the run becomes a span of the reply instead,
 * and the bytes put in buf (holes, inline data) spans of memory.
 */
struct read_run {
	uint64_t s, x;		/* file bytes [s, x); s == x: empty */
	uint64_t disk;		/* disk address of byte s */
};

/*
 * The spans cannot serve this read (an add said -EAGAIN: too many pieces
 * or sectors, raid5/6): what they hold is read into buf now, and the rest
 * of the walk reads into buf itself (*spp = NULL), so the file's extent
 * items are walked once whichever way the read goes.  buf is the reply's
 * first byte.
 */
static int spans_give_up(struct fsctx *fs, struct data_spans **spp, char *buf)
{
	int ret = data_spans_read(fs->core, *spp, buf);

	data_spans_fallback(fs->core);
	*spp = NULL;
	return ret;
}

static int run_flush(struct fsctx *fs, struct read_run *r, char *buf, uint64_t off,
		     struct data_spans **spp)
{
	int ret = 0;

	if (r->x > r->s && *spp) {
		ret = data_spans_add(fs->core, *spp, r->disk, r->x - r->s);
		if (ret == -EAGAIN)
			ret = spans_give_up(fs, spp, buf);
	}
	if (r->x > r->s && !*spp && !ret)
		ret = data_read(fs->core, r->disk, buf + (r->s - off), r->x - r->s);
	r->s = r->x = 0;
	return ret;
}

/* Add the bytes [s, x) of extent e to the run, flushing it first when they
 * do not continue it on disk. */
static int run_add(struct fsctx *fs, struct read_run *r, const struct fext *e, uint64_t s,
		   uint64_t x, char *buf, uint64_t off, struct data_spans **spp)
{
	uint64_t disk = e->disk_logical + e->doff + (s - e->off);
	int ret = 0;

	if (r->x > r->s && (r->x != s || r->disk + (r->x - r->s) != disk))
		ret = run_flush(fs, r, buf, off, spp);
	if (r->x == r->s) {
		r->s = s;
		r->disk = disk;
	}
	r->x = x;
	return ret;
}

/* Bytes [s, x) put in buf: a span of memory too, after the run before them. */
static int mem_add(struct fsctx *fs, struct read_run *r, char *buf, uint64_t off, uint64_t s,
		   uint64_t x, struct data_spans **spp)
{
	int ret;

	if (!*spp)
		return 0;
	ret = run_flush(fs, r, buf, off, spp);
	if (ret || !*spp)
		return ret;
	ret = data_spans_add_mem(*spp, buf + (s - off), x - s);
	return ret == -EAGAIN ? spans_give_up(fs, spp, buf) : ret;
}

static ssize_t read_into(struct fsctx *fs, struct inode *ip, void *buf, size_t len, uint64_t off,
			 struct data_spans *spans)
{
	uint64_t size = ip->item.size, end, cur, filled;
	struct read_run run = { 0, 0, 0 };
	struct data_spans *sp = spans;	/* NULL once the spans gave up */
	struct fext v[BATCH];
	int n, ret = 0;

	if (off >= size || len == 0)
		return 0;
	if (len > size - off)
		len = size - off;
	end = off + len;
	cur = filled = off;	/* buf is written up to filled: holes are zeroed as met */
	do {
		n = ext_collect(fs, ip->ino, cur, end, v, BATCH);
		if (n < 0) {
			ret = n;
			break;
		}
		for (int i = 0; i < n && ret == 0; i++) {
			struct fext *e = &v[i];
			uint64_t s = e->off > off ? e->off : off;
			uint64_t x = e->off + e->len < end ? e->off + e->len : end;
			if (s >= x)
				continue;
			if (s > filled) {
				memset((char *)buf + (filled - off), 0, s - filled);
				ret = mem_add(fs, &run, buf, off, filled, s, &sp);
				if (ret)
					break;
			}
			if (e->type == FE_INLINE) {
				memcpy((char *)buf + (s - off), e->idata + (s - e->off), x - s);
				ret = mem_add(fs, &run, buf, off, s, x, &sp);
			} else if (e->type == FE_REG) {
				ret = run_add(fs, &run, e, s, x, buf, off, &sp);
			} else {	/* preallocated: reads as zeroes */
				memset((char *)buf + (s - off), 0, x - s);
				ret = mem_add(fs, &run, buf, off, s, x, &sp);
			}
			if (x > filled)
				filled = x;
			cur = e->off + e->len;
		}
		fext_free(v, n);
	} while (ret == 0 && n == BATCH && cur < end);
	if (ret == 0)
		ret = run_flush(fs, &run, buf, off, &sp);
	if (ret == 0 && filled < end) {
		memset((char *)buf + (filled - off), 0, end - filled);
		ret = mem_add(fs, &run, buf, off, filled, end, &sp);
	}
	if (ret == 0 && spans && !sp)	/* gave up: the reply is buf */
		data_spans_set_mem(spans, buf, len);
	return ret < 0 ? ret : (ssize_t)len;
}

ssize_t file_read(struct fsctx *fs, struct inode *ip, void *buf, size_t len, uint64_t off)
{
	return read_into(fs, ip, buf, len, off, NULL);
}

ssize_t file_read_spans(struct fsctx *fs, struct inode *ip, void *buf, size_t len, uint64_t off,
			struct data_spans *sp)
{
	data_spans_init(sp);
	return read_into(fs, ip, buf, len, off, sp);
}

/*
 * The file's only item if it is inline: 1 and *e, 0 if not inline.
 * ip->no_inline remembers a 0 until put_inline (the only writer of inline
 * items) runs: every write asks, and a random write would otherwise pay
 * a search from the root for it each time (issue 22).
 */
static int get_inline(struct fsctx *fs, struct inode *ip, struct fext *e)
{
	int n;

	if (ip->no_inline)
		return 0;
	n = ext_collect(fs, ip->ino, 0, UINT64_MAX, e, 1);
	if (n < 0)
		return n;
	if (n == 1 && e->type == FE_INLINE && e->off == 0)
		return 1;
	if (n == 1)
		fext_free(e, 1);
	ip->no_inline = true;
	return 0;
}

static int has_items(struct fsctx *fs, struct inode *ip)
{
	struct fext e;
	int n = ext_collect(fs, ip->ino, 0, UINT64_MAX, &e, 1);

	if (n > 0)
		fext_free(&e, 1);
	return n;
}

static int put_inline(struct txn *t, struct fsctx *fs, struct inode *ip,
		      const char *data, uint64_t len, uint64_t old_len)
{
	size_t sz = FE_INLINE_HDR + len;
	struct file_extent *fe = malloc(sz);
	struct key k = mkkey(ip->ino, KEY_EXTENT_DATA, 0);
	int ret;

	if (!fe)
		return -ENOMEM;
	memset(fe, 0, FE_INLINE_HDR);
	fe->generation = txn_transid(t);
	fe->ram_bytes = len;
	fe->type = FE_INLINE;
	memcpy((char *)fe + FE_INLINE_HDR, data, len);
	ip->no_inline = false;
	log_note_extent(t, ip->ino, 0);
	ret = btree_update(t, fs->root, &k, fe, (uint32_t)sz);
	free(fe);
	if (ret == 0)
		ip->item.nbytes = ip->item.nbytes - (ip->item.nbytes >= old_len ? old_len : 0) + len;
	return ret;
}

/* Turn an inline file into one regular block extent at 0. */
static int uninline(struct txn *t, struct fsctx *fs, struct inode *ip)
{
	struct fext e;
	int ret = get_inline(fs, ip, &e);

	if (ret <= 0)
		return ret;
	uint64_t blen = RUP(e.len ? e.len : 1);
	char *buf = calloc(1, blen);
	if (!buf) {
		fext_free(&e, 1);
		return -ENOMEM;
	}
	memcpy(buf, e.idata, e.len);
	fext_free(&e, 1);
	ret = write_blocks(t, fs, ip, 0, buf, blen);	/* drops the inline item */
	free(buf);
	return ret;
}

/*
 * Fill buf with the blocks [pa, pb) as a write of [ws, we) from src leaves
 * them: the file's bytes around the write (zeros past its end), src's
 * within.
 */
static int stage_piece(struct fsctx *fs, struct inode *ip, char *buf, uint64_t pa,
		       uint64_t pb, const char *src, uint64_t ws, uint64_t we)
{
	memset(buf, 0, pb - pa);
	if (ws > pa) {		/* head of the first block */
		ssize_t r = file_read(fs, ip, buf, ws - pa, pa);
		if (r < 0)
			return (int)r;
	}
	if (we < pb && we < ip->item.size) {	/* tail of the last block */
		ssize_t r = file_read(fs, ip, buf + (we - pa), pb - we, we);
		if (r < 0)
			return (int)r;
	}
	memcpy(buf + (ws - pa), src, we - ws);
	return 0;
}

ssize_t file_write(struct txn *t, struct fsctx *fs, struct inode *ip,
		   const void *ubuf, size_t len, uint64_t off)
{
	uint64_t end = off + len, size = ip->item.size;
	uint64_t newsize = end > size ? end : size;
	int ret;

	if (len == 0)
		return 0;
	if (off >= FILE_MAX_SIZE || end > FILE_MAX_SIZE || end < off)
		return -EFBIG;

	if (newsize <= fs->inline_max) {
		struct fext e;
		int inl = get_inline(fs, ip, &e);
		if (inl < 0)
			return inl;
		if (inl || has_items(fs, ip) == 0) {
			char *buf = calloc(1, newsize);
			uint64_t old = inl ? e.len : 0;
			if (!buf) {
				if (inl)
					fext_free(&e, 1);
				return -ENOMEM;
			}
			if (inl) {
				memcpy(buf, e.idata, e.len < newsize ? e.len : newsize);
				fext_free(&e, 1);
			}
			memcpy(buf + off, ubuf, len);
			ret = put_inline(t, fs, ip, buf, newsize, old);
			free(buf);
			if (ret < 0)
				return ret == -ENOSPC ? ret : fail(t, ret, "file inline write");
			ip->item.size = newsize;
			return (ssize_t)len;
		}
	}

	/* an inline file's data moves to a block first: an ENOSPC after this
	 * leaves that move (the same bytes, counted in nbytes; the caller
	 * stores the inode item, fsops_write_as) and nothing of the write */
	ret = uninline(t, fs, ip);
	if (ret < 0)
		return ret;

	uint64_t pa = RDOWN(off);
	size_t done = 0;
	char *buf = NULL;
	while (pa < end) {
		uint64_t pb = pa + MAX_EXTENT;
		if (pb > RUP(end))
			pb = RUP(end);
		uint64_t ws = off > pa ? off : pa, we = end < pb ? end : pb;
		uint64_t plen = pb - pa;
		const char *src = (const char *)ubuf + (pa - off);
		/* whole blocks (every piece of an aligned write, the writeback
		 * cache's case) go from the caller's bytes: staging them cost a
		 * memset and a memcpy of each MiB, 12% of the daemon's CPU in a
		 * sequential write (issue 22) */
		if (ws > pa || we < pb) {
			if (!buf && !(buf = malloc(MAX_EXTENT))) {
				ret = -ENOMEM;
				break;
			}
			ret = stage_piece(fs, ip, buf, pa, pb, (const char *)ubuf + (ws - off),
					  ws, we);
			if (ret < 0)
				break;
			src = buf;
		}
		/* one lookup of the items under the piece serves both the
		 * prealloc check and the copy on write's drop */
		struct fext v[BATCH];
		int n = ext_collect(fs, ip->ino, pa, pb, v, BATCH);
		if (n < 0) {
			ret = n;
			break;
		}
		ret = write_again(t, ip, pa, src, plen, v, n);
		if (ret == 0)
			ret = write_prealloc(t, fs, ip, pa, src, plen, v, n);
		if (ret == 0)
			ret = write_blocks_over(t, fs, ip, pa, src, plen, v, n);
		fext_free(v, n);
		if (ret < 0)
			break;
		done += we - ws;
		if (we > ip->item.size)
			ip->item.size = we;
		pa = pb;
	}
	free(buf);
	if (done == 0 && ret < 0)
		return ret;
	return (ssize_t)done;
}

/* Zero [from, to) inside the block at blk if a regular extent maps it. */
static int zero_partial(struct txn *t, struct fsctx *fs, struct inode *ip,
			uint64_t blk, uint64_t from, uint64_t to)
{
	struct fext e;
	int n = ext_collect(fs, ip->ino, blk, blk + BS, &e, 1);
	char *buf;
	int ret;

	if (n <= 0)
		return n;
	bool reg = e.type == FE_REG;
	fext_free(&e, 1);
	if (!reg)
		return 0;
	buf = calloc(1, BS);
	if (!buf)
		return -ENOMEM;
	ssize_t r = file_read(fs, ip, buf, BS, blk);
	ret = r < 0 ? (int)r : 0;
	if (ret == 0) {
		memset(buf + (from - blk), 0, to - from);
		ret = write_blocks(t, fs, ip, blk, buf, BS);
	}
	free(buf);
	return ret;
}

int file_truncate(struct txn *t, struct fsctx *fs, struct inode *ip, uint64_t size)
{
	uint64_t old = ip->item.size;
	int ret;

	if (size > FILE_MAX_SIZE)
		return -EFBIG;
	if (size > old) {
		ip->item.size = size;
		return 0;
	}
	/* to the size it has: no data moves, but blocks preallocated past
	 * EOF (fallocate KEEP_SIZE) go, as tmpfs and ext4 free them on any
	 * truncate that does not grow the file ('>f' on an empty file) */
	struct fext e;
	int inl = get_inline(fs, ip, &e);
	if (inl < 0)
		return inl;
	if (inl && size == old) {
		fext_free(&e, 1);
		return 0;
	}
	if (inl) {
		if (size == 0) {
			struct key k = mkkey(ip->ino, KEY_EXTENT_DATA, 0);
			log_note_extent(t, ip->ino, 0);
			ret = btree_delete(t, fs->root, &k);
			if (ret == 0)
				ip->item.nbytes -= ip->item.nbytes >= e.len ? e.len : ip->item.nbytes;
		} else {
			ret = put_inline(t, fs, ip, e.idata, e.len < size ? e.len : size, e.len);
		}
		fext_free(&e, 1);
		if (ret < 0)
			return fail(t, ret, "file_truncate inline");
		ip->item.size = size;
		return 0;
	}
	/* keep "bytes past i_size are zero" for a later extension */
	if (size % BS && size < old) {
		ret = zero_partial(t, fs, ip, RDOWN(size), size, RDOWN(size) + BS);
		if (ret < 0)
			return ret;
	}
	ret = drop_range(t, fs, ip, RUP(size), UINT64_MAX);
	if (ret < 0)
		return fail(t, ret, "file_truncate");
	ip->item.size = size;
	return 0;
}

static int punch(struct txn *t, struct fsctx *fs, struct inode *ip, uint64_t off, uint64_t end)
{
	struct fext e;
	int ret, inl;

	if (end > ip->item.size)
		end = ip->item.size;
	if (off >= end)
		return 0;
	inl = get_inline(fs, ip, &e);
	if (inl < 0)
		return inl;
	if (inl) {
		if (off < e.len)
			memset(e.idata + off, 0, (end < e.len ? end : e.len) - off);
		ret = put_inline(t, fs, ip, e.idata, e.len, e.len);
		fext_free(&e, 1);
		return ret < 0 ? fail(t, ret, "punch inline") : 0;
	}
	uint64_t a = RUP(off), b = RDOWN(end);
	if (RDOWN(off) == RDOWN(end - 1) && (off % BS || end % BS))
		return zero_partial(t, fs, ip, RDOWN(off), off, end);	/* inside one block */
	if (off % BS) {
		ret = zero_partial(t, fs, ip, RDOWN(off), off, RDOWN(off) + BS);
		if (ret < 0)
			return ret;
	}
	if (end % BS) {
		ret = zero_partial(t, fs, ip, RDOWN(end), RDOWN(end), end);
		if (ret < 0)
			return ret;
	}
	if (a < b) {
		ret = drop_range(t, fs, ip, a, b);
		if (ret < 0)
			return fail(t, ret, "punch");
	}
	return 0;
}

static int prealloc_gap(struct txn *t, struct fsctx *fs, struct inode *ip,
			uint64_t g0, uint64_t g1)
{
	uint64_t max = MAX_PREALLOC;

	while (g0 < g1) {
		uint64_t plen = g1 - g0 > max ? max : g1 - g0, logical;
		int ret = data_alloc(t, plen, &logical);
		if (ret == -ENOSPC && plen > BS) {
			/* no free run that long (small chunks, fragmentation):
			 * smaller extents still reserve the space */
			max = RUP(plen / 2);
			continue;
		}
		if (ret < 0)
			return ret;
		struct fext e = { .off = g0, .len = plen, .type = FE_PREALLOC,
				  .disk_logical = logical, .disk_len = plen };
		ret = fe_write(t, fs, ip->ino, &e);
		if (ret < 0)
			return fail(t, ret, "fallocate");
		ip->item.nbytes += plen;
		g0 += plen;
	}
	return 0;
}

/*
 * Move every file-extent item at or past from by delta bytes (negative:
 * down).  No item may straddle from, and the target range must be free
 * of items (the caller split or dropped them).  Items are re-keyed, their
 * extents' reference counts do not change.
 */
static int shift_extents(struct txn *t, struct fsctx *fs, struct inode *ip, uint64_t from,
			 int64_t delta)
{
	struct fext *all = NULL;
	size_t cnt = 0, cap = 0;
	uint64_t cur = from;
	int n, ret = 0;

	do {		/* collect first: re-keying under a cursor would revisit items */
		if (cap - cnt < BATCH) {
			struct fext *nv = realloc(all, (cap + 4 * BATCH) * sizeof(*all));
			if (!nv) {
				ret = -ENOMEM;
				break;
			}
			all = nv;
			cap += 4 * BATCH;
		}
		n = ext_collect(fs, ip->ino, cur, UINT64_MAX, all + cnt, BATCH);
		if (n < 0) {
			ret = n;
			break;
		}
		for (int i = 0; i < n; i++)
			if (all[cnt + i].off + all[cnt + i].len > cur)
				cur = all[cnt + i].off + all[cnt + i].len;
		cnt += (size_t)n;
	} while (n == BATCH);
	for (size_t k = 0; k < cnt && ret == 0; k++) {
		/* down: lowest first; up: highest first, so no key collides */
		struct fext *e = &all[delta < 0 ? k : cnt - 1 - k];
		struct key ok = mkkey(ip->ino, KEY_EXTENT_DATA, e->off);

		if (e->off < from || e->type == FE_INLINE) {
			ret = -EIO;
			break;
		}
		log_note_extent(t, ip->ino, e->off);
		ret = btree_delete(t, fs->root, &ok);
		e->off = (uint64_t)((int64_t)e->off + delta);
		if (ret == 0)
			ret = fe_write(t, fs, ip->ino, e);
	}
	fext_free(all, (int)cnt);
	free(all);
	return ret;
}

/* Split the regular or prealloc extent item that straddles off (if any)
 * into two items that each hold a reference. */
static int split_at(struct txn *t, struct fsctx *fs, struct inode *ip, uint64_t off)
{
	struct fext e;
	int n = ext_collect(fs, ip->ino, off, off + 1, &e, 1), ret = 0;

	if (n <= 0)
		return n;
	if (e.off < off && e.type != FE_INLINE) {
		struct fext front = e, tail = e;
		front.len = off - e.off;
		tail.off = off;
		tail.doff = e.doff + (off - e.off);
		tail.len = e.off + e.len - off;
		ret = fe_write(t, fs, ip->ino, &front);
		if (ret == 0)
			ret = fe_write(t, fs, ip->ino, &tail);
		if (ret == 0)
			ret = data_ref(t, e.disk_logical, e.disk_len, 1);
	}
	fext_free(&e, 1);
	return ret;
}

/* FALLOC_FL_COLLAPSE_RANGE: remove [off, off+len) and pull the rest down.
 * Block-aligned, and the range must end before EOF (the kernel's rules). */
static int collapse(struct txn *t, struct fsctx *fs, struct inode *ip, uint64_t off,
		    uint64_t len)
{
	int ret;

	if (off % BS || len % BS || off + len >= ip->item.size)
		return -EINVAL;
	ret = uninline(t, fs, ip);
	if (ret == 0)
		ret = drop_range(t, fs, ip, off, off + len);
	if (ret == 0)
		ret = shift_extents(t, fs, ip, off + len, -(int64_t)len);
	if (ret < 0)
		return fail(t, ret, "fallocate collapse range");
	ip->item.size -= len;
	return 0;
}

/* FALLOC_FL_INSERT_RANGE: a hole of len bytes at off, the rest pushed up.
 * Block-aligned, off inside the file. */
static int insert(struct txn *t, struct fsctx *fs, struct inode *ip, uint64_t off,
		  uint64_t len)
{
	int ret;

	if (off % BS || len % BS || off >= ip->item.size)
		return -EINVAL;
	if (ip->item.size + len > FILE_MAX_SIZE || ip->item.size + len < len)
		return -EFBIG;
	ret = uninline(t, fs, ip);
	if (ret < 0)
		return ret;
	ret = split_at(t, fs, ip, off);
	if (ret == 0)
		ret = shift_extents(t, fs, ip, off, (int64_t)len);
	if (ret < 0)
		return fail(t, ret, "fallocate insert range");
	ip->item.size += len;
	return 0;
}

static int prealloc_range(struct txn *t, struct fsctx *fs, struct inode *ip, uint64_t a,
			  uint64_t b);

/* FALLOC_FL_ZERO_RANGE: the range reads as zeros and its whole blocks
 * stay allocated (preallocated extents), as on ext4 and xfs. */
static int zero_range(struct txn *t, struct fsctx *fs, struct inode *ip, int mode,
		      uint64_t off, uint64_t end)
{
	uint64_t a = RUP(off), b = RDOWN(end);
	int ret = uninline(t, fs, ip);

	if (ret < 0)
		return ret;
	if (RDOWN(off) == RDOWN(end - 1) && (off % BS || end % BS)) {
		ret = zero_partial(t, fs, ip, RDOWN(off), off, end);
	} else {
		if (off % BS)
			ret = zero_partial(t, fs, ip, RDOWN(off), off, RDOWN(off) + BS);
		if (ret == 0 && end % BS)
			ret = zero_partial(t, fs, ip, RDOWN(end), RDOWN(end), end);
		if (ret == 0 && a < b) {
			ret = drop_range(t, fs, ip, a, b);
			if (ret < 0)
				return fail(t, ret, "fallocate zero range");
			ret = prealloc_range(t, fs, ip, a, b);
		}
	}
	if (ret < 0)
		return ret;
	if (!(mode & FALLOC_FL_KEEP_SIZE) && end > ip->item.size)
		ip->item.size = end;
	return 0;
}

int file_fallocate(struct txn *t, struct fsctx *fs, struct inode *ip, int mode,
		   uint64_t off, uint64_t len)
{
	uint64_t end = off + len;
	int ret;

	if (len == 0)
		return -EINVAL;
	if (end < off || end > FILE_MAX_SIZE)
		return -EFBIG;
	/* the VFS's rules (vfs_fallocate), for callers that are not the kernel */
	if (mode & ~(FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE |
		     FALLOC_FL_COLLAPSE_RANGE | FALLOC_FL_INSERT_RANGE))
		return -EOPNOTSUPP;
	if ((mode & FALLOC_FL_PUNCH_HOLE) && (mode & FALLOC_FL_ZERO_RANGE))
		return -EOPNOTSUPP;
	if ((mode & FALLOC_FL_PUNCH_HOLE) && !(mode & FALLOC_FL_KEEP_SIZE))
		return -EOPNOTSUPP;
	if ((mode & FALLOC_FL_COLLAPSE_RANGE) && mode != FALLOC_FL_COLLAPSE_RANGE)
		return -EINVAL;
	if ((mode & FALLOC_FL_INSERT_RANGE) && mode != FALLOC_FL_INSERT_RANGE)
		return -EINVAL;
	if (mode & FALLOC_FL_PUNCH_HOLE)
		return punch(t, fs, ip, off, end);
	if (mode & FALLOC_FL_COLLAPSE_RANGE)
		return collapse(t, fs, ip, off, len);
	if (mode & FALLOC_FL_INSERT_RANGE)
		return insert(t, fs, ip, off, len);
	if (mode & FALLOC_FL_ZERO_RANGE)
		return zero_range(t, fs, ip, mode, off, end);

	ret = uninline(t, fs, ip);
	if (ret < 0)
		return ret;
	ret = prealloc_range(t, fs, ip, RDOWN(off), RUP(end));
	if (ret < 0)
		return ret;
	if (!(mode & FALLOC_FL_KEEP_SIZE) && end > ip->item.size)
		ip->item.size = end;
	return 0;
}

/* PREALLOC extents for every hole in [a, b) (aligned). */
static int prealloc_range(struct txn *t, struct fsctx *fs, struct inode *ip, uint64_t a,
			  uint64_t b)
{
	struct fext v[BATCH];
	uint64_t cur = a;
	int n, ret;

	do {
		n = ext_collect(fs, ip->ino, cur, b, v, BATCH);
		if (n < 0)
			return n;
		ret = 0;
		for (int i = 0; i < n && ret == 0; i++) {
			if (v[i].off > cur)
				ret = prealloc_gap(t, fs, ip, cur, v[i].off < b ? v[i].off : b);
			if (v[i].off + v[i].len > cur)
				cur = v[i].off + v[i].len;
		}
		fext_free(v, n);
		if (ret < 0)
			return ret;
	} while (n == BATCH && cur < b);
	if (cur < b)
		return prealloc_gap(t, fs, ip, cur, b);
	return 0;
}

/*
 * SEEK_DATA / SEEK_HOLE.  Data is what inline and regular extents map;
 * holes are the gaps between items and the preallocated (never written)
 * extents, which read as zeros — as btrfs and xfs report them.
 */
int64_t file_seek(struct fsctx *fs, struct inode *ip, uint64_t off, int whence)
{
	uint64_t size = ip->item.size, cur = off;
	struct fext v[BATCH];
	int n;

	if (off >= size)
		return -ENXIO;
	do {
		n = ext_collect(fs, ip->ino, cur, size, v, BATCH);
		if (n < 0)
			return n;
		for (int i = 0; i < n; i++) {
			uint64_t e0 = v[i].off, e1 = v[i].off + v[i].len;
			if (e1 <= cur)
				continue;
			if (v[i].type == FE_PREALLOC) {
				if (whence == SEEK_HOLE) {	/* cur is in it or before it */
					fext_free(v, n);
					return (int64_t)cur;
				}
				cur = e1;
				continue;
			}
			if (whence == SEEK_DATA) {
				fext_free(v, n);
				uint64_t r = e0 > cur ? e0 : cur;
				return r < size ? (int64_t)r : -ENXIO;
			}
			if (e0 > cur) {
				fext_free(v, n);
				return (int64_t)cur;
			}
			cur = e1;
		}
		fext_free(v, n);
	} while (n == BATCH && cur < size);
	if (whence == SEEK_DATA)
		return -ENXIO;
	return (int64_t)(cur < size ? cur : size);
}

int file_set_symlink(struct txn *t, struct fsctx *fs, struct inode *ip,
		     const char *target, size_t len)
{
	int ret;

	if (FE_INLINE_HDR + len > btree_max_item_size(fs->root))
		return -ENAMETOOLONG;
	ret = put_inline(t, fs, ip, target, len, 0);
	if (ret < 0)
		return ret;
	ip->item.size = len;
	return 0;
}
