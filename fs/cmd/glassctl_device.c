// SPDX-License-Identifier: MIT
/*
 * glassctl_device.c — the device and balance commands of glassctl:
 *
 *   glassctl device add [-s SIZE] DEV MNT   (-s: create the image file first)
 *   glassctl device remove DEV MNT     (moves every stripe off DEV first)
 *   glassctl device remove missing MNT (degraded mount: rebuilds the copies
 *                                      the missing devices had, drops them)
 *   glassctl device replace OLD|missing NEW MNT  (device add NEW, then
 *                                      device remove OLD: its stripes move,
 *                                      NEW among the places they can go)
 *   glassctl device set-rotational DEV 0|1 MNT
 *   glassctl balance start [-dconvert=P] [-mconvert=P] [-B] MNT
 *                                      (P: single, dup, raid1, raid10; -B: wait)
 *   glassctl balance status MNT | balance cancel MNT
 *
 * Each is one ioctl (fs/format/ioctl.h, 20-29) on the mount point; the daemon
 * says why a request failed in the reply's msg.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "fs/cmd/glassctl.h"
#include "fs/cmd/progress.h"
#include "fs/core/core.h"
#include "fs/format/ioctl.h"

/* The device and balance lines of the usage; first prefixes the first
 * line ("usage: " alone, "       " after glassctl's other lines). */
void glassctl_device_usage(FILE *f, const char *first)
{
	fprintf(f, "%sglassctl device add|remove DEV MNT\n"
		   "       glassctl device add -s SIZE DEV MNT   (create the image file DEV of SIZE, e.g. 1G)\n"
		   "       glassctl device remove missing MNT   (drop the devices a degraded mount lacks)\n"
		   "       glassctl device replace OLD|missing NEW MNT   (add NEW, then remove OLD)\n"
		   "       glassctl device set-rotational DEV 0|1 MNT\n"
		   "       glassctl balance start [-dconvert=P] [-mconvert=P] [-B] [-q] MNT   (P: single|dup|raid1|raid1c3|raid1c4|\n"
		   "                          raid10|raid5|raid6, for data and metadata;\n"
		   "                          -B: wait, with a progress line on a terminal; -q: silent)\n"
		   "       glassctl balance status [--json] MNT\n"
		   "       glassctl balance cancel MNT\n", first);
	glassctl_show_usage(f);
}

static void usage_dev(void)
{
	glassctl_device_usage(stderr, "usage: ");
}

/* "1G" -> bytes (suffix K, M, G, T; binary). */
static int parse_size(const char *a, uint64_t *out)
{
	char *end;
	unsigned long long v;
	int sh = 0;

	errno = 0;
	v = strtoull(a, &end, 10);
	if (end == a || errno || *a == '-')
		return -1;
	switch (*end) {
	case 'k': case 'K': sh = 10; end++; break;
	case 'm': case 'M': sh = 20; end++; break;
	case 'g': case 'G': sh = 30; end++; break;
	case 't': case 'T': sh = 40; end++; break;
	}
	if (*end || (sh && v > (~0ull >> sh)))
		return -1;
	*out = v << sh;
	return 0;
}

/* One glassfs_ioc_vol request; prints the daemon's reason on failure. */
static int vol_req(const char *mnt, unsigned long cmd, const char *what,
		   struct glassfs_ioc_vol *io)
{
	int fd = glassctl_open_dir(mnt);

	if (fd < 0)
		return 1;
	io->version = 1;
	if (ioctl(fd, cmd, io) < 0) {
		fprintf(stderr, "glassctl: %s: %s: %s%s\n", mnt, what, strerror(errno), glassctl_hint(errno));
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

static int balance_status_fd(int fd, const char *mnt, struct glassfs_ioc_balance *b);

struct remove_req {
	const char *mnt;
	struct glassfs_ioc_vol *io;
	int rc;
	int done;	/* atomic */
};

static void *remove_thread(void *arg)
{
	struct remove_req *r = arg;

	r->rc = vol_req(r->mnt, GLASSFS_IOC_DEV_REMOVE, "remove", r->io);
	__atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* A device remove moves every chunk off the device inside the ioctl: it
 * runs in a thread while this one draws the progress the daemon reports
 * in the balance status (op 2, by bytes). */
static int remove_with_progress(const char *mnt, struct glassfs_ioc_vol *io)
{
	struct remove_req r = { mnt, io, 0, 0 };
	struct progress pr;
	pthread_t th;
	int fd;

	progress_init(&pr, "device remove", false);
	fd = pr.on ? open(mnt, O_RDONLY | O_DIRECTORY) : -1;
	if (fd < 0 || pthread_create(&th, NULL, remove_thread, &r)) {
		if (fd >= 0)
			close(fd);
		return vol_req(mnt, GLASSFS_IOC_DEV_REMOVE, "remove", io);
	}
	while (!__atomic_load_n(&r.done, __ATOMIC_ACQUIRE)) {
		struct timespec ts = { 0, 100 * 1000 * 1000 };
		struct glassfs_ioc_balance b;

		nanosleep(&ts, NULL);
		memset(&b, 0, sizeof(b));
		if (ioctl(fd, GLASSFS_IOC_BALANCE_STATUS, &b) == 0 && b.op == 2 && b.op_running)
			progress_update(&pr, b.bytes_done, b.bytes_total);
	}
	pthread_join(th, NULL);
	progress_end(&pr);
	close(fd);
	return r.rc;
}

int glassctl_device(int argc, char **argv)
{
	struct glassfs_ioc_vol io;
	const char *sub = argc > 0 ? argv[0] : "";
	char rp[PATH_MAX];
	unsigned long cmd;
	uint64_t create = 0;

	int info = glassctl_device_info(argc, argv);	/* list, usage, stats */

	if (info >= 0)
		return info;
	if (!strcmp(sub, "replace") && argc == 4) {
		char *add[3] = { "add", argv[2], argv[3] }, *rm[3] = { "remove", argv[1], argv[3] };
		int rc = glassctl_device(3, add);
		if (rc)
			return rc;
		rc = glassctl_device(3, rm);
		if (rc)
			/* not removed, or removed with blocks no copy verified
			 * (the daemon's message above says which) */
			fprintf(stderr, "glassctl: replace: %s was added; removing %s reported an error (see above)\n",
				argv[2], argv[1]);
		return rc;
	}
	memset(&io, 0, sizeof(io));
	/* add -s SIZE DEV MNT: create the image file DEV of SIZE first */
	if (!strcmp(sub, "add") && argc == 5 && !strcmp(argv[1], "-s")) {
		if (parse_size(argv[2], &create) || create == 0) {
			fprintf(stderr, "glassctl: bad size '%s' (bytes, suffix K, M, G or T, e.g. 1G)\n",
				argv[2]);
			return 2;
		}
		argv += 2;
		argc -= 2;
	}
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
	} else {
		if (create) {
			int fd = open(argv[1], O_WRONLY | O_CREAT | O_EXCL, 0644);
			if (fd < 0 || ftruncate(fd, (off_t)create) < 0) {
				fprintf(stderr, "glassctl: %s: cannot create the image: %s\n", argv[1],
					strerror(errno));
				if (fd >= 0)
					close(fd), unlink(argv[1]);
				return 1;
			}
			close(fd);
		}
		if (!realpath(argv[1], rp)) {
			int e = errno;
			fprintf(stderr, "glassctl: %s: %s%s%s%s\n", argv[1], strerror(e),
				e == ENOENT && cmd == GLASSFS_IOC_DEV_ADD ?
				"; a device is a block device or an image file: create the image "
				"with `truncate -s 1G " : "",
				e == ENOENT && cmd == GLASSFS_IOC_DEV_ADD ? argv[1] : "",
				e == ENOENT && cmd == GLASSFS_IOC_DEV_ADD ?
				"` or `glassctl device add -s 1G DEV MNT`" : "");
			return 1;
		}
	}
	if (strlen(rp) >= sizeof(io.path)) {
		fprintf(stderr, "glassctl: %s: path too long\n", argv[1]);
		return 2;
	}
	strcpy(io.path, rp);
	if (cmd == GLASSFS_IOC_DEV_REMOVE ? remove_with_progress(argv[argc - 1], &io) :
	    vol_req(argv[argc - 1], cmd, sub, &io))
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
		fprintf(stderr, "glassctl: %s: balance status: %s%s\n", mnt, strerror(errno),
			glassctl_hint(errno));
		return -1;
	}
	return 0;
}

static const char *bal_state(const struct glassfs_ioc_balance *b)
{
	return b->running ? "running" : b->started == 0 ? "never run" :
	       b->result == -ECANCELED ? "cancelled" : b->result ? "failed" : "finished";
}

/* Status in words, as `btrfs balance status`, by bytes; or JSON. */
static void print_balance(const struct glassfs_ioc_balance *b, bool json)
{
	char x[32], y[32];

	if (json) {
		printf("{\"status\": \"%s\", \"result\": %d, \"error\": \"", bal_state(b), b->result);
		for (const char *m = !b->running && b->started && b->result && b->result != -ECANCELED ?
				     (b->msg[0] ? b->msg : strerror(-b->result)) : ""; *m; m++)
			printf(*m == '"' || *m == '\\' ? "\\%c" : "%c", *m);
		printf("\", \"started\": %u, \"bytes_total\": %llu, \"bytes_done\": %llu, "
		       "\"percent\": %.1f, \"chunks_total\": %llu, \"chunks_done\": %llu}\n",
		       b->started, (unsigned long long)b->bytes_total, (unsigned long long)b->bytes_done,
		       progress_pct(b->bytes_done, b->bytes_total), (unsigned long long)b->chunks_total,
		       (unsigned long long)b->chunks_done);
		return;
	}
	if (b->started == 0) {
		printf("No balance has run on this mount\n");
		return;
	}
	printf("Balance %s", bal_state(b));
	if (!b->running && b->result && b->result != -ECANCELED)
		printf(": %s", b->msg[0] ? b->msg : strerror(-b->result));
	printf("\n%s of %s moved (%.1f %%), %llu of %llu chunks\n",
	       progress_size(b->bytes_done, x, sizeof(x)), progress_size(b->bytes_total, y, sizeof(y)),
	       progress_pct(b->bytes_done, b->bytes_total), (unsigned long long)b->chunks_done,
	       (unsigned long long)b->chunks_total);
}

int glassctl_balance(int argc, char **argv)
{
	const char *sub = argc > 0 ? argv[0] : "", *mnt;
	struct glassfs_ioc_balance b;
	struct glassfs_ioc_vol io;
	bool wait = false, quiet = false, json = false;
	struct progress pr;
	int fd, rc = 0;

	memset(&io, 0, sizeof(io));
	io.arg0 = io.arg1 = -1;
	if (argc < 2 || (strcmp(sub, "start") && strcmp(sub, "status") && strcmp(sub, "cancel"))) {
		usage_dev();
		return 2;
	}
	for (int i = 1; i < argc - 1; i++) {
		const char *a = argv[i];
		int64_t *dst = !strncmp(a, "-dconvert=", 10) ? &io.arg0 :
			       !strncmp(a, "-mconvert=", 10) ? &io.arg1 : NULL;
		uint64_t p;

		if (glassctl_wait_flags(a, !strcmp(sub, "start"), &wait, &quiet, &json))
			continue;
		if (!dst || strcmp(sub, "start")) {
			usage_dev();
			return 2;
		}
		if (core_profile_parse(a + 10, &p)) {
			fprintf(stderr, "glassctl: unknown profile '%s' (single, dup, raid1, raid1c3, raid1c4, raid10, raid5, raid6)\n",
				a + 10);
			return 2;
		}
		*dst = (int64_t)p;
	}
	mnt = argv[argc - 1];
	if (!strcmp(sub, "start")) {
		if (vol_req(mnt, GLASSFS_IOC_BALANCE_START, "balance start", &io))
			return 1;
		if (!wait) {
			if (!quiet)
				printf("balance started on %s\n", mnt);
			return 0;
		}
	} else if (!strcmp(sub, "cancel")) {
		return vol_req(mnt, GLASSFS_IOC_BALANCE_CANCEL, "balance cancel", &io);
	}
	fd = glassctl_open_dir(mnt);
	if (fd < 0)
		return 1;
	if (balance_status_fd(fd, mnt, &b)) {
		close(fd);
		return 1;
	}
	progress_init(&pr, "balance", quiet || json || !wait);
	while (wait && b.running) {
		struct timespec ts = { 0, 100 * 1000 * 1000 };
		progress_update(&pr, b.bytes_done, b.bytes_total);
		nanosleep(&ts, NULL);
		if (balance_status_fd(fd, mnt, &b)) {
			progress_end(&pr);
			close(fd);
			return 1;
		}
	}
	progress_end(&pr);
	close(fd);
	if (!quiet)
		print_balance(&b, json);
	if (wait)
		rc = b.result ? 1 : 0;
	return rc;
}
