// SPDX-License-Identifier: MIT
/*
 * extent.c — reference counts in the extent tree, through delayed refs.
 *
 * Changing the extent tree on every node copy would make each B-tree
 * change recurse into another B-tree change.  Instead meta_alloc,
 * meta_free, data_alloc and data_ref queue a delta per block in a hash
 * table (fs/base/htable; netted: a node allocated and freed in one transaction costs
 * nothing), and the commit runs the queue.  Running it changes the extent
 * tree (and, through node copies, the free-space tree), which queues more
 * refs; the commit loops until a round queues nothing.  It converges
 * because each node is copied once per transaction: the second round only
 * changes nodes already copied in the first.
 *
 * meta_alloc / meta_free (meta.h) live here because they are mostly
 * bookkeeping of references and pinned space.
 */
#include "fs/core/core_types.h"
#include "fs/btree/meta.h"
#include "fs/store/alloc.h"
#include "fs/btree/btree.h"
#include "fs/base/crc32c.h"
#include "fs/trees/data.h"
#include "fs/format/items_format.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* An entry of the queue (struct dref_table): the change, hashed by bytenr. */
struct dref_ent {
	struct hnode h;		/* key = d.bytenr */
	struct dref d;
	bool shared;		/* delta was above 1 at some point: two items
				 * (of any inode) referenced it */
};

/* The entry of (bytenr, level, is_data) in tb, or NULL. */
static struct dref_ent *dref_find(const struct dref_table *tb, uint64_t bytenr, int level,
				  bool is_data)
{
	if (!tb->t.b)
		return NULL;
	for (struct hnode *n = htable_find(&tb->t, bytenr); n; n = htable_find_next(n)) {
		struct dref_ent *e = htable_entry(n, struct dref_ent, h);

		if (e->d.level == level && e->d.is_data == is_data)
			return e;
	}
	return NULL;
}

/* Empty tb and free its entries (and its buckets). */
static void dref_table_free(struct dref_table *tb)
{
	struct hnode *n;

	while (tb->t.b && (n = htable_pop(&tb->t)))
		free(htable_entry(n, struct dref_ent, h));
	htable_destroy(&tb->t);
}

int extent_ref_add(struct core *c, const struct dref *d)
{
	struct dref_table *tb = &c->drefs;
	struct dref_ent *e;
	int ret = 0;

	glock_lock(&c->dref_lock, GLOCK_WRITE);
	if (!tb->t.b && (ret = htable_init(&tb->t, 256)))
		goto out;
	e = dref_find(tb, d->bytenr, d->level, d->is_data);
	if (!e) {
		e = malloc(sizeof(*e));
		if (!e) {
			ret = -ENOMEM;
			goto out;
		}
		e->d = *d;
		e->shared = d->delta > 1;
		e->h.key = d->bytenr;
		htable_insert(&tb->t, &e->h);
	} else {
		e->d.delta += d->delta;
		e->shared |= e->d.delta > 1;
		e->d.is_new |= d->is_new;
		if (d->owner)
			e->d.owner = d->owner;
	}
out:
	glock_unlock(&c->dref_lock, GLOCK_WRITE);
	return ret;
}

int extent_ref_merge(struct core *c, uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
	struct dref_table *tb = &c->drefs;
	struct dref_ent *ea, *eb;
	int ret = 0;

	if (a + alen != b)
		return 0;
	glock_lock(&c->dref_lock, GLOCK_WRITE);
	ea = dref_find(tb, a, -1, true);
	eb = dref_find(tb, b, -1, true);
	if (ea && eb && ea->d.is_new && eb->d.is_new && ea->d.delta == 1 && eb->d.delta == 1 &&
	    ea->d.len == alen && eb->d.len == blen) {
		ea->d.len = alen + blen;
		htable_remove(&tb->t, &eb->h);
		free(eb);
		ret = 1;
	}
	glock_unlock(&c->dref_lock, GLOCK_WRITE);
	return ret;
}

bool extent_ref_sole_new(struct core *c, uint64_t bytenr, uint64_t len)
{
	struct dref_ent *e;
	bool r;

	glock_lock(&c->dref_lock, GLOCK_READ);
	e = dref_find(&c->drefs, bytenr, -1, true);
	r = e && e->d.is_new && e->d.delta == 1 && !e->shared && e->d.len == len;
	glock_unlock(&c->dref_lock, GLOCK_READ);
	return r;
}

bool extent_refs_pending(struct core *c)
{
	bool r;

	glock_lock(&c->dref_lock, GLOCK_WRITE);
	r = c->drefs.t.count != 0;
	glock_unlock(&c->dref_lock, GLOCK_WRITE);
	return r;
}

void extent_refs_free(struct core *c)
{
	dref_table_free(&c->drefs);
}

/*
 * A node's extent item counts the pointers (parent slots, root items) that
 * reach it: 1 until snapshots share it.  New nodes insert their item; a
 * change to an existing node's count reads it in the one search that
 * rewrites or deletes it.
 */
static int run_meta(struct txn *t, const struct dref *d)
{
	struct core *c = txn_core(t);
	struct root *ext = core_tree(c, CT_EXTENT);
	struct key k = { d->bytenr, KEY_METADATA_ITEM, (uint64_t)d->level };
	struct path p;
	int ret;

	if (d->delta == 0)
		return 0;
	if (d->is_new && d->delta > 0) {
		struct extent_item ei = { (uint64_t)d->delta, txn_transid(t),
					  EXTENT_FLAG_TREE_BLOCK, d->owner };
		ret = btree_insert(t, ext, &k, &ei, sizeof(ei));
		goto out;
	}
	btree_path_init(&p);
	ret = btree_search(t, ext, &k, &p, d->delta < 0 ? -1 : 0, 1);
	if (ret == 0) {
		uint32_t size;
		struct extent_item *ei = btree_item_ptr(&p, p.slots[0], &size);
		int64_t refs = size == sizeof(*ei) ? (int64_t)ei->refs + d->delta : -1;

		if (refs < 0)
			ret = -EUCLEAN;
		else if (refs == 0)
			ret = btree_del_items(t, ext, &p, 1);
		else
			ei->refs = (uint64_t)refs;
	} else if (ret == 1) {
		ret = -ENOENT;
	}
	btree_path_release(&p);
	if (ret == -ENOENT && d->delta > 0) {	/* first reference of an old node */
		struct extent_item ei = { (uint64_t)d->delta, txn_transid(t),
					  EXTENT_FLAG_TREE_BLOCK, d->owner };
		ret = btree_insert(t, ext, &k, &ei, sizeof(ei));
	}
out:
	if (ret == -EEXIST || ret == -ENOENT || ret == -EUCLEAN) {
		core_log(c, "extent tree: node %llu level %d: reference change %lld does not apply (%d)",
			 (unsigned long long)d->bytenr, d->level, (long long)d->delta, ret);
		ret = -EUCLEAN;
	}
	return ret;
}

static int run_data(struct txn *t, const struct dref *d)
{
	struct core *c = txn_core(t);
	struct root *ext = core_tree(c, CT_EXTENT);
	struct key k = { d->bytenr, KEY_EXTENT_ITEM, d->len };
	struct extent_item ei;
	int ret;

	if (d->is_new) {
		if (d->delta > 0) {
			ei = (struct extent_item){ (uint64_t)d->delta, txn_transid(t),
						   EXTENT_FLAG_DATA, 0 };
			return btree_insert(t, ext, &k, &ei, sizeof(ei));
		}
		/* never committed: the space is reusable at once — unless
		 * this transaction's fsync log may reference it: that log is
		 * what a crash replays until this commit's superblock is
		 * durable, and the next transaction writes while it is not
		 * yet (pipelined commits), so keep it pinned until then */
		ret = data_csum_delete(t, d->bytenr, d->len);
		if (!ret && __atomic_load_n(&c->log_pins_frees, __ATOMIC_RELAXED))
			alloc_pin(c, d->bytenr, d->len);
		else if (!ret)
			alloc_free_now(c, d->bytenr, d->len);
		return ret;
	}
	if (d->delta == 0)
		return 0;
	ret = btree_lookup(ext, &k, &ei, sizeof(ei));
	if (ret != (int)sizeof(ei) || (int64_t)ei.refs + d->delta < 0) {
		core_log(c, "extent tree: data extent %llu+%llu: no item or refcount underflow (%d)",
			 (unsigned long long)d->bytenr, (unsigned long long)d->len, ret);
		return ret < 0 && ret != -ENOENT ? ret : -EUCLEAN;
	}
	ei.refs = (uint64_t)((int64_t)ei.refs + d->delta);
	if (ei.refs)
		return btree_update(t, ext, &k, &ei, sizeof(ei));
	ret = btree_delete(t, ext, &k);
	if (!ret)
		ret = data_csum_delete(t, d->bytenr, d->len);
	if (!ret)
		alloc_pin(c, d->bytenr, d->len);	/* the last commit still points at it */
	return ret;
}

int extent_run_refs(struct txn *t)
{
	struct core *c = txn_core(t);
	struct dref_table tb;
	int ran = 0, ret = 0;

	glock_lock(&c->dref_lock, GLOCK_WRITE);
	tb = c->drefs;
	memset(&c->drefs, 0, sizeof(c->drefs));
	glock_unlock(&c->dref_lock, GLOCK_WRITE);

	/* deletions first: a node freed and its block reused at another level
	 * must lose its old item before the new one is inserted */
	for (int pass = 0; pass < 2 && !ret && tb.t.b; pass++) {
		htable_for_each(&tb.t, i, n) {
			const struct dref *d = &htable_entry(n, struct dref_ent, h)->d;
			if (ret)
				break;	/* out of this chain; the other chains see ret too */
			if ((pass == 0) != (d->delta < 0))
				continue;
			ret = d->is_data ? run_data(t, d) : run_meta(t, d);
			if (d->delta)
				ran++;
		}
	}
	dref_table_free(&tb);
	return ret ? ret : ran;
}

int extent_lookup(struct core *c, uint64_t bytenr, bool is_data, struct extent_item *ei,
		  uint64_t *len_or_level)
{
	struct key k = { bytenr, is_data ? KEY_EXTENT_ITEM : KEY_METADATA_ITEM, 0 }, ik;
	struct path p;
	int ret;

	btree_path_init(&p);
	ret = btree_search(NULL, core_tree(c, CT_EXTENT), &k, &p, 0, 0);
	if (ret < 0)
		goto out;
	if (p.slots[0] >= (int)btree_nritems(&p)) {
		ret = btree_next(&p);
		if (ret) {
			ret = ret > 0 ? -ENOENT : ret;
			goto out;
		}
	}
	btree_item_key(&p, p.slots[0], &ik);
	if (ik.objectid != bytenr || ik.type != k.type) {
		ret = -ENOENT;
		goto out;
	}
	uint32_t size;
	void *ptr = btree_item_ptr(&p, p.slots[0], &size);
	if (size != sizeof(*ei)) {
		ret = -EUCLEAN;
		goto out;
	}
	memcpy(ei, ptr, sizeof(*ei));
	if (len_or_level)
		*len_or_level = ik.offset;
	ret = 0;
out:
	btree_path_release(&p);
	return ret;
}

/* ---- meta.h ------------------------------------------------------------ */

/* The pending (not yet run) change of a node's references. */
static int64_t pending_delta(struct core *c, uint64_t bytenr, int level)
{
	const struct dref_ent *e;
	int64_t delta;

	glock_lock(&c->dref_lock, GLOCK_WRITE);
	e = dref_find(&c->drefs, bytenr, level, false);
	delta = e ? e->d.delta : 0;
	glock_unlock(&c->dref_lock, GLOCK_WRITE);
	return delta;
}

static int extent_meta_shared_drop(struct txn *t, uint64_t owner, int level, uint64_t bytenr)
{
	struct core *c = txn_core(t);
	struct extent_item ei;
	uint64_t lvl;
	int64_t refs;
	int ret;

	glock_lock(&c->share_lock, GLOCK_WRITE);
	ret = extent_lookup(c, bytenr, false, &ei, &lvl);
	if (ret == -ENOENT) {
		ei.refs = 0;
		ret = 0;
	}
	if (ret)
		goto out;
	refs = (int64_t)ei.refs + pending_delta(c, bytenr, level);
	if (refs > 1) {
		struct dref d = { bytenr, c->nodesize, owner, level, -1, false, false };
		ret = extent_ref_add(c, &d);
		if (!ret)
			ret = 1;
	}
out:
	glock_unlock(&c->share_lock, GLOCK_WRITE);
	return ret;
}

static int extent_meta_ref(struct txn *t, uint64_t owner, int level, uint64_t bytenr, int delta)
{
	struct core *c = txn_core(t);
	struct dref d = { bytenr, c->nodesize, owner, level, delta, false, false };

	return extent_ref_add(c, &d);
}

static int extent_meta_leaf_item_ref(struct txn *t, const struct key *k, const void *data,
				     uint32_t size, int delta)
{
	const struct file_extent *fe = data;

	if (k->type != KEY_EXTENT_DATA || size < sizeof(*fe) || fe->type == FE_INLINE ||
	    !fe->disk_logical)
		return 0;
	return data_ref(t, fe->disk_logical, fe->disk_len, delta);
}

static int extent_meta_alloc(struct txn *t, uint64_t owner, int level, uint64_t *bytenr)
{
	struct core *c = txn_core(t);
	uint64_t type = owner == CHUNK_TREE_OBJECTID ? BG_SYSTEM : BG_METADATA;
	struct dref d;
	int ret;

	ret = alloc_reserve(c, type, c->nodesize, c->nodesize, bytenr);
	if (ret)
		return ret;
	d = (struct dref){ *bytenr, c->nodesize, owner, level, +1, false, true };
	ret = extent_ref_add(c, &d);
	if (ret) {
		alloc_free_now(c, *bytenr, c->nodesize);
		return ret;
	}
	alloc_note_new(c, *bytenr);
	/* the block may have held a node freed earlier: never serve that copy */
	if (c->cache)
		cache_forget(c->cache, *bytenr);
	return 0;
}

static void extent_meta_free(struct txn *t, uint64_t owner, int level, uint64_t bytenr)
{
	struct core *c = txn_core(t);
	struct dref d = { bytenr, c->nodesize, owner, level, -1, false, false };

	if (extent_ref_add(c, &d)) {
		txn_abort(t, -ENOMEM, "meta_free: queueing a reference drop");
		return;
	}
	if (alloc_take_new(c, bytenr))
		alloc_free_now(c, bytenr, c->nodesize);	/* never committed */
	else
		alloc_pin(c, bytenr, c->nodesize);
}

/* The B-tree's block ops (meta.h) of a volume: set by mount_open and mount_format. */
const struct meta_ops extent_meta_ops = {
	.alloc = extent_meta_alloc,
	.free = extent_meta_free,
	.shared_drop = extent_meta_shared_drop,
	.ref = extent_meta_ref,
	.leaf_item_ref = extent_meta_leaf_item_ref,
};
