// SPDX-License-Identifier: MIT
/*
 * chunk_tree.c — the chunk map's tree side: chunk items and device
 * extents (chunk and device trees), loaded at open, inserted for a new
 * chunk, rewritten by a relocation's switch and by a split; the extent
 * tree walk that finds where a chunk can be split.  The map in memory is
 * fs/store/chunk.c.
 */
#include "fs/core/core_types.h"
#include "fs/store/alloc.h"
#include "fs/store/chunk.h"
#include "fs/trees/chunk_tree.h"
#include "fs/btree/btree.h"
#include "fs/trees/alloc_tree.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MiB (1ull << 20)

/* Visit the items of r from key k on until fn returns non-zero. */
static int tree_items_from(struct core *c, struct root *r, const struct key *k,
			   int (*fn)(struct core *c, const struct key *k, const void *item,
				     uint32_t size, void *arg), void *arg)
{
	struct path p;
	int ret;

	btree_path_init(&p);
	ret = btree_search_ge(r, k, &p);
	while (ret == 0) {
		struct key ik;
		uint32_t size;
		void *item;

		btree_item_key(&p, p.slots[0], &ik);
		item = btree_item_ptr(&p, p.slots[0], &size);
		ret = fn(c, &ik, item, size, arg);
		if (ret)
			break;
		ret = btree_next(&p);
	}
	btree_path_release(&p);
	return ret < 0 ? ret : 0;	/* > 0: the end of the tree, or fn stopped */
}

struct type_walk {
	uint64_t objectid;
	uint8_t type;
	int (*fn)(struct core *c, const struct key *k, const void *item, uint32_t size, void *arg);
	void *arg;
};

static int only_type(struct core *c, const struct key *k, const void *item, uint32_t size,
		     void *arg)
{
	struct type_walk *w = arg;

	if (k->objectid != w->objectid || k->type != w->type)
		return 1;
	return w->fn(c, k, item, size, w->arg);
}

int chunk_tree_items(struct core *c, uint64_t objectid, uint8_t type,
		     int (*fn)(struct core *c, const struct key *k, const void *item,
			       uint32_t size, void *arg), void *arg)
{
	struct type_walk w = { objectid, type, fn, arg };

	return tree_items_from(c, core_tree(c, CT_CHUNK), &(struct key){ objectid, type, 0 },
			       only_type, &w);
}

static int load_chunk_item(struct core *c, const struct key *k, const void *item,
			   uint32_t size, void *arg)
{
	(void)arg;
	return chunk_map_insert(c, k->offset, item, size);
}

int chunk_load_tree(struct core *c)
{
	return chunk_tree_items(c, FIRST_CHUNK_OBJECTID, KEY_CHUNK_ITEM, load_chunk_item, NULL);
}

int chunk_insert_items(struct txn *t, const struct chunk *ch)
{
	struct core *c = txn_core(t);
	union { struct chunk_item ci; uint8_t b[CHUNK_ITEM_SIZE(CHUNK_MAX_STRIPES)]; } u;
	struct key k;
	int ret;

	memset(&u, 0, sizeof(u));
	chunk_fill_item(ch, &u.ci);
	k = (struct key){ FIRST_CHUNK_OBJECTID, KEY_CHUNK_ITEM, ch->logical };
	ret = btree_insert(t, core_tree(c, CT_CHUNK), &k, &u,
			   (uint32_t)CHUNK_ITEM_SIZE(ch->num_stripes));
	if (ret)
		return ret;
	for (int i = 0; i < ch->num_stripes; i++) {
		struct dev_extent de = { CHUNK_TREE_OBJECTID, FIRST_CHUNK_OBJECTID,
					 ch->logical,
					 chunk_stripe_span(ch->type, ch->num_stripes, ch->length) };
		k = (struct key){ ch->stripes[i].devid, KEY_DEV_EXTENT, ch->stripes[i].physical };
		ret = btree_insert(t, core_tree(c, CT_DEV), &k, &de, sizeof(de));
		if (ret)
			return ret;
	}
	return alloc_insert_bg_items(t, ch->logical);
}

int chunk_create(struct core *c, struct txn *t, uint64_t type, uint64_t *logical)
{
	const struct chunk *ch;
	int ret = chunk_map_create(c, type, &ch);

	if (ret)
		return ret;
	if (t) {
		ret = chunk_insert_items(t, ch);
		if (ret)
			return ret;
	}
	*logical = ch->logical;
	return 0;
}

int chunk_reloc_switch(struct txn *t, uint64_t logical)
{
	struct core *c = txn_core(t);
	struct chunk *ch;
	struct key k;
	int ret = chunk_reloc_switch_map(c, logical, &ch);

	if (ret)
		return ret;
	/* the chunk item and device extents: delete the old, insert the new
	 * (the map is ours: one relocation at a time, the chunk stays) */
	k = (struct key){ FIRST_CHUNK_OBJECTID, KEY_CHUNK_ITEM, logical };
	ret = btree_delete(t, core_tree(c, CT_CHUNK), &k);
	for (int i = 0; !ret && i < ch->num_retired; i++) {
		k = (struct key){ ch->retired_stripes[i].devid, KEY_DEV_EXTENT,
				  ch->retired_stripes[i].physical };
		ret = btree_delete(t, core_tree(c, CT_DEV), &k);
		if (ret == -ENOENT && !ch->retired_stripes[i].dev)
			ret = 0;	/* a missing device's extent that never was */
	}
	if (!ret)
		ret = chunk_insert_items(t, ch);
	return ret;
}

/* chunk_split_point's walk: the extents of [logical, +upto], relative to
 * logical, in key order (they never overlap) */
struct split_walk { uint64_t logical, upto; uint64_t (*x)[2]; size_t n, cap; int err; };

static int note_extent(struct core *c, const struct key *k, const void *item, uint32_t size,
		       void *arg)
{
	struct split_walk *w = arg;

	(void)c, (void)item, (void)size;
	if (k->objectid >= w->logical + w->upto)
		return 1;
	if (k->type != KEY_EXTENT_ITEM)
		return 0;	/* nodes are aligned: they cross no MiB boundary */
	if (w->n == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 256;
		void *v = realloc(w->x, cap * sizeof(*w->x));
		if (!v) {
			w->err = -ENOMEM;
			return 1;
		}
		w->x = v;
		w->cap = cap;
	}
	w->x[w->n][0] = k->objectid - w->logical;
	w->x[w->n++][1] = k->objectid - w->logical + k->offset;
	return 0;
}

uint64_t chunk_split_point(struct core *c, uint64_t logical, uint64_t upto, uint64_t below,
			   uint64_t unit)
{
	struct split_walk w = { logical, upto, NULL, 0, 0, 0 };
	uint64_t at = 0;

	if (!unit || !below)
		return 0;
	if (tree_items_from(c, core_tree(c, CT_EXTENT), &(struct key){ logical, 0, 0 },
			    note_extent, &w) == 0 && !w.err) {
		/* from the highest multiple of unit allowed down: a candidate
		 * inside an extent moves to the highest multiple at or below
		 * that extent's start, so the walk visits each extent once */
		uint64_t lim = upto < below - 1 ? upto : below - 1;
		size_t i = w.n;
		for (at = lim / unit * unit; at;) {
			while (i && w.x[i - 1][0] >= at)
				i--;	/* extents from at up: none holds at inside */
			if (!i || w.x[i - 1][1] <= at)
				break;	/* the nearest one below ends at or before at */
			at = w.x[i - 1][0] / unit * unit;
		}
	}
	free(w.x);
	return at;
}

/*
 * Split the chunk at logical into [logical, +at) and the rest (chunk.h):
 * the allocator's block group and the map (chunk_split_map), then the
 * items.
 */
int chunk_split(struct txn *t, uint64_t logical, uint64_t at)
{
	struct core *c = txn_core(t);
	struct chunk *ch, *rest;
	uint64_t len;
	struct key k;
	int ret = chunk_split_map(t, logical, at, &ch, &rest);

	if (ret)
		return ret;
	len = ch->length + rest->length;
	/* the items: old chunk item, device extents, block group and
	 * free-space items out; both halves' in */
	k = (struct key){ FIRST_CHUNK_OBJECTID, KEY_CHUNK_ITEM, logical };
	ret = btree_delete(t, core_tree(c, CT_CHUNK), &k);
	for (int i = 0; !ret && i < ch->num_stripes; i++) {
		k = (struct key){ ch->stripes[i].devid, KEY_DEV_EXTENT, ch->stripes[i].physical };
		ret = btree_delete(t, core_tree(c, CT_DEV), &k);
		if (ret == -ENOENT && !ch->stripes[i].dev)
			ret = 0;	/* a missing device's extent that never was */
	}
	if (!ret)
		ret = alloc_split_items(t, logical, len, at);
	if (!ret)
		ret = chunk_insert_items(t, ch);
	if (!ret)
		ret = chunk_insert_items(t, rest);
	if (ret)
		txn_abort(t, ret, "chunk split: the chunk, device extent and block group items");
	return ret;
}
