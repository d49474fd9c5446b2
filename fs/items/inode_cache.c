// SPDX-License-Identifier: MIT
/*
 * inode_cache.c — the inode cache: in-memory inodes by number in
 * ICACHE_SHARDS shards (fs/base/htable.h each, a leaf lock each), the
 * kernel's lookup counts (FUSE forget) and the engine's references; the
 * last reference of an unlinked inode frees its items (inode.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/items/inode.h"
#include "fs/items/dcache.h"
#include "fs/items/log.h"
#include "fs/trees/data.h"

#define ICACHE_MIN_BUCKETS 1024

/* The shard of ino: low bits, so consecutive inode numbers (one create
 * after another) land in different shards.  The table picks the bucket
 * from high bits of the product (htable.c), independent of the shard. */
static struct icache *ic_of(struct fsctx *fs, uint64_t ino)
{
	return &fs->icache[ino & (ICACHE_SHARDS - 1)];
}

int inode_cache_init(struct fsctx *fs)
{
	for (int i = 0; i < ICACHE_SHARDS; i++) {
		struct icache *ic = &fs->icache[i];

		glock_init(&ic->lock, fs->locktype == GLOCK_SPIN ? GLOCK_SPIN : GLOCK_MUTEX,
			   GLOCK_CLASS_MISC, btree_root_id(fs->root), -1, -1);
		if (htable_init(&ic->t, ICACHE_MIN_BUCKETS / ICACHE_SHARDS)) {
			inode_cache_destroy(fs);
			return -ENOMEM;
		}
	}
	return 0;
}

/* Frees every cached inode; safe on a partly initialised cache. */
void inode_cache_destroy(struct fsctx *fs)
{
	dcache_free(fs->dcache);	/* the name cache goes with the inodes */
	fs->dcache = NULL;
	for (int s = 0; s < ICACHE_SHARDS; s++) {
		struct icache *ic = &fs->icache[s];
		struct hnode *n;

		while (ic->t.b && (n = htable_pop(&ic->t)))
			free(htable_entry(n, struct inode, hnode));
		htable_destroy(&ic->t);
	}
}

/* Callers hold the shard's lock. */
static struct inode *icache_find(struct icache *ic, uint64_t ino)
{
	struct hnode *n = htable_find(&ic->t, ino);

	return n ? htable_entry(n, struct inode, hnode) : NULL;
}

static void icache_unhash(struct icache *ic, struct inode *ip)
{
	htable_remove(&ic->t, &ip->hnode);
}

struct inode *inode_cache_alloc(struct fsctx *fs, uint64_t ino)
{
	struct inode *ip = calloc(1, sizeof(*ip));

	if (!ip)
		return NULL;
	ip->ino = ino;
	ip->hnode.key = ino;
	glock_init(&ip->lock, fs->locktype, GLOCK_CLASS_INODE, btree_root_id(fs->root), -1, -1);
	ip->refs = 1;
	return ip;
}

/* Insert ip unless another thread inserted the same ino first; returns the
 * inode to use (referenced). */
struct inode *inode_cache_insert(struct fsctx *fs, struct inode *ip)
{
	struct icache *ic = ic_of(fs, ip->ino);
	struct inode *old;

	glock_write(&ic->lock);
	old = icache_find(ic, ip->ino);
	if (old) {
		old->refs++;
		glock_write_unlock(&ic->lock);
		free(ip);
		return old;
	}
	htable_insert(&ic->t, &ip->hnode);
	glock_write_unlock(&ic->lock);
	return ip;
}

int inode_get(struct fsctx *fs, uint64_t ino, struct inode **out)
{
	struct icache *ic = ic_of(fs, ino);
	struct inode *ip;
	struct key k = mkkey(ino, KEY_INODE_ITEM, 0);
	int ret;

	glock_write(&ic->lock);
	if (__atomic_load_n(&fs->dead, __ATOMIC_SEQ_CST)) {	/* a deleted subvolume */
		glock_write_unlock(&ic->lock);
		return -ENOENT;
	}
	ip = icache_find(ic, ino);
	if (ip) {
		ip->refs++;
		glock_write_unlock(&ic->lock);
		*out = ip;
		return 0;
	}
	glock_write_unlock(&ic->lock);

	ip = inode_cache_alloc(fs, ino);
	if (!ip)
		return -ENOMEM;
	ret = btree_lookup(fs->root, &k, &ip->item, sizeof(ip->item));
	if (ret < 0) {
		free(ip);
		return ret;
	}
	if ((size_t)ret < sizeof(ip->item)) {
		fprintf(stderr, "glassfs: inode %llu: item of %d bytes, expected %zu\n",
			(unsigned long long)ino, ret, sizeof(ip->item));
		free(ip);
		return -EIO;
	}
	ip->fsync_transid = log_record_transid(fs->core);
	if (ip->item.nlink == 0) {
		/* an orphan still known to the kernel, or being freed */
		struct key ok = mkkey(ORPHAN_OBJECTID, KEY_ORPHAN_ITEM, ino);
		ip->orphan = btree_lookup(fs->root, &ok, &(char){0}, 0) >= 0;
	}
	*out = inode_cache_insert(fs, ip);
	return 0;
}

void inode_ref(struct fsctx *fs, struct inode *ip)
{
	struct icache *ic = ic_of(fs, ip->ino);

	glock_write(&ic->lock);
	ip->refs++;
	glock_write_unlock(&ic->lock);
}

/* Last reference gone: unhash, and free an unlinked inode's items. */
static void inode_release(struct fsctx *fs, struct inode *ip)
{
	bool unlinked = ip->item.nlink == 0;

	/* a deleted subvolume's tree belongs to the cleaner now */
	if (unlinked && !fs->readonly && !__atomic_load_n(&fs->dead, __ATOMIC_SEQ_CST)) {
		int ret = inode_free_items(fs, ip->ino);
		if (ret < 0)
			fprintf(stderr, "glassfs: freeing unlinked inode %llu: %s (left as orphan)\n",
				(unsigned long long)ip->ino, strerror(-ret));
	}
	free(ip);
}

static bool put_locked(struct icache *ic, struct inode *ip, uint32_t refs, uint64_t lookups)
{
	ip->refs -= refs;
	ip->nlookup = ip->nlookup > lookups ? ip->nlookup - lookups : 0;
	if (ip->refs == 0 && ip->nlookup == 0) {
		icache_unhash(ic, ip);
		return true;
	}
	return false;
}

void inode_put(struct fsctx *fs, struct inode *ip)
{
	struct icache *ic;
	bool last;

	if (!ip)
		return;
	ic = ic_of(fs, ip->ino);
	glock_write(&ic->lock);
	last = put_locked(ic, ip, 1, 0);
	glock_write_unlock(&ic->lock);
	if (last)
		inode_release(fs, ip);
}

void inode_lookup_inc(struct fsctx *fs, struct inode *ip)
{
	struct icache *ic = ic_of(fs, ip->ino);

	glock_write(&ic->lock);
	ip->nlookup++;
	glock_write_unlock(&ic->lock);
}

void inode_forget(struct fsctx *fs, uint64_t ino, uint64_t n)
{
	struct icache *ic = ic_of(fs, ino);
	struct inode *ip;
	bool last = false;

	glock_write(&ic->lock);
	ip = icache_find(ic, ino);
	if (ip)
		last = put_locked(ic, ip, 0, n);
	glock_write_unlock(&ic->lock);
	if (last)
		inode_release(fs, ip);
}
