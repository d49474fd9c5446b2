// SPDX-License-Identifier: MIT
/* args.c — see args.h. */
#include "tools/lib/args.h"
#include "tools/lib/glassmount.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

long args__num(const char *tool, const char *s, const char *what, long lo,
	       long hi)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || end == s || v < lo || v > hi) {
		fprintf(stderr, "%s: invalid %s: %s\n", tool, what, s);
		exit(2);
	}
	return v;
}

long args__pid(const char *tool, const char *s)
{
	char real[PATH_MAX];
	long pid;
	int others;

	if (*s >= '0' && *s <= '9')
		return args__num(tool, s, "PID", 1, INT_MAX);
	if (!realpath(s, real)) {
		fprintf(stderr, "%s: -p %s: not a PID, and not a mount point (%s)\n",
			tool, s, strerror(errno));
		exit(2);
	}
	if (glassmount__find(real, NULL, 0, NULL, 0)) {
		fprintf(stderr, "%s: -p %s: not a PID, and no glassfs is mounted there\n",
			tool, s);
		exit(2);
	}
	pid = glassmount__daemon(real, &others, NULL, 0);
	if (pid <= 0 || others) {
		fprintf(stderr, "%s: -p %s: %s; give its PID\n", tool, s, pid ? "more than one glassfs process names this mount point" :
			"no glassfs process names this mount point on its command line");
		exit(2);
	}
	return pid;
}

void args__unexpected(struct argp_state *state, const char *arg)
{
	if (*arg >= '0' && *arg <= '9')
		argp_error(state, "unexpected argument '%s': -p takes one PID (with several "
			   "glassfs daemons, `-p $(pidof glassfs)` gives several: name the "
			   "mount point instead, -p /mnt/g)", arg);
	argp_error(state, "unexpected argument '%s'", arg);
}
