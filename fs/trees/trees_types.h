/* SPDX-License-Identifier: MIT */
/*
 * trees_types.h — the trees layer's state in struct core: the delayed
 * reference table (extent.c).  Types only.
 */
#ifndef GLASSFS_TREES_TYPES_H
#define GLASSFS_TREES_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "fs/base/htable.h"

/* One delayed reference change (extent.c). */
struct dref {
	uint64_t bytenr;
	uint64_t len;		/* data: extent length; metadata: nodesize */
	uint64_t owner;		/* tree id of a node; 0 for data */
	int level;		/* node level; -1 for data */
	int64_t delta;
	bool is_data;
	bool is_new;		/* data: allocated in this transaction */
};

/* The queue: one entry per (bytenr, level, is_data), keyed by bytenr in
 * fs/base/htable (entries: extent.c's struct dref_ent); t.b NULL until the
 * first ref of a transaction. */
struct dref_table {
	struct htable t;
};

#endif
