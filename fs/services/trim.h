/* SPDX-License-Identifier: MIT */
/*
 * trim.h — batch trim: discard the free space of the whole volume at once.
 */
#ifndef GLASSFS_TRIM_H
#define GLASSFS_TRIM_H

#include <stdint.h>

struct core;

/*
 * Batch trim (glassctl trim, FITRIM): discard every free range of at
 * least minlen bytes, inside block groups (every copy) and in no chunk.
 * *trimmed gets the device bytes discarded.  -EOPNOTSUPP when a device
 * cannot discard; -EROFS on a read-only volume.
 */
int trim_batch(struct core *c, uint64_t minlen, uint64_t *trimmed);

#endif
