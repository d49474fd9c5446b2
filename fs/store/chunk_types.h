/* SPDX-License-Identifier: MIT */
/*
 * chunk_types.h — the chunk map's in-memory types (chunk.h has the
 * functions); fs/core/core_types.h embeds struct chunk_map in struct core.
 */
#ifndef GLASSFS_CHUNK_TYPES_H
#define GLASSFS_CHUNK_TYPES_H

#include <stdint.h>
#include "fs/base/lock.h"
#include "fs/format/format.h"

struct dev;

struct chunk_stripe {
	uint64_t devid;
	uint64_t physical;
	struct dev *dev;	/* NULL: device missing (degraded open) */
	uint8_t uuid[16];	/* device uuid, as in the chunk item */
};

/*
 * A chunk.  Relocation (fs/services/volume_reloc.c, for balance and device
 * removal) moves a chunk to new stripes without changing its logical
 * range, so no tree changes: while the new stripes are filled they sit
 * in new_stripes (writes go to both sets, reads only to stripes); the
 * switch makes them the stripes and keeps the old ones in
 * retired_stripes, still counted as used device space, until the commit
 * that records the switch is durable (chunk_reloc_done).  All under the
 * chunk map's lock.
 */
struct chunk {
	uint64_t logical, length, type;
	int num_stripes;
	struct chunk_stripe stripes[CHUNK_MAX_STRIPES];
	int num_new;		/* relocation in progress: stripes being filled */
	uint64_t new_type;	/* type | profile they make up */
	struct chunk_stripe new_stripes[CHUNK_MAX_STRIPES];
	int num_retired;	/* stripes switched away from, not yet committed */
	uint64_t retired_type;	/* type | profile they made up */
	struct chunk_stripe retired_stripes[CHUNK_MAX_STRIPES];
};

struct chunk_map {
	struct glock lock;	/* GLOCK_CLASS_CHUNK, rwlock: guards v/n */
	struct chunk **v;	/* sorted by logical, never overlapping */
	int n, cap;
};

struct chunk_copy {
	struct dev *dev;
	uint64_t physical;
};

/* A chunk's layout, copied out of the map (chunk_map_geometry). */
struct chunk_geom {
	uint64_t logical, length, type;
	int num_stripes;
	int ndata, nparity;	/* raid5/6: data and parity columns of a row */
	struct chunk_copy stripes[CHUNK_MAX_STRIPES];	/* dev NULL: missing */
};

#endif
