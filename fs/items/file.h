/* SPDX-License-Identifier: MIT */
/*
 * file.h — file data: EXTENT_DATA items over copy-on-write data extents.
 *
 * A write never overwrites a data block: it allocates a new extent for the
 * block-aligned range it covers (reading the partial head and tail blocks
 * first), then drops the overlapped parts of the old file-extent items,
 * splitting them as Btrfs does (each item holds one data_ref).  Files
 * whose size stays within fs->inline_max keep their bytes in one inline
 * item.  Holes are the absence of items.
 *
 * Callers hold the inode's lock (write for changes, read for reads) and
 * update times; these functions maintain size and nbytes in ip->item and
 * write it back.
 */
#ifndef GLASSFS_FILE_H
#define GLASSFS_FILE_H

#include <stdint.h>
#include <sys/types.h>
#include "fs/items/inode.h"

/* Bytes read (short at EOF), or -errno (-EIO on a checksum failure). */
ssize_t file_read(struct fsctx *fs, struct inode *ip, void *buf, size_t len, uint64_t off);
/*
 * file_read as a reply of spans (fs/trees/data_span.h, step 1): holes and
 * inline bytes are put in buf (len bytes) and listed as memory, the data
 * extents' bytes listed with their checksums loaded, unread.  Bytes as
 * file_read (short at EOF), or -errno.  A read the spans cannot hold
 * (more pieces or sectors than fit, raid5/6) is read into buf in the same
 * walk, and sp then says so (sp->copied: the reply is buf).
 */
struct data_spans;
ssize_t file_read_spans(struct fsctx *fs, struct inode *ip, void *buf, size_t len, uint64_t off,
			struct data_spans *sp);
/* Bytes written, or -errno (-ENOSPC, -EFBIG). */
ssize_t file_write(struct txn *t, struct fsctx *fs, struct inode *ip,
		   const void *buf, size_t len, uint64_t off);
/*
 * Set the size; down to a size inside a block, that block is copied with
 * its tail zeroed (a later extension reads zeros there), which needs a
 * new block: -ENOSPC then, with nothing changed (the copy is the first
 * step); -EFBIG past FILE_MAX_SIZE, nothing changed.  Any other error
 * after a change has aborted the transaction.
 */
/*
 * Around an fsync of ip (fs/ops, around log_fsync), each under the inode's
 * lock: while one runs, and for the rest of the transaction it ended in,
 * no extent of the file grows (merge_last) — a log record may hold its
 * item, and replay claims the length the record says.
 */
void file_fsync_begin(struct inode *ip);
void file_fsync_end(struct fsctx *fs, struct inode *ip);
int file_truncate(struct txn *t, struct fsctx *fs, struct inode *ip, uint64_t size);
/*
 * mode: 0 or FALLOC_FL_KEEP_SIZE (PREALLOC extents: a later write into
 * them is done in place and cannot fail with ENOSPC), PUNCH_HOLE|KEEP_SIZE,
 * ZERO_RANGE[|KEEP_SIZE], COLLAPSE_RANGE, INSERT_RANGE (block-aligned),
 * with the kernel's EINVAL/EOPNOTSUPP rules.
 */
int file_fallocate(struct txn *t, struct fsctx *fs, struct inode *ip, int mode,
		   uint64_t off, uint64_t len);
/* SEEK_DATA / SEEK_HOLE: the offset, or -ENXIO. */
int64_t file_seek(struct fsctx *fs, struct inode *ip, uint64_t off, int whence);

/* Symlink targets are stored as inline data of the link inode. */
int file_set_symlink(struct txn *t, struct fsctx *fs, struct inode *ip,
		     const char *target, size_t len);

#define FILE_MAX_SIZE (1ULL << 62)

#endif
