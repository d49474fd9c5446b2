// SPDX-License-Identifier: MIT
/*
 * glassctl_device.c — the device and balance commands of glassctl:
 *
 *   glassctl device add DEV MNT
 *   glassctl device remove DEV MNT     (moves every stripe off DEV first)
 *   glassctl device remove missing MNT (degraded mount: rebuilds the copies
 *                                      the missing devices had, drops them)
 *   glassctl device set-rotational DEV 0|1 MNT
 *   glassctl balance start [-dconvert=P] [-mconvert=P] [-B] MNT
 *                                      (P: single, dup, raid1; -B: wait)
 *   glassctl balance status MNT | balance cancel MNT
 *
 * Each is one ioctl (fs/format/ioctl.h, 20-29) on the mount point; the daemon
 * says why a request failed in the reply's msg.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "fs/core/core.h"
#include "fs/format/ioctl.h"

int glassctl_device(int argc, char **argv);
int glassctl_balance(int argc, char **argv);
void glassctl_device_usage(FILE *f, const char *first);

/* The device and balance lines of the usage; first prefixes the first
 * line ("usage: " alone, "       " after glassctl's other lines). */
void glassctl_device_usage(FILE *f, const char *first)
{
	fprintf(f, "%sglassctl device add|remove DEV MNT\n"
		   "       glassctl device remove missing MNT   (drop the devices a degraded mount lacks)\n"
		   "       glassctl device set-rotational DEV 0|1 MNT\n"
		   "       glassctl balance start [-dconvert=P] [-mconvert=P] [-B] MNT   (P: single|dup|raid1)\n"
		   "       glassctl balance status|cancel MNT\n", first);
}

static void usage_dev(void)
{
	glassctl_device_usage(stderr, "usage: ");
}

static int open_mnt(const char *mnt)
{
	int fd = open(mnt, O_RDONLY | O_DIRECTORY);

	if (fd < 0)
		fprintf(stderr, "glassctl: %s: %s\n", mnt, strerror(errno));
	return fd;
}

static const char *hint(int e)
{
	return e == ENOTTY || e == ENOSYS || e == EINVAL ? " (not a glassfs mount?)" : "";
}

/* One glassfs_ioc_vol request; prints the daemon's reason on failure. */
static int vol_req(const char *mnt, unsigned long cmd, const char *what,
		   struct glassfs_ioc_vol *io)
{
	int fd = open_mnt(mnt);

	if (fd < 0)
		return 1;
	io->version = 1;
	if (ioctl(fd, cmd, io) < 0) {
		fprintf(stderr, "glassctl: %s: %s: %s%s\n", mnt, what, strerror(errno), hint(errno));
		close(fd);
		return 1;
	}
	close(fd);
	if (io->result) {
		fprintf(stderr, "glassctl: %s: %s: %s\n", mnt, what,
			io->msg[0] ? io->msg : strerror(-io->result));
		return 1;
	}
	return 0;
}

int glassctl_device(int argc, char **argv)
{
	struct glassfs_ioc_vol io;
	const char *sub = argc > 0 ? argv[0] : "";
	char rp[PATH_MAX];
	unsigned long cmd;

	memset(&io, 0, sizeof(io));
	if ((!strcmp(sub, "add") || !strcmp(sub, "remove")) && argc == 3) {
		cmd = !strcmp(sub, "add") ? GLASSFS_IOC_DEV_ADD : GLASSFS_IOC_DEV_REMOVE;
	} else if (!strcmp(sub, "set-rotational") && argc == 4) {
		if (strcmp(argv[2], "0") && strcmp(argv[2], "1")) {
			fprintf(stderr, "glassctl: set-rotational wants 0 or 1, not '%s'\n", argv[2]);
			return 2;
		}
		io.arg0 = argv[2][0] - '0';
		cmd = GLASSFS_IOC_DEV_ROTATIONAL;
	} else {
		usage_dev();
		return 2;
	}
	/* "missing" is a keyword (as in btrfs), not a path; otherwise the
	 * daemon runs in / : give it an absolute path */
	if (cmd == GLASSFS_IOC_DEV_REMOVE && !strcmp(argv[1], "missing")) {
		strcpy(rp, "missing");
	} else if (!realpath(argv[1], rp)) {
		fprintf(stderr, "glassctl: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	if (strlen(rp) >= sizeof(io.path)) {
		fprintf(stderr, "glassctl: %s: path too long\n", argv[1]);
		return 2;
	}
	strcpy(io.path, rp);
	if (vol_req(argv[argc - 1], cmd, sub, &io))
		return 1;
	if (cmd == GLASSFS_IOC_DEV_ADD)
		printf("%s: added %s\n", argv[argc - 1], rp);
	else if (cmd == GLASSFS_IOC_DEV_REMOVE && !strcmp(rp, "missing"))
		printf("%s: %s\n", argv[argc - 1], io.msg);
	else if (cmd == GLASSFS_IOC_DEV_REMOVE)
		printf("%s: removed %s\n", argv[argc - 1], rp);
	else
		printf("%s: %s is now %s\n", argv[argc - 1], rp, io.arg0 ? "rotational" : "non-rotational");
	return 0;
}

static int balance_status_fd(int fd, const char *mnt, struct glassfs_ioc_balance *b)
{
	memset(b, 0, sizeof(*b));
	if (ioctl(fd, GLASSFS_IOC_BALANCE_STATUS, b) < 0) {
		fprintf(stderr, "glassctl: %s: balance status: %s%s\n", mnt, strerror(errno), hint(errno));
		return -1;
	}
	return 0;
}

static void print_balance(const struct glassfs_ioc_balance *b)
{
	printf("status %s\n", b->running ? "running" : b->started == 0 ? "never-run" :
	       b->result == -ECANCELED ? "cancelled" : b->result ? "failed" : "finished");
	if (!b->running && b->started && b->result && b->result != -ECANCELED)
		printf("error %s\n", b->msg[0] ? b->msg : strerror(-b->result));
	printf("progress %.1f%%\n", b->chunks_total ?
	       100.0 * (double)b->chunks_done / (double)b->chunks_total : (b->running ? 0.0 : 100.0));
	printf("chunks_done %llu\nchunks_total %llu\nbytes_done %llu\nbytes_total %llu\n",
	       (unsigned long long)b->chunks_done, (unsigned long long)b->chunks_total,
	       (unsigned long long)b->bytes_done, (unsigned long long)b->bytes_total);
}

int glassctl_balance(int argc, char **argv)
{
	const char *sub = argc > 0 ? argv[0] : "", *mnt;
	struct glassfs_ioc_balance b;
	struct glassfs_ioc_vol io;
	bool wait = false;
	int fd, rc = 0;

	memset(&io, 0, sizeof(io));
	io.arg0 = io.arg1 = -1;
	if (argc < 2 || (strcmp(sub, "start") && strcmp(sub, "status") && strcmp(sub, "cancel")) ||
	    (strcmp(sub, "start") && argc != 2)) {
		usage_dev();
		return 2;
	}
	for (int i = 1; i < argc - 1; i++) {
		const char *a = argv[i];
		int64_t *dst = !strncmp(a, "-dconvert=", 10) ? &io.arg0 :
			       !strncmp(a, "-mconvert=", 10) ? &io.arg1 : NULL;
		uint64_t p;

		if (!strcmp(a, "-B")) {
			wait = true;
			continue;
		}
		if (!dst) {
			usage_dev();
			return 2;
		}
		if (!strcmp(a + 10, "single"))
			p = CORE_PROFILE_SINGLE;
		else if (!strcmp(a + 10, "dup"))
			p = CORE_PROFILE_DUP;
		else if (!strcmp(a + 10, "raid1"))
			p = CORE_PROFILE_RAID1;
		else {
			fprintf(stderr, "glassctl: unknown profile '%s' (single, dup, raid1)\n", a + 10);
			return 2;
		}
		*dst = (int64_t)p;
	}
	mnt = argv[argc - 1];
	if (!strcmp(sub, "start")) {
		if (vol_req(mnt, GLASSFS_IOC_BALANCE_START, "balance start", &io))
			return 1;
		if (!wait) {
			printf("balance started on %s\n", mnt);
			return 0;
		}
	} else if (!strcmp(sub, "cancel")) {
		return vol_req(mnt, GLASSFS_IOC_BALANCE_CANCEL, "balance cancel", &io);
	}
	fd = open_mnt(mnt);
	if (fd < 0)
		return 1;
	if (balance_status_fd(fd, mnt, &b)) {
		close(fd);
		return 1;
	}
	while (wait && b.running) {
		struct timespec ts = { 0, 100 * 1000 * 1000 };
		nanosleep(&ts, NULL);
		if (balance_status_fd(fd, mnt, &b)) {
			close(fd);
			return 1;
		}
	}
	close(fd);
	print_balance(&b);
	if (wait)
		rc = b.result ? 1 : 0;
	return rc;
}
