/* SPDX-License-Identifier: MIT */
/*
 * btree_fixture.h — an in-memory stand-in for the storage core, so the
 * B-tree, node and cache code can be tested alone (tests/unit/btree_mem):
 * meta_alloc/free/read/write over a malloc'd array of blocks, the lock
 * scheme and a minimal transaction (a transid; commit = cache_writeback,
 * then pinned blocks become free).  Not part of libglassfs.
 */
#ifndef BTREE_FIXTURE_H
#define BTREE_FIXTURE_H

#include <stdbool.h>
#include <stdint.h>
#include "fs/core/core.h"
#include "fs/txn/txn.h"
#include "fs/base/lock.h"

struct core *fx_create(uint32_t nodesize, uint64_t nblocks, enum glock_type type,
		       unsigned groups, uint64_t cache_bytes);
void fx_destroy(struct core *c);
/* The running transaction's handle (shared by every thread). */
struct txn *fx_txn(struct core *c);
/* Write back every dirty node, free pinned blocks, next transid. */
int fx_commit(struct core *c);
/* Drop and recreate the node cache (the caller released its roots). */
void fx_new_cache(struct core *c);
/* Flip a byte of the stored block at bytenr. */
void fx_corrupt(struct core *c, uint64_t bytenr, uint32_t offset);
/* Blocks in use (allocated or pinned). */
uint64_t fx_used_blocks(struct core *c);
uint64_t fx_writes(struct core *c);
/* Make meta_alloc fail with -ENOSPC after n more allocations (-1: never). */
void fx_fail_alloc_after(struct core *c, int64_t n);
/* cowlock=path (every level of a change write-locked) instead of leaf. */
void fx_set_cow_lock_path(struct core *c, bool on);

#endif
