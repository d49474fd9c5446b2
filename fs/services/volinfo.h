/* SPDX-License-Identifier: MIT */
/*
 * volinfo.h — the devices, space and error counters of a mounted volume
 * in one answer (GLASSFS_IOC_FS_INFO, fs/format/ioctl.h); the ioctl is
 * decoded in fs/fuse/fuse_ops.c.  Takes the chunk-tree, chunk-map and
 * allocator locks in turn, never two at once.
 */
#ifndef GLASSFS_VOLINFO_H
#define GLASSFS_VOLINFO_H

#include <stdbool.h>

struct core;
struct glassfs_ioc_fs_info;

/* Fill o; reset: zero every device's error counters as they are read.
 * 0 or -errno (reading the device items failed). */
int volinfo_get(struct core *c, struct glassfs_ioc_fs_info *o, bool reset);

#endif
