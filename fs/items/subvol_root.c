// SPDX-License-Identifier: MIT
/*
 * subvol_root.c — the subvolumes' roots in struct core (see subvol.h for
 * the design): the table of every subvolume's tree root (c->subvols),
 * their root items written at commit (a commit hook), and the cleaner
 * thread that frees deleted subvolumes in bounded batches.  The
 * subvolume table of open fs trees and the ioctls that make, snapshot
 * and delete subvolumes are subvol.c's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>

#include "fs/core/core_types.h"
#include "fs/btree/meta.h"
#include "fs/trees/extent.h"
#include "fs/txn/txn.h"
#include "fs/items/subvol.h"
#include "fs/items/inode.h"
#include "fs/items/dir.h"
#include "fs/base/probe.h"

/* Leaves (or shared subtrees) per cleaner transaction; GLASSFS_DROP_BATCH
 * overrides it and GLASSFS_DROP_DELAY_MS pauses between batches (tests
 * make a deletion slow enough to crash in the middle of it). */
#define DROP_BATCH 32
#define DROP_PER_TXN 8		/* batches per transaction before the cleaner commits */

static int drop_batch(void)
{
	const char *e = getenv("GLASSFS_DROP_BATCH");
	int n = e ? atoi(e) : 0;

	return n > 0 ? n : DROP_BATCH;
}

struct core_subvol *subvol_entry_find(struct core_subvols *s, uint64_t id)
{
	for (int i = 0; i < s->n; i++)
		if (s->v[i]->cr.r.id == id)
			return s->v[i];
	return NULL;
}

/* A new table entry (s->lock held). */
struct core_subvol *subvol_entry_add(struct core *c, uint64_t id)
{
	struct core_subvols *s = &c->subvols;
	struct core_subvol *sv;

	if (s->n == s->cap) {
		int cap = s->cap ? s->cap * 2 : 16;
		struct core_subvol **v = realloc(s->v, (size_t)cap * sizeof(*v));
		if (!v)
			return NULL;
		s->v = v;
		s->cap = cap;
	}
	sv = calloc(1, sizeof(*sv));
	if (!sv)
		return NULL;
	btree_root_init(&sv->cr.r, c, id, 0, 0, 0);
	sv->cr.present = true;
	s->v[s->n++] = sv;
	if (id >= s->next_id)
		s->next_id = id + 1;
	return sv;
}

int subvol_core_open(struct core *c)
{
	struct core_subvols *s = &c->subvols;
	struct key k = { FIRST_SUBVOL_OBJECTID, KEY_ROOT_ITEM, 0 }, ik;
	struct path p;
	int ret;

	glock_init(&s->lock, GLOCK_MUTEX, GLOCK_CLASS_MISC, 0, -1, -1);
	gcond_init(&s->cond);
	s->next_id = FIRST_SUBVOL_OBJECTID;
	btree_path_init(&p);
	ret = btree_search(NULL, core_tree(c, CT_ROOT), &k, &p, 0, 0);
	while (ret >= 0) {
		if (p.slots[0] >= (int)btree_nritems(&p)) {
			ret = btree_next(&p);
			if (ret)
				break;
		}
		btree_item_key(&p, p.slots[0], &ik);
		if (ik.type == KEY_ROOT_ITEM && ik.objectid >= FIRST_SUBVOL_OBJECTID) {
			uint32_t size;
			struct root_item *ri = btree_item_ptr(&p, p.slots[0], &size);
			struct core_subvol *sv;

			if (size != sizeof(*ri) || ik.objectid > SUBVOL_MAX_ID) {
				core_log(c, "root tree: bad root item for subvolume %llu",
					 (unsigned long long)ik.objectid);
				ret = -EUCLEAN;
				break;
			}
			sv = subvol_entry_add(c, ik.objectid);
			if (!sv) {
				ret = -ENOMEM;
				break;
			}
			btree_root_init(&sv->cr.r, c, ik.objectid, ri->bytenr, ri->level, ri->generation);
			sv->cr.r.last_snapshot = ri->last_snapshot;
			sv->cr.item_bytenr = ri->bytenr;
			sv->cr.item_level = ri->level;
			sv->cr.item_last_snapshot = ri->last_snapshot;
			sv->flags = ri->flags;
			sv->otime = ri->otime;
			sv->drop.progress = (struct key){ ri->drop_progress.objectid,
							  ri->drop_progress.type,
							  ri->drop_progress.offset };
		}
		ret = btree_next(&p);	/* by the lock: the next slot may be another group's */
		if (ret)
			break;
	}
	btree_path_release(&p);
	return ret < 0 ? ret : 0;
}

void subvol_core_free(struct core *c)
{
	struct core_subvols *s = &c->subvols;

	for (int i = 0; i < s->n; i++) {
		btree_root_release(&s->v[i]->cr.r);
		free(s->v[i]);
	}
	free(s->v);
	s->v = NULL;
	s->n = s->cap = 0;
}

struct root *subvol_core_root(struct core *c, uint64_t id)
{
	struct core_subvols *s = &c->subvols;
	struct core_subvol *sv;
	struct root *r = NULL;

	glock_write(&s->lock);
	sv = subvol_entry_find(s, id);
	if (sv && !sv->gone && !(sv->flags & ROOT_F_DEAD))
		r = &sv->cr.r;
	glock_write_unlock(&s->lock);
	return r;
}

/* core.h: the fixed trees by id, then the subvolumes (here, above the core). */
struct root *subvol_root(struct core *c, uint64_t tree_id)
{
	if (tree_id >= FIRST_SUBVOL_OBJECTID)
		return subvol_core_root(c, tree_id);
	for (int i = 0; i < CT_NR; i++)
		if (core_tree_id(i) == tree_id && c->roots[i].present)
			return &c->roots[i].r;
	return NULL;
}

uint64_t subvol_flags(struct core *c, uint64_t id)
{
	struct core_subvols *s = &c->subvols;
	struct core_subvol *sv;
	uint64_t f = 0;

	if (id < FIRST_SUBVOL_OBJECTID)
		return 0;
	glock_write(&s->lock);
	sv = subvol_entry_find(s, id);
	if (sv)
		f = sv->flags | (sv->gone ? ROOT_F_DEAD : 0);
	glock_write_unlock(&s->lock);
	return f;
}

int subvol_update_root_items(struct txn *t)
{
	struct core *c = txn_core(t);
	struct core_subvols *s = &c->subvols;
	struct root *rt = core_tree(c, CT_ROOT);
	int changes = 0, ret = 0;

	if (!s->v)
		return 0;
	glock_write(&s->lock);
	for (int i = 0; i < s->n && !ret; i++) {
		struct core_subvol *sv = s->v[i];
		struct core_root *cr = &sv->cr;
		struct key k = { cr->r.id, KEY_ROOT_ITEM, 0 };
		struct root_item ri;

		if (sv->gone)
			continue;
		if (sv->drop.all) {	/* nothing left of the tree: its item goes */
			if (cr->item_bytenr) {
				ret = btree_delete(t, rt, &k);
				if (ret == -ENOENT)
					ret = 0;
			}
			sv->gone = true;
			changes++;
			continue;
		}
		if (!sv->item_dirty && cr->item_bytenr == cr->r.bytenr &&
		    cr->item_level == cr->r.level && cr->item_last_snapshot == cr->r.last_snapshot)
			continue;
		memset(&ri, 0, sizeof(ri));
		ri.generation = cr->r.generation ? cr->r.generation : txn_transid(t);
		ri.bytenr = cr->r.bytenr;
		ri.level = (uint8_t)cr->r.level;
		ri.refs = 1;
		ri.flags = sv->flags;
		ri.last_snapshot = cr->r.last_snapshot;
		ri.otime = sv->otime;
		ri.drop_progress.objectid = sv->drop.progress.objectid;
		ri.drop_progress.type = sv->drop.progress.type;
		ri.drop_progress.offset = sv->drop.progress.offset;
		ret = btree_update(t, rt, &k, &ri, sizeof(ri));
		if (ret)
			break;
		cr->item_bytenr = cr->r.bytenr;
		cr->item_level = cr->r.level;
		cr->item_last_snapshot = cr->r.last_snapshot;
		sv->item_dirty = false;
		changes++;
	}
	glock_write_unlock(&s->lock);
	return ret < 0 ? ret : changes;
}

/* The next deleted subvolume to drop (s->lock held). */
static struct core_subvol *next_dead(struct core_subvols *s)
{
	for (int i = 0; i < s->n; i++) {
		struct core_subvol *sv = s->v[i];
		if ((sv->flags & ROOT_F_DEAD) && !sv->gone && !sv->drop.all && !sv->linking)
			return sv;
	}
	return NULL;
}

int subvol_cleaner_pending(struct core *c)
{
	struct core_subvols *s = &c->subvols;
	int n = 0;

	glock_write(&s->lock);
	for (int i = 0; i < s->n; i++) {
		struct core_subvol *sv = s->v[i];
		if ((sv->flags & ROOT_F_DEAD) && !sv->gone && !sv->linking)
			n++;
	}
	glock_write_unlock(&s->lock);
	return n;
}

/*
 * The cleaner: one bounded batch per transaction handle, so a commit
 * waits at most for one batch, and progress is committed with the frees.
 */
static void *cleaner_thread(void *arg)
{
	struct core *c = arg;
	struct core_subvols *s = &c->subvols;
	int batch = drop_batch();
	const char *dl = getenv("GLASSFS_DROP_DELAY_MS");
	uint64_t delay_ns = dl ? (uint64_t)atoi(dl) * 1000000ull : 0;
	uint64_t last_trans = 0;
	int in_trans = 0;

	glock_write(&s->lock);
	while (!s->cleaner.stop) {
		struct core_subvol *sv = c->aborted ? NULL : next_dead(s);
		struct txn *t;
		uint64_t t0, transid;
		int ret;

		if (!sv) {
			gcond_timedwait(&s->cond, &s->lock, 1000000000ull);
			continue;
		}
		glock_write_unlock(&s->lock);
		t0 = glock_now_ns();
		ret = txn_join(c, 16, TXN_USE_RESERVE, &t);
		if (ret) {
			glock_write(&s->lock);
			if (!s->cleaner.stop)
				gcond_timedwait(&s->cond, &s->lock, 100000000ull);
			continue;
		}
		ret = btree_drop_batch(t, &sv->cr.r, &sv->drop, batch);
		if (ret < 0)
			txn_abort(t, ret, "subvolume cleaner");
		glock_write(&s->lock);
		sv->item_dirty = true;
		glock_write_unlock(&s->lock);
		transid = txn_transid(t);
		if (transid != last_trans) {
			last_trans = transid;
			in_trans = 0;
		}
		if (PROBE_ON(SUBVOL_DROP))
			GLASSFS_SUBVOL_DROP(sv->cr.r.id, transid, ret == 1, glock_now_ns() - t0);
		txn_end(t);
		/* gone: let the space come back soon; and never let one
		 * transaction gather more than DROP_PER_TXN batches, whose
		 * frees its commit would have to write in one go */
		if (ret == 1 || (ret == 0 && ++in_trans >= DROP_PER_TXN))
			txn_commit(c, COMMIT_OTHER);
		glock_write(&s->lock);
		if (delay_ns && !s->cleaner.stop)
			gcond_timedwait(&s->cond, &s->lock, delay_ns);
	}
	glock_write_unlock(&s->lock);
	return NULL;
}

int subvol_cleaner_start(struct core *c)
{
	struct core_subvols *s = &c->subvols;

	if (c->readonly)
		return 0;
	return gthread_start(&s->cleaner, cleaner_thread, c);
}

void subvol_core_stop(struct core *c)
{
	struct core_subvols *s = &c->subvols;

	gthread_stop(&s->cleaner, &s->lock, &s->cond);
}

void subvol_cleaner_kick(struct core *c)
{
	glock_write(&c->subvols.lock);
	gcond_broadcast(&c->subvols.cond);
	glock_write_unlock(&c->subvols.lock);
}
