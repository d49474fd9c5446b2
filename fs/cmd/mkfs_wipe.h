/* SPDX-License-Identifier: MIT */
/* mkfs_wipe.h — mkfs.glassfs's wipe of other signatures (libblkid). */
#ifndef GLASSFS_MKFS_WIPE_H
#define GLASSFS_MKFS_WIPE_H

#include <stddef.h>

/*
 * Erase every filesystem, RAID or partition-table signature libblkid finds
 * on path, printing one line per signature wiped.  Run after the format:
 * glassfs has no libblkid prober, so what is found is what the format left
 * of an earlier occupant (ext4's magic at 0x438 lies in the first 64 KiB,
 * which glassfs does not write).  Returns the number wiped, or -errno.
 */
int mkfs_wipe_signatures(const char *path);

/*
 * The first filesystem, RAID, crypto or partition-table signature libblkid
 * finds on path: its type ("vfat", "crypto_LUKS", "linux_raid_member",
 * "dos", "gpt"...) into type, its offset into off.  Returns 1 when one is
 * found, 0 when none, or -errno.  mkfs.glassfs refuses to format over one
 * without -f, as mkfs.btrfs does: a signature it cannot name itself is
 * still somebody's data.
 */
int mkfs_find_signature(const char *path, char *type, size_t typesz, char *off, size_t offsz);

#endif
