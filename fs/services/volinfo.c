// SPDX-License-Identifier: MIT
/*
 * volinfo.c — what a mounted volume is made of, for GLASSFS_IOC_FS_INFO
 * (fs/format/ioctl.h says what each field means): its devices (present
 * ones from the open devices, missing ones from the device items), the
 * space of each block-group type and profile, the device bytes each type
 * takes on each device, and the per-device error counters.  Read-only
 * except for the counters' reset.
 */
#include "fs/core/core_types.h"
#include "fs/trees/chunk_tree.h"
#include "fs/store/alloc.h"
#include "fs/store/chunk.h"
#include "fs/store/dev.h"
#include "fs/format/ioctl.h"
#include "fs/services/volinfo.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(GLASSFS_INFO_DEVS == CORE_MAX_DEVS, "every device fits the answer");
_Static_assert(GLASSFS_ERR_NR == DEV_ERR_NR, "the ioctl's counters are the device's");

static struct glassfs_dev_info *by_id(struct glassfs_ioc_fs_info *o, uint64_t devid)
{
	for (uint32_t i = 0; i < o->ndevs; i++)
		if (o->dev[i].devid == devid)
			return &o->dev[i];
	return NULL;
}

/* Device items: the size each device gives the volume; one not open is missing. */
static int note_dev_item(struct core *c, const struct key *k, const void *item, uint32_t size,
			 void *arg)
{
	struct glassfs_ioc_fs_info *o = arg;
	struct dev_item di;
	struct glassfs_dev_info *d;

	(void)c;
	if (size < sizeof(di))
		return 0;
	memcpy(&di, item, sizeof(di));
	d = by_id(o, k->offset);
	if (!d && o->ndevs < GLASSFS_INFO_DEVS) {
		d = &o->dev[o->ndevs++];
		d->devid = k->offset;
		d->flags = GLASSFS_DEV_MISSING | (di.rotational ? GLASSFS_DEV_ROTATIONAL : 0);
	}
	if (d && di.total_bytes)
		d->size = di.total_bytes;
	return 0;
}

static void add_stripes(struct glassfs_ioc_fs_info *o, const struct chunk_stripe *st, int n,
			uint64_t type, uint64_t length)
{
	/* device bytes of each stripe: raid0 spreads the chunk over its
	 * stripes, raid10 over its pairs, raid5/6 over its data columns;
	 * single, dup and raid1 keep the whole chunk on each stripe */
	uint64_t per = !n ? 0 : (type & BG_RAID0) ? length / (uint64_t)n :
		       chunk_stripe_span(type, n, length);

	for (int i = 0; i < n; i++) {
		struct glassfs_dev_info *d = by_id(o, st[i].devid);
		if (!d)
			continue;
		d->used += per;
		d->alloc[core_type_index(type)] += per;
	}
}

/* The chunks' types with their profile bits (a block group's flags carry
 * the type only), by logical address, for note_bg. */
struct walk {
	struct glassfs_ioc_fs_info *o;
	uint64_t (*types)[2];		/* logical, type | profile; sorted as the map */
	int n, cap;
};

static int note_chunk(const struct chunk *ch, void *arg)
{
	struct walk *w = arg;
	struct glassfs_ioc_fs_info *o = w->o;

	if (w->n == w->cap) {
		int cap = w->cap ? 2 * w->cap : 64;
		void *nv = realloc(w->types, (size_t)cap * sizeof(*w->types));
		if (!nv)
			return -ENOMEM;
		w->types = nv;
		w->cap = cap;
	}
	w->types[w->n][0] = ch->logical;
	w->types[w->n++][1] = ch->type;

	add_stripes(o, ch->stripes, ch->num_stripes, ch->type, ch->length);
	/* stripes being filled or kept until a commit take device space too */
	add_stripes(o, ch->new_stripes, ch->num_new, ch->new_type, ch->length);
	add_stripes(o, ch->retired_stripes, ch->num_retired, ch->retired_type, ch->length);
	return 0;
}

static int note_bg(const struct bgroup *bg, void *arg)
{
	struct walk *w = arg;
	struct glassfs_ioc_fs_info *o = w->o;
	uint64_t flags = bg->flags;
	uint32_t i;
	int lo = 0, hi = w->n;

	while (lo < hi) {	/* the chunk at bg->start holds the profile */
		int mid = (lo + hi) / 2;
		if (w->types[mid][0] < bg->start)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < w->n && w->types[lo][0] == bg->start)
		flags |= w->types[lo][1];
	flags &= BG_TYPE_MASK | BG_PROFILE_MASK;

	for (i = 0; i < o->nspaces; i++)
		if (o->space[i].flags == flags)
			break;
	if (i == o->nspaces) {
		if (o->nspaces == GLASSFS_INFO_SPACES)
			return 0;
		o->nspaces++;
		o->space[i].flags = flags;
	}
	o->space[i].size += bg->len;
	o->space[i].used += bg->used_bytes < bg->len ? bg->used_bytes : bg->len;
	o->bytes_used += bg->used_bytes < bg->len ? bg->used_bytes : bg->len;
	return 0;
}

int volinfo_get(struct core *c, struct glassfs_ioc_fs_info *o, bool reset)
{
	int ret;

	memset(o, 0, sizeof(*o));
	o->version = 1;
	memcpy(o->fsid, c->sb.fsid, sizeof(o->fsid));
	/* a longer label is cut (the answer keeps 63 bytes of it) */
	memcpy(o->label, c->sb.label, sizeof(o->label) - 1);
	o->label[sizeof(o->label) - 1] = 0;
	o->generation = c->generation;
	o->num_devices = c->sb.num_devices;
	o->nodesize = c->nodesize;
	o->sectorsize = c->sb.sectorsize;
	for (int i = 0; i < c->ndevs && i < GLASSFS_INFO_DEVS; i++) {
		struct dev *d = c->devs[i];
		struct glassfs_dev_info *di = &o->dev[o->ndevs++];

		di->devid = d->devid;
		di->size = d->size;
		di->flags = (__atomic_load_n(&d->stale, __ATOMIC_RELAXED) ? GLASSFS_DEV_STALE : 0) |
			    (d->rotational ? GLASSFS_DEV_ROTATIONAL : 0) |
			    (__atomic_load_n(&d->removing, __ATOMIC_RELAXED) ? GLASSFS_DEV_REMOVING : 0);
		snprintf(di->path, sizeof(di->path), "%s", d->path);
		dev_errors(d, di->errs, reset);
	}
	ret = chunk_tree_items(c, DEV_ITEMS_OBJECTID, KEY_DEV_ITEM, note_dev_item, o);
	if (ret)
		return ret;
	for (uint32_t i = 0; i < o->ndevs; i++)
		if (!(o->dev[i].flags & GLASSFS_DEV_MISSING))
			o->total_bytes += o->dev[i].size;
	struct walk w = { o, NULL, 0, 0 };
	ret = chunk_for_each(c, note_chunk, &w);
	if (!ret)
		ret = alloc_for_each_bg(c, note_bg, &w);
	free(w.types);
	return ret;
}
