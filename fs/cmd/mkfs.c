// SPDX-License-Identifier: MIT
/*
 * mkfs.glassfs — format image files or block devices as one glassfs volume.
 *
 *   mkfs.glassfs [-L label] [-n nodesize] [-s SIZE] [-d PROFILE] [-m PROFILE]
 *                [--rotational DEV=0|1]... [-f] DEV...
 *
 * -s SIZE creates missing image files of SIZE bytes (suffixes K, M, G, T);
 * an existing file is resized only with -f.  An existing glassfs signature
 * or any libblkid finds (filesystems, RAID members, LUKS, partition tables)
 * is refused without -f and wiped with it; a device in use (a mounted
 * volume's) is refused always.
 */
#include "fs/ops/mount.h"
#include "fs/core/core.h"
#include "fs/store/dev.h"
#include "fs/cmd/mkfs_wipe.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void usage(FILE *f)
{
	fprintf(f, "usage: mkfs.glassfs [-L label] [-n nodesize] [-s SIZE] [-d PROFILE] [-m PROFILE]\n"
		   "                    [--rotational DEV=0|1]... [-f] DEV...\n"
		   "  -L label     volume label (up to 255 bytes)\n"
		   "  -d PROFILE   data profile: single (default), dup, raid1 (>= 2 devices),\n"
		   "               raid1c3 (>= 3), raid1c4 (>= 4), raid10 (>= 4 devices),\n"
		   "               raid5 (>= 3), raid6 (>= 4)\n"
		   "  -m PROFILE   metadata (and system) profile: single, dup, raid1, raid1c3,\n"
		   "               raid1c4, raid10, raid5 or raid6 (nodes in whole rows of their own)\n"
		   "  --rotational DEV=0|1  record DEV as rotational (1) or not (0) instead of\n"
		   "               asking the device (image files: metadata goes to 0 first)\n"
		   "  -n nodesize  B-tree node size: 4096..65536, power of two (default 16384)\n"
		   "  -s SIZE      create missing image files with SIZE bytes (K/M/G/T suffixes)\n"
		   "  -f           overwrite an existing filesystem signature / resize images\n"
		   "               (a device a mount or fsck holds is refused all the same)\n");
}

static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -1;
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	case 't': case 'T': v <<= 40; end++; break;
	default: break;
	}
	if (*end == 'i' && end[1] == 'B')
		end += 2;
	else if (*end == 'B')
		end++;
	if (*end)
		return -1;
	*out = v;
	return 0;
}

/* Any signature libblkid knows (vfat, LUKS, md, a partition table...)
 * refuses the format without -f; glassfs's own and the few the engine
 * names itself are refused by mount_format as well, for glassctl device
 * add, which does not link libblkid.  A device that cannot be probed is
 * left to the format's own errors. */
static int refuse_signature(const char *path)
{
	char type[64], off[32];

	if (mkfs_find_signature(path, type, sizeof(type), off, sizeof(off)) <= 0)
		return 0;
	fprintf(stderr, "mkfs.glassfs: %s already contains %s %s signature (at offset %s); "
		"use -f to overwrite it\n", path, strchr("aeiox", type[0]) ? "an" : "a", type, off);
	return 1;
}

static int make_image(const char *path, uint64_t size, int force)
{
	struct stat st;
	int fd;

	if (stat(path, &st) == 0) {
		if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size == size)
			return 0;	/* block devices keep their size */
		if (st.st_size != 0 && !force) {
			fprintf(stderr, "mkfs.glassfs: %s exists with %lld bytes; use -f to resize it to %llu\n",
				path, (long long)st.st_size, (unsigned long long)size);
			return -1;
		}
	}
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		fprintf(stderr, "mkfs.glassfs: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (ftruncate(fd, (off_t)size) < 0) {
		fprintf(stderr, "mkfs.glassfs: %s: cannot size to %llu: %s\n", path,
			(unsigned long long)size, strerror(errno));
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/*
 * A device that a mount (or fsck) holds is refused, -f or not: resizing
 * or formatting it under the mount would destroy both.  mount_format
 * claims the devices for the format itself (dev.h); this looks first,
 * before make_image resizes anything.
 */
static bool in_use(const char *path)
{
	struct dev *d;
	char who[512];
	int ret = dev_open(path, 0, &d);

	if (ret == 0) {
		dev_close(d);
		return false;
	}
	if (ret != -EBUSY)
		return false;	/* missing, not a device: said below */
	dev_holder(path, who, sizeof(who));
	fprintf(stderr, "mkfs.glassfs: %s is in use by %s; not formatted\n", path, who);
	return true;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "--version")) {
		printf("mkfs.glassfs %s\n", GLASSFS_VERSION);
		return 0;
	}
	struct format_opts o = { .nodesize = CORE_DEFAULT_NODESIZE };
	uint64_t size = 0;
	int opt, ret;
	static const struct option longopts[] = {
		{ "rotational", required_argument, NULL, 'R' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *rot_dev[64];
	int rot_val[64], nrot = 0;

	while ((opt = getopt_long(argc, argv, "L:n:s:d:m:fh", longopts, NULL)) != -1) {
		switch (opt) {
		case 'd':
		case 'm': {
			uint64_t p;
			if (core_profile_parse(optarg, &p)) {
				fprintf(stderr, "mkfs.glassfs: unknown %s profile '%s' (single, dup, raid1, raid1c3, raid1c4, raid10, raid5, raid6)\n",
					opt == 'd' ? "data" : "metadata", optarg);
				return 1;
			}
			if (opt == 'd')
				o.data_profile = p;
			else
				o.meta_profile = p;
			break;
		}
		case 'R': {
			char *eq = strrchr(optarg, '=');
			if (!eq || eq == optarg || (strcmp(eq, "=0") && strcmp(eq, "=1")) || nrot == 64) {
				fprintf(stderr, "mkfs.glassfs: --rotational wants DEV=0 or DEV=1, not '%s'\n",
					optarg);
				return 1;
			}
			*eq = 0;
			rot_dev[nrot] = optarg;
			rot_val[nrot++] = eq[1] - '0';
			break;
		}
		case 'L':
			o.label = optarg;
			break;
		case 'n': {
			uint64_t v;
			if (parse_size(optarg, &v) || v > 65536) {
				fprintf(stderr, "mkfs.glassfs: bad nodesize '%s'\n", optarg);
				return 1;
			}
			o.nodesize = (uint32_t)v;
			break;
		}
		case 's':
			if (parse_size(optarg, &size) || size == 0) {
				fprintf(stderr, "mkfs.glassfs: bad size '%s'\n", optarg);
				return 1;
			}
			break;
		case 'f':
			o.force = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 1;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "mkfs.glassfs: no device given\n");
		usage(stderr);
		return 1;
	}
	for (int k = 0; k < 2; k++) {
		uint64_t p = k ? o.meta_profile : o.data_profile;
		int need = (p & (CORE_PROFILE_RAID10 | CORE_PROFILE_RAID6 | CORE_PROFILE_RAID1C4)) ? 4 :
			   (p & (CORE_PROFILE_RAID5 | CORE_PROFILE_RAID1C3)) ? 3 :
			   (p & CORE_PROFILE_RAID1) ? 2 : 1;
		if (argc - optind < need) {
			fprintf(stderr, "mkfs.glassfs: the %s profile needs at least %d devices, %d given\n",
				core_profile_name(p), need, argc - optind);
			return 1;
		}
	}
	for (int i = optind; i < argc; i++) {
		if (in_use(argv[i]))
			return 1;
		if (size && make_image(argv[i], size, o.force))
			return 1;
		if (access(argv[i], F_OK) < 0) {
			fprintf(stderr, "mkfs.glassfs: %s: %s (use -s SIZE to create an image file)\n",
				argv[i], strerror(errno));
			return 1;
		}
		if (!o.force && refuse_signature(argv[i]))
			return 1;
	}
	int8_t rot[64];
	for (int i = 0; i < argc - optind && i < 64; i++)
		rot[i] = -1;
	for (int r = 0; r < nrot; r++) {
		int found = 0;
		for (int i = optind; i < argc && i - optind < 64; i++) {
			if (strcmp(argv[i], rot_dev[r]) == 0) {
				rot[i - optind] = (int8_t)rot_val[r];
				found = 1;
			}
		}
		if (!found) {
			fprintf(stderr, "mkfs.glassfs: --rotational %s: not one of the devices given\n",
				rot_dev[r]);
			return 1;
		}
	}
	o.rotational = rot;
	ret = mount_format((const char *const *)&argv[optind], argc - optind, &o);
	if (ret) {
		if (!core_failure_reported())
			fprintf(stderr, "mkfs.glassfs: formatting failed: %s\n", strerror(-ret));
		return 1;
	}
	for (int i = optind; i < argc; i++) {	/* what the format left of others */
		ret = mkfs_wipe_signatures(argv[i]);
		if (ret < 0)
			fprintf(stderr, "mkfs.glassfs: %s: wiping other signatures failed: %s\n",
				argv[i], strerror(-ret));
	}

	/* open it back read-only: proves the result and gives the fsid */
	struct core_opts co;
	struct core *c;
	core_opts_default(&co);
	co.readonly = true;
	ret = mount_open((const char *const *)&argv[optind], argc - optind, &co, &c);
	if (ret) {
		fprintf(stderr, "mkfs.glassfs: the new volume does not open: %s\n", strerror(-ret));
		return 1;
	}
	const uint8_t *id = core_fsid(c);
	struct core_space sp;
	mount_space(c, &sp);
	printf("glassfs volume created\n  label:    %s\n  uuid:     ", o.label ? o.label : "(none)");
	for (int i = 0; i < 16; i++)
		printf("%02x%s", id[i], (i == 3 || i == 5 || i == 7 || i == 9) ? "-" : "");
	printf("\n  data:     %s\n  metadata: %s", core_profile_name(o.data_profile),
	       core_profile_name(o.meta_profile));
	printf("\n  nodesize: %u\n  devices:  %d\n  size:     %llu bytes (%llu MiB free for data)\n",
	       core_nodesize(c), argc - optind, (unsigned long long)sp.total_bytes,
	       (unsigned long long)(sp.avail_bytes >> 20));
	mount_close(c);
	return 0;
}
