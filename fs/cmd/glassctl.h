/* SPDX-License-Identifier: MIT */
/*
 * glassctl.h — what glassctl's files share: glassctl.c (main, stats,
 * commit, scrub, resync, trim), glassctl_device.c (device, balance),
 * glassctl_show.c (filesystem show|usage, device list|usage|stats),
 * glassctl_subvol.c (subvolume).
 */
#ifndef GLASSFS_GLASSCTL_H
#define GLASSFS_GLASSCTL_H

#include <stdio.h>

/* glassctl.c: open the directory at path (a mount point, a subvolume)
 * for ioctls; -1 with the reason on stderr. */
int glassctl_open_dir(const char *path);

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
