// SPDX-License-Identifier: MIT
/*
 * mkfs_wipe.c — after mkfs.glassfs has written a volume, erase the other
 * signatures libblkid still finds on each device, as mkfs.btrfs and
 * mkfs.xfs do, so blkid and udev see only glassfs (wipefs -a's loop: probe,
 * wipe, probe again).  Linked into mkfs.glassfs only: the engine does not
 * need libblkid.
 */
#include "fs/mkfs_wipe.h"

#include <blkid/blkid.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int mkfs_wipe_signatures(const char *path)
{
	int fd = open(path, O_RDWR | O_CLOEXEC), n = 0, ret = 0;
	blkid_probe pr;

	if (fd < 0)
		return -errno;
	pr = blkid_new_probe();
	if (!pr || blkid_probe_set_device(pr, fd, 0, 0)) {
		ret = -ENOMEM;
		goto out;
	}
	blkid_probe_enable_superblocks(pr, 1);
	blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_MAGIC | BLKID_SUBLKS_TYPE |
					  BLKID_SUBLKS_BADCSUM);
	blkid_probe_enable_partitions(pr, 1);
	blkid_probe_set_partitions_flags(pr, BLKID_PARTS_MAGIC);
	while (blkid_do_probe(pr) == 0) {
		const char *type = NULL, *off = NULL;

		if (blkid_probe_lookup_value(pr, "TYPE", &type, NULL))
			blkid_probe_lookup_value(pr, "PTTYPE", &type, NULL);
		if (blkid_probe_lookup_value(pr, "SBMAGIC_OFFSET", &off, NULL))
			blkid_probe_lookup_value(pr, "PTMAGIC_OFFSET", &off, NULL);
		if (blkid_do_wipe(pr, 0)) {
			ret = errno ? -errno : -EIO;
			break;
		}
		printf("mkfs.glassfs: %s: wiped the %s signature at offset %s\n", path,
		       type ? type : "unknown", off ? off : "?");
		n++;
	}
	if (!ret && n && fsync(fd))
		ret = -errno;
out:
	if (pr)
		blkid_free_probe(pr);
	close(fd);
	return ret ? ret : n;
}
