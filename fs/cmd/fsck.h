/* SPDX-License-Identifier: MIT */
/*
 * fsck.h — the seam between fsck.glassfs's core checks (fs/cmd/fsck.c:
 * checksums, tree invariants, extent reference counts, free space vs
 * allocations) and the items layer's checks (fs/cmd/fsck_items.c: directory
 * index vs entries, link counts, inode sizes vs extents).
 */
#ifndef GLASSFS_FSCK_H
#define GLASSFS_FSCK_H

#include <stdint.h>
#include "fs/btree/meta.h"

struct fsck;

/* Report one error (printed with its location, counted). */
void fsck_error(struct fsck *f, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* The items layer found one reference to the data extent that starts at
 * logical (extent_len: the whole extent's length); fsck.c compares the
 * totals with the extent tree's reference counts. */
void fsck_data_ref(struct fsck *f, uint64_t logical, uint64_t extent_len);

/* Implemented by the items layer: check one fs tree.  0, or -errno for an
 * operational error (not for inconsistencies, which go to fsck_error). */
int fsck_items_check(struct fsck *f, struct root *fsroot);

#endif
