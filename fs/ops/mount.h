/* SPDX-License-Identifier: MIT */
/*
 * mount.h — open, close and format a volume (fs/ops/mount.c): the one
 * place that calls every layer in turn.  The types these take (core_opts,
 * format_opts, core_space, core_stats) are the core's (core.h), so lower
 * layers and programs share them; the functions are declared here, in the
 * folder that defines them, because a header declares only what its own
 * folder or one below defines (tests/unit/layers.test).
 */
#ifndef GLASSFS_MOUNT_H
#define GLASSFS_MOUNT_H

#include "fs/core/core.h"

/* mkfs: format devs (already sized) as one empty volume.  0 or -errno. */
int mount_format(const char *const *devs, int ndevs, const struct format_opts *o);

/*
 * Open a volume: read and verify the superblock (falling back to a mirror
 * when the primary is corrupt), load the chunk map and tree roots, start
 * the periodic-commit thread unless read-only.  Logs the reason on failure
 * (core_failure_reported says whether it did).
 */
int mount_open(const char *const *devs, int ndevs, const struct core_opts *o,
	       struct core **out);
/* Final commit (if writable), stop threads, close devices.  First error. */
int mount_close(struct core *c);

/* statfs: truthful byte counts (struct core_space, core.h). */
void mount_space(struct core *c, struct core_space *s);
/* Counters for tests, benchmarks and `glassctl stats` (struct core_stats). */
void mount_stats(struct core *c, struct core_stats *s);

#endif
