// SPDX-License-Identifier: MIT
/*
 * extmap — how one file lies on disk: its data extents in file order and
 * the disk gaps between them, read from the image's file-extent items
 * (no FUSE: FIEMAP does not pass through it).  A gap is an extent that
 * does not start at the disk byte after the one before it (file order):
 * a sequential read of the file seeks there.  datapath.bench and
 * docs/benchmarks.md use it to measure the allocation goal (issue 22).
 *
 * Usage: extmap [-v] IMAGE NAME   (NAME: a file in the root directory;
 * the volume is opened read-only, unmounted)
 * Output: one line, extents=N gaps=G backward=B bytes=X; before it with
 * -v one line per extent: file offset, length, disk address, and "gap"
 * where it does not follow the one before on disk.
 * Exit: 0, or 1 with the failing step and its errno on stderr.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "fs/core/core.h"
#include "fs/items/inode.h"
#include "fs/ops/fsops.h"
#include "fs/ops/mount.h"

int main(int argc, char **argv)
{
	struct core_opts o;
	struct core *c;
	struct fsctx *fs;
	struct stat st;
	struct path p;
	struct key k, ik;
	const char *devs[1];
	uint64_t n = 0, gaps = 0, back = 0, bytes = 0, prev_end = 0, prev_start = 0;
	int ret, verbose = argc > 1 && !strcmp(argv[1], "-v");

	argc -= verbose;
	argv += verbose;
	if (argc != 3) {
		fprintf(stderr, "usage: extmap [-v] IMAGE NAME\n");
		return 1;
	}
	devs[0] = argv[1];
	core_opts_default(&o);
	o.readonly = true;
	if ((ret = mount_open(devs, 1, &o, &c)) || (ret = fsops_mount(c, &o, &fs))) {
		fprintf(stderr, "extmap: open %s: %s\n", argv[1], strerror(-ret));
		return 1;
	}
	ret = fsops_lookup(fs, ROOT_DIR_INO, argv[2], &st);
	if (ret) {
		fprintf(stderr, "extmap: lookup %s: %s\n", argv[2], strerror(-ret));
		return 1;
	}
	k = mkkey(st.st_ino & ~fs->ino_base, KEY_EXTENT_DATA, 0);
	btree_path_init(&p);
	for (ret = fsctx_search_ge(fs, &k, &p); ret == 0; ret = btree_next(&p)) {
		uint32_t size;
		const struct file_extent *fe = btree_item_ptr(&p, p.slots[0], &size);

		btree_item_key(&p, p.slots[0], &ik);
		if (ik.objectid != k.objectid || ik.type != KEY_EXTENT_DATA)
			break;
		if (size < sizeof(*fe) || fe->type == FE_INLINE)
			continue;
		uint64_t start = fe->disk_logical + fe->offset;
		bool gap = n && start != prev_end;
		if (gap) {
			gaps++;
			back += start < prev_start;
		}
		if (verbose)
			printf("%llu +%llu @%llu%s\n", (unsigned long long)ik.offset,
			       (unsigned long long)fe->num_bytes, (unsigned long long)start,
			       gap ? " gap" : "");
		n++;
		bytes += fe->num_bytes;
		prev_start = start;
		prev_end = start + fe->num_bytes;
	}
	btree_path_release(&p);
	fsops_forget(fs, st.st_ino, 1);
	fsops_unmount(fs);
	mount_close(c);
	if (ret < 0) {
		fprintf(stderr, "extmap: walk: %s\n", strerror(-ret));
		return 1;
	}
	printf("extents=%llu gaps=%llu backward=%llu bytes=%llu\n", (unsigned long long)n,
	       (unsigned long long)gaps, (unsigned long long)back, (unsigned long long)bytes);
	return 0;
}
