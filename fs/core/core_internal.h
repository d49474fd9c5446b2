/* SPDX-License-Identifier: MIT */
/*
 * core_internal.h — struct core and the storage core's internal seams
 * (chunk map, allocator, delayed refs, commit).  Only fs/core/core.c, chunk.c,
 * alloc.c, extent.c, txn.c, data.c and fsck.c include it.
 *
 * Lock order (lock.h): txn.lock > tree roots and nodes > alloc.lock >
 * chunks.lock > device.  chunk_alloc_lock is taken by a transaction
 * handle that holds no tree lock, before any of those.
 */
#ifndef GLASSFS_CORE_INTERNAL_H
#define GLASSFS_CORE_INTERNAL_H

#include <pthread.h>
#include <stdarg.h>
#include "fs/core/core.h"
#include "fs/core/txn_handle.h"
#include "fs/btree/meta.h"
#include "fs/format/format.h"
#include "fs/store/dev.h"
#include "fs/store/chunk.h"
#include "fs/store/alloc.h"
#include "fs/store/discard.h"
#include "fs/btree/btree.h"

#define CORE_MAX_DEVS 16
_Static_assert(CORE_MAX_DEVS == CORE_OPTS_MAX_DEVS, "core_opts covers every device");

struct log_state;

/* Trees the core knows by id; the order is the order of root items. */
enum core_tree {
	CT_ROOT, CT_CHUNK, CT_EXTENT, CT_DEV, CT_CSUM, CT_FST, CT_FS, CT_NR
};

/* A tree root plus what the last commit recorded about it. */
struct core_root {
	struct root r;
	bool present;
	uint64_t item_bytenr;	/* root item (or superblock) as last written */
	int item_level;
	uint64_t item_last_snapshot;	/* r.last_snapshot as last written */
};

/*
 * Subvolume trees (ids >= FIRST_SUBVOL_OBJECTID; subvol.c), all loaded at
 * open.  Entries are never freed before close, so a struct root pointer
 * stays valid; a dropped subvolume's entry is marked gone.
 */
struct core_subvol {
	struct core_root cr;
	uint64_t flags;			/* ROOT_F_* (format.h) */
	uint64_t otime;
	struct btree_drop drop;		/* ROOT_F_DEAD: the cleaner's progress */
	bool item_dirty;		/* flags/progress changed: rewrite the item */
	bool gone;			/* dropped, root item deleted */
	bool linking;			/* new snapshot, name not linked yet: not the cleaner's */
};

struct core_subvols {
	struct glock lock;		/* GLOCK_CLASS_MISC: the table and flags */
	struct core_subvol **v;
	int n, cap;
	uint64_t next_id;
	/* the cleaner thread: frees deleted subvolumes in batches */
	struct gcond cond;
	bool stop, started, busy;
	pthread_t thread;
	uint64_t dropped_batches;
};

/* Work run inside a commit once writers are gone (core_commit_with). */
struct core_pending {
	int (*fn)(struct txn *t, void *arg);
	void *arg;
	int ret;
	bool done;
	struct core_pending *next;
};

/* One delayed reference change (extent.c). */
struct dref {
	uint64_t bytenr;
	uint64_t len;		/* data: extent length; metadata: nodesize */
	uint64_t owner;		/* tree id of a node; 0 for data */
	int level;		/* node level; -1 for data */
	int64_t delta;
	bool is_data;
	bool is_new;		/* data: allocated in this transaction */
};

struct dref_table {
	struct dref *v;		/* open addressing, bytenr 0 = empty */
	size_t cap, n;
};

/*
 * The running transaction and commit machinery (txn.c).  A commit of
 * transaction N has a critical section (joiners wait: `committing`) and a
 * write phase (`writing` = N) during which transaction N+1 runs; only one
 * commit is busy at a time.
 */
struct txn_state {
	struct glock lock;	/* GLOCK_CLASS_TXN, mutex: guards this struct */
	struct gcond cond;	/* writers ended, commit finished, commit wanted */
	uint64_t running;	/* transid of the running transaction, 0 if none */
	uint64_t started_ns;	/* when it started */
	unsigned writers;	/* open handles */
	bool committing;	/* critical section: joiners wait while set */
	bool busy;		/* a commit is in its critical section or write phase */
	uint64_t writing;	/* transid in its write phase, 0 if none */
	uint64_t writing_bytes;	/* its dirty node bytes (dirty-threshold trigger) */
	uint64_t durable;	/* last transid whose commit ended (its result: commit_ret) */
	int commit_ret;		/* result of the last commit */
	uint64_t commits_done;	/* counts completed commits (waiters compare) */
	int want_commit;	/* a commit_reason for the commit thread, or 0 */
	bool stop;		/* commit thread: exit */
	pthread_t thread;
	bool thread_started;
	/* commit hooks of the layers above (txn_set_commit_hooks, txn.h);
	 * fixed after open, NULL: none */
	int (*hook_root_items)(struct txn *t);
	void (*hook_critical)(struct core *c);
};

struct txn {
	struct core *c;
	uint64_t transid;
	unsigned flags;
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
	 * Writes to devices (core_write_copies) hold it shared from the
	 * chunk lookup to the last copy written; a relocation takes it
	 * exclusively to start filling new stripes and to copy each segment,
	 * so no write lands between its read and its copy (fs/services/volume.c).
	 * Taken with no other lock held by the relocation.
	 */
	struct glock reloc_lock;
	struct volume *vol;		/* device add/remove, balance (fs/services/volume.c) */

	struct core_root roots[CT_NR];
	struct core_subvols subvols;	/* subvol.c */
	struct core_pending *pending;	/* guarded by ts.lock */
	struct node_cache *cache;
	const struct meta_ops *meta_ops;	/* the B-tree's block ops (meta.h); fixed */

	struct txn_state ts;
	struct discard_queue discard;
	struct log_state *log;	/* fsync log (log.c); NULL in mkfs */
	/*
	 * Set by the fsync log in each commit's critical section (atomic):
	 * the committed transaction had a log, so data extents it allocated
	 * and freed stay pinned until its superblock is durable (extent.c),
	 * not reused at once.
	 */
	bool log_pins_frees;

	/* profile bits (BG_RAID1/BG_DUP/0) of new chunks, by core_type_index() */
	uint64_t profile[3];

	/* counters (atomic adds) */
	uint64_t commits, nodes_written, csum_errors;
	uint64_t degraded;	/* reads served by a later copy, writes that missed a copy */
	uint64_t repaired;	/* bad copies rewritten (scrub) */
};

/* BG_DATA -> 0, BG_SYSTEM -> 1, BG_METADATA -> 2. */
static inline int core_type_index(uint64_t type)
{
	return (type & BG_DATA) ? 0 : (type & BG_SYSTEM) ? 1 : 2;
}
/* Copies a profile keeps: 2 for dup/raid1, else 1. */
static inline int profile_copies(uint64_t profile)
{
	return (profile & (BG_RAID1 | BG_DUP)) ? 2 : 1;
}

/* Apply the latency model of device index idx (core_opts) to d. */
void core_apply_latency(struct core *c, struct dev *d, int idx);

/* Corruption and I/O trouble: one line on stderr naming where. */
void core_log(struct core *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Corruption found outside a transaction: log and force read-only. */
void core_corrupt(struct core *c, const char *where, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

struct root *core_tree(struct core *c, enum core_tree t);
uint64_t core_tree_id(enum core_tree t);

/* extent.c: the B-tree's block ops of a volume (meta.h). */
extern const struct meta_ops extent_meta_ops;
/* extent.c: delayed references, run at commit. */
int extent_ref_add(struct core *c, const struct dref *d);
/* Run every queued ref (one round).  Returns how many ran, or -errno. */
int extent_run_refs(struct txn *t);
bool extent_refs_pending(struct core *c);
void extent_refs_free(struct core *c);
/* The extent item of a node or data extent. 0, -ENOENT. */
int extent_lookup(struct core *c, uint64_t bytenr, bool is_data, struct extent_item *ei,
		  uint64_t *len_or_level);

/* Write every copy; a failing copy degrades when another took it. */
int core_write_copies(struct core *c, uint64_t logical, const void *buf, uint64_t len,
		      const char *what);

/* data.c */
int data_csum_delete(struct txn *t, uint64_t logical, uint64_t len);
/* Expected checksums of sectors [start, start + n*4K): have[i] = 1 and
 * exp[i] set where a checksum item covers sector i. */
int data_load_csums(struct core *c, uint64_t start, uint32_t n, uint32_t *exp, uint8_t *have);

/* txn.c */
int txn_start_commit_thread(struct core *c);
void txn_stop_commit_thread(struct core *c);
/* Superblock write for all devices, all copies (commit and mkfs). */
int core_write_supers(struct core *c, uint64_t transid);
/* fsync log: write the last committed superblock again with its log_root
 * (every copy, every device), then flush.  No commit may run meanwhile. */
int core_write_super_log(struct core *c);
/* Root item updates for trees whose root moved.  Returns changes or -errno. */
int core_update_root_items(struct txn *t);
void core_fill_super(struct core *c, uint64_t transid);
/* Run fn(t, arg) inside the commit of the running transaction, after every
 * handle ended (no tree changes under it): snapshots.  fn's result. */
int core_commit_with(struct core *c, int (*fn)(struct txn *t, void *arg), void *arg);

/* subvol.c (core side) */
int subvol_core_open(struct core *c);		/* load subvolume roots, start the cleaner */
int subvol_cleaner_start(struct core *c);	/* after the commit thread */
void subvol_core_stop(struct core *c);		/* stop the cleaner (before the last commit) */
void subvol_core_free(struct core *c);
struct root *subvol_core_root(struct core *c, uint64_t id);
int subvol_update_root_items(struct txn *t);	/* commit hook: changes made, or -errno */

#endif
