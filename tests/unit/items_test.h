/* SPDX-License-Identifier: MIT */
/*
 * items_test.h — the fixture shared by the items-layer unit tests: a
 * formatted image opened by the core and mounted through fsops (no FUSE),
 * with periodic commits off so the test decides when to commit.
 */
#ifndef ITEMS_TEST_H
#define ITEMS_TEST_H

#include "fs/core.h"
#include "fs/fsops.h"

static struct core *core;
static struct fsctx *fs;

static int items_mount(const char *img)
{
	const char *devs[] = { img };
	struct core_opts o;

	core_opts_default(&o);
	o.commit_interval_s = 3600;
	int ret = core_open(devs, 1, &o, &core);
	if (ret == 0)
		ret = fsops_mount(core, &o, &fs);
	return ret;
}

static int items_unmount(void)
{
	fsops_unmount(fs);
	fs = NULL;
	int ret = core_close(core);
	core = NULL;
	return ret;
}

#endif
