/* SPDX-License-Identifier: MIT */
/*
 * dev_claim.h — the exclusive claim on a device, for dev_open (dev.c).
 *
 * Every device of an open volume is held by one program at a time: one
 * mount, mkfs or fsck.  Two mounts of one image file would each commit
 * over the other's trees and lose its files without fsck noticing.
 *
 * The claim is an OFD lock (fcntl F_OFD_SETLK) on bytes 0 and 1 of the
 * device: a write lock read-write, a read lock read-only (read-only
 * openers share).  An OFD lock belongs to the open file description: it
 * lives as long as the device is open, whichever thread or forked child
 * uses it, is not dropped by closing another descriptor of the same file
 * (as a POSIX lock would be), and two opens in one process conflict.  A
 * block device is opened O_EXCL besides, the kernel's own claim, which
 * also keeps out kernel mounts and other tools.
 *
 * Byte 1 says "in use"; the holder lets go of it when it starts closing
 * (dev_closing(): the final commit after an unmount), so an opener that
 * finds only byte 0 held waits for the holder to finish, up to
 * DEV_CLAIM_CLOSING_WAIT_MS: `umount; mount` works although FUSE's umount
 * returns before the daemon's final commit.  One that finds byte 1 held
 * retries for DEV_CLAIM_GRACE_MS (the daemon notices an unmount a moment
 * after it happened), then gives up with -EBUSY.
 */
#ifndef GLASSFS_DEV_CLAIM_H
#define GLASSFS_DEV_CLAIM_H

#include <stdbool.h>

#define DEV_CLAIM_GRACE_MS		2000
#define DEV_CLAIM_CLOSING_WAIT_MS	120000

/*
 * open(path, oflags) and claim it (shared: a read lock).  blockdev adds
 * O_EXCL.  0 with *fd, -EBUSY when another program holds it, or -errno of
 * the open.
 */
int dev_claim_open(const char *path, int oflags, bool blockdev, bool shared, int *fd);
/* The holder starts closing: openers may wait for it (drops byte 1). */
void dev_claim_closing(int fd);
/* The device is no longer ours, though fd stays open (drops both). */
void dev_claim_drop(int fd);

#endif
