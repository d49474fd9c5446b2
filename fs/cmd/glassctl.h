/* SPDX-License-Identifier: MIT */
/*
 * glassctl.h — what glassctl's files share: glassctl.c (main, stats,
 * commit, scrub, resync, trim), glassctl_device.c (device, balance),
 * glassctl_show.c (filesystem show|usage, device list|usage|stats),
 * glassctl_subvol.c (subvolume).
 */
#ifndef GLASSFS_GLASSCTL_H
#define GLASSFS_GLASSCTL_H

#include <stdbool.h>
#include <stdio.h>

/* glassctl.c: open the directory at path (a mount point, a subvolume)
 * for ioctls; -1 with the reason on stderr. */
int glassctl_open_dir(const char *path);
/* glassctl.c: what to add to an ioctl's error e: a guess that the path
 * is not a glassfs mount, for the errnos another filesystem gives. */
const char *glassctl_hint(int e);
/* glassctl.c: the flags of a command that can wait with a progress line
 * (scrub, resync, balance): -B (wait; only where b_ok), -q (quiet),
 * --json.  false: a is none of them. */
bool glassctl_wait_flags(const char *a, bool b_ok, bool *wait, bool *quiet, bool *json);

/* Each subcommand: argv[0] is its first word; returns the exit status. */
int glassctl_subvolume(int argc, char **argv);		/* glassctl_subvol.c */
int glassctl_device(int argc, char **argv);		/* glassctl_device.c */
int glassctl_balance(int argc, char **argv);		/* glassctl_device.c */
int glassctl_filesystem(int argc, char **argv);		/* glassctl_show.c */
/* device list|usage|stats; -1 for the other device subcommands. */
int glassctl_device_info(int argc, char **argv);	/* glassctl_show.c */

/* Usage lines; first: the prefix of the first ("usage: " or indent). */
void glassctl_device_usage(FILE *f, const char *first);	/* glassctl_device.c */
void glassctl_show_usage(FILE *f);			/* glassctl_show.c */

#endif
