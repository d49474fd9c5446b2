/* SPDX-License-Identifier: MIT */
/*
 * alloc.h — block groups and free space.
 *
 * Each chunk is one block group with an in-memory bitmap, one bit per
 * 4 KiB sector: `used` (allocated, or freed but still pinned) and `pinned`
 * (freed in the running transaction: the last commit still references it,
 * so it becomes allocatable only after the next commit).  The free-space
 * tree (format.h, bitmap form) is the persistent copy: a commit rewrites
 * only the bitmap segments whose bits changed, so commit cost does not
 * depend on the filesystem's size, and open loads the bitmaps instead of
 * scanning the extent tree.
 *
 * All functions take alloc.lock themselves; none calls into the B-tree
 * while holding it (the B-tree calls meta_alloc with node locks held).
 */
#ifndef GLASSFS_ALLOC_H
#define GLASSFS_ALLOC_H

#include <stdint.h>
#include <stdbool.h>
#include "fs/base/lock.h"
#include "fs/store/alloc_types.h"

struct core;
struct txn;


void alloc_init(struct allocator *a);
void alloc_destroy(struct allocator *a);

/* A new, empty block group (fresh: a new chunk, its items to be written). */
int alloc_add_bg(struct core *c, uint64_t start, uint64_t len, uint64_t flags, bool fresh);
/*
 * Splitting a block group (chunk relocation that finds no hole for the
 * whole chunk).  alloc_fence(start, upto) keeps new allocations and trim
 * runs in the group at start from crossing any MiB boundary below offset
 * upto (0 lifts it): after the next commit every extent that can cross
 * one is in the extent tree, where the caller looks for a boundary none
 * crosses (a data chunk's split stops the group's allocations instead,
 * alloc_set_readonly, and may cut at any sector).  alloc_split_bg then
 * splits the group at offset at (a sector multiple) into [start, +at)
 * and the rest and lifts the fence; -EBUSY
 * when a run held for discard crosses the cut, -EINVAL when start is no
 * group's start or at not inside it.  Both halves are written whole at
 * the next commit: alloc_split_items() (fs/trees/alloc_tree.h), in the
 * same transaction, deletes
 * the old group's block group item, free-space info and the bitmaps
 * whose keys change.
 */
int alloc_fence(struct core *c, uint64_t start, uint64_t upto);
/*
 * Stop (ro) or resume handing out runs of the block group at start.  A
 * relocation to or from raid5/6 copies whole rows with no concurrent
 * writer, so the group takes no new extents meanwhile (as btrfs marks a
 * block group read-only for balance).  Resuming re-reads the row width
 * from the chunk map: the chunk may have changed profile.  -EINVAL when
 * no group starts there.
 */
int alloc_set_readonly(struct core *c, uint64_t start, bool ro);
/* Is the block group holding logical read-only (alloc_set_readonly)? */
bool alloc_is_readonly(struct core *c, uint64_t logical);
int alloc_split_bg(struct core *c, uint64_t start, uint64_t at);

/*
 * Find and mark used len bytes in a block group of type (BG_DATA,
 * BG_METADATA or BG_SYSTEM), aligned to align bytes.  -ENOSPC.
 */
int alloc_reserve(struct core *c, uint64_t type, uint64_t len, uint64_t align,
		  uint64_t *logical);
/*
 * alloc_reserve, but first the run that starts at logical goal (a file's
 * next byte on disk, so that its pieces land in file order however the
 * writes arrive; ext4's goal block, btrfs's hint).  Taken only when the
 * whole run there is free, in a group of type that alloc_reserve could
 * use, on a row start (raid5/6) and not across a split fence; otherwise,
 * and for goal 0, alloc_reserve's choice.  A goal run moves the group's
 * next-fit cursor forward only, never back: what it skipped stays free
 * for the pieces of the file that come before it.
 */
int alloc_reserve_goal(struct core *c, uint64_t type, uint64_t len, uint64_t align,
		       uint64_t goal, uint64_t *logical);
/* Where alloc_reserve(type, len) looks first: the next-fit cursor of the
 * first group it would try; 0 when none.  A hint, stale once the lock
 * is dropped. */
uint64_t alloc_next_fit(struct core *c, uint64_t type, uint64_t len);
/*
 * Mark a given free range used (fsync log replay: the log's blocks and the
 * data extents it references were allocated after the last commit).
 * -EEXIST when part of it is in use, -EINVAL when it is not inside one
 * block group.
 */
int alloc_claim(struct core *c, uint64_t logical, uint64_t len);
/* Give back bytes never committed: allocatable at once. */
void alloc_free_now(struct core *c, uint64_t logical, uint64_t len);
/* Bytes the last commit still references: allocatable after the next. */
void alloc_pin(struct core *c, uint64_t logical, uint64_t len);
/*
 * Commit, at the end of its critical section: the running transaction's
 * pins become the committing transaction's (alloc_unpin releases exactly
 * those); pins made from now on belong to the next transaction, which
 * runs while this one is written.
 */
void alloc_capture_pins(struct core *c);
/* After the superblock is durable: the captured pins become allocatable.
 * Calls fn(arg, logical, len, flags) per pinned run (cache forget,
 * discard); when fn returns true it keeps the run (queued for discard):
 * the run stays used until alloc_release(). */
void alloc_unpin(struct core *c, bool (*fn)(void *arg, uint64_t logical, uint64_t len,
					    uint64_t flags), void *arg);
/* A run kept by alloc_unpin's fn is now allocatable (already free on disk). */
void alloc_release(struct core *c, uint64_t logical, uint64_t len);
/* Bytes alloc_unpin and alloc_release have made allocatable since the
 * mount: grows when a commit gives pinned space back. */
uint64_t alloc_given_back(struct core *c);
/* True when every sector of the range is allocated (fsck, tests). */
/*
 * Batch trim: the first free run at or after logical `from` (at most
 * maxlen bytes) is taken out of the allocator (used + held, still free on
 * disk) so it can be discarded; alloc_release() gives it back.  false when
 * no free space is left after from.
 */
bool alloc_trim_take(struct core *c, uint64_t from, uint64_t maxlen, uint64_t *logical,
		     uint64_t *len);
bool alloc_is_used(struct core *c, uint64_t logical, uint64_t len);
/* True when any sector of the range is allocated (or it is outside one
 * block group). */
bool alloc_any_used(struct core *c, uint64_t logical, uint64_t len);
/* True when logical lies in a block group created by the running
 * transaction (not in the last commit's chunk tree), or in none. */
bool alloc_bg_is_new(struct core *c, uint64_t logical);

void alloc_note_new(struct core *c, uint64_t bytenr);
bool alloc_take_new(struct core *c, uint64_t bytenr);	/* true if it was new; forgets it */
void alloc_clear_new(struct core *c);

/* The block group at logical, or NULL; caller holds alloc.lock. */
struct bgroup *alloc_find_bg_locked(struct allocator *a, uint64_t logical);


/* Free and total bytes of block groups of type; used (committed view). */
void alloc_space(struct core *c, uint64_t type, uint64_t *total, uint64_t *free);
/* alloc_space without the free space of block groups being moved
 * (alloc_set_readonly): what allocations can take now.  A metadata or
 * system chunk moving to or from raid5/6 hands out nothing, so the
 * transaction reserve makes a new chunk for the nodes meanwhile. */
void alloc_space_open(struct core *c, uint64_t type, uint64_t *total, uint64_t *free);
uint64_t alloc_bytes_used(struct core *c);
/* Iterate block groups (read-only snapshot under the lock). */
int alloc_for_each_bg(struct core *c, int (*fn)(const struct bgroup *bg, void *arg), void *arg);

#endif
