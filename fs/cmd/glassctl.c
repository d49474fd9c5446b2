// SPDX-License-Identifier: MIT
/*
 * glassctl — talk to a mounted glassfs through ioctls on its mount point.
 *
 *   glassctl stats MNT     counters as "key value" lines
 *   glassctl commit MNT    commit the running transaction and wait
 *   glassctl scrub start [-B] [-r RATE] MNT   scrub in the daemon (-B: wait,
 *                          print the result; RATE bytes/s, suffix K/M/G)
 *   glassctl scrub status [--json] MNT | scrub cancel MNT
 *   glassctl filesystem show|usage MNT   fs/cmd/glassctl_show.c
 *   glassctl trim MNT      discard every free range (like fstrim)
 *   glassctl device ... | balance ...   fs/cmd/glassctl_device.c
 *   glassctl subvolume ...               fs/cmd/glassctl_subvol.c
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "fs/cmd/glassctl.h"
#include "fs/cmd/progress.h"
#include "fs/format/ioctl.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: glassctl stats MNT\n"
		   "       glassctl commit MNT\n"
		   "       glassctl scrub start [-B] [-q] [--json] [-r RATE] MNT   (-B: wait, with a progress\n"
		   "                          line on a terminal; -q: silent; RATE bytes/s, e.g. 64M)\n"
		   "       glassctl scrub status [--json] MNT\n"
		   "       glassctl scrub cancel MNT\n"
		   "       glassctl trim MNT\n"
		   "       glassctl resync status [-B] [-q] [--json] MNT   (devices that missed commits;\n"
		   "                          -B: wait, with a progress line on a terminal)\n"
		   "       glassctl subvolume create|delete|list PATH\n"
		   "       glassctl subvolume snapshot [-r] SRC DST\n");
	glassctl_device_usage(f, "       ");	/* fs/cmd/glassctl_device.c */
}

int glassctl_open_dir(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY);

	if (fd < 0)
		fprintf(stderr, "glassctl: %s: %s\n", path, strerror(errno));
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
	int fd = glassctl_open_dir(mnt);

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

/* The engine's counters by name (GLASSFS_STATS_FIELDS); 0 or -1. */
static int stat_values(int fd, const char *mnt, uint64_t *total, uint64_t *done, bool *running)
{
	static const char *const names[] = {
#define X(f) #f,
		GLASSFS_STATS_FIELDS(X)
#undef X
	};
	struct glassfs_ioc_stats s;

	memset(&s, 0, sizeof(s));
	if (ioctl(fd, GLASSFS_IOC_STATS, &s) < 0) {
		fprintf(stderr, "glassctl: %s: stats ioctl: %s%s\n", mnt, strerror(errno),
			errno == ENOTTY ? " (not a glassfs mount?)" : "");
		return -1;
	}
	*total = *done = 0;
	*running = false;
	for (uint32_t i = 0; i < s.count && i < sizeof(names) / sizeof(names[0]); i++) {
		if (!strcmp(names[i], "resync_bytes"))
			*total = s.values[i];
		else if (!strcmp(names[i], "resync_done_bytes"))
			*done = s.values[i];
		else if (!strcmp(names[i], "resync_running"))
			*running = s.values[i] != 0;
	}
	return 0;
}

bool glassctl_wait_flags(const char *a, bool b_ok, bool *wait, bool *quiet, bool *json)
{
	if (b_ok && !strcmp(a, "-B"))
		*wait = true;
	else if (!strcmp(a, "-q"))
		*quiet = true;
	else if (!strcmp(a, "--json"))
		*json = true;
	else
		return false;
	return true;
}

/*
 * resync status [-B] [-q] [--json] MNT: the background resync of devices
 * that missed commits (it starts at mount, fs/services/volume.h), by
 * bytes; -B waits for it with the progress line.
 */
static int cmd_resync(int argc, char **argv)
{
	bool wait = false, quiet = false, json = false;
	uint64_t total, done;
	bool running;
	struct progress pr;
	const char *mnt;
	int fd;

	if (argc < 2 || strcmp(argv[0], "status")) {
		usage(stderr);
		return 2;
	}
	for (int i = 1; i < argc - 1; i++) {
		if (!glassctl_wait_flags(argv[i], true, &wait, &quiet, &json)) {
			usage(stderr);
			return 2;
		}
	}
	mnt = argv[argc - 1];
	fd = glassctl_open_dir(mnt);
	if (fd < 0)
		return 1;
	if (stat_values(fd, mnt, &total, &done, &running)) {
		close(fd);
		return 1;
	}
	progress_init(&pr, "resync", quiet || json || !wait);
	/* the thread runs until its end is committed (or before it has
	 * measured anything): the bytes alone say "all copied" earlier */
	while (wait && (running || done < total)) {
		struct timespec ts = { 0, 100 * 1000 * 1000 };
		progress_update(&pr, done, total);
		nanosleep(&ts, NULL);
		if (stat_values(fd, mnt, &total, &done, &running)) {
			progress_end(&pr);
			close(fd);
			return 1;
		}
	}
	progress_end(&pr);
	close(fd);
	if (quiet)
		return 0;
	if (json) {
		printf("{\"status\": \"%s\", \"bytes_total\": %llu, \"bytes_done\": %llu, \"percent\": %.1f}\n",
		       running || done < total ? "running" : total == 0 ? "none" : "finished",
		       (unsigned long long)total, (unsigned long long)done, progress_pct(done, total));
	} else if (total == 0 && !running) {
		printf("No device needed a resync on this mount\n");
	} else {
		char a[32], b[32];
		printf("Resync %s: %s of %s copied (%.1f %%)\n",
		       running || done < total ? "running" : "finished",
		       progress_size(done, a, sizeof(a)), progress_size(total, b, sizeof(b)),
		       progress_pct(done, total));
	}
	return 0;
}

static int cmd_commit(const char *mnt)
{
	int fd = glassctl_open_dir(mnt);

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

const char *glassctl_hint(int e)
{
	return e == ENOTTY || e == ENOSYS || e == EINVAL ? " (not a glassfs mount?)" : "";
}

static const char *hms(uint64_t secs, char *buf, size_t len)
{
	snprintf(buf, len, "%llu:%02llu:%02llu", (unsigned long long)(secs / 3600),
		 (unsigned long long)(secs / 60 % 60), (unsigned long long)(secs % 60));
	return buf;
}

static const char *scrub_state(const struct glassfs_ioc_scrub *s)
{
	return s->running ? "running" : s->started == 0 ? "never run" :
	       s->result == -ECANCELED ? "cancelled" : s->result ? "failed" : "finished";
}

/* Status in words, as `btrfs scrub status`; or one JSON object. */
static void print_scrub(const struct glassfs_ioc_scrub *s, bool json)
{
	double secs = (double)s->duration_ns / 1e9;
	uint64_t rate = secs > 0 ? (uint64_t)((double)s->checked_bytes / secs) : 0;
	char a[32], b[32], t[64];

	if (json) {
		printf("{\"status\": \"%s\", \"result\": %d, \"error\": \"%s\", \"started\": %u, "
		       "\"start_time\": %lld, \"duration_s\": %.3f, "
		       "\"total_bytes\": %llu, \"done_bytes\": %llu, "
		       "\"total_check_bytes\": %llu, \"checked_bytes\": %llu, \"percent\": %.1f, "
		       "\"rate_bytes_per_s\": %llu, \"rate_limit\": %llu, "
		       "\"corrected_bytes\": %llu, \"uncorrectable_bytes\": %llu, "
		       "\"meta_errors\": %llu, \"data_errors\": %llu, \"read_errors\": %llu, "
		       "\"parity_errors\": %llu, \"nodes\": %llu, \"extents\": %llu, "
		       "\"skipped_bytes\": %llu}\n",
		       scrub_state(s), s->result,
		       !s->running && s->started && s->result && s->result != -ECANCELED ?
		       strerror(-s->result) : "", s->started, (long long)s->start_time, secs,
		       (unsigned long long)s->total_bytes, (unsigned long long)s->done_bytes,
		       (unsigned long long)s->total_check_bytes, (unsigned long long)s->checked_bytes,
		       progress_pct(s->checked_bytes, s->total_check_bytes), (unsigned long long)rate,
		       (unsigned long long)s->rate_bytes_per_s,
		       (unsigned long long)s->corrected_bytes, (unsigned long long)s->uncorrectable_bytes,
		       (unsigned long long)s->meta_errors, (unsigned long long)s->data_errors,
		       (unsigned long long)s->read_errors, (unsigned long long)s->parity_errors,
		       (unsigned long long)s->nodes,
		       (unsigned long long)s->extents, (unsigned long long)s->skipped_bytes);
		return;
	}
	if (s->started == 0) {
		printf("Status:           never run (glassctl scrub start MNT)\n");
		return;
	}
	time_t st = (time_t)s->start_time;
	struct tm tm;
	strftime(t, sizeof(t), "%a %b %e %H:%M:%S %Y", localtime_r(&st, &tm));
	printf("Scrub started:    %s\n", t);
	printf("Status:           %s", scrub_state(s));
	if (!s->running && s->result && s->result != -ECANCELED)
		printf(" (%s)", strerror(-s->result));
	printf("\nDuration:         %s\n", hms((uint64_t)secs, t, sizeof(t)));
	if (s->running && rate && s->total_check_bytes > s->checked_bytes)
		printf("Time left:        %s\n",
		       hms((s->total_check_bytes - s->checked_bytes) / rate, t, sizeof(t)));
	printf("Total to scrub:   %s (every copy of %s)\n",
	       progress_size(s->total_check_bytes, a, sizeof(a)), progress_size(s->total_bytes, b, sizeof(b)));
	printf("Bytes scrubbed:   %s (%.1f %%)\n", progress_size(s->checked_bytes, a, sizeof(a)),
	       progress_pct(s->checked_bytes, s->total_check_bytes));
	printf("Rate:             %s/s", progress_size(rate, a, sizeof(a)));
	if (s->rate_bytes_per_s)
		printf(" (limit %s/s)", progress_size(s->rate_bytes_per_s, a, sizeof(a)));
	printf("\n");
	if (s->skipped_bytes)	/* freed by the workload before scrub reached them */
		printf("Freed meanwhile:  %s (not read)\n", progress_size(s->skipped_bytes, a, sizeof(a)));
	if (!s->meta_errors && !s->data_errors && !s->read_errors && !s->parity_errors) {
		printf("Error summary:    no errors found\n");
		return;
	}
	printf("Error summary:   ");
	if (s->read_errors)
		printf(" read=%llu", (unsigned long long)s->read_errors);
	if (s->data_errors)
		printf(" csum=%llu", (unsigned long long)s->data_errors);
	if (s->meta_errors)
		printf(" verify=%llu", (unsigned long long)s->meta_errors);
	if (s->parity_errors)	/* raid5/6: P or Q disagreeing with its row's data */
		printf(" parity=%llu", (unsigned long long)s->parity_errors);
	printf("\n  Corrected:      %s\n  Uncorrectable:  %s\n",
	       progress_size(s->corrected_bytes, a, sizeof(a)),
	       progress_size(s->uncorrectable_bytes, b, sizeof(b)));
}

static int scrub_status_fd(int fd, const char *mnt, struct glassfs_ioc_scrub *s)
{
	memset(s, 0, sizeof(*s));
	if (ioctl(fd, GLASSFS_IOC_SCRUB_STATUS, s) < 0) {
		fprintf(stderr, "glassctl: %s: scrub status: %s%s\n", mnt, strerror(errno),
			glassctl_hint(errno));
		return -1;
	}
	return 0;
}

static int parse_rate(const char *a, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(a, &end, 10);
	if (end == a || errno || *a == '-')
		return -1;
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	}
	if (*end)
		return -1;
	*out = v;
	return 0;
}

static int cmd_scrub(int argc, char **argv)
{
	struct glassfs_ioc_scrub s;
	const char *sub = argv[0], *mnt;
	bool wait = false, quiet = false, json = false;
	struct progress pr;
	uint64_t rate = 0;
	int i, fd, rc = 0;

	for (i = 1; i < argc - 1; i++) {
		if (glassctl_wait_flags(argv[i], !strcmp(sub, "start"), &wait, &quiet, &json))
			continue;
		if (!strcmp(sub, "start") && !strcmp(argv[i], "-r") && i + 1 < argc - 1) {
			if (parse_rate(argv[++i], &rate)) {
				fprintf(stderr, "glassctl: bad rate '%s' (bytes/s, e.g. 64M)\n", argv[i]);
				return 2;
			}
		} else {
			usage(stderr);
			return 2;
		}
	}
	if (argc < 2 || (strcmp(sub, "start") && strcmp(sub, "status") && strcmp(sub, "cancel"))) {
		usage(stderr);
		return 2;
	}
	mnt = argv[argc - 1];
	fd = glassctl_open_dir(mnt);
	if (fd < 0)
		return 1;
	if (!strcmp(sub, "status")) {
		if (scrub_status_fd(fd, mnt, &s))
			rc = 1;
		else if (!quiet)
			print_scrub(&s, json);
	} else if (!strcmp(sub, "cancel")) {
		if (ioctl(fd, GLASSFS_IOC_SCRUB_CANCEL) < 0) {
			fprintf(stderr, "glassctl: %s: scrub cancel: %s%s\n", mnt,
				errno == ENOENT ? "no scrub running" : strerror(errno),
				glassctl_hint(errno));
			rc = 1;
		}
	} else {
		memset(&s, 0, sizeof(s));
		s.version = 1;
		s.rate_bytes_per_s = rate;
		if (ioctl(fd, GLASSFS_IOC_SCRUB_START, &s) < 0) {
			fprintf(stderr, "glassctl: %s: scrub start: %s%s\n", mnt,
				errno == EBUSY ? "a scrub is already running" : strerror(errno),
				glassctl_hint(errno));
			rc = 1;
		} else if (wait) {
			struct timespec ts = { 0, 100 * 1000 * 1000 };
			progress_init(&pr, "scrub", quiet || json);
			do {
				nanosleep(&ts, NULL);
				if (scrub_status_fd(fd, mnt, &s)) {
					rc = 1;
					break;
				}
				progress_update(&pr, s.checked_bytes, s.total_check_bytes);
			} while (s.running);
			progress_end(&pr);
			if (!rc) {
				if (!quiet)
					print_scrub(&s, json);
				rc = s.result ? 1 : s.uncorrectable_bytes ? 3 : 0;
			}
		} else if (!quiet) {
			printf("scrub started on %s\n", mnt);
		}
	}
	close(fd);
	return rc;
}

static int cmd_trim(const char *mnt)
{
	struct glassfs_ioc_trim t = { 0, 0 };
	int fd = glassctl_open_dir(mnt);

	if (fd < 0)
		return 1;
	if (ioctl(fd, GLASSFS_IOC_TRIM, &t) < 0) {
		fprintf(stderr, "glassctl: %s: trim: %s%s\n", mnt,
			errno == EOPNOTSUPP ? "a device cannot discard" : strerror(errno),
			glassctl_hint(errno));
		close(fd);
		return 1;
	}
	close(fd);
	printf("%s: %llu bytes trimmed\n", mnt, (unsigned long long)t.trimmed);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "--version")) {
		printf("glassctl %s\n", GLASSFS_VERSION);
		return 0;
	}
	if (argc >= 3 && !strcmp(argv[1], "scrub"))
		return cmd_scrub(argc - 2, argv + 2);
	if (argc >= 3 && !strcmp(argv[1], "resync"))
		return cmd_resync(argc - 2, argv + 2);
	if (argc >= 2 && !strcmp(argv[1], "subvolume"))		/* glassctl_subvol.c */
		return glassctl_subvolume(argc - 1, argv + 1);
	if (argc >= 2 && (!strcmp(argv[1], "filesystem") || !strcmp(argv[1], "fi")))
		return glassctl_filesystem(argc - 2, argv + 2);	/* glassctl_show.c */
	if (argc >= 2 && !strcmp(argv[1], "device"))
		return glassctl_device(argc - 2, argv + 2);
	if (argc >= 2 && !strcmp(argv[1], "balance"))
		return glassctl_balance(argc - 2, argv + 2);
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
	if (!strcmp(argv[1], "trim"))
		return cmd_trim(argv[2]);
	fprintf(stderr, "glassctl: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
