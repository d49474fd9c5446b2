// SPDX-License-Identifier: MIT
/* glassmount.c — see glassmount.h. */
#include "tools/lib/glassmount.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int glassmount__find(const char *want, char *mnt, size_t mntlen, char *mopts,
		     size_t moptlen)
{
	FILE *f = fopen("/proc/mounts", "r");
	char line[8192], rwant[PATH_MAX];
	int found = 0;

	if (!f)
		return -ENOENT;
	if (want && !realpath(want, rwant))
		snprintf(rwant, sizeof(rwant), "%s", want);
	while (!found && fgets(line, sizeof(line), f)) {
		char dev[1024], m[4096], fs[256], o[2048] = "";

		if (sscanf(line, "%1023s %4095s %255s %2047s", dev, m, fs, o) >= 3 &&
		    strstr(fs, "glassfs") && (!want || !strcmp(m, rwant))) {
			if (mnt)
				snprintf(mnt, mntlen, "%s", m);
			if (mopts)
				snprintf(mopts, moptlen, "%s", o);
			found = 1;
		}
	}
	fclose(f);
	return found ? 0 : -ENOENT;
}

/* Does one of pid's arguments (NUL-separated in args[0..n)) resolve to
 * mnt?  Its -o options are appended to o. */
static int names_mount(const char *pid, const char *args, ssize_t n, const char *mnt,
		       char *o, size_t olen)
{
	int match = 0;

	for (const char *arg = args + strlen(args) + 1; arg < args + n; arg += strlen(arg) + 1) {
		char full[4400], real[PATH_MAX];

		if (!strncmp(arg, "-o", 2)) {
			const char *v = arg[2] ? arg + 2 : (arg + 3 < args + n ? arg + 3 : "");
			size_t l = strlen(o);

			if (l + 1 < olen)
				snprintf(o + l, olen - l, "%s%s", l ? "," : "", v);
			if (!arg[2])
				arg += strlen(arg) + 1;
			continue;
		}
		if (*arg == '/')
			snprintf(full, sizeof(full), "%s", arg);
		else
			snprintf(full, sizeof(full), "/proc/%s/cwd/%s", pid, arg);
		if (realpath(full, real) && !strcmp(real, mnt))
			match = 1;
	}
	return match;
}

long glassmount__daemon(const char *mnt, int *others, char *opts, size_t optlen)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	long pid = 0;

	if (others)
		*others = 0;
	if (opts && optlen)
		*opts = 0;
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		char path[300], args[8192], o[2048] = "";
		const char *base;
		ssize_t n;
		int fd;

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
		if (strcmp(base ? base + 1 : args, "glassfs") ||
		    !names_mount(de->d_name, args, n, mnt, o, sizeof(o)))
			continue;
		if (pid) {
			if (others)
				++*others;
			continue;
		}
		pid = atol(de->d_name);
		if (opts && optlen)
			snprintf(opts, optlen, "%s", o);
		if (!others)
			break;
	}
	closedir(d);
	return pid;
}
