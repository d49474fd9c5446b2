/* SPDX-License-Identifier: MIT */
/*
 * copy_fence_types.h — the copy fence's in-memory type (copy_fence.h has
 * the functions and the design); fs/core/core_types.h embeds one per
 * volume.
 */
#ifndef GLASSFS_COPY_FENCE_TYPES_H
#define GLASSFS_COPY_FENCE_TYPES_H

#include <stdint.h>
#include "fs/base/lock.h"

struct copy_fence {
	struct glock lock;	/* a range's change, and every sleep here */
	struct gcond cond;	/* a segment ended, or a count drained */
	uint64_t start, end;	/* logical [start, end) being copied; end 0: none */
	uint32_t epoch;		/* the count a writer joins now (0 or 1) */
	uint32_t draining;	/* a copier waits for a count to reach 0 */
	uint64_t writers[2];	/* writes in flight, by the epoch they joined */
	uint64_t waits;		/* writes that waited for a segment */
	uint64_t passed;	/* writes that went on beside a segment */
};

#endif
