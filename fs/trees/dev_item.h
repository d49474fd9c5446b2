/* SPDX-License-Identifier: MIT */
/*
 * dev_item.h — a device's item in the chunk tree (KEY_DEV_ITEM, format.h),
 * written when the volume is formatted (mount_format) and when a device
 * joins it (volume_dev_add).
 */
#ifndef GLASSFS_DEV_ITEM_H
#define GLASSFS_DEV_ITEM_H

struct dev;
struct txn;

/* Insert d's item (its id, size, uuid and rotational flag, the volume's
 * fsid, generation: t's transaction).  0 or -errno (btree_insert's). */
int dev_item_insert(struct txn *t, const struct dev *d);

#endif
