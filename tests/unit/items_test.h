/* SPDX-License-Identifier: MIT */
/*
 * items_test.h — the fixture shared by the items-layer unit tests: a
 * formatted image opened by the core and mounted through fsops (no FUSE),
 * with periodic commits off so the test decides when to commit.
 */
#ifndef ITEMS_TEST_H
#define ITEMS_TEST_H

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <stdio.h>
#include <sys/wait.h>

#include "fs/ops/mount.h"
#include "fs/core/core.h"
#include "fs/ops/fsops.h"
#include "check.h"
#include "tmp_image.h"

static struct core *core;
static struct fsctx *fs;

static int items_mount(const char *img)
{
	const char *devs[] = { img };
	struct core_opts o;

	core_opts_default(&o);
	o.commit_interval_s = 3600;
	int ret = mount_open(devs, 1, &o, &core);
	if (ret == 0)
		ret = fsops_mount(core, &o, &fs);
	return ret;
}

static int items_unmount(void)
{
	fsops_unmount(fs);
	fs = NULL;
	int ret = mount_close(core);
	core = NULL;
	return ret;
}

/*
 * The start of every items-layer test: the seed (SEED=n replays one; it is
 * printed either way), a SIZE-byte image (t_image: its name into IMG, of
 * N bytes), formatted (NODESIZE=n from the environment picks the node
 * size) and mounted.  Returns the seed; -1 when the image cannot even be
 * made.  A failed format or mount is a FAIL, and leaves `fs` NULL.
 */
static long items_setup(char *img, size_t n, const char *label, off_t size)
{
	const char *e = getenv("SEED");
	unsigned seed = e ? (unsigned)strtoul(e, NULL, 0) : (unsigned)(time(NULL) ^ getpid());
	const char *devs[] = { img };
	struct format_opts fo = { .label = label, .nodesize = 0, .force = true };

	printf("seed: %u\n", seed);
	int ret = t_image(img, n, (uint64_t)size);
	if (ret) {
		printf("FAIL: setup: %s\n", strerror(-ret));
		return -1;
	}
	if (getenv("NODESIZE"))
		fo.nodesize = (uint32_t)atoi(getenv("NODESIZE"));
	CHECK("format", mount_format(devs, 1, &fo) == 0);
	CHECK("mount", items_mount(img) == 0);
	return seed;
}

/*
 * fsck.glassfs FLAGS of this build (OUT, GLASSFS_ROOT as core_test.h's
 * t_fsck finds it) on an unmounted image, run once: its exit code, -1
 * when it is not built.  With show, its first lines (but its own
 * chatter) go to stdout.  items_fsck_says: and *said, whether its output
 * holds a line matching each of the n grep patterns in says.
 */
static __attribute__((unused)) int items_fsck_says(const char *flags, const char *image,
						   bool show, const char *const *says, int n,
						   bool *said)
{
	const char *o = getenv("OUT") ? getenv("OUT") : "build";
	const char *root = getenv("GLASSFS_ROOT") ? getenv("GLASSFS_ROOT") : ".";
	char cmd[1400];

	if (o[0] == '/')
		snprintf(cmd, sizeof(cmd), "%s/bin/fsck.glassfs", o);
	else
		snprintf(cmd, sizeof(cmd), "%s/%s/bin/fsck.glassfs", root, o);
	if (access(cmd, X_OK) < 0)
		return -1;
	size_t l = strlen(cmd);
	snprintf(cmd + l, sizeof(cmd) - l, " %s %s > %s.fsck 2>&1", flags, image, image);
	int st = system(cmd);
	st = WIFEXITED(st) ? WEXITSTATUS(st) : 99;
	fflush(stdout);		/* its lines after ours */
	snprintf(cmd, sizeof(cmd), "grep -v '^fsck.glassfs: ' %s.fsck | head -8", image);
	if (show && system(cmd) < 0)
		st = 99;
	for (int i = 0; i < n; i++) {
		snprintf(cmd, sizeof(cmd), "grep -q \"%s\" %s.fsck", says[i], image);
		if (system(cmd) != 0) {
			printf("# fsck %s: no line matching: %s\n", flags, says[i]);
			*said = false;
		}
	}
	snprintf(cmd, sizeof(cmd), "%s.fsck", image);
	unlink(cmd);
	return st;
}

static __attribute__((unused)) int items_fsck(const char *flags, const char *image, bool show)
{
	return items_fsck_says(flags, image, show, NULL, 0, NULL);
}

/* fsck.glassfs -n on an unmounted image: clean, its first lines shown
 * when not */
static __attribute__((unused)) void fsck_clean(const char *what, const char *image)
{
	char label[96];
	int st = items_fsck("-n", image, true);

	snprintf(label, sizeof(label), "%s: fsck clean", what);
	if (st < 0) {
		printf("SKIP: %s: fsck.glassfs not built\n", label);
		return;
	}
	CHECK(label, st == 0);
}

#endif
