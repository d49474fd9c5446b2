// SPDX-License-Identifier: MIT
/*
 * mount.c — open, close and format a volume: the orchestration of every
 * layer below (devices, chunks, allocator, node cache, roots, transactions,
 * fsync log, subvolumes, volume checks); space and statistics.
 */
#include "fs/ops/mount.h"
#include "fs/core/core_types.h"
#include "fs/trees/chunk_tree.h"
#include "fs/trees/dev_item.h"
#include "fs/items/subvol.h"
#include "fs/store/alloc.h"
#include "fs/trees/alloc_tree.h"
#include "fs/store/chunk.h"
#include "fs/store/dev.h"
#include "fs/store/discard.h"
#include "fs/store/dev_readahead.h"
#include "fs/store/copy_fence.h"
#include "fs/trees/extent.h"
#include "fs/txn/txn.h"
#include "fs/items/log.h"
#include "fs/items/iref.h"
#include "fs/btree/btree.h"
#include "fs/base/crc32c.h"
#include "fs/btree/cache.h"
#include "fs/services/scrub.h"
#include "fs/services/volume.h"

#include <errno.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

/*
 * Every program that opens a volume links scrub.o (libglassfs.a is an
 * archive): its USDT probes are then in the daemon's notes from the
 * start, as tests/bpf/probes.test wants, before the daemon calls it.
 */
int (*const mount_scrub_entry)(struct core *, struct scrub_opts *, struct scrub_progress *) =
	scrub_run;

/* The commit's superblock moment: the fsync log names its next slot, the
 * back references' feature bits go in. */
static void commit_super(struct core *c, struct super_block *sb)
{
	log_commit_slot(c, sb);
	iref_commit_super(c, sb);
}

static struct core *core_alloc(const struct core_opts *o)
{
	struct core *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	if (o)
		c->opts = *o;
	else
		core_opts_default(&c->opts);
	c->meta_ops = &extent_meta_ops;
	/* the commit's moments of the layers above txn: the subvolumes'
	 * root items, the fsync log's blocks (both no-ops until opened) */
	txn_set_commit_hooks(c, &(struct txn_commit_hooks){
		.root_items = subvol_update_root_items,
		.critical = log_commit_clear,
		.super = commit_super,
	});
	chunk_map_init(&c->chunks);
	alloc_init(&c->alloc);
	glock_init(&c->dref_lock, GLOCK_MUTEX, GLOCK_CLASS_ALLOC, 0, -1, -1);
	glock_init(&c->chunk_alloc_lock, GLOCK_MUTEX, GLOCK_CLASS_CHUNK, 0, -1, -1);
	glock_init(&c->share_lock, GLOCK_MUTEX, GLOCK_CLASS_MISC, 0, -1, -1);
	glock_init(&c->reloc_lock, GLOCK_RWLOCK, GLOCK_CLASS_CHUNK, 0, -1, -1);
	copy_fence_init(&c->copy_fence);
	glock_init(&c->ts.lock, GLOCK_MUTEX, GLOCK_CLASS_TXN, 0, -1, -1);
	gcond_init(&c->ts.cond);
	return c;
}

static void core_free(struct core *c)
{
	volume_close(c);
	dev_readahead_close(c);	/* before the devices close */
	discard_close(c);
	subvol_core_free(c);
	for (int i = 0; i < CT_NR; i++)
		if (c->roots[i].present)
			btree_root_release(&c->roots[i].r);
	if (c->cache)
		cache_destroy(c->cache);
	for (int i = 0; i < c->ndevs; i++)
		dev_close(c->devs[i]);
	chunk_map_free(&c->chunks);
	alloc_destroy(&c->alloc);
	extent_refs_free(c);
	log_destroy(c);
	free(c);
}

static bool same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	if (stat(a, &sa) < 0 || stat(b, &sb) < 0)
		return false;
	if (S_ISBLK(sa.st_mode))
		return S_ISBLK(sb.st_mode) && sa.st_rdev == sb.st_rdev;
	return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

static int open_devs(struct core *c, const char *const *devs, int ndevs, bool ro)
{
	if (ndevs < 1 || ndevs > CORE_MAX_DEVS) {
		core_log(c, "need 1 to %d devices, got %d", CORE_MAX_DEVS, ndevs);
		return -EINVAL;
	}
	unsigned flags = (ro ? DEV_RDONLY : 0) | (c->opts.noclaim ? DEV_NOCLAIM : 0);

	for (int i = 0; i < ndevs; i++) {
		int ret;
		struct stat st;

		/* named twice, our own claim would refuse it as in use */
		for (int j = 0; j < i; j++)
			if (same_file(devs[i], devs[j])) {
				core_log(NULL, "%s and %s are the same device, given twice",
					 devs[j], devs[i]);
				return -EINVAL;
			}
		ret = dev_open(devs[i], flags, &c->devs[i]);
		if (ret == -EBUSY) {
			char who[512];
			dev_holder(devs[i], who, sizeof(who));
			core_log(NULL, "%s is in use by %s: a device serves one mount, "
				 "mkfs or fsck at a time", devs[i], who);
			return ret;
		}
		if (ret) {
			if (ret == -EINVAL && stat(devs[i], &st) == 0 && S_ISDIR(st.st_mode))
				core_log(NULL, "%s is a directory: give a block device or an image file",
					 devs[i]);
			else
				core_log(NULL, "%s: %s", devs[i], strerror(-ret));
			return ret;
		}
		c->ndevs++;
		dev_apply_latency(c, c->devs[i], i);
		if (c->opts.dev_recorder)
			dev_set_recorder(c->devs[i], c->opts.dev_recorder, c->opts.dev_recorder_arg);
	}
	return 0;
}

/* ---- superblocks ---------------------------------------------------------- */

static bool super_valid(const struct super_block *sb, uint64_t at)
{
	uint32_t crc, want;

	if (sb->magic != GLASSFS_MAGIC || sb->bytenr != at)
		return false;
	crc = crc32c(0, (const uint8_t *)sb + 32, SUPER_SIZE - 32);
	memcpy(&want, sb->csum, 4);
	return crc == want;
}

/* Best valid copy on d (highest generation): 0; -EUCLEAN when copies carry
 * glassfs's magic but none is valid (a damaged glassfs), -ENOENT when none
 * does (not a glassfs device). */
static int read_best_super(struct dev *d, struct super_block *best)
{
	static const uint64_t offs[SUPER_COPIES] = { SUPER_OFFSET, SUPER_MIRROR1, SUPER_MIRROR2 };
	struct super_block *sb = aligned_alloc(4096, sizeof(*sb));
	bool found = false, magic = false;

	if (!sb)
		return -ENOMEM;
	for (int k = 0; k < SUPER_COPIES; k++) {
		if (offs[k] + SUPER_SIZE > d->size)
			continue;
		if (dev_read(d, offs[k], sb, SUPER_SIZE))
			continue;
		if (!super_valid(sb, offs[k])) {
			if (sb->magic == GLASSFS_MAGIC) {
				core_log(NULL, "%s: superblock copy at %llu fails its checksum, trying mirrors",
					 d->path, (unsigned long long)offs[k]);
				magic = true;
			}
			continue;
		}
		if (!found || sb->generation > best->generation) {
			memcpy(best, sb, sizeof(*sb));
			found = true;
		}
	}
	free(sb);
	return found ? 0 : magic ? -EUCLEAN : -ENOENT;
}

/* ---- tree roots ------------------------------------------------------------ */

static void setup_root(struct core *c, enum core_tree t, uint64_t bytenr, int level,
		       uint64_t gen)
{
	struct core_root *cr = &c->roots[t];

	btree_root_init(&cr->r, c, core_tree_id(t), bytenr, level, gen);
	cr->present = true;
	cr->item_bytenr = bytenr;
	cr->item_level = level;
}

static int load_roots(struct core *c)
{
	for (int t = CT_EXTENT; t < CT_NR; t++) {
		struct root_item ri;
		struct key k = { core_tree_id(t), KEY_ROOT_ITEM, 0 };
		int ret;

		if (t == CT_CHUNK)
			continue;
		ret = btree_lookup(core_tree(c, CT_ROOT), &k, &ri, sizeof(ri));
		if (ret != (int)sizeof(ri)) {
			core_log(c, "root tree: no usable root item for tree %llu (%s)",
				 (unsigned long long)core_tree_id(t),
				 ret < 0 ? strerror(-ret) : "wrong size");
			return ret < 0 && ret != -ENOENT ? ret : -EUCLEAN;
		}
		setup_root(c, (enum core_tree)t, ri.bytenr, ri.level, ri.generation);
		c->roots[t].r.last_snapshot = ri.last_snapshot;
		c->roots[t].item_last_snapshot = ri.last_snapshot;
	}
	return subvol_core_open(c);
}

static int add_bg_of_chunk(const struct chunk *ch, void *arg)
{
	return alloc_add_bg(arg, ch->logical, ch->length, ch->type & BG_TYPE_MASK, false);
}

int mount_open(const char *const *devs, int ndevs, const struct core_opts *o,
	      struct core **out)
{
	struct core *c = core_alloc(o);
	struct super_block *sb;
	int ret;

	core_report_reset();
	if (!c)
		return -ENOMEM;
	c->readonly = c->opts.readonly;
	sb = &c->sb;
	ret = open_devs(c, devs, ndevs, c->readonly);
	if (ret)
		goto fail;

	/* every device's best superblock copy; the volume's is the newest */
	for (int i = 0; i < c->ndevs; i++) {
		struct super_block *s = aligned_alloc(4096, sizeof(*s));
		if (!s) {
			ret = -ENOMEM;
			goto fail;
		}
		ret = read_best_super(c->devs[i], s);
		if (ret) {
			core_log(NULL, ret == -EUCLEAN ? "%s: every glassfs superblock copy is damaged" :
				 "%s: no valid glassfs superblock", c->devs[i]->path);
			free(s);
			ret = ret == -EUCLEAN || ret == -ENOMEM ? ret : -EINVAL;
			goto fail;
		}
		if (i > 0 && memcmp(s->fsid, sb->fsid, 16)) {
			core_log(NULL, "%s belongs to another volume", c->devs[i]->path);
			free(s);
			ret = -EINVAL;
			goto fail;
		}
		c->devs[i]->devid = s->dev_item.devid;
		c->devs[i]->sb_generation = s->generation;
		memcpy(c->devs[i]->uuid, s->dev_item.uuid, 16);
		for (int j = 0; j < i; j++)
			if (c->devs[j]->devid == s->dev_item.devid) {
				core_log(c, "%s and %s are the same device of the volume (id %llu)",
					 c->devs[j]->path, c->devs[i]->path,
					 (unsigned long long)s->dev_item.devid);
				free(s);
				ret = -EINVAL;
				goto fail;
			}
		/* image files keep the flag mkfs recorded; block devices say */
		if (!c->devs[i]->blockdev)
			c->devs[i]->rotational = s->dev_item.rotational != 0;
		if (i == 0 || s->generation > sb->generation)
			memcpy(sb, s, sizeof(*s));
		free(s);
	}
	if (sb->num_devices > (uint64_t)c->ndevs && c->opts.degraded) {
		/* writable, like btrfs: the missing devices miss these commits
		 * and are resynced when they come back (volume_open_check) */
		core_log(c, "volume has %llu devices, %d given: opening degraded%s",
			 (unsigned long long)sb->num_devices, c->ndevs,
			 c->readonly ? " (read-only)" : "; the missing devices are resynced when they return");
	} else if (sb->num_devices != (uint64_t)c->ndevs) {
		core_log(c, "volume has %llu devices, %d given%s",
			 (unsigned long long)sb->num_devices, c->ndevs,
			 sb->num_devices > (uint64_t)c->ndevs ?
			 " (the degraded option opens it if dup/raid1 copies cover the rest)" : "");
		ret = -ENODEV;
		goto fail;
	}
	for (int i = 0; i < c->ndevs; i++)
		c->devs[i]->stale = c->devs[i]->sb_generation < sb->generation;
	c->nodesize = sb->nodesize;
	if (c->nodesize < 4096 || c->nodesize > 65536 || (c->nodesize & (c->nodesize - 1)) ||
	    sb->sectorsize != CORE_SECTORSIZE || sb->csum_type != CSUM_TYPE_CRC32C) {
		core_log(c, "superblock: unsupported nodesize %u / sectorsize %u / csum %u",
			 sb->nodesize, sb->sectorsize, sb->csum_type);
		ret = -EUCLEAN;
		goto fail;
	}
	if (sb->features & ~SUPER_FEAT_KNOWN) {
		/* a newer format's bits: reading on would misread the volume */
		core_log(c, "superblock: unknown features 0x%llx: made by a newer glassfs",
			 (unsigned long long)(sb->features & ~SUPER_FEAT_KNOWN));
		ret = -EOPNOTSUPP;
		goto fail;
	}
	c->generation = sb->generation;
	ret = chunk_load_sys_array(c, sb);
	if (ret) {
		core_log(c, "superblock: bad sys_chunk_array (%s)", strerror(-ret));
		goto fail;
	}
	c->cache = cache_create(c, c->nodesize, c->opts.cache_bytes);
	if (!c->cache) {
		ret = -ENOMEM;
		goto fail;
	}
	setup_root(c, CT_CHUNK, sb->chunk_root, sb->chunk_root_level, sb->chunk_root_generation);
	ret = chunk_load_tree(c);
	if (ret) {
		core_log(c, "chunk tree: %s", strerror(-ret));
		goto fail;
	}
	setup_root(c, CT_ROOT, sb->root, sb->root_level, sb->generation);
	ret = load_roots(c);
	if (ret)
		goto fail;
	chunk_load_profiles(c);
	ret = chunk_for_each(c, add_bg_of_chunk, c);
	if (!ret)
		ret = alloc_load(c);
	if (ret) {
		core_log(c, "block groups / free space: %s", strerror(-ret));
		goto fail;
	}
	int resynced = volume_open_check(c);	/* stale devices: resync them */
	ret = discard_open(c);
	if (!ret)
		ret = dev_readahead_open(c);
	if (!ret)
		ret = log_init(c);
	if (ret)
		goto fail;
	if (resynced > 0) {
		/* a commit now, so the resynced devices get current superblocks */
		struct txn *t;
		ret = txn_join(c, 0, TXN_USE_RESERVE, &t);
		if (!ret)
			ret = txn_end(t);
		if (!ret)
			ret = txn_commit(c, COMMIT_OTHER);
		if (ret) {
			core_log(c, "commit after resync: %s", strerror(-ret));
			goto fail;
		}
	}
	if (!c->readonly) {
		ret = txn_start_commit_thread(c);
		if (!ret)
			ret = subvol_cleaner_start(c);
		if (ret)
			goto fail;
	}
	*out = c;
	return 0;
fail:
	core_free(c);
	return ret;
}

int mount_close(struct core *c)
{
	int ret = 0;

	if (!c)
		return 0;
	/* the mount is gone: whoever opens a device now waits for this close */
	for (int i = 0; i < c->ndevs; i++)
		dev_closing(c->devs[i]);
	subvol_core_stop(c);
	volume_close(c);	/* a running balance stops first */
	txn_stop_commit_thread(c);
	if (!c->readonly && !c->aborted)
		ret = txn_commit(c, COMMIT_UNMOUNT);
	if (!ret && c->aborted)
		ret = c->aborted;
	core_free(c);
	return ret;
}

/* ---- format -------------------------------------------------------------- */

/* Another filesystem's (or our) signature on d: its name, or NULL. */
static const char *signature(struct dev *d)
{
	uint8_t *b = aligned_alloc(4096, 128 << 10);
	const char *what = NULL;

	if (!b)
		return NULL;
	if (d->size >= (128 << 10) && dev_read(d, 0, b, 128 << 10) == 0) {
		uint64_t m;
		memcpy(&m, b + SUPER_OFFSET + 64, 8);
		if (m == GLASSFS_MAGIC)
			what = "glassfs";
		else if (memcmp(b + SUPER_OFFSET + 64, "_BHRfS_M", 8) == 0)
			what = "btrfs";
		else if (memcmp(b, "XFSB", 4) == 0)
			what = "xfs";
		else if (b[1024 + 56] == 0x53 && b[1024 + 57] == 0xef)
			what = "ext2/3/4";
		else if (memcmp(b + 4096 - 10, "SWAPSPACE2", 10) == 0 ||
			 memcmp(b + 4096 - 10, "SWAP-SPACE", 10) == 0)
			what = "swap";
	}
	free(b);
	return what;
}

int txn_commit_format(struct core *c, uint64_t transid);

int mount_format(const char *const *devs, int ndevs, const struct format_opts *o)
{
	struct format_opts def = { .nodesize = CORE_DEFAULT_NODESIZE };
	struct core *c;
	struct txn t;
	uint64_t l;
	int ret;

	core_report_reset();
	if (!o)
		o = &def;
	uint32_t ns = o->nodesize ? o->nodesize : CORE_DEFAULT_NODESIZE;
	if (ns < 4096 || ns > 65536 || (ns & (ns - 1))) {
		core_log(NULL, "nodesize %u: must be a power of two from 4096 to 65536", ns);
		return -EINVAL;
	}
	if (o->label && strlen(o->label) >= sizeof(((struct super_block *)0)->label)) {
		core_log(NULL, "label longer than 255 bytes");
		return -EINVAL;
	}
	const uint64_t known = BG_MIRROR | BG_DUP | BG_RAID10 | BG_PARITY;
	if ((o->data_profile & ~known) || (o->meta_profile & ~known) ||
	    __builtin_popcountll(o->data_profile) > 1 || __builtin_popcountll(o->meta_profile) > 1) {
		core_log(NULL, "unsupported profile (single, dup, raid1, raid1c3, raid1c4, raid10, raid5 and raid6 are)");
		return -EINVAL;
	}
	for (int k = 0; k < 2; k++) {
		uint64_t p = k ? o->meta_profile : o->data_profile;
		if (ndevs < profile_min_devs(p)) {
			core_log(NULL, "the %s profile needs at least %d devices, %d given",
				 core_profile_name(p), profile_min_devs(p), ndevs);
			return -EINVAL;
		}
	}
	c = core_alloc(NULL);
	if (!c)
		return -ENOMEM;
	c->nodesize = ns;
	c->profile[core_type_index(BG_DATA)] = o->data_profile;
	c->profile[core_type_index(BG_METADATA)] = o->meta_profile;
	c->profile[core_type_index(BG_SYSTEM)] = o->meta_profile;
	ret = open_devs(c, devs, ndevs, false);
	if (ret)
		goto out;
	for (int i = 0; o->rotational && i < c->ndevs; i++)
		if (o->rotational[i] >= 0)
			c->devs[i]->rotational = o->rotational[i] != 0;
	for (int i = 0; i < c->ndevs; i++) {
		struct dev *d = c->devs[i];
		const char *sig;
		if (d->size < DEV_MIN_SIZE) {
			core_log(NULL, "%s: %llu bytes is too small (minimum %llu MiB)", d->path,
				 (unsigned long long)d->size,
				 (unsigned long long)(DEV_MIN_SIZE >> 20));
			ret = -ENOSPC;
			goto out;
		}
		sig = signature(d);
		if (sig && !o->force) {
			core_log(NULL, "%s already contains %s %s signature; use -f to overwrite it",
				 d->path, sig[0] == 'e' || sig[0] == 'x' ? "an" : "a", sig);
			ret = -EEXIST;
			goto out;
		}
		for (int j = 0; j < i; j++) {
			if (strcmp(c->devs[j]->path, d->path) == 0) {
				core_log(NULL, "%s given twice", d->path);
				ret = -EINVAL;
				goto out;
			}
		}
	}

	/* identity */
	struct super_block *sb = &c->sb;
	memset(sb, 0, sizeof(*sb));
	if (getrandom(sb->fsid, 16, 0) != 16) {
		ret = -EIO;
		goto out;
	}
	for (int i = 0; i < c->ndevs; i++) {
		c->devs[i]->devid = (uint64_t)i + 1;
		if (getrandom(c->devs[i]->uuid, 16, 0) != 16) {
			ret = -EIO;
			goto out;
		}
	}
	if (o->label)
		snprintf(sb->label, sizeof(sb->label), "%s", o->label);

	/* wipe every superblock copy first: a mkfs cut short is not a volume */
	uint8_t *zero = aligned_alloc(4096, SUPER_SIZE);
	if (!zero) {
		ret = -ENOMEM;
		goto out;
	}
	memset(zero, 0, SUPER_SIZE);
	static const uint64_t offs[SUPER_COPIES] = { SUPER_OFFSET, SUPER_MIRROR1, SUPER_MIRROR2 };
	for (int i = 0; i < c->ndevs && !ret; i++)
		for (int k = 0; k < SUPER_COPIES && !ret; k++)
			if (offs[k] + SUPER_SIZE <= c->devs[i]->size)
				ret = dev_write(c->devs[i], offs[k], zero, SUPER_SIZE);
	free(zero);
	if (ret)
		goto out;

	c->cache = cache_create(c, c->nodesize, c->opts.cache_bytes);
	if (!c->cache) {
		ret = -ENOMEM;
		goto out;
	}
	/* the first chunks exist in memory; their items go in with the trees */
	ret = chunk_create(c, NULL, BG_SYSTEM, &l);
	if (!ret)
		ret = chunk_create(c, NULL, BG_METADATA, &l);
	if (!ret)
		ret = chunk_create(c, NULL, BG_DATA, &l);
	if (ret) {
		core_log(c, "no room for the first chunks (%s)", strerror(-ret));
		goto out;
	}

	/* transaction 1 creates every tree */
	c->ts.running = 1;
	t = (struct txn){ c, 1, TXN_USE_RESERVE };
	for (int i = 0; i < CT_NR && !ret; i++) {
		setup_root(c, (enum core_tree)i, 0, 0, 0);
		c->roots[i].item_bytenr = 0;
		ret = btree_root_create_empty(&t, &c->roots[i].r);
	}
	for (int i = 0; i < c->ndevs && !ret; i++)
		ret = dev_item_insert(&t, c->devs[i]);	/* generation 1: t's */
	for (int i = 0; i < c->chunks.n && !ret; i++)
		ret = chunk_insert_items(&t, c->chunks.v[i]);
	if (ret) {
		core_log(c, "creating the trees: %s", strerror(-ret));
		goto out;
	}
	ret = txn_commit_format(c, 1);
	c->ts.running = 0;
out:
	core_free(c);
	return ret;
}

void mount_space(struct core *c, struct core_space *s)
{
	uint64_t dt, df, unalloc = chunk_unallocated(c);
	uint64_t keep = chunk_default_size(c, BG_METADATA);
	uint64_t for_data = unalloc > keep ? unalloc - keep : 0;

	uint64_t num, den;

	/* raid5/6: (n - p) / n of it holds data, not a half */
	chunk_profile_ratio(c, c->profile[core_type_index(BG_DATA)], &num, &den);
	for_data = for_data / num * den;

	alloc_space(c, BG_DATA, &dt, &df);
	s->total_bytes = 0;
	for (int i = 0; i < c->ndevs; i++)
		s->total_bytes += c->devs[i]->size;
	s->free_bytes = df + for_data;
	s->avail_bytes = s->free_bytes;
}

void mount_stats(struct core *c, struct core_stats *s)
{
	memset(s, 0, sizeof(*s));
	s->transid = c->generation;
	s->commits = __atomic_load_n(&c->commits, __ATOMIC_RELAXED);
	s->nodes_written = __atomic_load_n(&c->nodes_written, __ATOMIC_RELAXED);
	s->csum_errors = __atomic_load_n(&c->csum_errors, __ATOMIC_RELAXED);
	s->degraded = __atomic_load_n(&c->degraded, __ATOMIC_RELAXED);
	s->repaired = __atomic_load_n(&c->repaired, __ATOMIC_RELAXED);
	s->discard_dropped = __atomic_load_n(&c->discard.dropped, __ATOMIC_RELAXED);
	s->readahead_dropped = __atomic_load_n(&c->ra.dropped, __ATOMIC_RELAXED);
	s->resync_mismatch = __atomic_load_n(&c->resync_mismatch, __ATOMIC_RELAXED);
	s->resync_rerouted = __atomic_load_n(&c->resync_rerouted, __ATOMIC_RELAXED);
	s->span_reads = __atomic_load_n(&c->span_reads, __ATOMIC_RELAXED);
	s->span_bytes = __atomic_load_n(&c->span_bytes, __ATOMIC_RELAXED);
	s->span_fallbacks = __atomic_load_n(&c->span_fallbacks, __ATOMIC_RELAXED);
	s->data_rewrites = __atomic_load_n(&c->data_rewrites, __ATOMIC_RELAXED);
	copy_fence_counts(c, &s->copy_fence_waits, &s->copy_fence_passed);
	struct log_stats ls;
	log_stats(c, &ls);
	s->log_syncs = ls.syncs;
	s->log_fallbacks = ls.fallbacks;
	s->log_bytes = ls.bytes;
	s->log_rec_bytes = ls.rec_bytes;
	s->log_deltas = ls.deltas;
	s->log_arenas = ls.arenas;
	volume_resync_progress(c, &s->resync_bytes, &s->resync_done_bytes, &s->resync_running);
	if (c->cache) {
		uint64_t nodes;
		cache_stats(c->cache, &s->cache_hits, &s->cache_misses, &nodes);
	}
	for (int i = 0; i < c->ndevs; i++) {
		struct dev_counters d;
		dev_counters(c->devs[i], &d);
		s->dev_read_ios += d.read_ios;
		s->dev_read_bytes += d.read_bytes;
		s->dev_write_ios += d.write_ios;
		s->dev_write_bytes += d.write_bytes;
		s->dev_flushes += d.flushes;
		s->dev_discards += d.discards;
		s->dev_discard_bytes += d.discard_bytes;
		s->dev_readahead_ios += d.ra_ios;
		s->dev_readahead_bytes += d.ra_bytes;
		s->dev_writebehind_ios += d.wb_ios;
		s->dev_writebehind_bytes += d.wb_bytes;
	}
}
