// SPDX-License-Identifier: MIT
/*
 * volume_resync.c — a device whose superblock missed commits (or whose
 * last resync did not finish) gets its copies rewritten from fresh ones:
 * at open, or in a thread after it (volume.h: volume_open_check).
 */
#include "fs/trees/chunk_tree.h"
#include "fs/store/alloc.h"
#include "fs/store/chunk.h"
#include "fs/store/copy_fence.h"
#include "fs/store/dev.h"
#include "fs/store/parity.h"
#include "fs/txn/txn.h"
#include "fs/items/log.h"
#include "fs/btree/btree.h"
#include "fs/btree/node.h"
#include "fs/trees/data.h"
#include "fs/base/crc32c.h"
#include "fs/services/volume.h"
#include "fs/services/volume_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * A device whose superblock missed commits gets, chunk by chunk, the
 * allocated parts of its stripes rewritten from a fresh copy; free space
 * (no block of the last commit lives there) is skipped, so the resync
 * costs what is in use, not the size of the chunks — unless an fsync log
 * waits for replay (its blocks are claimed only then): all is copied, at
 * open, before the replay.  Otherwise the copy runs in a thread after the
 * mount (volume_open_check), each segment behind the copy fence like a
 * relocation's (fs/store/copy_fence.h: a write of the segment waits, so
 * none slips between its read and its copy; writes elsewhere go on); until it ends the device stays stale (its copies read
 * last) and its device item carries DEV_ITEM_RESYNC, committed with the
 * first superblock that calls the device current, so a crash or an
 * unmount before the end leaves the flag and the next full mount starts
 * over.  The thread holds the volume operation slot (balance and device
 * changes wait for it: -EBUSY).
 *
 * What is copied is verified first, so a bad copy is not spread: a data
 * sector against the checksum tree, a metadata block in use as a node
 * (node_verify), a raid5/6 row rebuilt against its sectors' checksums
 * (parity_rebuild) — a metadata row against the checksums of the sectors
 * of its nodes, each node verified first (resync_nodes).  A source that
 * fails is passed over for another fresh copy (raid1c3/raid1c4) or the
 * device's own bytes, when they verify (rerouted); when nothing verifies
 * the device keeps its own bytes there and the mismatch is counted and
 * logged (core_stats' resync_mismatch) — scrub or fsck have the last
 * word on it.
 */

/* One stripe of r->d to rewrite: from a mirror (raid1, dup, raid10: its
 * pair) or, raid5/6, rebuilt from the other stripes (from.dev NULL). */
struct resync_item {
	uint64_t logical, length;	/* the chunk; bytes of the stripe */
	struct chunk_stripe from, to;
	uint64_t type;
	int nstripes, mine;
	struct chunk_stripe alt[CHUNK_MAX_STRIPES];	/* mirrors: the other fresh copies */
	int nalt;
};
struct resync {
	struct core *c;
	struct dev *d;
	struct resync_item *v;
	int n, cap;
	bool all;	/* copy free space too: a log to replay claims some */
	uint64_t copied, skipped, single;
	uint64_t mismatch, rerouted;	/* sectors/blocks: no copy verified; another one did */
	uint32_t *exp;			/* checksums of a segment's sectors */
	uint8_t *have, *tmp;
	uint8_t *seg;			/* raid5/6 metadata: a segment's logical bytes */
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
	struct resync_item *it = &r->v[r->n++];
	*it = (struct resync_item){ ch->logical,
				    chunk_stripe_span(ch->type, ch->num_stripes, ch->length),
				    ch->stripes[good], ch->stripes[mine], ch->type,
				    ch->num_stripes, mine, { { 0 } }, 0 };
	for (int i = 0; i < ch->num_stripes && !(ch->type & (BG_RAID10 | BG_PARITY)); i++)
		if (i != mine && i != good && ch->stripes[i].dev && !ch->stripes[i].dev->stale)
			it->alt[it->nalt++] = ch->stripes[i];
	return 0;
}

/* Do the bytes at b (logical l, len bytes) verify: a data sector against
 * its checksum (want), a metadata block as the node at l? */
static bool resync_ok(struct resync *r, const struct resync_item *it, const uint8_t *b, uint64_t l,
		      uint64_t len, uint32_t want)
{
	char why[160];

	if (it->type & BG_DATA)
		return crc32c(0, b, (size_t)len) == want;
	struct node_expect e = { r->c->nodesize, l, r->c->sb.fsid, 0, -1, 0, 0 };
	return node_verify(b, &e, why, sizeof(why)) == 0;
}

/*
 * What a segment's verification needs, gathered before the segment's
 * copy fence (no tree or allocator lock is taken inside it: a writer
 * waiting for the segment may hold one):
 * for data the checksums of the un bytes at logical ul (r->exp, r->have),
 * for metadata which of its nodesize blocks are in use (r->have).  The
 * checksums of an extent do not change while it lives; one freed and
 * written again meanwhile was written to this device too, so its bytes
 * agree everywhere and stay as they are.
 */
static int resync_prepare(struct resync *r, const struct resync_item *it, uint64_t ul, uint64_t un)
{
	if (it->type & BG_DATA)
		return data_load_csums(r->c, ul, (uint32_t)(un / CORE_SECTORSIZE), r->exp, r->have);
	if (it->type & BG_PARITY) {	/* nodes start on rows: which sectors, resync_nodes */
		for (uint64_t o = 0; o < un; o += CORE_SECTORSIZE)
			r->have[o / CORE_SECTORSIZE] = alloc_any_used(r->c, ul + o, CORE_SECTORSIZE);
		return 0;
	}
	for (uint64_t o = 0; o + r->c->nodesize <= un; o += r->c->nodesize)
		r->have[o / r->c->nodesize] = alloc_any_used(r->c, ul + o, r->c->nodesize);
	return 0;
}

/*
 * The checksums a raid5/6 metadata segment [ul, +un) is rebuilt against
 * (parity_rebuild), from r->have's sectors in use (resync_prepare): each
 * node there — found by its header naming its own address in the rows as
 * a read sees them, the returning device's columns rebuilt — verified
 * as it stands or through parity_read_verified (another column wrong:
 * raid6 gets past it), then the crc32c of each of its sectors.  A sector
 * in use that no verified node covers (a node whose header or checksum
 * fails however rebuilt) is PARITY_UNVERIFIED: its rows keep the
 * device's own bytes where the rebuild differs, so a column rebuilt from
 * a damaged one is never written.  Inside the segment's copy fence.
 */
static void resync_nodes(struct resync *r, uint64_t ul, uint64_t un)
{
	uint32_t ns = r->c->nodesize, spn = ns / CORE_SECTORSIZE;
	uint64_t nsec = un / CORE_SECTORSIZE;
	struct node_expect e = { ns, 0, r->c->sb.fsid, 0, -1, 0, 0 };
	char why[160];
	bool view = parity_read(r->c, ul, un, r->seg, NULL, NULL) == 0;

	for (uint64_t s = 0; s < nsec; s++) {
		const uint8_t *b = r->seg + s * CORE_SECTORSIZE, *good = b;

		if (r->have[s] != 1)
			continue;
		r->have[s] = PARITY_UNVERIFIED;	/* until a node covers it */
		e.bytenr = ul + s * CORE_SECTORSIZE;
		if (!view || s + spn > nsec || nb_bytenr(b) != e.bytenr)
			continue;
		if (node_verify(b, &e, why, sizeof(why))) {
			if (parity_read_verified(r->c, e.bytenr, ns, r->tmp, node_verify_quiet, &e))
				continue;
			good = r->tmp;
		}
		for (uint32_t i = 0; i < spn; i++) {
			r->exp[s + i] = crc32c(0, good + (uint64_t)i * CORE_SECTORSIZE, CORE_SECTORSIZE);
			r->have[s + i] = 1;
		}
		s += spn - 1;
	}
}

/*
 * buf holds [off, +n) of it's source stripe (logical ul): replace each
 * unit that fails verification (a data sector with a checksum, a
 * metadata block in use: resync_prepare) by the first of the other
 * fresh copies, then the device's own bytes, that verifies; none: the
 * device's own bytes (counted in r->mismatch).
 */
static int resync_verify(struct resync *r, const struct resync_item *it, uint64_t off, uint64_t n,
			 uint64_t ul, uint8_t *buf)
{
	bool data = (it->type & BG_DATA) != 0;
	uint64_t unit = data ? CORE_SECTORSIZE : r->c->nodesize;

	for (uint64_t o = 0; o + unit <= n; o += unit) {
		uint32_t want = data ? r->exp[o / unit] : 0;
		bool found = false;

		if (!r->have[o / unit])
			continue;	/* nothing to verify against: copied as it is */
		if (resync_ok(r, it, buf + o, ul + o, unit, want))
			continue;
		for (int a = 0; a <= it->nalt && !found; a++) {
			const struct chunk_stripe *st = a < it->nalt ? &it->alt[a] : &it->to;
			if (dev_read(st->dev, st->physical + off + o, r->tmp, unit) == 0 &&
			    resync_ok(r, it, r->tmp, ul + o, unit, want)) {
				memcpy(buf + o, r->tmp, unit);
				found = true;
				r->rerouted++;
				core_log(r->c, "resync of %s: %s %llu fails verification on %s; %s",
					 r->d->path, data ? "data sector" : "node", (unsigned long long)(ul + o),
					 it->from.dev->path, a < it->nalt ? "taken from another copy" :
					 "the device's own bytes verify: kept");
			}
		}
		if (found)
			continue;
		/* nothing verifies: keep what the device holds (rewriting it
		 * with the same bytes), unless the copies agree anyway */
		if (dev_read(r->d, it->to.physical + off + o, r->tmp, unit) == 0 &&
		    memcmp(r->tmp, buf + o, unit)) {
			memcpy(buf + o, r->tmp, unit);
			r->mismatch++;
			core_log(r->c, "resync of %s: %s %llu fails verification on every copy; the "
				 "device keeps its own bytes there", r->d->path,
				 data ? "data sector" : "node", (unsigned long long)(ul + o));
		}
	}
	return 0;
}

/* Copy what r->d misses; v (NULL at open) gets progress and may cancel. */
static int resync_dev(struct resync *r, struct volume *v)
{
	uint8_t *buf;
	int ret = chunk_for_each(r->c, resync_note, r);

	if (ret)
		return ret;
	/* raid5/6: a segment of a stripe is rows of up to 3 data sectors */
	size_t nsect = (size_t)(VOLUME_SEG / CORE_SECTORSIZE) * (CHUNK_MAX_STRIPES - 1);
	buf = aligned_alloc(4096, VOLUME_SEG);
	r->tmp = aligned_alloc(4096, 64 << 10);
	r->exp = malloc(nsect * sizeof(*r->exp));
	r->have = malloc(nsect);
	r->seg = aligned_alloc(4096, nsect * CORE_SECTORSIZE);
	if (!buf || !r->tmp || !r->exp || !r->have || !r->seg) {
		free(buf);
		return -ENOMEM;	/* r->tmp, exp, have: the caller frees them */
	}
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
			ret = resync_prepare(r, it, ul, un);
			if (ret)
				break;
			copy_fence_begin(r->c, ul, un);
			if (it->type & BG_PARITY) {
				if (!(it->type & BG_DATA))
					resync_nodes(r, ul, un);
				ret = parity_rebuild(r->c, it->logical, it->mine, off / CORE_SECTORSIZE,
						     n / CORE_SECTORSIZE, r->exp, r->have, &r->mismatch);
			} else {
				ret = dev_read(it->from.dev, it->from.physical + off, buf, n);
				if (!ret)
					ret = resync_verify(r, it, off, n, ul, buf);
				if (!ret)
					ret = dev_write(r->d, it->to.physical + off, buf, n);
			}
			copy_fence_end(r->c);
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
	char v[200] = "";

	if (r->mismatch || r->rerouted)
		snprintf(v, sizeof(v), "; %llu sector(s) or node(s) failed verification on the source "
			 "and came from another copy, %llu on every copy (left as the device had them)",
			 (unsigned long long)r->rerouted, (unsigned long long)r->mismatch);
	core_log(c, "%s: resynced %llu MiB (%llu MiB of free space skipped)%s%s%s", r->d->path,
		 (unsigned long long)(r->copied >> 20), (unsigned long long)(r->skipped >> 20),
		 r->single ? "; chunks with no other copy kept as they are (checksums judge them)" : "",
		 v, when);
}

/* A resync's buffers go; its verification counts go to the core's. */
static void resync_free(struct core *c, struct resync *r)
{
	free(r->v);
	free(r->exp);
	free(r->have);
	free(r->tmp);
	free(r->seg);
	r->seg = NULL;
	r->v = NULL;
	r->exp = NULL;
	r->have = r->tmp = NULL;
	__atomic_fetch_add(&c->resync_mismatch, r->mismatch, __ATOMIC_RELAXED);
	__atomic_fetch_add(&c->resync_rerouted, r->rerouted, __ATOMIC_RELAXED);
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
		resync_free(c, &r);
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
	 * now, before the replay — a log the superblock names, or one that
	 * starts in the slot the last commit named */
	bool now = log_pending(c);
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
		resync_free(c, &r);
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
