/* SPDX-License-Identifier: MIT */
/*
 * txn_types.h — the transaction machinery's state in struct core
 * (txn.c).  Types only (fs/core/core_types.h assembles them).
 */
#ifndef GLASSFS_TXN_TYPES_H
#define GLASSFS_TXN_TYPES_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include "fs/base/lock.h"
#include "fs/base/gthread.h"

struct core;
struct txn;
struct super_block;

/* Work run inside a commit once writers are gone (txn_commit_with). */
struct core_pending {
	int (*fn)(struct txn *t, void *arg);
	void *arg;
	int ret;
	bool done;
	struct core_pending *next;
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
	struct gthread thread;	/* the commit thread (its stop: under lock, cond) */
	/* commit hooks of the layers above (txn_set_commit_hooks, txn.h);
	 * fixed after open, NULL: none */
	int (*hook_root_items)(struct txn *t);
	void (*hook_critical)(struct core *c);
	void (*hook_super)(struct core *c, struct super_block *sb);
};

struct txn {
	struct core *c;
	uint64_t transid;
	unsigned flags;
};

#endif
