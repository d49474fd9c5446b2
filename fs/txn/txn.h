/* SPDX-License-Identifier: MIT */
/*
 * txn.h — transactions.
 *
 * Every modifying operation joins the running transaction with a handle,
 * changes items through btree.h/data.h with that handle, then ends it.
 * A commit waits for the handles of its transaction to end, writes every
 * dirty node to new locations, flushes the devices, then writes the
 * superblocks: a crash at any instant leaves the previous commit intact.
 * Commits happen periodically (commit=), on txn_commit() (sync, fsync,
 * unmount) and when dirty metadata crosses core_opts.dirty_thresh_bytes.
 */
#ifndef GLASSFS_TXN_H
#define GLASSFS_TXN_H

#include <stdint.h>
#include "fs/core/core.h"
#include "fs/core/txn_handle.h"

struct txn;
struct super_block;

enum txn_flags {
	/* May dip into the metadata reserve: operations that free space
	 * (unlink, rmdir, truncate down, punch hole) so they work on a full
	 * filesystem. */
	TXN_USE_RESERVE = 1 << 0,
};

enum commit_reason {		/* the commit__start probe's "reason" */
	COMMIT_PERIODIC = 1, COMMIT_SYNC = 2, COMMIT_UNMOUNT = 3,
	COMMIT_DIRTY = 4, COMMIT_FSYNC = 5, COMMIT_OTHER = 6,
	COMMIT_ENOSPC = 7,	/* space freed in the running transaction, wanted now */
};

/*
 * Join (or start) the running transaction, reserving metadata space for
 * about nr_items item changes.  -ENOSPC when the space is not there;
 * -EROFS when the volume is read-only or aborted.  May block while a
 * commit is writing out (fires commit__wait).
 */
int txn_join(struct core *c, unsigned nr_items, unsigned flags, struct txn **out);
/* End a handle.  Returns the transaction's error, if it was aborted. */
int txn_end(struct txn *t);
/* txn_transid, txn_core, txn_abort: fs/core/txn_handle.h */

/*
 * Commit hooks: what a layer above must do at a moment of every commit,
 * registered at open (fs/ops/mount.c), so txn names none of them.
 *   root_items: with the commit's own root items, no handle open: write
 *     the root items that layer keeps (subvolumes).  Changes made, or
 *     -errno (aborts the commit).
 *   critical: in the critical section, before the free-space tree is
 *     written (the fsync log pins its blocks and forgets its root).
 *   super: in the critical section, after the trees are final and the
 *     superblock sb is captured (the fsync log reserves the next
 *     transaction's first segment and names it in sb: free in this
 *     commit's free-space tree and not in its bytes_used, out of every
 *     allocation until the next commit).  c->sb takes sb's log_slot,
 *     log_slot_len and features once sb is durable.
 * NULL: nothing to do.
 */
struct txn_commit_hooks {
	int (*root_items)(struct txn *t);
	void (*critical)(struct core *c);
	void (*super)(struct core *c, struct super_block *sb);
};
void txn_set_commit_hooks(struct core *c, const struct txn_commit_hooks *h);

/* Commit the running transaction and wait until it is durable (and the
 * one being written, if any: commits are pipelined, see txn.c). */
int txn_commit(struct core *c, enum commit_reason why);

/* The newest transaction begun: the running one, else the one being
 * written, else the last committed.  Whatever ran before the call ran in
 * a transaction no newer. */
uint64_t txn_newest(struct core *c);

/*
 * Wait until no commit is in its write phase.  For code that writes the
 * superblock outside a commit (the fsync log): afterwards c->sb and
 * core_generation() describe the last durable commit, and while the
 * caller holds a handle no commit can start writing.  A handle may be
 * held (the write phase never waits for handles).
 */
void txn_wait_written(struct core *c);


/* ---- for the volume's open, close and format (fs/ops/mount.c) ---- */
int txn_start_commit_thread(struct core *c);
void txn_stop_commit_thread(struct core *c);
/* Superblock write for all devices, all copies (commit and mkfs). */
int txn_write_supers(struct core *c, uint64_t transid);
/* fsync log: write the last committed superblock again with its log_root
 * (every copy, every device), then flush.  No commit may run meanwhile. */
int txn_write_super_log(struct core *c);
/* Root item updates for trees whose root moved.  Returns changes or -errno. */
int txn_update_root_items(struct txn *t);
void txn_fill_super(struct core *c, uint64_t transid);
/* Run fn(t, arg) inside the commit of the running transaction, after every
 * handle ended (no tree changes under it): snapshots.  fn's result. */
int txn_commit_with(struct core *c, int (*fn)(struct txn *t, void *arg), void *arg);

#endif
