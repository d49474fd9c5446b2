// SPDX-License-Identifier: MIT
/*
 * volume_dev.c — device add, remove (and `remove missing`) and the
 * rotational flag (volume.h for the design; the chunks a removal moves go
 * through volume_reloc.c).
 */
#include "fs/trees/chunk_tree.h"
#include "fs/trees/dev_item.h"
#include "fs/store/chunk.h"
#include "fs/store/dev.h"
#include "fs/txn/txn.h"
#include "fs/btree/btree.h"
#include "fs/services/volume.h"
#include "fs/services/volume_int.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

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

/* Claim the operation slot for a change to the device at path (*d);
 * -ENODEV, said, with the slot released again when it is none of ours. */
static int claim_dev(struct core *c, const char *path, struct volume **v, struct dev **d,
		     char *msg, size_t mlen)
{
	int ret = volume_claim(c, v, msg, mlen);

	if (ret)
		return ret;
	*d = dev_by_path(c, path);
	if (!*d) {
		ret = volume_say(c, -ENODEV, msg, mlen, "%s is not a device of this filesystem",
				 path);
		volume_release(*v);
	}
	return ret;
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
	int ret = volume_claim(c, &v, msg, mlen);

	if (ret)
		return ret;
	if (dev_by_path(c, path)) {
		ret = volume_say(c, -EEXIST, msg, mlen, "%s is already part of this filesystem", path);
		goto out;
	}
	if (c->ndevs >= CORE_MAX_DEVS) {
		ret = volume_say(c, -EMLINK, msg, mlen, "the volume has %d devices, the most it can", c->ndevs);
		goto out;
	}
	ret = dev_open(path, 0, &d);
	if (ret == -EBUSY) {
		char who[512];
		dev_holder(path, who, sizeof(who));
		ret = volume_say(c, ret, msg, mlen, "%s is in use by %s", path, who);
		d = NULL;
		goto out;
	}
	if (ret) {
		ret = volume_say(c, ret, msg, mlen, "%s: %s", path, strerror(-ret));
		d = NULL;
		goto out;
	}
	if (d->size < DEV_MIN_SIZE) {
		ret = volume_say(c, -ENOSPC, msg, mlen, "%s: %llu bytes is too small (minimum %llu MiB)", path,
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
			ret = volume_say(c, -EEXIST, msg, mlen,
				  "%s is already part of this filesystem (device id %llu%s)", path,
				  (unsigned long long)sb->dev_item.devid,
				  c->opts.degraded ? ", missing from this degraded mount: remount with it" : "");
		else
			ret = volume_say(c, -EEXIST, msg, mlen,
				  "%s holds another glassfs volume; wipe it first (wipefs -a, or dd over its first MiB)",
				  path);
		goto out;
	}
	/* a write log (-o writelog, the power-loss replayer) records the
	 * new device as it does those the mount opened: else a crash
	 * image holds none of its writes, superblock included */
	if (c->opts.dev_recorder)
		dev_set_recorder(d, c->opts.dev_recorder, c->opts.dev_recorder_arg);
	d->devid = next_devid(c);
	if (getrandom(d->uuid, 16, 0) != 16) {
		ret = -EIO;
		goto out;
	}
	ret = wipe_supers(d);
	if (ret) {
		ret = volume_say(c, ret, msg, mlen, "%s: cannot write: %s", path, strerror(-ret));
		goto out;
	}
	ret = volume_join(c, 4, &t, msg, mlen);
	if (ret)
		goto out;
	char what[PATH_MAX + 32], ok[PATH_MAX + 64];
	snprintf(what, sizeof(what), "adding %s", path);
	snprintf(ok, sizeof(ok), "device %s added (id %llu, %s)", path,
		 (unsigned long long)d->devid, d->rotational ? "rotational" : "non-rotational");
	ret = dev_item_insert(t, d);
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
	ret = volume_commit(c, t, ret, msg, mlen, what, ok);
out:
	free(sb);
	dev_close(d);
	volume_release(v);
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
		if (volume_usable_devs(c, exclude) < profile_min_devs(profs[i]))
			return volume_say(c, -EINVAL, msg, mlen,
				   "%s chunks are %s, which needs %d devices; %d would be left: "
				   "convert first (glassctl balance start -%cconvert=single|dup)",
				   i == 0 ? "data" : i == 1 ? "system" : "metadata",
				   core_profile_name(profs[i]), profile_min_devs(profs[i]),
				   volume_usable_devs(c, exclude), i == 0 ? 'd' : 'm');
	return 0;
}

/* A removal's move: every chunk of l to new stripes of its own profile,
 * off exclude (NULL: off the missing devices, l's chunks), counted as
 * VOL_OP_REMOVE's progress.  0 or the first error (said in msg). */
static int move_off(struct core *c, struct volume *v, const struct chunk_list *l,
		    const struct dev *exclude, char *msg, size_t mlen)
{
	uint64_t base = 0;
	int ret = 0;

	volume_op_plan(v, VOL_OP_REMOVE, l->v, l->n);
	for (int i = 0; !ret && i < l->n; i++) {
		ret = volume_relocate(c, l->v[i].logical, l->v[i].type,
				      l->v[i].type & BG_PROFILE_MASK, exclude, NULL, msg, mlen);
		if (!ret)
			volume_op_done(v, &base, l->v[i].length);
	}
	return ret;
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
 * they were: running it again continues.  Blocks the surviving copies
 * had bad (no copy verifies) are rebuilt as they were and end it with
 * -EIO naming the first, the devices dropped all the same
 * (volume_lost_say), as a plain removal and a balance end.
 */
static int remove_missing(struct core *c, char *msg, size_t mlen)
{
	struct chunk_list l = { .missing = true };
	struct absent a = { .c = c };
	struct volume *v;
	struct txn *t;
	char ok[256];
	int ret = volume_claim(c, &v, msg, mlen), len;

	if (ret)
		return ret;
	if (c->sb.num_devices <= (uint64_t)c->ndevs) {
		ret = volume_say(c, -ENODEV, msg, mlen,
			  "no device is missing from this mount (all %d are present)", c->ndevs);
		goto out;
	}
	ret = raid1_keeps_two(c, NULL, msg, mlen);
	if (ret)
		goto out;
	ret = chunk_for_each(c, volume_collect, &l);
	if (ret)
		goto out;
	if (l.lost) {
		ret = volume_say(c, -EIO, msg, mlen,
			  "%d chunk%s (the first at logical %llu, %s) had every copy on the missing "
			  "device%s: that data is gone; nothing removed (mount with the device, or "
			  "copy what is readable elsewhere)", l.lost, l.lost > 1 ? "s" : "",
			  (unsigned long long)l.lost_logical, core_profile_name(l.lost_type & BG_PROFILE_MASK),
			  c->sb.num_devices - (uint64_t)c->ndevs > 1 ? "s" : "");
		goto out;
	}
	ret = move_off(c, v, &l, NULL, msg, mlen);
	if (ret) {
		volume_say(c, ret, msg, mlen, "removing the missing devices stopped, they stay: %s",
		    msg && *msg ? msg : strerror(-ret));
		goto out;
	}
	ret = chunk_tree_items(c, DEV_ITEMS_OBJECTID, KEY_DEV_ITEM, note_absent, &a);
	if (ret) {
		volume_say(c, ret, msg, mlen, "reading the device items: %s", strerror(-ret));
		goto out;
	}
	ret = volume_join(c, 2 * (unsigned)a.n + 2, &t, msg, mlen);
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
	ret = volume_commit(c, t, ret, msg, mlen, "removing the missing devices", ok);
	if (!ret && msg && mlen)
		snprintf(msg, mlen, "%s", ok);
	/* the surviving copy had blocks bad: lost with the device, not by
	 * the rebuild (volume_reloc.c logs each); -EIO as a balance ends */
	ret = volume_lost_say(c, v, ret, ok, msg, mlen);
out:
	free(l.v);
	volume_release(v);
	return ret;
}

int volume_dev_remove(struct core *c, const char *path, char *msg, size_t mlen)
{
	struct chunk_list l = { 0 };
	struct volume *v;
	struct dev *d;
	struct txn *t;
	int ret, idx = -1;

	if (!strcmp(path, "missing"))
		return remove_missing(c, msg, mlen);
	ret = claim_dev(c, path, &v, &d, msg, mlen);
	if (ret)
		return ret;
	if (c->ndevs == 1 && c->sb.num_devices <= 1) {
		ret = volume_say(c, -EINVAL, msg, mlen, "%s is the last device: a filesystem needs one", path);
		goto out;
	}
	if (c->sb.num_devices > (uint64_t)c->ndevs) {
		ret = volume_say(c, -EINVAL, msg, mlen,
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
	ret = chunk_for_each(c, volume_collect, &l);
	if (!ret)
		ret = move_off(c, v, &l, d, msg, mlen);
	if (ret) {
		glock_write(&c->chunks.lock);
		d->removing = false;
		glock_write_unlock(&c->chunks.lock);
		volume_say(c, ret, msg, mlen, "removing %s stopped, the device stays: %s", path,
		    msg && *msg ? msg : strerror(-ret));
		goto out;
	}
	/* new chunks may have raced onto it before removing was set */
	l.n = 0;
	chunk_for_each(c, volume_collect, &l);
	if (l.n) {
		glock_write(&c->chunks.lock);
		d->removing = false;
		glock_write_unlock(&c->chunks.lock);
		ret = volume_say(c, -EAGAIN, msg, mlen, "%s still holds %d chunks; try again", path, l.n);
		goto out;
	}
	ret = volume_join(c, 4, &t, msg, mlen);
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
	ret = volume_commit(c, t, ret, msg, mlen, what, NULL);
	if (ret)
		goto out;	/* aborted volume: keep d open, it may still be named */
	/* no superblock of ours is left to claim the device */
	if (wipe_supers(d))
		core_log(c, "%s removed, but its superblocks could not be wiped", path);
	core_log(c, "device %s removed", path);
	/* blocks no copy verified, moved as they were: -EIO, as a balance
	 * and `remove missing` end, once the device is gone */
	snprintf(what, sizeof(what), "%s removed", path);
	ret = volume_lost_say(c, v, 0, what, msg, mlen);
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
	volume_release(v);
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
		return volume_say(c, -EINVAL, msg, mlen, "rotational must be 0 or 1");
	ret = claim_dev(c, path, &v, &d, msg, mlen);
	if (ret)
		return ret;
	struct key k = { DEV_ITEMS_OBJECTID, KEY_DEV_ITEM, d->devid };
	ret = volume_join(c, 2, &t, msg, mlen);
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
	ret = volume_commit(c, t, ret, msg, mlen, what, ok);
out:
	volume_release(v);
	return ret;
}
