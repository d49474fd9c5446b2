// SPDX-License-Identifier: MIT
/*
 * inode.c — inodes: their items (new, update, link counts, times, the
 * order of taking several inode locks), orphans and freeing an unlinked
 * inode's items.  The inode cache (lookup and engine reference counts)
 * is inode_cache.c's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>

#include "fs/items/inode.h"
#include "fs/items/dcache.h"
#include "fs/items/log.h"
#include "fs/items/subvol.h"
#include "fs/trees/data.h"

void inode_lock(struct inode *ip)   { glock_write(&ip->lock); }
void inode_unlock(struct inode *ip) { glock_write_unlock(&ip->lock); }
void inode_rlock(struct inode *ip)  { glock_read(&ip->lock); }
void inode_runlock(struct inode *ip) { glock_read_unlock(&ip->lock); }

/* Sort a small array by ino; NULLs and duplicates are skipped by callers. */
static int sorted_unique(struct inode **ips, int n, struct inode **out)
{
	int m = 0;

	for (int i = 0; i < n; i++) {
		if (!ips[i])
			continue;
		bool dup = false;
		for (int j = 0; j < m; j++)
			if (out[j] == ips[i])
				dup = true;
		if (!dup)
			out[m++] = ips[i];
	}
	for (int i = 1; i < m; i++)
		for (int j = i; j > 0 && out[j - 1]->ino > out[j]->ino; j--) {
			struct inode *x = out[j];
			out[j] = out[j - 1];
			out[j - 1] = x;
		}
	return m;
}

void inode_lock_many(struct inode **ips, int n)
{
	struct inode *s[8];
	int m = sorted_unique(ips, n, s);

	for (int i = 0; i < m; i++)
		inode_lock(s[i]);
}

void inode_unlock_many(struct inode **ips, int n)
{
	struct inode *s[8];
	int m = sorted_unique(ips, n, s);

	for (int i = m - 1; i >= 0; i--)
		inode_unlock(s[i]);
}

void inode_time_now(struct item_time *t)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	t->sec = ts.tv_sec;
	t->nsec = (uint32_t)ts.tv_nsec;
}

static int time_cmp(const struct item_time *a, const struct item_time *b)
{
	if (a->sec != b->sec)
		return a->sec < b->sec ? -1 : 1;
	return a->nsec < b->nsec ? -1 : a->nsec > b->nsec;
}

bool inode_atime_stale(const struct inode *ip, int mode)
{
	struct item_time now;

	if (mode == CORE_ATIME_NONE)
		return false;
	if (mode == CORE_ATIME_STRICT)
		return true;
	if (time_cmp(&ip->item.atime, &ip->item.mtime) <= 0 ||
	    time_cmp(&ip->item.atime, &ip->item.ctime) <= 0)
		return true;
	inode_time_now(&now);
	return (int64_t)now.sec - (int64_t)ip->item.atime.sec >= 24 * 3600;
}

void inode_touch(struct inode *ip, int which)
{
	struct item_time now;

	inode_time_now(&now);
	if (which & T_ATIME)
		ip->item.atime = now;
	if (which & T_MTIME)
		ip->item.mtime = now;
	if (which & T_CTIME)
		ip->item.ctime = now;
}

int inode_update(struct txn *t, struct fsctx *fs, struct inode *ip)
{
	struct key k = mkkey(ip->ino, KEY_INODE_ITEM, 0);

	ip->item.transid = txn_transid(t);
	return btree_update(t, fs->root, &k, &ip->item, sizeof(ip->item));
}

/*
 * The number of a new inode (inode.h, INODE_SPREAD_BLOCK): from dp's
 * block, or the first of a new block for a directory (*blk_end set: the
 * new directory keeps the rest).  No lock beyond dp's: numbers are never
 * reused within a mount, so a fetch-add on the counter hands out blocks.
 */
static uint64_t new_ino(struct fsctx *fs, struct inode *dp, uint32_t mode,
			uint64_t *blk_end)
{
	uint64_t b = fs->ino_block, ino;

	*blk_end = 0;
	if (!b || !dp)
		return __atomic_fetch_add(&fs->next_ino, 1, __ATOMIC_RELAXED);
	if (!S_ISDIR(mode) && dp->ino_next < dp->ino_end)
		return dp->ino_next++;
	ino = __atomic_fetch_add(&fs->next_ino, b, __ATOMIC_RELAXED);
	if (S_ISDIR(mode)) {
		*blk_end = ino + b;
	} else {
		dp->ino_next = ino + 1;
		dp->ino_end = ino + b;
	}
	return ino;
}

int inode_ino_room(struct fsctx *fs, struct inode *dp, uint32_t mode)
{
	uint64_t next = __atomic_load_n(&fs->next_ino, __ATOMIC_RELAXED);

	if (fs->ino_block && dp && !S_ISDIR(mode) && dp->ino_next < dp->ino_end)
		next = dp->ino_next;
	return next > SUBVOL_INO_MASK ? -ENOSPC : 0;
}

int inode_new(struct txn *t, struct fsctx *fs, struct inode *dp, uint32_t mode,
	      uint32_t uid, uint32_t gid, uint64_t rdev, const struct inode_link *link,
	      struct inode **out)
{
	struct inode *ip;
	uint64_t ino, blk_end;
	struct key k;
	int ret;

	ino = new_ino(fs, dp, mode, &blk_end);
	/* the FUSE node id carries the subvolume above SUBVOL_NODEID_SHIFT
	 * bits (subvol.h): a number past them would name another subvolume's
	 * inode (blocks use the space up 4,096 numbers per directory) */
	if (ino > SUBVOL_INO_MASK)
		return -ENOSPC;

	ip = inode_cache_alloc(fs, ino);
	if (!ip)
		return -ENOMEM;
	if (blk_end) {
		ip->ino_next = ino + 1;
		ip->ino_end = blk_end;
	}
	ip->item.generation = txn_transid(t);
	ip->item.transid = txn_transid(t);
	ip->item.mode = mode;
	ip->item.uid = uid;
	ip->item.gid = gid;
	ip->item.rdev = rdev;
	ip->item.nlink = S_ISDIR(mode) ? 2 : 1;
	ip->item.dir_seq = DIR_SEQ_FIRST;
	inode_time_now(&ip->item.otime);
	ip->item.atime = ip->item.mtime = ip->item.ctime = ip->item.otime;

	k = mkkey(ino, KEY_INODE_ITEM, 0);
	if (link) {
		struct key rk = mkkey(ino, KEY_INODE_REF, link->parent);
		ret = btree_insert_pair(t, fs->root, &k, &ip->item, sizeof(ip->item),
					&rk, link->ref, link->ref_size);
	} else {
		ret = btree_insert(t, fs->root, &k, &ip->item, sizeof(ip->item));
	}
	if (ret < 0) {
		free(ip);
		return ret == -EEXIST ? -EIO : ret;
	}
	*out = inode_cache_insert(fs, ip);
	return 0;
}

int inode_drop_link(struct txn *t, struct fsctx *fs, struct inode *ip)
{
	if (ip->item.nlink > 0)
		ip->item.nlink--;
	if (S_ISDIR(ip->item.mode) && ip->item.nlink == 1)
		ip->item.nlink = 0;	/* a removed directory: "." no longer counts */
	inode_touch(ip, T_CTIME);
	if (ip->item.nlink == 0 && !ip->orphan) {
		struct key k = mkkey(ORPHAN_OBJECTID, KEY_ORPHAN_ITEM, ip->ino);
		int ret = btree_insert(t, fs->root, &k, &ip->ino, sizeof(ip->ino));
		if (ret < 0 && ret != -EEXIST)
			return ret;
		ip->orphan = true;
	}
	return inode_update(t, fs, ip);
}

/* ---- freeing an inode's items ------------------------------------- */

struct doomed {
	struct key k;
	uint64_t logical, len;	/* data extent to unreference, len 0 if none */
};

#define FREE_BATCH 128

/* Collect up to FREE_BATCH items of ino.  Returns the count or -errno. */
static int collect_items(struct fsctx *fs, uint64_t ino, struct doomed *d)
{
	struct path p;
	struct key k = mkkey(ino, 0, 0);
	int n = 0, ret;

	btree_path_init(&p);
	ret = fsctx_search_ge(fs, &k, &p);
	if (ret < 0)
		goto out;
	if (ret)
		goto done;
	for (;;) {
		struct key ik;
		uint32_t size;
		btree_item_key(&p, p.slots[0], &ik);
		if (ik.objectid != ino)
			break;
		d[n].k = ik;
		d[n].len = 0;
		if (ik.type == KEY_EXTENT_DATA) {
			struct file_extent *fe = btree_item_ptr(&p, p.slots[0], &size);
			if (size >= sizeof(*fe) && fe->type != FE_INLINE) {
				d[n].logical = fe->disk_logical;
				d[n].len = fe->disk_len;
			}
		}
		if (++n == FREE_BATCH)
			break;
		ret = btree_next(&p);
		if (ret < 0)
			goto out;
		if (ret)
			break;
	}
done:
	ret = n;
out:
	btree_path_release(&p);
	return ret;
}

int inode_free_items(struct fsctx *fs, uint64_t ino)
{
	struct doomed *d = malloc(FREE_BATCH * sizeof(*d));
	struct key ok = mkkey(ORPHAN_OBJECTID, KEY_ORPHAN_ITEM, ino);
	bool last;
	int ret, n;

	if (!d)
		return -ENOMEM;
	do {
		struct txn *t;
		n = collect_items(fs, ino, d);
		if (n < 0) {
			ret = n;
			goto out;
		}
		last = n < FREE_BATCH;
		ret = txn_join(fs->core, n + 1, TXN_USE_RESERVE, &t);
		if (ret < 0)
			goto out;
		/* an fsync's kept capture of ino is void (log_capture.c) */
		log_note_extent(t, ino, UINT64_MAX);
		/* delete the inode item last so a crash mid-way leaves a
		 * findable orphan: items are sorted by type, INODE_ITEM first */
		for (int i = n - 1; i >= 0 && ret == 0; i--) {
			ret = btree_delete(t, fs->root, &d[i].k);
			if (ret == 0 && d[i].len)
				ret = data_ref(t, d[i].logical, d[i].len, -1);
		}
		/* and the orphan item with it, in the same transaction: a
		 * commit between the two would leave an orphan item naming no
		 * inode (fsck: "orphan item for missing inode") */
		if (ret == 0 && last) {
			ret = btree_delete(t, fs->root, &ok);
			if (ret == -ENOENT)
				ret = 0;
		}
		if (ret < 0)
			txn_abort(t, ret, "inode_free_items");
		int e = txn_end(t);
		if (ret == 0)
			ret = e;
		if (ret < 0)
			goto out;
	} while (!last);
out:
	free(d);
	return ret;
}

int inode_orphan_cleanup(struct fsctx *fs)
{
	int count = 0;

	for (;;) {
		struct path p;
		struct key k = mkkey(ORPHAN_OBJECTID, KEY_ORPHAN_ITEM, 0), ik;
		int ret;

		btree_path_init(&p);
		ret = fsctx_search_ge(fs, &k, &p);
		if (ret == 0) {
			btree_item_key(&p, p.slots[0], &ik);
			if (ik.objectid != ORPHAN_OBJECTID || ik.type != KEY_ORPHAN_ITEM)
				ret = 1;
		}
		btree_path_release(&p);
		if (ret < 0)
			return ret;
		if (ret)
			break;
		ret = inode_free_items(fs, ik.offset);
		if (ret < 0)
			return ret;
		count++;
	}
	return count;
}

int inode_init_next(struct fsctx *fs)
{
	struct path p;
	struct key k = mkkey(ORPHAN_OBJECTID - 16, 0, 0), ik;
	int ret;

	fs->next_ino = FIRST_FREE_INO;
	btree_path_init(&p);
	ret = btree_search(NULL, fs->root, &k, &p, 0, 0);
	if (ret < 0)
		goto out;
	ret = btree_prev(&p);
	if (ret < 0)
		goto out;
	if (ret == 0) {
		btree_item_key(&p, p.slots[0], &ik);
		if (ik.objectid >= FIRST_FREE_INO && ik.objectid < ORPHAN_OBJECTID - 16)
			fs->next_ino = ik.objectid + 1;
	}
	ret = 0;
out:
	btree_path_release(&p);
	return ret;
}
