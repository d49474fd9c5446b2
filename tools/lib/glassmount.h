/* SPDX-License-Identifier: MIT */
/*
 * glassmount.h — the glassfs mounts of this machine and the daemons that
 * serve them.  /proc/mounts names a FUSE mount's type but not its daemon,
 * and shows only FUSE's generic options; the daemon is the glassfs process
 * one of whose arguments resolves (from its working directory) to the
 * mount point, and its own -o options are the ones that matter (locking=,
 * dev_latency=, ...).  Used by the tools' -p MOUNTPOINT and by glass-agent.
 */
#ifndef GLASS_GLASSMOUNT_H
#define GLASS_GLASSMOUNT_H

#include <stddef.h>

/* The glassfs mount at want (any path that resolves to its mount point),
 * or the first glassfs mount in /proc/mounts when want is NULL.  Its mount
 * point goes to mnt and its /proc/mounts options to mopts (each when not
 * NULL).  0, or -ENOENT when none. */
int glassmount__find(const char *want, char *mnt, size_t mntlen, char *mopts,
		     size_t moptlen);

/* The daemon serving the mount point mnt (a resolved path): its pid, 0
 * when no glassfs process names mnt.  *others counts further processes
 * that name it too (NULL: not asked).  opts (when not NULL) receives the
 * daemon's -o options joined by commas, "" when it has none. */
long glassmount__daemon(const char *mnt, int *others, char *opts, size_t optlen);

#endif
