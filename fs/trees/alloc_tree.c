// SPDX-License-Identifier: MIT
/*
 * alloc_tree.c — the allocator's tree side: block-group items (extent
 * tree) and the free-space tree (bitmap segments), written at commit from
 * the in-memory block groups of fs/store/alloc.c, read back at open, and
 * rewritten when a block group is split.  alloc.h has the design.
 */
#include "fs/core/core_types.h"
#include "fs/store/alloc.h"
#include "fs/trees/alloc_tree.h"
#include "fs/btree/btree.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SECT CORE_SECTORSIZE

static inline bool bit_get(const uint64_t *bm, uint64_t i)
{
	return (bm[i >> 6] >> (i & 63)) & 1;
}
static inline void bit_set(uint64_t *bm, uint64_t i) { bm[i >> 6] |= 1ull << (i & 63); }

int alloc_split_items(struct txn *t, uint64_t start, uint64_t len, uint64_t at)
{
	struct core *c = txn_core(t);
	uint64_t segb = (uint64_t)FST_SEG_SECTORS * SECT;
	struct key k = { start, KEY_BLOCK_GROUP_ITEM, len };
	int ret = btree_delete(t, core_tree(c, CT_EXTENT), &k);

	/* a group created in this transaction has no items on disk yet */
	if (ret == -ENOENT)
		ret = 0;
	k = (struct key){ start, KEY_FREE_SPACE_INFO, len };
	if (!ret && (ret = btree_delete(t, core_tree(c, CT_FST), &k)) == -ENOENT)
		ret = 0;
	/* bitmaps from the one the cut falls in: their keys change */
	for (uint64_t off = at / segb * segb; !ret && off < len; off += segb) {
		k = (struct key){ start + off, KEY_FREE_SPACE_BITMAP,
				  len - off < segb ? len - off : segb };
		if ((ret = btree_delete(t, core_tree(c, CT_FST), &k)) == -ENOENT)
			ret = 0;
	}
	return ret;
}

/* ---- persistence -------------------------------------------------------- */

static uint32_t seg_bits(const struct bgroup *bg, uint32_t seg)
{
	uint64_t left = bg->nbits - (uint64_t)seg * FST_SEG_SECTORS;
	return left < FST_SEG_SECTORS ? (uint32_t)left : FST_SEG_SECTORS;
}

struct seg_write {
	struct key k;
	uint32_t size;
	uint8_t bits[FST_SEG_BYTES];
};

int alloc_commit_fst(struct txn *t)
{
	struct core *c = txn_core(t);
	struct allocator *a = &c->alloc;
	struct root *fst = core_tree(c, CT_FST);
	int changes = 0;

	for (int k = 0;; k++) {
		struct seg_write *w = NULL;
		struct free_space_info info = { 0, FREE_SPACE_USING_BITMAPS };
		uint64_t start = 0, len = 0;
		bool need_info = false;
		int nw = 0, ret = 0;

		glock_lock(&a->lock, GLOCK_WRITE);
		while (k < a->n && !a->bg[k]->dirty)
			k++;
		if (k >= a->n) {
			glock_unlock(&a->lock, GLOCK_WRITE);
			break;
		}
		struct bgroup *bg = a->bg[k];
		w = malloc((size_t)bg->nsegs * sizeof(*w));
		if (!w) {
			glock_unlock(&a->lock, GLOCK_WRITE);
			return -ENOMEM;
		}
		start = bg->start;
		len = bg->len;
		info.extent_count = bg->nsegs;
		need_info = bg->fst_info_missing;
		bg->fst_info_missing = false;
		bg->dirty = false;
		for (uint32_t s = 0; s < bg->nsegs; s++) {
			uint32_t nb = seg_bits(bg, s);
			uint64_t base = (uint64_t)s * FST_SEG_SECTORS;
			if (!bg->seg_dirty[s])
				continue;
			bg->seg_dirty[s] = 0;
			memset(w[nw].bits, 0, sizeof(w[nw].bits));
			for (uint32_t i = 0; i < nb; i++) {
				/* free after this commit: not used, or freed (pinned) in it */
				if (!bit_get(bg->used, base + i) || bit_get(bg->pinned, base + i) ||
				    bit_get(bg->cpinned, base + i) || bit_get(bg->held, base + i))
					w[nw].bits[i >> 3] |= (uint8_t)(1u << (i & 7));
			}
			w[nw].k = (struct key){ bg->start + base * SECT, KEY_FREE_SPACE_BITMAP,
						(uint64_t)nb * SECT };
			w[nw].size = (nb + 7) / 8;
			nw++;
		}
		glock_unlock(&a->lock, GLOCK_WRITE);

		if (need_info) {
			struct key ik = { start, KEY_FREE_SPACE_INFO, len };
			ret = btree_update(t, fst, &ik, &info, sizeof(info));
			changes++;
		}
		for (int i = 0; i < nw && !ret; i++) {
			ret = btree_update(t, fst, &w[i].k, w[i].bits, w[i].size);
			changes++;
		}
		free(w);
		if (ret)
			return ret;
	}
	return changes;
}

int alloc_commit_bg_items(struct txn *t)
{
	struct core *c = txn_core(t);
	struct allocator *a = &c->alloc;
	int changes = 0;

	for (int k = 0;; k++) {
		struct block_group_item it;
		struct key key;
		int ret;

		glock_lock(&a->lock, GLOCK_WRITE);
		while (k < a->n && !a->bg[k]->item_dirty)
			k++;
		if (k >= a->n) {
			glock_unlock(&a->lock, GLOCK_WRITE);
			break;
		}
		struct bgroup *bg = a->bg[k];
		bg->item_dirty = false;
		it.used = bg->used_bytes - bg->pinned_bytes - bg->cpinned_bytes - bg->held_bytes;
		it.chunk_objectid = FIRST_CHUNK_OBJECTID;
		it.flags = bg->flags;
		key = (struct key){ bg->start, KEY_BLOCK_GROUP_ITEM, bg->len };
		glock_unlock(&a->lock, GLOCK_WRITE);

		/* compare first: an unchanged item costs no copy-on-write */
		struct block_group_item old;
		if (btree_lookup(core_tree(c, CT_EXTENT), &key, &old, sizeof(old)) ==
			    (int)sizeof(old) && memcmp(&old, &it, sizeof(it)) == 0)
			continue;
		ret = btree_update(t, core_tree(c, CT_EXTENT), &key, &it, sizeof(it));
		if (ret)
			return ret;
		changes++;
	}
	return changes;
}

/* A new chunk's block group item; the free-space info and bitmaps follow at
 * commit (alloc_commit_fst), as the group is marked fresh. */
int alloc_insert_bg_items(struct txn *t, uint64_t start)
{
	struct core *c = txn_core(t);
	struct block_group_item it;
	struct key key;

	glock_lock(&c->alloc.lock, GLOCK_WRITE);
	struct bgroup *bg = alloc_find_bg_locked(&c->alloc, start);
	if (!bg) {
		glock_unlock(&c->alloc.lock, GLOCK_WRITE);
		return -ENOENT;
	}
	it = (struct block_group_item){ bg->used_bytes - bg->pinned_bytes - bg->cpinned_bytes - bg->held_bytes,
					FIRST_CHUNK_OBJECTID, bg->flags };
	key = (struct key){ bg->start, KEY_BLOCK_GROUP_ITEM, bg->len };
	glock_unlock(&c->alloc.lock, GLOCK_WRITE);
	return btree_update(t, core_tree(c, CT_EXTENT), &key, &it, sizeof(it));
}

int alloc_load(struct core *c)
{
	struct allocator *a = &c->alloc;
	struct root *fst = core_tree(c, CT_FST);
	uint8_t bits[FST_SEG_BYTES];

	/* Groups are added from the chunk map before this; the list does not
	 * change while we load, so we can read the tree without the lock. */
	for (int k = 0; k < a->n; k++) {
		struct bgroup *bg = a->bg[k];
		struct free_space_info info;
		struct key ik = { bg->start, KEY_FREE_SPACE_INFO, bg->len };
		int ret = btree_lookup(fst, &ik, &info, sizeof(info));

		if (ret != (int)sizeof(info)) {
			core_log(c, "free-space tree: no info for block group %llu+%llu (%d)",
				 (unsigned long long)bg->start, (unsigned long long)bg->len, ret);
			return ret < 0 && ret != -ENOENT ? ret : -EUCLEAN;
		}
		for (uint32_t s = 0; s < bg->nsegs; s++) {
			uint32_t nb = seg_bits(bg, s);
			uint64_t base = (uint64_t)s * FST_SEG_SECTORS;
			struct key sk = { bg->start + base * SECT, KEY_FREE_SPACE_BITMAP,
					  (uint64_t)nb * SECT };
			ret = btree_lookup(fst, &sk, bits, sizeof(bits));
			if (ret != (int)((nb + 7) / 8)) {
				core_log(c, "free-space tree: bitmap %llu missing or wrong size (%d)",
					 (unsigned long long)sk.objectid, ret);
				return ret < 0 && ret != -ENOENT ? ret : -EUCLEAN;
			}
			for (uint32_t i = 0; i < nb; i++) {
				if (!((bits[i >> 3] >> (i & 7)) & 1)) {
					bit_set(bg->used, base + i);
					bg->used_bytes += SECT;
				}
			}
		}
	}
	return 0;
}
