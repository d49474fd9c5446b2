// SPDX-License-Identifier: MIT
/*
 * fuse_readahead.c — a FUSE mount's read-ahead window (fuse_readahead.h).
 *
 * The knob is /sys/class/bdi/MAJ:MIN/read_ahead_kb, MAJ:MIN the mount's
 * device number, read from /proc/self/mountinfo rather than stat(2) of
 * the mount point: a stat there would ask this very daemon for the root's
 * attributes while one of its workers waits for the answer.
 */
#include "fs/fuse/fuse_readahead.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* mountinfo escapes space, tab, newline and backslash as \ooo: undo it in place. */
static void unescape(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = 0;
}

/* The device number "MAJ:MIN" of the topmost FUSE mount on mnt: 0, or
 * -ENOENT when there is none. */
static int mount_dev(const char *mnt, char *dev, size_t devsz)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL;
	size_t cap = 0;
	int ret = -ENOENT;

	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		/* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [FIELDS...] - FSTYPE SRC SUPER */
		char *save = NULL, *tok[5], *sep;
		int n = 0;

		sep = strstr(line, " - ");
		if (!sep)
			continue;
		*sep = 0;
		for (char *t = strtok_r(line, " ", &save); t && n < 5; t = strtok_r(NULL, " ", &save))
			tok[n++] = t;
		if (n < 5 || strncmp(sep + 3, "fuse", 4) || (sep[7] != ' ' && sep[7] != '.'))
			continue;
		unescape(tok[4]);
		if (!strcmp(tok[4], mnt) && strlen(tok[2]) < devsz) {
			strcpy(dev, tok[2]);	/* later lines are mounted on top: keep the last */
			ret = 0;
		}
	}
	free(line);
	fclose(f);
	return ret;
}

static int set_kb(const char *mnt, unsigned kb)
{
	char dev[64], path[128], val[16];
	int fd, ret = mount_dev(mnt, dev, sizeof(dev));
	ssize_t len;

	if (ret)
		return ret;
	snprintf(path, sizeof(path), "/sys/class/bdi/%s/read_ahead_kb", dev);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	len = snprintf(val, sizeof(val), "%u", kb);
	ret = write(fd, val, (size_t)len) == len ? 0 : -errno;
	close(fd);
	return ret;
}

int fuse_readahead_apply(struct fuse_readahead *ra)
{
	int st = 0;

	if (__atomic_load_n(&ra->state, __ATOMIC_ACQUIRE) == 2)
		return ra->err;
	if (!__atomic_compare_exchange_n(&ra->state, &st, 1, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		/* another worker writes it (microseconds): this open's file
		 * must see the new window too */
		while (__atomic_load_n(&ra->state, __ATOMIC_ACQUIRE) != 2)
			sched_yield();
		return ra->err;
	}
	ra->err = ra->kb && ra->mountpoint ? set_kb(ra->mountpoint, ra->kb) : 0;
	if (ra->err)	/* once per mount, in the daemon's log */
		fprintf(stderr, "%s: read-ahead window of %u KiB not set: %s\n", ra->mountpoint,
			ra->kb, strerror(-ra->err));
	__atomic_store_n(&ra->state, 2, __ATOMIC_RELEASE);
	return ra->err;
}
