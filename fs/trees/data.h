/* SPDX-License-Identifier: MIT */
/*
 * data.h — file data extents: allocation, checksummed I/O, reference counts.
 *
 * A data extent is a run of logical bytes (a multiple of CORE_SECTORSIZE)
 * with an EXTENT_ITEM in the extent tree holding its reference count and
 * one crc32c per 4 KiB block in the checksum tree.  The items layer keeps
 * file-extent items that point into extents; it never touches the extent
 * or checksum trees itself.
 */
#ifndef GLASSFS_DATA_H
#define GLASSFS_DATA_H

#include <stdint.h>
#include "fs/core/core.h"
#include "fs/core/txn_handle.h"

/* Allocate a data extent of len bytes with refcount 1.  -ENOSPC. */
int data_alloc(struct txn *t, uint64_t len, uint64_t *logical);
/*
 * data_alloc trying the run at logical goal first (alloc_reserve_goal):
 * the items layer passes where the file's data would continue on disk.
 * Any free space when that run is taken; goal 0: none.
 */
int data_alloc_goal(struct txn *t, uint64_t len, uint64_t goal, uint64_t *logical);
/* Where the next data_alloc of len bytes would look first (a hint; 0:
 * no group has room). */
uint64_t data_next_fit(struct txn *t, uint64_t len);

/*
 * Write len bytes at logical (inside an extent allocated by this
 * transaction) to every mirror, recording their checksums.  Durable only
 * after the next commit (or an explicit txn_commit()).
 */
int data_write(struct txn *t, uint64_t logical, const void *buf, uint64_t len);
/*
 * Make the data extent [b, b + blen) the continuation of [a, a + alen)
 * (b = a + alen): one extent [a, a + alen + blen) from then on, for a
 * file that writes on where its last extent ends (fs/items/file.c).  Only
 * when both were allocated in the running transaction, each still has
 * its one reference, and the whole lies in one chunk (one raid10
 * element; never raid5/6) and inside one DATA_MERGE_GRID.  1 merged, 0
 * not (two extents, as before).
 * The checksums are per sector and stay as data_write wrote them.
 */
int data_merge(struct txn *t, uint64_t a, uint64_t alen, uint64_t b, uint64_t blen);
/* A merged extent never crosses a logical multiple of this: the longest
 * extent a sequential write makes. */
#define DATA_MERGE_GRID (8ull << 20)
/*
 * May part of the extent at logical be written again in place (a
 * preallocated range filled in)?  Not on raid5/6, whose rows are
 * written whole, once (fs/store/parity.c), nor in a block group being
 * relocated to or from them: the caller copies on write.
 */
bool data_overwrite_ok(struct txn *t, uint64_t logical);
/*
 * May the whole data extent [logical, +len) be written again in place?
 * When the running transaction allocated it, one file-extent item holds
 * its only reference and only ever one did (extent_ref_sole_new), and
 * data_overwrite_ok: no commit and no other file
 * points at those blocks, so a crash before the next commit finds
 * nothing there it relies on.  The caller (fs/items/file.c) also rules
 * out what only it knows: a record of the file in this transaction's
 * fsync log, which a crash would replay with the old checksums.
 */
bool data_rewrite_ok(struct txn *t, uint64_t logical, uint64_t len);
/*
 * Write [logical, +len) again inside the extent [ext, +ext_len) that
 * data_rewrite_ok said yes for, the whole of it or a part: the bytes on
 * every mirror, and the checksums of those sectors replaced (a part's in
 * the items that hold them, in place: their keys and sizes stay, so the
 * extent's other sectors keep theirs).  -EINVAL when the range is not
 * inside the extent, -EUCLEAN when a sector of it has no checksum item.
 * Counted in glassctl stats' data_rewrites.
 */
int data_rewrite(struct txn *t, uint64_t ext, uint64_t ext_len, uint64_t logical,
		 const void *buf, uint64_t len);

/*
 * Read and verify.  A block whose checksum does not match on any mirror
 * gives -EIO and one log line naming device, logical address, expected and
 * found checksums; the bad bytes are never returned (buf is zeroed).  Any
 * range: whole sectors are read and verified in buf itself, without an
 * allocation or a second copy; a partial first or last sector is read
 * whole beside it and only its bytes in the range copied.
 */
int data_read(struct core *c, uint64_t logical, void *buf, uint64_t len);
/*
 * data_read with the checksums of the range's sectors already loaded
 * (data_load_csums over the whole sectors from k->start, k->n of them,
 * covering the range): a read the zero-copy way collected and could not
 * serve (fs/trees/data_span.c) does not look them up again.
 */
struct data_csums {
	uint64_t start;
	uint32_t n;
	const uint32_t *exp;
	const uint8_t *have;
};
int data_read_csums(struct core *c, uint64_t logical, void *buf, uint64_t len,
		    const struct data_csums *k);

/*
 * Add delta to the reference count of the extent that starts at logical
 * (len is its full length).  At 0 the extent and its checksums are freed;
 * the space is reused only after the commit that stops referencing it.
 */
int data_ref(struct txn *t, uint64_t logical, uint64_t len, int64_t delta);

/* data.c */
int data_csum_delete(struct txn *t, uint64_t logical, uint64_t len);
/* Expected checksums of sectors [start, start + n*4K): have[i] = 1 and
 * exp[i] set where a checksum item covers sector i. */
int data_load_csums(struct core *c, uint64_t start, uint32_t n, uint32_t *exp, uint8_t *have);

#endif
