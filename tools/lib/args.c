// SPDX-License-Identifier: MIT
/* args.c — see args.h. */
#include "tools/lib/args.h"

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

/* The glassfs mount whose mount point is real, from /proc/mounts. */
static int is_glassfs_mount(const char *real)
{
	FILE *f = fopen("/proc/mounts", "r");
	char line[8192], dev[1024], m[4096], fs[256];
	int found = 0;

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f))
		found = sscanf(line, "%1023s %4095s %255s", dev, m, fs) == 3 &&
			strstr(fs, "glassfs") && !strcmp(m, real);
	fclose(f);
	return found;
}

/* The glassfs process one of whose arguments resolves (from its working
 * directory) to real; 0 when none, -1 when more than one. */
static long daemon_of(const char *real)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	long pid = 0;

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		char path[300], args[8192], *base, *arg;
		ssize_t n;
		int fd, match = 0;

		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/cmdline", de->d_name);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
			continue;
		n = read(fd, args, sizeof(args) - 1);
		close(fd);
		if (n <= 0)
			continue;
		args[n] = 0;
		base = strrchr(args, '/');
		if (strcmp(base ? base + 1 : args, "glassfs"))
			continue;
		for (arg = args + strlen(args) + 1; arg < args + n; arg += strlen(arg) + 1) {
			char full[4400], r[PATH_MAX];

			if (*arg == '/')
				snprintf(full, sizeof(full), "%s", arg);
			else
				snprintf(full, sizeof(full), "/proc/%s/cwd/%s", de->d_name, arg);
			if (realpath(full, r) && !strcmp(r, real))
				match = 1;
		}
		if (match) {
			pid = pid ? -1 : atol(de->d_name);
			if (pid < 0)
				break;
		}
	}
	closedir(d);
	return pid;
}

long args__pid(const char *tool, const char *s)
{
	char real[PATH_MAX];
	long pid;

	if (*s >= '0' && *s <= '9')
		return args__num(tool, s, "PID", 1, INT_MAX);
	if (!realpath(s, real)) {
		fprintf(stderr, "%s: -p %s: not a PID, and not a mount point (%s)\n",
			tool, s, strerror(errno));
		exit(2);
	}
	if (!is_glassfs_mount(real)) {
		fprintf(stderr, "%s: -p %s: not a PID, and no glassfs is mounted there\n",
			tool, s);
		exit(2);
	}
	pid = daemon_of(real);
	if (pid <= 0) {
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
