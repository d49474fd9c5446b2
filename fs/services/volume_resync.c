// SPDX-License-Identifier: MIT
/*
 * volume_resync.c — a device whose superblock missed commits (or whose
 * last resync did not finish) gets its copies rewritten from fresh ones:
 * at open, or in a thread after it (volume.h: volume_open_check).
 */
#include "fs/trees/chunk_tree.h"
#include "fs/store/alloc.h"
#include "fs/store/chunk.h"
#include "fs/store/dev.h"
#include "fs/store/parity.h"
#include "fs/txn/txn.h"
#include "fs/btree/btree.h"
#include "fs/services/volume.h"
#include "fs/services/volume_int.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

/*
 * A device whose superblock missed commits gets, chunk by chunk, the
 * allocated parts of its stripes rewritten from a fresh copy; free space
 * (no block of the last commit lives there) is skipped, so the resync
 * costs what is in use, not the size of the chunks — unless an fsync log
 * waits for replay (its blocks are claimed only then): all is copied, at
 * open, before the replay.  Otherwise the copy runs in a thread after the
 * mount (volume_open_check), each segment under c->reloc_lock held
 * exclusively like a relocation's, so no write slips between its read
 * and its copy; until it ends the device stays stale (its copies read
 * last) and its device item carries DEV_ITEM_RESYNC, committed with the
 * first superblock that calls the device current, so a crash or an
 * unmount before the end leaves the flag and the next full mount starts
 * over.  The thread holds the volume operation slot (balance and device
 * changes wait for it: -EBUSY).
 */

/* One stripe of r->d to rewrite: from a mirror (raid1, dup, raid10: its
 * pair) or, raid5/6, rebuilt from the other stripes (from.dev NULL). */
struct resync_item {
	uint64_t logical, length;	/* the chunk; bytes of the stripe */
	struct chunk_stripe from, to;
	uint64_t type;
	int nstripes, mine;
};
struct resync {
	struct core *c;
	struct dev *d;
	struct resync_item *v;
	int n, cap;
	bool all;	/* copy free space too: a log to replay claims some */
	uint64_t copied, skipped, single;
};

static int resync_note(const struct chunk *ch, void *arg)
{
	struct resync *r = arg;
	int mine = -1, good = -1, fresh = 0;

	for (int i = 0; i < ch->num_stripes; i++) {
		if (ch->stripes[i].dev == r->d)
			mine = i;
		else if (ch->stripes[i].dev && !ch->stripes[i].dev->stale) {
			good = i;
			fresh++;
		}
	}
	if (mine < 0)
		return 0;
	if (ch->type & BG_RAID10) {	/* only its pair holds its elements */
		const struct dev *pd = ch->stripes[mine ^ 1].dev;
		good = pd && !pd->stale ? mine ^ 1 : -1;
	} else if (ch->type & BG_PARITY) {
		good = fresh >= ch->num_stripes - chunk_parity_count(ch->type) ? mine : -1;
	}
	if (good < 0) {
		r->single++;
		return 0;
	}
	if (volume_grow((void **)&r->v, &r->cap, r->n, sizeof(*r->v)))
		return -ENOMEM;
	r->v[r->n++] = (struct resync_item){ ch->logical,
					     chunk_stripe_span(ch->type, ch->num_stripes, ch->length),
					     ch->stripes[good], ch->stripes[mine], ch->type,
					     ch->num_stripes, mine };
	return 0;
}

/* Copy what r->d misses; v (NULL at open) gets progress and may cancel. */
static int resync_dev(struct resync *r, struct volume *v)
{
	uint8_t *buf;
	int ret = chunk_for_each(r->c, resync_note, r);

	if (ret)
		return ret;
	buf = aligned_alloc(4096, VOLUME_SEG);
	if (!buf)
		return -ENOMEM;
	for (int i = 0; v && i < r->n; i++)
		__atomic_fetch_add(&v->resync_total, r->v[i].length, __ATOMIC_RELAXED);
	for (int i = 0; i < r->n && !ret; i++) {
		const struct resync_item *it = &r->v[i];
		/* raid10: one 64 KiB element of the stripe at a time (its
		 * logical range is elsewhere than the stripe offset) */
		uint64_t seg = (it->type & BG_RAID10) ? CHUNK_STRIPE_LEN : VOLUME_SEG;
		uint64_t pairs = (uint64_t)it->nstripes / 2;
		uint64_t k = (uint64_t)(it->nstripes - chunk_parity_count(it->type));
		for (uint64_t off = 0; off < it->length && !ret; off += seg) {
			uint64_t n = it->length - off < seg ? it->length - off : seg;
			uint64_t ul = it->logical + off, un = n;	/* the logical bytes it holds */
			if (it->type & BG_RAID10) {
				ul = it->logical + ((off / CHUNK_STRIPE_LEN) * pairs + (uint64_t)it->mine / 2) *
						   CHUNK_STRIPE_LEN;
			} else if (it->type & BG_PARITY) {
				ul = it->logical + off * k;	/* rows off/4K.. hold k sectors each */
				un = n * k;
			}
			if (v && __atomic_load_n(&v->resync_cancel, __ATOMIC_RELAXED)) {
				ret = -ECANCELED;
				break;
			}
			if (v)
				__atomic_fetch_add(&v->resync_done, n, __ATOMIC_RELAXED);
			if (!r->all && !alloc_any_used(r->c, ul, un)) {
				r->skipped += n;
				continue;
			}
			glock_write(&r->c->reloc_lock);
			if (it->type & BG_PARITY) {
				ret = parity_rebuild(r->c, it->logical, it->mine, off / CORE_SECTORSIZE,
						     n / CORE_SECTORSIZE);
			} else {
				ret = dev_read(it->from.dev, it->from.physical + off, buf, n);
				if (!ret)
					ret = dev_write(r->d, it->to.physical + off, buf, n);
			}
			glock_write_unlock(&r->c->reloc_lock);
			r->copied += n;
		}
	}
	free(buf);
	return ret ? ret : dev_flush(r->d);
}

/* Set or clear DEV_ITEM_RESYNC in d's device item (inside handle t). */
static int resync_flag(struct txn *t, struct dev *d, bool on)
{
	struct core *c = txn_core(t);
	struct key k = { DEV_ITEMS_OBJECTID, KEY_DEV_ITEM, d->devid };
	struct dev_item di;
	int ret = btree_lookup(core_tree(c, CT_CHUNK), &k, &di, sizeof(di));

	if (ret != (int)sizeof(di))
		return ret < 0 ? ret : -EUCLEAN;
	if (!(di.type & DEV_ITEM_RESYNC) == !on)
		return 0;
	di.type = on ? di.type | DEV_ITEM_RESYNC : di.type & ~DEV_ITEM_RESYNC;
	di.generation = txn_transid(t);
	return btree_update(t, core_tree(c, CT_CHUNK), &k, &di, sizeof(di));
}

static void resync_log(struct core *c, const struct resync *r, const char *when)
{
	core_log(c, "%s: resynced %llu MiB (%llu MiB of free space skipped)%s%s", r->d->path,
		 (unsigned long long)(r->copied >> 20), (unsigned long long)(r->skipped >> 20),
		 r->single ? "; chunks with no other copy kept as they are (checksums judge them)" : "",
		 when);
}

static void *resync_thread(void *arg)
{
	struct core *c = arg;
	struct volume *v = c->vol;
	int ret = 0;

	/* transactions only once the open is complete (the cleaner is the
	 * last thing it starts) */
	while (!__atomic_load_n(&c->subvols.cleaner.started, __ATOMIC_ACQUIRE) &&
	       !__atomic_load_n(&v->resync_cancel, __ATOMIC_RELAXED))
		usleep(10000);
	for (int i = 0; i < c->ndevs && !ret; i++) {
		struct dev *d = c->devs[i];
		struct resync r = { .c = c, .d = d };
		uint64_t t0 = glock_now_ns();
		struct txn *t;

		bool mine = false;
		for (int k = 0; k < v->nresync; k++)
			mine |= v->resync_ids[k] == d->devid;
		if (!d->stale || !mine)
			continue;	/* a device stale since (a failed flush): the next mount */
		ret = resync_dev(&r, v);
		free(r.v);
		if (ret == -ECANCELED)
			break;
		if (ret) {
			core_log(c, "%s: resync failed (%s); its copies stay last to be read, and the "
				 "next full mount tries again", d->path, strerror(-ret));
			ret = 0;
			continue;
		}
		glock_write(&c->chunks.lock);
		d->stale = false;	/* every copy is current from here on */
		glock_write_unlock(&c->chunks.lock);
		ret = volume_join(c, 2, &t, NULL, 0);
		if (!ret) {
			int r2 = resync_flag(t, d, false);
			if (r2)
				txn_abort(t, r2, "resync: clearing the device item's flag");
			ret = volume_commit(c, t, r2, NULL, 0, "resync: recording the end", NULL);
		}
		if (!ret) {
			char when[64];
			snprintf(when, sizeof(when), " in %.1f s, in the background",
				 (double)(glock_now_ns() - t0) / 1e9);
			resync_log(c, &r, when);
			__atomic_fetch_add(&c->repaired, 1, __ATOMIC_RELAXED);
		}
	}
	__atomic_store_n(&v->resync_running, 0, __ATOMIC_RELEASE);
	volume_release(v);
	return NULL;
}

/* Devices whose device item says a resync did not finish are stale too. */
static int note_resync(struct core *c, const struct key *k, const void *item, uint32_t size,
		       void *arg)
{
	const struct dev_item *di = item;

	(void)arg;
	if (size != sizeof(*di) || !(di->type & DEV_ITEM_RESYNC))
		return 0;
	for (int i = 0; i < c->ndevs; i++)
		if (c->devs[i]->devid == k->offset)
			c->devs[i]->stale = true;
	return 0;
}

int volume_open_check(struct core *c)
{
	/* an fsync log not yet replayed references blocks the allocator
	 * does not count yet (replay claims them later): copy everything,
	 * now, before the replay */
	bool now = c->sb.log_root != 0;
	struct volume *v = NULL;
	struct txn *t = NULL;
	int done = 0, bg = 0, ret;

	if (chunk_tree_items(c, DEV_ITEMS_OBJECTID, KEY_DEV_ITEM, note_resync, NULL))
		core_log(c, "reading the device items for unfinished resyncs failed");
	for (int i = 0; i < c->ndevs; i++) {
		struct dev *d = c->devs[i];
		struct resync r = { .c = c, .d = d, .all = true };

		if (!d->stale)
			continue;
		core_log(c, "%s: %s%s", d->path, d->sb_generation < c->generation ?
			 "stale superblock: it missed commits" : "its last resync did not finish",
			 c->readonly ? "; read-only: its copies are read last" :
			 now ? "; rewriting its copies from the other devices" :
			 "; its copies are read last and rewritten from the others in the background");
		if (c->readonly)
			continue;
		if (!now) {
			/* flagged in the commit that makes its superblock current */
			ret = t ? 0 : txn_join(c, 2, TXN_USE_RESERVE, &t);
			if (!ret)
				ret = resync_flag(t, d, true);
			if (ret) {
				core_log(c, "%s: cannot record the resync (%s); its copies stay last to "
					 "be read", d->path, strerror(-ret));
				if (t)
					txn_abort(t, ret, "resync: flagging the device item");
				break;
			}
			done++;
			bg++;
			continue;
		}
		ret = resync_dev(&r, NULL);
		free(r.v);
		if (ret) {
			core_log(c, "%s: resync failed (%s); its copies stay last to be read",
				 d->path, strerror(-ret));
			continue;
		}
		resync_log(c, &r, "");
		/* no commit now: it would drop the log before its replay (the
		 * first commit after it writes this superblock; a flag left by
		 * an unfinished resync stays until the next mount's) */
		d->stale = false;
		__atomic_fetch_add(&c->repaired, 1, __ATOMIC_RELAXED);
	}
	if (t) {
		ret = txn_end(t);
		if (!ret && bg && volume_claim(c, &v, NULL, 0) == 0) {
			v->resync_running = 1;
			for (int i = 0; i < c->ndevs; i++)
				if (c->devs[i]->stale)
					v->resync_ids[v->nresync++] = c->devs[i]->devid;
			ret = -pthread_create(&v->resync_thread, NULL, resync_thread, c);
			if (ret) {
				v->resync_running = 0;
				volume_release(v);
				core_log(c, "resync thread: %s; the stale copies are read last",
					 strerror(-ret));
			} else {
				v->resync_joinable = true;
			}
		}
	}
	return done;
}

void volume_resync_wait(struct core *c)
{
	struct volume *v = __atomic_load_n(&c->vol, __ATOMIC_ACQUIRE);

	while (v && __atomic_load_n(&v->resync_running, __ATOMIC_ACQUIRE))
		usleep(10000);
}

void volume_resync_progress(struct core *c, uint64_t *total, uint64_t *done, uint64_t *running)
{
	struct volume *v = __atomic_load_n(&c->vol, __ATOMIC_ACQUIRE);

	*running = v ? __atomic_load_n(&v->resync_running, __ATOMIC_ACQUIRE) != 0 : 0;
	*total = v ? __atomic_load_n(&v->resync_total, __ATOMIC_RELAXED) : 0;
	*done = v ? __atomic_load_n(&v->resync_done, __ATOMIC_RELAXED) : 0;
}
