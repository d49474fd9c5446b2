/* SPDX-License-Identifier: MIT */
/*
 * txn_handle.h — a transaction handle as the layers below fs/txn see it.
 *
 * The B-tree, the chunk map, the allocator and the trees are handed a
 * handle (btrfs's trans handle, passed first down to where copy-on-write
 * happens); they ask it its transid and volume and abort it on
 * corruption, but never join, end or commit: that is fs/txn (txn.h).
 */
#ifndef GLASSFS_TXN_HANDLE_H
#define GLASSFS_TXN_HANDLE_H

#include <stdint.h>

struct core;
struct txn;

uint64_t txn_transid(const struct txn *t);
struct core *txn_core(const struct txn *t);

/*
 * Corruption or an I/O error in the middle of changes: log where, abort
 * the transaction, turn the volume read-only.  Nothing of the aborted
 * transaction reaches the disk.
 */
void txn_abort(struct txn *t, int err, const char *where);

#endif
