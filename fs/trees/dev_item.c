// SPDX-License-Identifier: MIT
/*
 * dev_item.c — see dev_item.h.
 */
#include "fs/trees/dev_item.h"
#include "fs/core/core_types.h"
#include "fs/store/dev.h"
#include "fs/btree/btree.h"

#include <string.h>

int dev_item_insert(struct txn *t, const struct dev *d)
{
	struct core *c = txn_core(t);
	struct key k = { DEV_ITEMS_OBJECTID, KEY_DEV_ITEM, d->devid };
	struct dev_item di;

	memset(&di, 0, sizeof(di));
	di.devid = d->devid;
	di.total_bytes = d->size;
	di.sector_size = di.io_align = di.io_width = CORE_SECTORSIZE;
	di.generation = txn_transid(t);
	di.rotational = d->rotational;
	memcpy(di.uuid, d->uuid, 16);
	memcpy(di.fsid, c->sb.fsid, 16);
	return btree_insert(t, core_tree(c, CT_CHUNK), &k, &di, sizeof(di));
}
