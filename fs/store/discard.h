/* SPDX-License-Identifier: MIT */
/*
 * discard.h — telling devices about freed space (TRIM / hole punching).
 *
 * Space freed by a transaction becomes free at its commit.  With
 * discards on, it is also discarded:
 *   async  queued at the commit (discard__queued) and allocatable at
 *          once; a discard thread later takes whatever of each queued
 *          range is still free out of the allocator, discards it
 *          (discard__issued/done) and gives it back.  Nothing waits for
 *          the queue (no commit, no allocation); only an allocation that
 *          finds no space waits for the one range being discarded at that
 *          moment (discard__stall), since that space is out of the
 *          allocator just then.  A discard is a hint, and
 *          space allocated again before its turn is simply not discarded
 *          — like btrfs's async discard, and like a device whose flush
 *          orders writes but does not wait for queued discards;
 *   sync   issued by the commit itself (commit__phase 7, one
 *          discard__stall per run) before it ends — the stall the talk
 *          shows;
 *   off    never (the default).
 * The mode comes from core_opts.discard (mount option discard=off|sync|
 * async, nodiscard), else from GLASSFS_DISCARD=off|sync|async at open.
 * Async discards are paced by core_opts.discard_iops and
 * discard_bytes_per_s (0 = unlimited); a queue longer than
 * DISCARD_QUEUE_MAX ranges drops new ones (counted: discard_dropped in
 * glassctl stats; glassctl trim still reaches that space).
 */
#ifndef GLASSFS_DISCARD_H
#define GLASSFS_DISCARD_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include "fs/base/lock.h"
#include "fs/store/discard_types.h"

struct core;


int discard_open(struct core *c);
/* Issue everything queued, then stop the thread. */
void discard_close(struct core *c);
/*
 * A run of space the commit just freed (called under the allocator lock).
 * Sync mode discards it here; async queues it.  Returns false: the run
 * is allocatable at once either way (alloc_unpin's fn contract).
 */
bool discard_freed(struct core *c, uint64_t logical, uint64_t len);
/* Wait until the async queue is empty and the thread idle (tests, and
 * anything that wants "everything freed so far is discarded"; never the
 * commit or an allocation).  true if there was something to wait for. */
bool discard_wait_idle(struct core *c, uint64_t transid);
/* An allocation found no space: wait until the range the thread is
 * discarding right now (if any) is back in the allocator — one discard,
 * never the queue.  true if it waited. */
bool discard_wait_inflight(struct core *c, uint64_t transid);
/* Time sync discards took since the last call (for commit__phase 7). */
uint64_t discard_take_sync_ns(struct core *c);
/* Discard [logical, +len) on every copy now (the queue's worker, sync
 * discards and batch trim).  -EOPNOTSUPP when a device cannot discard,
 * else 0: discards are hints, other errors are ignored. */
int discard_issue(struct core *c, uint64_t logical, uint64_t len);
/* discard_issue, adding the device bytes discarded to *bytes (a raid5/6
 * chunk: only the whole rows inside the range, on every stripe). */
int discard_issue_bytes(struct core *c, uint64_t logical, uint64_t len, uint64_t *bytes);

#endif
