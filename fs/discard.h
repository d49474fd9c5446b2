/* SPDX-License-Identifier: MIT */
/*
 * discard.h — telling devices about freed space (TRIM / hole punching).
 *
 * Space freed by a transaction becomes free at its commit.  With
 * discards on, it is discarded before it can be allocated again:
 *   async  queued at the commit (discard__queued), issued by a discard
 *          thread (discard__issued/done), allocatable once discarded;
 *          an allocation that finds no space while discards are queued
 *          waits for them (discard__stall) — the stall the talk measures;
 *   sync   issued by the commit itself (commit__phase 7) before it ends;
 *   off    never (the default).
 * The mode comes from core_opts.discard (mount option discard=off|sync|
 * async, nodiscard), else from GLASSFS_DISCARD=off|sync|async at open.
 * Async discards are paced by core_opts.discard_iops and
 * discard_bytes_per_s (0 = unlimited).
 */
#ifndef GLASSFS_DISCARD_H
#define GLASSFS_DISCARD_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include "fs/lock.h"

struct core;

enum discard_mode { DISCARD_OFF = 0, DISCARD_SYNC = 1, DISCARD_ASYNC = 2 };

struct discard_range { uint64_t logical, len; };

struct discard_queue {
	struct glock lock;		/* GLOCK_CLASS_DEV: guards the fields below */
	struct gcond cond;		/* work queued / queue drained / stop */
	struct discard_range *v;	/* FIFO of ranges still marked used */
	size_t head, n, cap;
	bool busy;			/* the thread is issuing one range */
	bool stop;
	enum discard_mode mode;		/* fixed after open */
	uint64_t sync_ns;		/* time spent in sync discards (commit) */
	pthread_t thread;
	bool started;
};

int discard_open(struct core *c);
/* Issue everything queued, then stop the thread. */
void discard_close(struct core *c);
/*
 * A run of space the commit just freed (called under the allocator lock).
 * Returns true when the run was queued: it stays used until the discard
 * thread releases it.  Sync mode discards here and returns false.
 */
bool discard_freed(struct core *c, uint64_t logical, uint64_t len);
/* Wait until nothing is queued (an allocation ran out of space). true if
 * there was something to wait for. */
bool discard_wait_idle(struct core *c, uint64_t transid);
/* Time sync discards took since the last call (for commit__phase 7). */
uint64_t discard_take_sync_ns(struct core *c);

#endif
