// SPDX-License-Identifier: MIT
/*
 * volume.c — device add/remove, rotational flag, balance, stale-device
 * resync (see volume.h for the design).
 */
#include "fs/core/core_types.h"
#include "fs/trees/chunk_tree.h"
#include "fs/store/alloc.h"
#include "fs/store/chunk.h"
#include "fs/store/dev.h"
#include "fs/trees/data.h"
#include "fs/txn/txn.h"
#include "fs/btree/btree.h"
#include "fs/base/crc32c.h"
#include "fs/base/probe.h"
#include "fs/services/volume.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#define SEG (1ull << 20)	/* relocation copy unit */

struct volume {
	struct glock lock;		/* GLOCK_CLASS_MISC mutex: one operation at a time (busy) */
	bool busy;			/* an add/remove/rotational/balance runs */
	/* balance (fields below guarded by lock, progress counters atomic) */
	pthread_t thread;
	bool joinable;
	int running;			/* atomic */
	int cancel;			/* atomic: stop after the current segment */
	int result;
	unsigned started;
	int64_t dconv, mconv;
	uint64_t chunks_total, chunks_done, bytes_total, bytes_done;	/* atomic */
	/* what the counters above measure (VOL_OP_*, set by op_plan) and
	 * whether it runs; bytes_done grows by segment (reloc_copy) */
	int op, op_running;		/* atomic */
	char msg[256];
	/* background resync of stale devices (volume_open_check) */
	pthread_t resync_thread;
	bool resync_joinable;
	int resync_cancel;		/* atomic: unmount */
	int resync_running;		/* atomic */
	uint64_t resync_ids[CORE_MAX_DEVS];	/* the devices stale at open */
	int nresync;
	uint64_t resync_total, resync_done;	/* atomic: bytes to copy / copied */
	/* removed devices stay open until unmount: a read or discard that
	 * looked a stripe up before the switch may still be using one */
	struct dev *gone[CORE_MAX_DEVS];
	int ngone;
};

static struct volume *vol_get(struct core *c)
{
	struct volume *v = __atomic_load_n(&c->vol, __ATOMIC_ACQUIRE);

	if (v)
		return v;
	v = calloc(1, sizeof(*v));
	if (!v)
		return NULL;
	glock_init(&v->lock, GLOCK_MUTEX, GLOCK_CLASS_MISC, 0, -1, -1);
	struct volume *none = NULL;
	if (!__atomic_compare_exchange_n(&c->vol, &none, v, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		free(v);
		return none;
	}
	return v;
}

/* The reason, to msg and the daemon log; returns err. */
static int say(struct core *c, int err, char *msg, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static int say(struct core *c, int err, char *msg, size_t len, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (msg && len)
		snprintf(msg, len, "%s", buf);
	core_log(c, "%s", buf);
	return err;
}

/* Claim the one volume operation slot.  -EBUSY if taken. */
static int vol_claim(struct core *c, struct volume **out, char *msg, size_t len)
{
	struct volume *v = vol_get(c);
	int ret = 0;

	if (!v)
		return -ENOMEM;
	if (core_readonly(c))
		return say(c, -EROFS, msg, len, "the volume is read-only");
	glock_write(&v->lock);
	if (v->busy && __atomic_load_n(&v->resync_running, __ATOMIC_ACQUIRE))
		ret = say(c, -EBUSY, msg, len, "a stale device's resync is running; try again when it "
			  "ends (glassctl stats: resync_done_bytes reaches resync_bytes)");
	else if (v->busy)
		ret = say(c, -EBUSY, msg, len, "another device or balance operation is running");
	else
		v->busy = true;
	glock_write_unlock(&v->lock);
	*out = v;
	return ret;
}

/* The chunks of l are what the operation op moves: the progress counters
 * start over with their bytes (glassctl's progress line, by bytes). */
struct chunk_ref { uint64_t logical, length, type; bool on_dev; };
static void op_plan(struct volume *v, int op, const struct chunk_ref *ch, int n)
{
	uint64_t bytes = 0;

	for (int i = 0; i < n; i++)
		bytes += ch[i].length;
	__atomic_store_n(&v->chunks_done, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&v->bytes_done, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&v->chunks_total, (uint64_t)n, __ATOMIC_RELAXED);
	__atomic_store_n(&v->bytes_total, bytes, __ATOMIC_RELAXED);
	__atomic_store_n(&v->op, op, __ATOMIC_RELAXED);
	__atomic_store_n(&v->op_running, 1, __ATOMIC_RELEASE);
}

/* A chunk is finished (or skipped): done becomes exactly the bytes of the
 * chunks finished so far, whatever its segments added. */
static void op_chunk_done(struct volume *v, uint64_t *base, uint64_t length)
{
	*base += length;
	__atomic_fetch_add(&v->chunks_done, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&v->bytes_done, *base, __ATOMIC_RELAXED);
}

static void vol_release(struct volume *v)
{
	__atomic_store_n(&v->op_running, 0, __ATOMIC_RELEASE);
	glock_write(&v->lock);
	v->busy = false;
	glock_write_unlock(&v->lock);
}

/* A handle for a volume operation; says why when there is none. */
static int vol_join(struct core *c, unsigned items, struct txn **t, char *msg, size_t mlen)
{
	int ret = txn_join(c, items, TXN_USE_RESERVE, t);

	if (ret)
		say(c, ret, msg, mlen, "cannot start a transaction: %s", strerror(-ret));
	return ret;
}

/*
 * The end of every volume operation's transaction: end handle t (ret is
 * the operation's own result so far), commit if all went well, then say
 * why it failed ("WHAT failed: reason", to msg and the log; what NULL:
 * nothing said) or log ok (NULL: nothing).  Returns 0 or -errno.
 */
static int vol_commit(struct core *c, struct txn *t, int ret, char *msg, size_t mlen,
		      const char *what, const char *ok)
{
	int r = txn_end(t);

	if (!ret)
		ret = r;
	if (!ret)
		ret = txn_commit(c, COMMIT_OTHER);
	if (ret && what)
		say(c, ret, msg, mlen, "%s failed: %s", what, strerror(-ret));
	else if (!ret && ok)
		core_log(c, "%s", ok);
	return ret;
}

/* The device of the volume at path (same file), or NULL. */
static struct dev *dev_by_path(struct core *c, const char *path)
{
	struct stat a, b;

	if (stat(path, &a) < 0)
		return NULL;
	for (int i = 0; i < c->ndevs; i++) {
		if (stat(c->devs[i]->path, &b) < 0)
			continue;
		if (S_ISBLK(a.st_mode) ? (S_ISBLK(b.st_mode) && a.st_rdev == b.st_rdev)
				       : (a.st_dev == b.st_dev && a.st_ino == b.st_ino))
			return c->devs[i];
	}
	return NULL;
}

static const uint64_t super_offs[SUPER_COPIES] = { SUPER_OFFSET, SUPER_MIRROR1, SUPER_MIRROR2 };

/* Zero every superblock copy of d (a device leaving or joining). */
static int wipe_supers(struct dev *d)
{
	uint8_t *z = aligned_alloc(4096, SUPER_SIZE);
	int ret = 0;

	if (!z)
		return -ENOMEM;
	memset(z, 0, SUPER_SIZE);
	for (int k = 0; k < SUPER_COPIES && !ret; k++)
		if (super_offs[k] + SUPER_SIZE <= d->size)
			ret = dev_write(d, super_offs[k], z, SUPER_SIZE);
	if (!ret)
		ret = dev_flush(d);
	free(z);
	return ret;
}

/* ---- relocating one chunk ------------------------------------------------ */

/* Does block [b, b + bs) of the segment verify?  Data: every sector with
 * a checksum matches it; metadata: a node for this address whose own
 * checksum matches.  Unused space verifies as data, never as a node. */
static bool block_ok(const uint8_t *b, uint64_t logical, uint32_t bs,
		     bool meta, const uint32_t *exp, const uint8_t *have)
{
	if (meta) {
		uint32_t want, got = crc32c(0, b + 32, bs - 32);
		uint64_t at;
		memcpy(&want, b, 4);
		memcpy(&at, b + 48, 8);
		return want == got && at == logical;
	}
	for (uint32_t s = 0; s < bs / CORE_SECTORSIZE; s++)
		if (have[s] && crc32c(0, b + (size_t)s * CORE_SECTORSIZE, CORE_SECTORSIZE) != exp[s])
			return false;
	return true;
}

/*
 * The segment in buf came from copy `from` of cp: where a block fails
 * verification and another copy has it right, take that copy's block, so
 * a relocation never spreads a bad copy.  Best effort: a block no copy
 * verifies (free space, or truly lost) stays as read.
 */
static void mend_segment(struct core *c, uint8_t *buf, uint64_t logical, uint64_t n, bool meta,
			 const struct chunk_copy *cp, int ncp, int from,
			 const uint32_t *exp, const uint8_t *have)
{
	uint32_t bs = meta ? c->nodesize : CORE_SECTORSIZE;
	uint8_t *alt[CHUNK_MAX_STRIPES] = { NULL };
	bool tried[CHUNK_MAX_STRIPES] = { false };

	for (uint64_t o = 0; o + bs <= n; o += bs) {
		const uint32_t *e = exp ? exp + o / CORE_SECTORSIZE : NULL;
		const uint8_t *h = have ? have + o / CORE_SECTORSIZE : NULL;
		bool any = meta;

		for (uint32_t s = 0; !meta && s < bs / CORE_SECTORSIZE; s++)
			any |= h[s] != 0;
		if (!any || block_ok(buf + o, logical + o, bs, meta, e, h))
			continue;
		for (int i = 0; i < ncp; i++) {
			if (i == from)
				continue;
			if (!tried[i]) {	/* the other copy's whole segment, once */
				tried[i] = true;
				alt[i] = aligned_alloc(4096, n);
				if (alt[i] && dev_read(cp[i].dev, cp[i].physical, alt[i], n)) {
					free(alt[i]);
					alt[i] = NULL;
				}
			}
			if (alt[i] && block_ok(alt[i] + o, logical + o, bs, meta, e, h)) {
				memcpy(buf + o, alt[i] + o, bs);
				__atomic_fetch_add(&c->repaired, 1, __ATOMIC_RELAXED);
				core_log(c, "relocation: block %llu bad on %s, copied from %s",
					 (unsigned long long)(logical + o), cp[from].dev->path,
					 cp[i].dev->path);
				break;
			}
		}
	}
	for (int i = 0; i < CHUNK_MAX_STRIPES; i++)
		free(alt[i]);
}

/*
 * Copy [logical, +len) of one chunk to its new stripes, segment by
 * segment; each segment is read from any readable old copy and mended
 * block by block from the others (mend_segment).  Returns 0,
 * -ECANCELED when *cancel was set, or the I/O error.
 */
static int reloc_copy(struct core *c, uint64_t logical, uint64_t len, uint64_t type,
		      const struct chunk_stripe *ns, int nn, const int *cancel)
{
	uint32_t nsect = (uint32_t)(SEG / CORE_SECTORSIZE);
	bool meta = !(type & BG_DATA);
	uint32_t *exp = NULL;
	uint8_t *buf, *have = NULL;
	int ret = 0;

	if (nn == 0)
		return 0;	/* a kept stripe only: nothing to copy */
	buf = aligned_alloc(4096, SEG);
	if (!meta) {
		exp = calloc(nsect, sizeof(*exp));
		have = calloc(nsect, 1);
	}
	if (!buf || (!meta && (!exp || !have))) {
		free(buf);
		free(exp);
		free(have);
		return -ENOMEM;
	}
	for (uint64_t off = 0; off < len && !ret; off += SEG) {
		struct chunk_copy cp[CHUNK_MAX_STRIPES];
		uint64_t n = len - off < SEG ? len - off : SEG;
		int ncp, from = -1;

		if (cancel && __atomic_load_n(cancel, __ATOMIC_RELAXED)) {
			ret = -ECANCELED;
			break;
		}
		/* checksums first, with no relocation lock held: tree
		 * searches take tree locks, which a writer blocked on
		 * reloc_lock may hold */
		if (!meta && data_load_csums(c, logical + off, (uint32_t)(n / CORE_SECTORSIZE),
					     exp, have))
			memset(have, 0, nsect);	/* unverified: copied as read */
		glock_write(&c->reloc_lock);
		ncp = chunk_map_lookup(c, logical + off, n, cp, NULL);
		ret = ncp < 0 ? ncp : -EIO;
		for (int i = 0; i < ncp; i++) {
			ret = dev_read(cp[i].dev, cp[i].physical, buf, n);
			if (!ret) {
				from = i;
				break;
			}
			core_log(c, "relocation: read error on %s at %llu: %s%s", cp[i].dev->path,
				 (unsigned long long)cp[i].physical, strerror(-ret),
				 i + 1 < ncp ? ", trying the next copy" : "");
		}
		if (!ret && ncp > 1)
			mend_segment(c, buf, logical + off, n, meta, cp, ncp, from, exp, have);
		for (int i = 0; !ret && i < nn; i++) {
			ret = dev_write(ns[i].dev, ns[i].physical + off, buf, n);
			if (ret)
				core_log(c, "relocation: write error on %s at %llu: %s",
					 ns[i].dev->path, (unsigned long long)(ns[i].physical + off),
					 strerror(-ret));
		}
		glock_write_unlock(&c->reloc_lock);
		if (!ret && c->vol)	/* progress by bytes (op_plan) */
			__atomic_fetch_add(&c->vol->bytes_done, n, __ATOMIC_RELAXED);
	}
	for (int i = 0; !ret && i < nn; i++)
		ret = dev_flush(ns[i].dev);
	free(buf);
	free(exp);
	free(have);
	return ret;
}

/*
 * Move the chunk at logical to new stripes of profile prof, off exclude.
 * On failure the chunk keeps its stripes and nothing is lost.  Returns 1
 * (nothing said, nothing changed) when the new stripes do not fit whole:
 * *len is the chunk's length, *fit the longest that would fit.
 */
static int relocate_one(struct core *c, uint64_t logical, uint64_t old_type, uint64_t prof,
			const struct dev *exclude, const int *cancel, char *msg, size_t mlen,
			uint64_t *len, uint64_t *fit)
{
	struct chunk_stripe ns[CHUNK_MAX_STRIPES];
	uint64_t t0 = glock_now_ns();
	struct txn *t = NULL;
	int nn = 0, nkeep = 0, ret;

	/* exclusive: writes in flight finish, later ones see the new stripes */
	glock_write(&c->reloc_lock);
	ret = chunk_reloc_begin(c, logical, prof, exclude, ns, &nn, &nkeep, len, fit);
	glock_write_unlock(&c->reloc_lock);
	if (ret == -ENOSPC)
		return 1;
	if (ret == -EINVAL)
		return say(c, ret, msg, mlen, "raid1 needs at least 2 devices to place chunk %llu on",
			   (unsigned long long)logical);
	if (ret)
		return say(c, ret, msg, mlen, "chunk %llu: %s", (unsigned long long)logical,
			   strerror(-ret));
	ret = reloc_copy(c, logical, *len, old_type, ns + nkeep, nn - nkeep, cancel);
	if (!ret && (ret = txn_join(c, 16, TXN_USE_RESERVE, &t)) != 0)
		t = NULL;
	if (t) {
		ret = chunk_reloc_switch(t, logical);
		if (ret)
			txn_abort(t, ret, "balance: switching a chunk to its new stripes");
		ret = vol_commit(c, t, ret, NULL, 0, NULL, NULL);
		if (!ret)
			chunk_reloc_done(c, logical);
	} else {
		chunk_reloc_abort(c, logical);
	}
	if (PROBE_ON(BALANCE_CHUNK))
		GLASSFS_BALANCE_CHUNK(logical, *len, old_type, (old_type & BG_TYPE_MASK) | prof, ret,
				      glock_now_ns() - t0);
	if (ret == -ECANCELED)
		return say(c, ret, msg, mlen, "cancelled");
	if (ret)
		return say(c, ret, msg, mlen, "chunk %llu could not be moved: %s (it keeps its old stripes)",
			   (unsigned long long)logical, strerror(-ret));
	return 0;
}

/*
 * The chunk at logical (len bytes) does not fit whole on the devices it
 * must move to, but fit bytes would: split it at the largest MiB boundary
 * at most fit that no extent crosses (down to 1 MiB), as btrfs shrinks a
 * new chunk to the holes there are.  The group is fenced first (no new
 * extent crosses a boundary below fit) and a commit puts every older one
 * in the extent tree, where chunk_split_point looks.  Says why when it
 * cannot split.
 */
static int split_to_fit(struct core *c, uint64_t logical, uint64_t len, uint64_t fit,
			uint64_t type, uint64_t prof, char *msg, size_t mlen)
{
	uint64_t upto = fit < len ? fit : len - SEG, cut = 0;
	struct txn *t;
	int ret = -ENOSPC;

	if (fit >= SEG && !(type & BG_SYSTEM)) {
		ret = alloc_fence(c, logical, upto);
		if (!ret)
			ret = txn_commit(c, COMMIT_OTHER);
		if (!ret)
			ret = vol_join(c, 16, &t, msg, mlen);
		if (ret) {
			alloc_fence(c, logical, 0);
			return say(c, ret, msg, mlen, "splitting chunk %llu to fit: %s",
				   (unsigned long long)logical, strerror(-ret));
		}
		for (ret = -EBUSY, cut = len; ret == -EBUSY;) {
			cut = chunk_split_point(c, logical, upto, cut);
			ret = cut ? chunk_split(t, logical, cut) : -ENOSPC;
		}
		if (ret)
			alloc_fence(c, logical, 0);
		if (ret == -ENOSPC) {	/* nothing changed */
			txn_end(t);
		} else {
			ret = vol_commit(c, t, ret, msg, mlen, "splitting a chunk to fit", NULL);
			if (!ret)
				core_log(c, "chunk %llu (%llu MiB) split at %llu MiB: no hole for all of it",
					 (unsigned long long)logical, (unsigned long long)(len >> 20),
					 (unsigned long long)(cut >> 20));
			return ret;
		}
	}
	return say(c, ret, msg, mlen, "no room for chunk %llu (%s %s, %llu MiB) on the other devices: "
		   "their largest free hole is %llu MiB (%llu MiB unallocated on all devices)%s",
		   (unsigned long long)logical, core_profile_name(prof),
		   (type & BG_DATA) ? "data" : (type & BG_SYSTEM) ? "system" : "metadata",
		   (unsigned long long)(len >> 20), (unsigned long long)(fit >> 20),
		   (unsigned long long)(chunk_unallocated(c) >> 20),
		   fit < SEG ? "" : (type & BG_SYSTEM) ? ", and a system chunk is not split" :
		   ", and extents cross every MiB boundary below that, where it could be split");
}

/* Relocate the chunk at logical, split into pieces that fit when needed. */
static int relocate(struct core *c, uint64_t logical, uint64_t old_type, uint64_t prof,
		    const struct dev *exclude, const int *cancel, char *msg, size_t mlen)
{
	uint64_t end = 0;

	for (;;) {
		uint64_t len = 0, fit = 0;
		int ret = relocate_one(c, logical, old_type, prof, exclude, cancel, msg, mlen,
				       &len, &fit);
		if (!end)
			end = logical + len;
		if (ret == 1)
			ret = split_to_fit(c, logical, len, fit, old_type, prof, msg, mlen);
		else if (!ret)
			logical += len;
		if (ret || logical >= end)
			return ret;
	}
}

/* Room for element n of the array *v (capacity *cap, elements of sz
 * bytes), doubling it when full.  0 or -ENOMEM. */
static int grow(void **v, int *cap, int n, size_t sz)
{
	if (n < *cap)
		return 0;
	int ncap = *cap ? *cap * 2 : 32;
	void *nv = realloc(*v, (size_t)ncap * sz);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = ncap;
	return 0;
}

struct chunk_list {
	struct chunk_ref *v;
	int n, cap;
	const struct dev *dev;	/* only chunks with a stripe on dev */
	bool missing;		/* only chunks with a stripe on a missing device */
	int lost;		/* (missing) chunks with no present stripe at all */
	uint64_t lost_logical, lost_type;	/* the first of them */
	uint64_t missing_ids[CORE_MAX_DEVS];	/* (missing) device ids seen */
	int nmissing;
};

static int collect(const struct chunk *ch, void *arg)
{
	struct chunk_list *l = arg;
	bool on = false, present = false;

	for (int i = 0; i < ch->num_stripes; i++) {
		const struct chunk_stripe *st = &ch->stripes[i];
		on |= l->dev && st->dev == l->dev;
		present |= st->dev != NULL;
		if (l->missing && !st->dev) {
			on = true;
			int k = 0;
			while (k < l->nmissing && l->missing_ids[k] != st->devid)
				k++;
			if (k == l->nmissing && k < CORE_MAX_DEVS)
				l->missing_ids[l->nmissing++] = st->devid;
		}
	}
	if ((l->dev || l->missing) && !on)
		return 0;
	if (!present && !l->lost++) {
		l->lost_logical = ch->logical;
		l->lost_type = ch->type;
	}
	if (grow((void **)&l->v, &l->cap, l->n, sizeof(*l->v)))
		return -ENOMEM;
	l->v[l->n++] = (struct chunk_ref){ ch->logical, ch->length, ch->type, on };
	return 0;
}

/* Present devices that can take new stripes (not being removed, not excluded). */
static int usable_devs(struct core *c, const struct dev *exclude)
{
	int n = 0;

	for (int i = 0; i < c->ndevs; i++)
		n += c->devs[i] != exclude && !c->devs[i]->removing;
	return n;
}

/* ---- add, remove, rotational --------------------------------------------- */

static int note_max(struct core *c, const struct key *k, const void *item, uint32_t size,
		    void *arg)
{
	uint64_t *max = arg;

	(void)c, (void)item, (void)size;
	if (k->offset > *max)
		*max = k->offset;
	return 0;
}

static uint64_t next_devid(struct core *c)
{
	uint64_t max = 0;

	for (int i = 0; i < c->ndevs; i++)
		if (c->devs[i]->devid > max)
			max = c->devs[i]->devid;
	/* a missing device's id too */
	chunk_tree_items(c, DEV_ITEMS_OBJECTID, KEY_DEV_ITEM, note_max, &max);
	return max + 1;
}

int volume_dev_add(struct core *c, const char *path, char *msg, size_t mlen)
{
	struct super_block *sb = NULL;
	struct volume *v;
	struct dev *d = NULL;
	struct txn *t;
	int ret = vol_claim(c, &v, msg, mlen);

	if (ret)
		return ret;
	if (dev_by_path(c, path)) {
		ret = say(c, -EEXIST, msg, mlen, "%s is already part of this filesystem", path);
		goto out;
	}
	if (c->ndevs >= CORE_MAX_DEVS) {
		ret = say(c, -EMLINK, msg, mlen, "the volume has %d devices, the most it can", c->ndevs);
		goto out;
	}
	ret = dev_open(path, 0, &d);
	if (ret == -EBUSY) {
		char who[512];
		dev_holder(path, who, sizeof(who));
		ret = say(c, ret, msg, mlen, "%s is in use by %s", path, who);
		d = NULL;
		goto out;
	}
	if (ret) {
		ret = say(c, ret, msg, mlen, "%s: %s", path, strerror(-ret));
		d = NULL;
		goto out;
	}
	if (d->size < DEV_MIN_SIZE) {
		ret = say(c, -ENOSPC, msg, mlen, "%s: %llu bytes is too small (minimum %llu MiB)", path,
			  (unsigned long long)d->size, (unsigned long long)(DEV_MIN_SIZE >> 20));
		goto out;
	}
	sb = aligned_alloc(4096, SUPER_SIZE);
	if (!sb) {
		ret = -ENOMEM;
		goto out;
	}
	for (int k = 0; k < SUPER_COPIES; k++) {
		if (super_offs[k] + SUPER_SIZE > d->size || dev_read(d, super_offs[k], sb, SUPER_SIZE))
			continue;
		if (sb->magic != GLASSFS_MAGIC)
			continue;
		if (!memcmp(sb->fsid, c->sb.fsid, 16))
			ret = say(c, -EEXIST, msg, mlen,
				  "%s is already part of this filesystem (device id %llu%s)", path,
				  (unsigned long long)sb->dev_item.devid,
				  c->opts.degraded ? ", missing from this degraded mount: remount with it" : "");
		else
			ret = say(c, -EEXIST, msg, mlen,
				  "%s holds another glassfs volume; wipe it first (wipefs -a, or dd over its first MiB)",
				  path);
		goto out;
	}
	d->devid = next_devid(c);
	if (getrandom(d->uuid, 16, 0) != 16) {
		ret = -EIO;
		goto out;
	}
	ret = wipe_supers(d);
	if (ret) {
		ret = say(c, ret, msg, mlen, "%s: cannot write: %s", path, strerror(-ret));
		goto out;
	}
	ret = vol_join(c, 4, &t, msg, mlen);
	if (ret)
		goto out;
	struct dev_item di;
	struct key k = { DEV_ITEMS_OBJECTID, KEY_DEV_ITEM, d->devid };
	memset(&di, 0, sizeof(di));
	di.devid = d->devid;
	di.total_bytes = d->size;
	di.sector_size = di.io_align = di.io_width = CORE_SECTORSIZE;
	di.generation = txn_transid(t);
	di.rotational = d->rotational;
	memcpy(di.uuid, d->uuid, 16);
	memcpy(di.fsid, c->sb.fsid, 16);
	char what[PATH_MAX + 32], ok[PATH_MAX + 64];
	snprintf(what, sizeof(what), "adding %s", path);
	snprintf(ok, sizeof(ok), "device %s added (id %llu, %s)", path,
		 (unsigned long long)d->devid, d->rotational ? "rotational" : "non-rotational");
	ret = btree_insert(t, core_tree(c, CT_CHUNK), &k, &di, sizeof(di));
	if (!ret) {
		int idx = c->ndevs;
		dev_apply_latency(c, d, idx);
		glock_write(&c->chunks.lock);
		c->devs[idx] = d;
		__atomic_store_n(&c->ndevs, idx + 1, __ATOMIC_RELEASE);
		c->sb.num_devices++;
		glock_write_unlock(&c->chunks.lock);
		d = NULL;	/* the volume's now */
	} else {
		txn_abort(t, ret, "device add: inserting the device item");
	}
	ret = vol_commit(c, t, ret, msg, mlen, what, ok);
out:
	free(sb);
	dev_close(d);
	vol_release(v);
	return ret;
}

/* Profiles of the chunks present, by type index (OR of their profile bits). */
static int note_prof(const struct chunk *ch, void *arg)
{
	uint64_t *p = arg;

	p[core_type_index(ch->type)] |= ch->type & BG_PROFILE_MASK;
	return 0;
}

/* raid1 chunks (or a raid1 profile for new ones) need 2 usable devices
 * besides exclude: -EINVAL with the way out when they would not have. */
static int raid1_keeps_two(struct core *c, const struct dev *exclude, char *msg, size_t mlen)
{
	uint64_t profs[3] = { 0 };

	chunk_for_each(c, note_prof, profs);
	for (int i = 0; i < 3; i++)
		profs[i] |= c->profile[i];
	for (int i = 0; i < 3; i++)
		if ((profs[i] & BG_RAID1) && usable_devs(c, exclude) < 2)
			return say(c, -EINVAL, msg, mlen,
				   "%s chunks are raid1, which needs 2 devices; %d would be left: "
				   "convert first (glassctl balance start -%cconvert=single|dup)",
				   i == 0 ? "data" : i == 1 ? "system" : "metadata",
				   usable_devs(c, exclude), i == 0 ? 'd' : 'm');
	return 0;
}

/* Device items whose device is not open (missing from a degraded mount). */
struct absent { struct core *c; uint64_t ids[CORE_MAX_DEVS]; int n; };

static int note_absent(struct core *c, const struct key *k, const void *item, uint32_t size,
		       void *arg)
{
	struct absent *a = arg;
	uint64_t devid = k->offset;

	(void)c, (void)item, (void)size;
	for (int i = 0; i < a->c->ndevs; i++)
		if (a->c->devs[i]->devid == devid)
			return 0;
	if (a->n < CORE_MAX_DEVS)
		a->ids[a->n++] = devid;
	return 0;
}

/*
 * `device remove missing` (btrfs's way out of a degraded mount): every
 * chunk with a stripe on a missing device gets its copies back on the
 * present ones, rebuilt from the surviving copies (same profile; a raid1
 * chunk keeps its present copy and gains one), then the missing devices'
 * items go and the volume stops counting them.  Refused, with nothing
 * changed, when a chunk had every copy on missing devices (that data is
 * gone) or raid1 would have too few devices.  A failure midway leaves the
 * chunks moved so far moved (each switch is committed) and the rest as
 * they were: running it again continues.
 */
static int remove_missing(struct core *c, char *msg, size_t mlen)
{
	struct chunk_list l = { .missing = true };
	struct absent a = { .c = c };
	struct volume *v;
	struct txn *t;
	uint64_t mbase = 0;
	char ok[256];
	int ret = vol_claim(c, &v, msg, mlen), len;

	if (ret)
		return ret;
	if (c->sb.num_devices <= (uint64_t)c->ndevs) {
		ret = say(c, -ENODEV, msg, mlen,
			  "no device is missing from this mount (all %d are present)", c->ndevs);
		goto out;
	}
	ret = raid1_keeps_two(c, NULL, msg, mlen);
	if (ret)
		goto out;
	ret = chunk_for_each(c, collect, &l);
	if (ret)
		goto out;
	if (l.lost) {
		ret = say(c, -EIO, msg, mlen,
			  "%d chunk%s (the first at logical %llu, %s) had every copy on the missing "
			  "device%s: that data is gone; nothing removed (mount with the device, or "
			  "copy what is readable elsewhere)", l.lost, l.lost > 1 ? "s" : "",
			  (unsigned long long)l.lost_logical, core_profile_name(l.lost_type & BG_PROFILE_MASK),
			  c->sb.num_devices - (uint64_t)c->ndevs > 1 ? "s" : "");
		goto out;
	}
	op_plan(v, VOL_OP_REMOVE, l.v, l.n);
	for (int i = 0; !ret && i < l.n; i++) {
		ret = relocate(c, l.v[i].logical, l.v[i].type, l.v[i].type & BG_PROFILE_MASK, NULL,
			       NULL, msg, mlen);
		if (!ret)
			op_chunk_done(v, &mbase, l.v[i].length);
	}
	if (ret) {
		say(c, ret, msg, mlen, "removing the missing devices stopped, they stay: %s",
		    msg && *msg ? msg : strerror(-ret));
		goto out;
	}
	ret = chunk_tree_items(c, DEV_ITEMS_OBJECTID, KEY_DEV_ITEM, note_absent, &a);
	if (ret) {
		say(c, ret, msg, mlen, "reading the device items: %s", strerror(-ret));
		goto out;
	}
	ret = vol_join(c, 2 * (unsigned)a.n + 2, &t, msg, mlen);
	if (ret)
		goto out;
	len = snprintf(ok, sizeof(ok), "missing device%s", a.n > 1 ? "s" : "");
	for (int i = 0; !ret && i < a.n; i++) {
		struct key k = { DEV_ITEMS_OBJECTID, KEY_DEV_ITEM, a.ids[i] };
		ret = btree_delete(t, core_tree(c, CT_CHUNK), &k);
		if (ret == -ENOENT)
			ret = 0;
		if (len > 0 && (size_t)len < sizeof(ok))
			len += snprintf(ok + len, sizeof(ok) - (size_t)len, "%s id %llu", i ? "," : "",
					(unsigned long long)a.ids[i]);
	}
	if (!ret) {
		glock_write(&c->chunks.lock);
		c->sb.num_devices = (uint64_t)c->ndevs;	/* no longer degraded */
		glock_write_unlock(&c->chunks.lock);
	} else {
		txn_abort(t, ret, "device remove missing: deleting the device items");
	}
	if (len > 0 && (size_t)len < sizeof(ok))
		snprintf(ok + len, sizeof(ok) - (size_t)len,
			 " removed: %d chunk%s rebuilt on the %d present device%s", l.n,
			 l.n == 1 ? "" : "s", c->ndevs, c->ndevs == 1 ? "" : "s");
	ret = vol_commit(c, t, ret, msg, mlen, "removing the missing devices", ok);
	if (!ret && msg && mlen)
		snprintf(msg, mlen, "%s", ok);
out:
	free(l.v);
	vol_release(v);
	return ret;
}

int volume_dev_remove(struct core *c, const char *path, char *msg, size_t mlen)
{
	struct chunk_list l = { 0 };
	struct volume *v;
	struct dev *d;
	struct txn *t;
	uint64_t base = 0;
	int ret, idx = -1;

	if (!strcmp(path, "missing"))
		return remove_missing(c, msg, mlen);
	ret = vol_claim(c, &v, msg, mlen);
	if (ret)
		return ret;
	d = dev_by_path(c, path);
	if (!d) {
		ret = say(c, -ENODEV, msg, mlen, "%s is not a device of this filesystem", path);
		goto out;
	}
	if (c->ndevs == 1 && c->sb.num_devices <= 1) {
		ret = say(c, -EINVAL, msg, mlen, "%s is the last device: a filesystem needs one", path);
		goto out;
	}
	if (c->sb.num_devices > (uint64_t)c->ndevs) {
		ret = say(c, -EINVAL, msg, mlen,
			  "devices are missing from this mount: drop them first "
			  "(glassctl device remove missing MNT), then remove %s", path);
		goto out;
	}
	ret = raid1_keeps_two(c, d, msg, mlen);
	if (ret)
		goto out;
	glock_write(&c->chunks.lock);
	d->removing = true;		/* no new stripes here from now on */
	glock_write_unlock(&c->chunks.lock);
	l.dev = d;
	ret = chunk_for_each(c, collect, &l);
	if (!ret)
		op_plan(v, VOL_OP_REMOVE, l.v, l.n);
	for (int i = 0; !ret && i < l.n; i++) {
		ret = relocate(c, l.v[i].logical, l.v[i].type, l.v[i].type & BG_PROFILE_MASK, d,
			       NULL, msg, mlen);
		if (!ret)
			op_chunk_done(v, &base, l.v[i].length);
	}
	if (ret) {
		glock_write(&c->chunks.lock);
		d->removing = false;
		glock_write_unlock(&c->chunks.lock);
		say(c, ret, msg, mlen, "removing %s stopped, the device stays: %s", path,
		    msg && *msg ? msg : strerror(-ret));
		goto out;
	}
	/* new chunks may have raced onto it before removing was set */
	l.n = 0;
	chunk_for_each(c, collect, &l);
	if (l.n) {
		glock_write(&c->chunks.lock);
		d->removing = false;
		glock_write_unlock(&c->chunks.lock);
		ret = say(c, -EAGAIN, msg, mlen, "%s still holds %d chunks; try again", path, l.n);
		goto out;
	}
	ret = vol_join(c, 4, &t, msg, mlen);
	if (ret)
		goto out;
	struct key k = { DEV_ITEMS_OBJECTID, KEY_DEV_ITEM, d->devid };
	ret = btree_delete(t, core_tree(c, CT_CHUNK), &k);
	if (ret == -ENOENT)
		ret = 0;
	if (!ret) {
		glock_write(&c->chunks.lock);
		for (int i = 0; i < c->ndevs; i++)
			if (c->devs[i] == d)
				idx = i;
		for (int i = idx; i + 1 < c->ndevs; i++)
			c->devs[i] = c->devs[i + 1];
		__atomic_store_n(&c->ndevs, c->ndevs - 1, __ATOMIC_RELEASE);
		c->sb.num_devices--;
		glock_write_unlock(&c->chunks.lock);
	} else {
		txn_abort(t, ret, "device remove: deleting the device item");
	}
	char what[PATH_MAX + 48];
	snprintf(what, sizeof(what), "removing %s at the last commit", path);
	ret = vol_commit(c, t, ret, msg, mlen, what, NULL);
	if (ret)
		goto out;	/* aborted volume: keep d open, it may still be named */
	/* no superblock of ours is left to claim the device */
	if (wipe_supers(d))
		core_log(c, "%s removed, but its superblocks could not be wiped", path);
	core_log(c, "device %s removed", path);
	d->readonly = true;	/* nothing of ours writes it again */
	dev_unclaim(d);		/* free for mkfs or another volume now */
	glock_write(&v->lock);
	if (v->ngone < CORE_MAX_DEVS)
		v->gone[v->ngone++] = d;
	else
		dev_close(d);
	glock_write_unlock(&v->lock);
out:
	free(l.v);
	vol_release(v);
	return ret;
}

int volume_set_rotational(struct core *c, const char *path, int rot, char *msg, size_t mlen)
{
	struct volume *v;
	struct dev *d;
	struct txn *t;
	struct dev_item di;
	int ret;

	if (rot != 0 && rot != 1)
		return say(c, -EINVAL, msg, mlen, "rotational must be 0 or 1");
	ret = vol_claim(c, &v, msg, mlen);
	if (ret)
		return ret;
	d = dev_by_path(c, path);
	if (!d) {
		ret = say(c, -ENODEV, msg, mlen, "%s is not a device of this filesystem", path);
		goto out;
	}
	struct key k = { DEV_ITEMS_OBJECTID, KEY_DEV_ITEM, d->devid };
	ret = vol_join(c, 2, &t, msg, mlen);
	if (ret)
		goto out;
	ret = btree_lookup(core_tree(c, CT_CHUNK), &k, &di, sizeof(di));
	if (ret == (int)sizeof(di)) {
		di.rotational = (uint8_t)rot;
		di.generation = txn_transid(t);
		ret = btree_update(t, core_tree(c, CT_CHUNK), &k, &di, sizeof(di));
	} else {
		ret = ret < 0 ? ret : -EUCLEAN;
	}
	if (!ret) {
		glock_write(&c->chunks.lock);
		d->rotational = rot;	/* new chunks follow it; the superblock records it */
		glock_write_unlock(&c->chunks.lock);
	} else {
		txn_abort(t, ret, "set-rotational: updating the device item");
	}
	char what[PATH_MAX + 32], ok[PATH_MAX + 32];
	snprintf(what, sizeof(what), "set-rotational %s", path);
	snprintf(ok, sizeof(ok), "device %s is now %s", path, rot ? "rotational" : "non-rotational");
	ret = vol_commit(c, t, ret, msg, mlen, what, ok);
out:
	vol_release(v);
	return ret;
}

/* ---- balance -------------------------------------------------------------- */

/*
 * A conversion that adds copies needs that much more device space in all
 * (where it lies is relocate's business: it splits chunks to fit holes).
 * -ENOSPC, said, when the devices do not have it.
 */
static int convert_fits(struct core *c, const struct volume *v, const struct chunk_list *l,
			char *msg, size_t mlen)
{
	uint64_t need = 0, have = chunk_unallocated(c);

	for (int i = 0; i < l->n; i++) {
		uint64_t type = l->v[i].type, cur = type & BG_PROFILE_MASK;
		int64_t conv = (type & BG_DATA) ? v->dconv : v->mconv;
		int more = conv < 0 ? 0 : profile_copies((uint64_t)conv) - profile_copies(cur);

		if (more > 0)
			need += l->v[i].length * (uint64_t)more;
	}
	if (need <= have)
		return 0;
	return say(c, -ENOSPC, msg, mlen, "not enough space to convert: the new copies need %llu MiB, "
		   "the devices have %llu MiB unallocated (nothing was moved)",
		   (unsigned long long)(need >> 20), (unsigned long long)(have >> 20));
}

static void *balance_thread(void *arg)
{
	struct core *c = arg;
	struct volume *v = c->vol;
	struct chunk_list l = { 0 };
	char msg[256] = "";
	int ret;

	uint64_t base = 0;

	ret = chunk_for_each(c, collect, &l);
	if (!ret) {
		op_plan(v, VOL_OP_BALANCE, l.v, l.n);
		ret = convert_fits(c, v, &l, msg, sizeof(msg));
	}
	for (int i = 0; !ret && i < l.n; i++) {
		uint64_t type = l.v[i].type;
		int64_t conv = (type & BG_DATA) ? v->dconv : v->mconv;
		uint64_t prof = conv >= 0 ? (uint64_t)conv : (type & BG_PROFILE_MASK);

		if (__atomic_load_n(&v->cancel, __ATOMIC_RELAXED)) {
			ret = -ECANCELED;
			snprintf(msg, sizeof(msg), "cancelled");
			break;
		}
		/* a conversion touches only the types it names, and leaves
		 * chunks that have the profile already (btrfs's "soft"); a
		 * plain balance rewrites every chunk */
		bool filtered = v->dconv >= 0 || v->mconv >= 0;
		if (filtered && (conv < 0 || prof == (type & BG_PROFILE_MASK)))
			ret = 0;
		else
			ret = relocate(c, l.v[i].logical, type, prof, NULL, &v->cancel, msg, sizeof(msg));
		if (!ret)
			op_chunk_done(v, &base, l.v[i].length);
		if (PROBE_ON(BALANCE_PROGRESS))
			GLASSFS_BALANCE_PROGRESS(__atomic_load_n(&v->chunks_done, __ATOMIC_RELAXED),
						 (uint64_t)l.n,
						 __atomic_load_n(&v->bytes_done, __ATOMIC_RELAXED));
	}
	free(l.v);
	glock_write(&v->lock);
	v->result = ret;
	snprintf(v->msg, sizeof(v->msg), "%s", ret ? msg : "");
	v->busy = false;
	glock_write_unlock(&v->lock);
	core_log(c, "balance %s: %llu of %llu chunks done%s%s",
		 ret == -ECANCELED ? "cancelled" : ret ? "stopped" : "finished",
		 (unsigned long long)v->chunks_done, (unsigned long long)v->chunks_total,
		 ret && ret != -ECANCELED ? ": " : "", ret && ret != -ECANCELED ? msg : "");
	__atomic_store_n(&v->running, 0, __ATOMIC_RELEASE);
	return NULL;
}

int volume_balance_start(struct core *c, int64_t dconv, int64_t mconv, char *msg, size_t mlen)
{
	struct volume *v;
	int ret;

	for (int i = 0; i < 2; i++) {
		int64_t p = i ? mconv : dconv;
		if (p >= 0 && ((uint64_t)p & ~(BG_RAID1 | BG_DUP)))
			return say(c, -EINVAL, msg, mlen, "unsupported profile %lld", (long long)p);
		if (p >= 0 && ((uint64_t)p & BG_RAID1) && usable_devs(c, NULL) < 2)
			return say(c, -EINVAL, msg, mlen,
				   "cannot convert %s to raid1: it needs 2 devices, the volume has %d",
				   i ? "metadata" : "data", usable_devs(c, NULL));
	}
	ret = vol_claim(c, &v, msg, mlen);
	if (ret)
		return ret;
	glock_write(&v->lock);
	if (v->joinable) {
		glock_write_unlock(&v->lock);
		pthread_join(v->thread, NULL);	/* finished: busy was clear */
		glock_write(&v->lock);
		v->joinable = false;
	}
	v->dconv = dconv;
	v->mconv = mconv;
	v->cancel = 0;
	v->result = 0;
	v->msg[0] = 0;
	v->chunks_total = v->chunks_done = v->bytes_total = v->bytes_done = 0;
	/* new chunks take the converted profiles from now on */
	if (dconv >= 0)
		c->profile[core_type_index(BG_DATA)] = (uint64_t)dconv;
	if (mconv >= 0) {
		c->profile[core_type_index(BG_METADATA)] = (uint64_t)mconv;
		c->profile[core_type_index(BG_SYSTEM)] = (uint64_t)mconv;
	}
	v->running = 1;
	ret = -pthread_create(&v->thread, NULL, balance_thread, c);
	if (ret) {
		v->running = 0;
		v->busy = false;
	} else {
		v->joinable = true;
		v->started++;
	}
	glock_write_unlock(&v->lock);
	if (!ret)
		core_log(c, "balance started (data %s, metadata %s)",
			 dconv >= 0 ? core_profile_name((uint64_t)dconv) : "keep",
			 mconv >= 0 ? core_profile_name((uint64_t)mconv) : "keep");
	return ret;
}

void volume_balance_status(struct core *c, struct volume_balance_status *s)
{
	struct volume *v = vol_get(c);

	memset(s, 0, sizeof(*s));
	if (!v)
		return;
	glock_write(&v->lock);
	s->running = __atomic_load_n(&v->running, __ATOMIC_ACQUIRE);
	s->result = v->result;
	s->started = v->started;
	s->chunks_total = __atomic_load_n(&v->chunks_total, __ATOMIC_RELAXED);
	s->chunks_done = __atomic_load_n(&v->chunks_done, __ATOMIC_RELAXED);
	s->bytes_total = __atomic_load_n(&v->bytes_total, __ATOMIC_RELAXED);
	s->bytes_done = __atomic_load_n(&v->bytes_done, __ATOMIC_RELAXED);
	if (s->bytes_done > s->bytes_total)	/* a split's pieces, counted twice meanwhile */
		s->bytes_done = s->bytes_total;
	s->op = __atomic_load_n(&v->op, __ATOMIC_RELAXED);
	s->op_running = __atomic_load_n(&v->op_running, __ATOMIC_ACQUIRE) || s->running;
	snprintf(s->msg, sizeof(s->msg), "%s", v->msg);
	glock_write_unlock(&v->lock);
}

int volume_balance_cancel(struct core *c)
{
	struct volume *v = vol_get(c);

	if (!v || !__atomic_load_n(&v->running, __ATOMIC_ACQUIRE))
		return -ENOENT;
	__atomic_store_n(&v->cancel, 1, __ATOMIC_RELAXED);
	return 0;
}

void volume_close(struct core *c)
{
	struct volume *v = c->vol;

	if (!v)
		return;
	if (v->resync_joinable) {
		/* the device stays flagged: the next full mount resyncs it */
		__atomic_store_n(&v->resync_cancel, 1, __ATOMIC_RELAXED);
		pthread_join(v->resync_thread, NULL);
		v->resync_joinable = false;
	}
	if (v->joinable) {
		__atomic_store_n(&v->cancel, 1, __ATOMIC_RELAXED);
		pthread_join(v->thread, NULL);
		v->joinable = false;
	}
	for (int i = 0; i < v->ngone; i++)
		dev_close(v->gone[i]);
	c->vol = NULL;
	free(v);
}

/* ---- stale devices ---------------------------------------------------------- */

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

struct resync_item { uint64_t logical, length; struct chunk_stripe from, to; };
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
	int mine = -1, good = -1;

	for (int i = 0; i < ch->num_stripes; i++) {
		if (ch->stripes[i].dev == r->d)
			mine = i;
		else if (ch->stripes[i].dev && !ch->stripes[i].dev->stale)
			good = i;
	}
	if (mine < 0)
		return 0;
	if (good < 0) {
		r->single++;
		return 0;
	}
	if (grow((void **)&r->v, &r->cap, r->n, sizeof(*r->v)))
		return -ENOMEM;
	r->v[r->n++] = (struct resync_item){ ch->logical, ch->length, ch->stripes[good],
					     ch->stripes[mine] };
	return 0;
}

/* Copy what r->d misses; v (NULL at open) gets progress and may cancel. */
static int resync_dev(struct resync *r, struct volume *v)
{
	uint8_t *buf;
	int ret = chunk_for_each(r->c, resync_note, r);

	if (ret)
		return ret;
	buf = aligned_alloc(4096, SEG);
	if (!buf)
		return -ENOMEM;
	for (int i = 0; v && i < r->n; i++)
		__atomic_fetch_add(&v->resync_total, r->v[i].length, __ATOMIC_RELAXED);
	for (int i = 0; i < r->n && !ret; i++) {
		const struct resync_item *it = &r->v[i];
		for (uint64_t off = 0; off < it->length && !ret; off += SEG) {
			uint64_t n = it->length - off < SEG ? it->length - off : SEG;
			if (v && __atomic_load_n(&v->resync_cancel, __ATOMIC_RELAXED)) {
				ret = -ECANCELED;
				break;
			}
			if (v)
				__atomic_fetch_add(&v->resync_done, n, __ATOMIC_RELAXED);
			if (!r->all && !alloc_any_used(r->c, it->logical + off, n)) {
				r->skipped += n;
				continue;
			}
			glock_write(&r->c->reloc_lock);
			ret = dev_read(it->from.dev, it->from.physical + off, buf, n);
			if (!ret)
				ret = dev_write(r->d, it->to.physical + off, buf, n);
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
	while (!__atomic_load_n(&c->subvols.started, __ATOMIC_ACQUIRE) &&
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
		ret = vol_join(c, 2, &t, NULL, 0);
		if (!ret) {
			int r2 = resync_flag(t, d, false);
			if (r2)
				txn_abort(t, r2, "resync: clearing the device item's flag");
			ret = vol_commit(c, t, r2, NULL, 0, "resync: recording the end", NULL);
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
	vol_release(v);
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
		if (!ret && bg && vol_claim(c, &v, NULL, 0) == 0) {
			v->resync_running = 1;
			for (int i = 0; i < c->ndevs; i++)
				if (c->devs[i]->stale)
					v->resync_ids[v->nresync++] = c->devs[i]->devid;
			ret = -pthread_create(&v->resync_thread, NULL, resync_thread, c);
			if (ret) {
				v->resync_running = 0;
				vol_release(v);
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

void volume_resync_progress(struct core *c, uint64_t *total, uint64_t *done)
{
	struct volume *v = __atomic_load_n(&c->vol, __ATOMIC_ACQUIRE);

	*total = v ? __atomic_load_n(&v->resync_total, __ATOMIC_RELAXED) : 0;
	*done = v ? __atomic_load_n(&v->resync_done, __ATOMIC_RELAXED) : 0;
}
