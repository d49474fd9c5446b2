// SPDX-License-Identifier: MIT
/*
 * glassctl — talk to a mounted glassfs through ioctls on its mount point.
 *
 *   glassctl stats MNT     counters as "key value" lines
 *   glassctl commit MNT    commit the running transaction and wait
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "fs/ioctl.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: glassctl stats MNT\n"
		   "       glassctl commit MNT\n");
}

static int open_mnt(const char *mnt)
{
	int fd = open(mnt, O_RDONLY | O_DIRECTORY);

	if (fd < 0)
		fprintf(stderr, "glassctl: %s: %s\n", mnt, strerror(errno));
	return fd;
}

static int cmd_stats(const char *mnt)
{
	static const char *const names[] = {
#define X(f) #f,
		GLASSFS_STATS_FIELDS(X)
#undef X
	};
	struct glassfs_ioc_stats s;
	int fd = open_mnt(mnt);

	if (fd < 0)
		return 1;
	memset(&s, 0, sizeof(s));
	if (ioctl(fd, GLASSFS_IOC_STATS, &s) < 0) {
		fprintf(stderr, "glassctl: %s: stats ioctl: %s%s\n", mnt, strerror(errno),
			errno == ENOTTY ? " (not a glassfs mount?)" : "");
		close(fd);
		return 1;
	}
	close(fd);
	for (uint32_t i = 0; i < s.count && i < sizeof(names) / sizeof(names[0]); i++)
		printf("%s %llu\n", names[i], (unsigned long long)s.values[i]);
	return 0;
}

static int cmd_commit(const char *mnt)
{
	int fd = open_mnt(mnt);

	if (fd < 0)
		return 1;
	if (ioctl(fd, GLASSFS_IOC_COMMIT) < 0) {
		fprintf(stderr, "glassctl: %s: commit: %s\n", mnt, strerror(errno));
		close(fd);
		return 1;
	}
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		usage(stdout);
		return 0;
	}
	if (argc != 3) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "stats"))
		return cmd_stats(argv[2]);
	if (!strcmp(argv[1], "commit"))
		return cmd_commit(argv[2]);
	fprintf(stderr, "glassctl: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
