/* SPDX-License-Identifier: MIT */
/*
 * alloc_types.h — the allocator's in-memory types (alloc.h has the
 * functions and the design); fs/core/core_types.h embeds struct allocator.
 */
#ifndef GLASSFS_ALLOC_TYPES_H
#define GLASSFS_ALLOC_TYPES_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include "fs/base/htable.h"
#include "fs/base/lock.h"

struct bgroup {
	uint64_t start, len, flags;	/* fixed */
	uint64_t nbits;			/* sectors */
	uint64_t *used;			/* 1 = not allocatable */
	uint64_t *pinned;		/* 1 = freed in the running transaction */
	uint64_t *cpinned;		/* 1 = freed in the transaction being written */
	uint64_t *held;			/* 1 = free on disk, kept until discarded */
	uint64_t used_bytes;		/* bits set in used, as bytes */
	uint64_t pinned_bytes;
	uint64_t cpinned_bytes;
	uint64_t held_bytes;		/* free on disk, waiting for a discard */
	uint64_t cursor;		/* next-fit hint (bit index) */
	uint64_t fence;			/* no new run crosses a MiB boundary below this bit
					 * (a split being prepared; 0: none) */
	uint64_t row;			/* sectors of a full stripe (raid5/6: k, else 1):
					 * runs start on one and take whole ones */
	bool readonly;			/* no new runs: its chunk is being relocated
					 * to or from raid5/6 (alloc_set_readonly) */
	uint8_t *seg_dirty;		/* free-space tree segments to rewrite */
	uint32_t nsegs;
	bool dirty;			/* some seg_dirty set */
	bool fst_info_missing;		/* new block group: info not yet inserted */
	bool item_dirty;		/* block group item needs rewriting */
};

struct allocator {
	struct glock lock;		/* GLOCK_CLASS_ALLOC: guards everything here */
	struct bgroup **bg;		/* sorted by start */
	int n, cap;
	/* Node blocks allocated in the running transaction (freeing one makes
	 * it reusable at once), by bytenr; emptied at every commit. */
	struct htable_set new_blocks;
	uint64_t meta_cursor_bg;	/* hint: index of the last metadata bg used */
	/* Bytes alloc_unpin and alloc_release made allocatable, ever: did a
	 * commit give space back (fsops.c commit_for_space)? */
	uint64_t given_back;
};

#endif
