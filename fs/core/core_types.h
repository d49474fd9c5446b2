/* SPDX-License-Identifier: MIT */
/*
 * core_types.h — struct core, the volume in memory, assembled from the
 * _types.h header of each layer that keeps state in it (store, btree,
 * trees, txn, items): types only, so including this names no function of
 * those layers; each layer's functions are in its own headers.  The
 * layers that reach into struct core include it; the rest see core.h.
 *
 * Lock order (lock.h): txn.lock > tree roots and nodes > alloc.lock >
 * chunks.lock > device.  chunk_alloc_lock is taken by a transaction
 * handle that holds no tree lock, before any of those.
 */
#ifndef GLASSFS_CORE_TYPES_H
#define GLASSFS_CORE_TYPES_H

#include <pthread.h>
#include <stdarg.h>
#include "fs/core/core.h"
#include "fs/core/txn_handle.h"
#include "fs/format/format.h"
/* the types of the layers whose state struct core holds (types only) */
#include "fs/store/dev_types.h"
#include "fs/store/chunk_types.h"
#include "fs/store/alloc_types.h"
#include "fs/store/discard_types.h"
#include "fs/store/dev_readahead_types.h"
#include "fs/store/copy_fence_types.h"
#include "fs/btree/btree_types.h"
#include "fs/trees/trees_types.h"
#include "fs/txn/txn_types.h"
#include "fs/items/items_types.h"

#define CORE_MAX_DEVS 16
_Static_assert(CORE_MAX_DEVS == CORE_OPTS_MAX_DEVS, "core_opts covers every device");

struct log_state;
struct meta_ops;
struct node_cache;
struct volume;

/* Trees the core knows by id; the order is the order of root items. */
enum core_tree {
	CT_ROOT, CT_CHUNK, CT_EXTENT, CT_DEV, CT_CSUM, CT_FST, CT_FS, CT_NR
};




struct core {
	struct core_opts opts;
	bool readonly;		/* opened read-only */
	int aborted;		/* first abort error: volume forced read-only */

	struct dev *devs[CORE_MAX_DEVS];
	int ndevs;
	struct super_block sb;	/* last committed superblock (of devs[0]) */
	uint32_t nodesize;
	uint64_t generation;	/* last committed transid */

	struct chunk_map chunks;
	struct allocator alloc;

	struct glock dref_lock;	/* GLOCK_CLASS_ALLOC: guards drefs */
	struct dref_table drefs;

	struct glock chunk_alloc_lock;	/* serialises chunk creation */
	struct glock share_lock;	/* meta_shared_drop: check and drop as one */
	/*
	 * Writes to devices (meta_write_copies) hold it shared from the
	 * chunk lookup to the last copy written; a relocation takes it
	 * exclusively, for a moment, to start filling new stripes and, after
	 * the switch, to see the spliced reads of the old stripes gone
	 * (fs/services/volume_reloc.c).  Taken with no other lock held by the
	 * relocation.
	 */
	struct glock reloc_lock;
	/* the segment a resync or relocation copies: writes to it wait for
	 * the copy, the rest go on (fs/store/copy_fence.h) */
	struct copy_fence copy_fence;
	struct volume *vol;		/* device add/remove, balance (fs/services/volume_int.h) */

	struct core_root roots[CT_NR];
	struct core_subvols subvols;	/* subvol.c */
	struct core_pending *pending;	/* guarded by ts.lock */
	struct node_cache *cache;
	const struct meta_ops *meta_ops;	/* the B-tree's block ops (meta.h); fixed */

	struct txn_state ts;
	struct discard_queue discard;
	struct dev_ra_queue ra;	/* read-ahead hints (dev_readahead.c) */
	struct log_state *log;	/* fsync log (log.c); NULL in mkfs */
	/*
	 * Set by the fsync log in each commit's critical section (atomic):
	 * the committed transaction had a log, so data extents it allocated
	 * and freed stay pinned until its superblock is durable (extent.c),
	 * not reused at once.
	 */
	bool log_pins_frees;
	/* SUPER_FEAT_* bits the volume's items need since this mount (atomic
	 * OR): an INODE_EXTREF written sets SUPER_FEAT_EXTREF (iref.c); each
	 * commit's superblock takes them (iref_commit_super) */
	uint64_t iref_features;

	/* profile bits (BG_MIRROR/BG_DUP/BG_RAID10/BG_PARITY/0) of new chunks, by core_type_index() */
	uint64_t profile[3];

	/* counters (atomic adds) */
	uint64_t commits, nodes_written, csum_errors;
	uint64_t degraded;	/* reads served by a later copy, writes that missed a copy */
	uint64_t repaired;	/* bad copies rewritten (scrub) */
	/* resync (volume_resync.c): units (data sectors, nodes) that failed
	 * verification on every copy (left as the device had them), and on
	 * the source only (taken from another copy) */
	uint64_t resync_mismatch, resync_rerouted;
	/* reads replied as spans of verified device bytes (data_span.c),
	 * those bytes, and reads the spans handed to the ordinary read */
	uint64_t span_reads, span_bytes, span_fallbacks;
	/* whole data extents of the running transaction written again in
	 * place instead of copied (fs/trees/data.h, data_rewrite) */
	uint64_t data_rewrites;
};

/* BG_DATA -> 0, BG_SYSTEM -> 1, BG_METADATA -> 2. */
static inline int core_type_index(uint64_t type)
{
	return (type & BG_DATA) ? 0 : (type & BG_SYSTEM) ? 1 : 2;
}
/* Copies a profile keeps: raid1c4 4, raid1c3 3, dup/raid1/raid10 2, else 1;
 * raid5/6 count 2 too (device bytes per logical byte rounded up, for
 * space checks). */
static inline int profile_copies(uint64_t profile)
{
	return (profile & BG_RAID1C4) ? 4 : (profile & BG_RAID1C3) ? 3 :
	       (profile & (BG_RAID1 | BG_DUP | BG_RAID10 | BG_RAID5 | BG_RAID6)) ? 2 : 1;
}
/* Devices a profile needs: raid1 2, raid5 and raid1c3 3, raid10, raid6
 * and raid1c4 4, else 1 (an OR of profiles: the most any of them needs). */
static inline int profile_min_devs(uint64_t profile)
{
	return (profile & (BG_RAID10 | BG_RAID6 | BG_RAID1C4)) ? 4 :
	       (profile & (BG_RAID5 | BG_RAID1C3)) ? 3 : (profile & BG_RAID1) ? 2 : 1;
}
/* The mirrored profile of n copies on n devices (n >= 2), else single. */
static inline uint64_t profile_mirror_of(int n)
{
	return n >= 4 ? BG_RAID1C4 : n == 3 ? BG_RAID1C3 : n == 2 ? BG_RAID1 : 0;
}

/* mount_open and mount_format (fs/ops/mount.c) start with it: no message
 * printed yet (core_failure_reported, core.h). */
void core_report_reset(void);

struct root *core_tree(struct core *c, enum core_tree t);
uint64_t core_tree_id(enum core_tree t);

#endif
