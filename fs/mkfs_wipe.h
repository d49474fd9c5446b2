/* SPDX-License-Identifier: MIT */
/* mkfs_wipe.h — mkfs.glassfs's wipe of other signatures (libblkid). */
#ifndef GLASSFS_MKFS_WIPE_H
#define GLASSFS_MKFS_WIPE_H

/*
 * Erase every filesystem, RAID or partition-table signature libblkid finds
 * on path, printing one line per signature wiped.  Run after the format:
 * glassfs has no libblkid prober, so what is found is what the format left
 * of an earlier occupant (ext4's magic at 0x438 lies in the first 64 KiB,
 * which glassfs does not write).  Returns the number wiped, or -errno.
 */
int mkfs_wipe_signatures(const char *path);

#endif
