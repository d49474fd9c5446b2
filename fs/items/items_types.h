/* SPDX-License-Identifier: MIT */
/*
 * items_types.h — the items layer's state in struct core: the subvolume
 * table (subvol.c).  Types only (fs/core/core_types.h assembles them).
 */
#ifndef GLASSFS_ITEMS_TYPES_H
#define GLASSFS_ITEMS_TYPES_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include "fs/base/lock.h"
#include "fs/base/gthread.h"
#include "fs/btree/btree_types.h"

/*
 * Subvolume trees (ids >= FIRST_SUBVOL_OBJECTID; subvol.c), all loaded at
 * open.  Entries are never freed before close, so a struct root pointer
 * stays valid; a dropped subvolume's entry is marked gone.
 */
struct core_subvol {
	struct core_root cr;
	uint64_t flags;			/* ROOT_F_* (format.h) */
	uint64_t otime;
	struct btree_drop drop;		/* ROOT_F_DEAD: the cleaner's progress */
	bool item_dirty;		/* flags/progress changed: rewrite the item */
	bool gone;			/* dropped, root item deleted */
	bool linking;			/* new snapshot, name not linked yet: not the cleaner's */
};

struct core_subvols {
	struct glock lock;		/* GLOCK_CLASS_MISC: the table and flags */
	struct core_subvol **v;
	int n, cap;
	uint64_t next_id;
	/* the cleaner thread: frees deleted subvolumes in batches */
	struct gcond cond;
	struct gthread cleaner;		/* its stop: under lock, cond */
	bool busy;
	uint64_t dropped_batches;
};

#endif
