// SPDX-License-Identifier: MIT
/*
 * mkfs_wipe.c — after mkfs.glassfs has written a volume, erase the other
 * signatures libblkid still finds on each device, as mkfs.btrfs and
 * mkfs.xfs do, so blkid and udev see only glassfs (wipefs -a's loop: probe,
 * wipe, probe again), and before the format find the signature that makes
 * mkfs refuse without -f.  Linked into mkfs.glassfs only: the engine does
 * not need libblkid.
 */
#include "fs/cmd/mkfs_wipe.h"

#include <blkid/blkid.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* A low-level probe of fd for every superblock and partition table, bad
 * checksums included (a damaged signature is still a claim on the disk). */
static blkid_probe new_probe(int fd)
{
	blkid_probe pr = blkid_new_probe();

	if (!pr)
		return NULL;
	if (blkid_probe_set_device(pr, fd, 0, 0)) {
		blkid_free_probe(pr);
		return NULL;
	}
	blkid_probe_enable_superblocks(pr, 1);
	blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_MAGIC | BLKID_SUBLKS_TYPE |
					  BLKID_SUBLKS_BADCSUM);
	blkid_probe_enable_partitions(pr, 1);
	blkid_probe_set_partitions_flags(pr, BLKID_PARTS_MAGIC);
	return pr;
}

/* What the last blkid_do_probe of pr found: its type and its magic's
 * offset, of a superblock or else a partition table ("unknown", "?" when
 * blkid does not say); the strings are pr's. */
static void found_what(blkid_probe pr, const char **type, const char **off)
{
	const char *t = NULL, *o = NULL;

	if (blkid_probe_lookup_value(pr, "TYPE", &t, NULL))
		blkid_probe_lookup_value(pr, "PTTYPE", &t, NULL);
	if (blkid_probe_lookup_value(pr, "SBMAGIC_OFFSET", &o, NULL))
		blkid_probe_lookup_value(pr, "PTMAGIC_OFFSET", &o, NULL);
	*type = t ? t : "unknown";
	*off = o ? o : "?";
}

int mkfs_find_signature(const char *path, char *type, size_t typesz, char *off, size_t offsz)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), found = 0;
	blkid_probe pr;

	if (fd < 0)
		return -errno;
	pr = new_probe(fd);
	if (!pr) {
		close(fd);
		return -ENOMEM;
	}
	if (blkid_do_probe(pr) == 0) {
		const char *t, *o;

		found_what(pr, &t, &o);
		snprintf(type, typesz, "%s", t);
		snprintf(off, offsz, "%s", o);
		found = 1;
	}
	blkid_free_probe(pr);
	close(fd);
	return found;
}

int mkfs_wipe_signatures(const char *path)
{
	int fd = open(path, O_RDWR | O_CLOEXEC), n = 0, ret = 0;
	blkid_probe pr;

	if (fd < 0)
		return -errno;
	pr = new_probe(fd);
	if (!pr) {
		ret = -ENOMEM;
		goto out;
	}
	while (blkid_do_probe(pr) == 0) {
		const char *type, *off;

		found_what(pr, &type, &off);
		if (blkid_do_wipe(pr, 0)) {
			ret = errno ? -errno : -EIO;
			break;
		}
		printf("mkfs.glassfs: %s: wiped the %s signature at offset %s\n", path, type, off);
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
