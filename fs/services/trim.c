// SPDX-License-Identifier: MIT
/*
 * trim.c — batch trim (glassctl trim, FITRIM; trim.h): every free range at
 * once, on request.  The discards of freed space as it is freed (the queue
 * and the commit's sync discards) are discard.c's.
 */
#include "fs/core/core_types.h"
#include "fs/store/alloc.h"
#include "fs/store/chunk.h"
#include "fs/store/dev.h"
#include "fs/store/discard.h"
#include "fs/services/trim.h"

#include <errno.h>
#include <stdlib.h>

int trim_batch(struct core *c, uint64_t minlen, uint64_t *trimmed)
{
	uint64_t from = 0, l, len, done = 0;
	uint64_t (*gaps)[2];
	int ret = 0;

	if (c->readonly || c->aborted)
		return -EROFS;
	if (minlen < CORE_SECTORSIZE)
		minlen = CORE_SECTORSIZE;
	/* 1. free space inside block groups: taken from the allocator while
	 * it is discarded, so nothing is written there meanwhile */
	while (alloc_trim_take(c, from, 64ull << 20, &l, &len)) {
		if (len >= minlen) {
			/* device bytes: every copy; raid5/6 the whole rows
			 * inside the range on every stripe (discard.c) */
			if (discard_issue_bytes(c, l, len, &done) == -EOPNOTSUPP) {
				alloc_release(c, l, len);
				ret = -EOPNOTSUPP;
				break;
			}
		}
		alloc_release(c, l, len);
		from = l + len;
	}
	/* 2. device space in no chunk: no chunk is created meanwhile */
	if (ret == -EOPNOTSUPP) {
		core_log(c, "trim: a device does not support discard (nothing more trimmed)");
		if (trimmed)
			*trimmed = done;
		return ret;
	}
	gaps = calloc(256, sizeof(*gaps));
	if (!gaps)
		return -ENOMEM;
	glock_lock(&c->chunk_alloc_lock, GLOCK_WRITE);
	for (int i = 0; i < c->ndevs && !ret; i++) {
		int n = chunk_unallocated_ranges(c, c->devs[i], gaps, 256);
		if (n < 0) {
			ret = n;
			break;
		}
		for (int g = 0; g < n; g++) {
			if (gaps[g][1] < minlen)
				continue;
			int r = dev_discard(c->devs[i], gaps[g][0], gaps[g][1]);
			if (r == -EOPNOTSUPP) {
				ret = r;
				break;
			}
			if (!r)
				done += gaps[g][1];
		}
	}
	glock_unlock(&c->chunk_alloc_lock, GLOCK_WRITE);
	free(gaps);
	if (ret == -EOPNOTSUPP)
		core_log(c, "trim: a device does not support discard (nothing more trimmed)");
	if (trimmed)
		*trimmed = done;
	return ret;
}
