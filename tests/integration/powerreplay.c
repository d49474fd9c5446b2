// SPDX-License-Identifier: MIT
/*
 * powerreplay — crash images from a glassfs write log (-o writelog=FILE,
 * fs/store/dev_writelog.h) and the images the mount started from: what
 * power loss at a point of the log can leave on the devices.
 *
 *   powerreplay list LOG
 *       one line per flush: "flush INDEX BYTE DEV INFLIGHT" (INDEX: the
 *       record's number, BYTE: where it starts in the log, DEV: its
 *       device, INFLIGHT: the writes in flight in a state cut there),
 *       then "end NRECORDS BYTES".  A file whose fsync returned when the
 *       log was B bytes long is durable in every state cut at a flush at
 *       or past byte B.
 *   powerreplay build LOG CUT WHICH IMG[:IMG...]
 *       IMG (copies of the starting images, one per device in the order
 *       the mount was given them) become the state cut before record
 *       CUT: every write before its device's last flush before CUT is on
 *       the device; of the writes after it (in flight), WHICH says which
 *       are too: 0 none, all, drop:K all but the K-th, only:K the K-th
 *       alone, or a seed N > 0: a random subset, some torn (4 KiB sectors
 *       of a write on the device, the rest old), in a random order.
 *       Prints what it did.
 *
 * The same construction as tests/unit/test_powerloss.c, which replays the
 * recorder's log in memory in-process; this one goes through a file, so
 * the state can be mounted by the real daemon.  Exit 0, 1 on an error,
 * 2 on usage.
 */
#include "fs/store/dev_writelog.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAXDEV 16

struct rec {
	const struct wlog_rec *h;
	const uint8_t *data;	/* WLOG_WRITE */
	size_t at;		/* byte offset in the log */
};

static struct rec *recs;
static size_t nrec;
static uint32_t ndevs;

static int load(const char *path)
{
	int fd = open(path, O_RDONLY);
	struct stat st;

	if (fd < 0 || fstat(fd, &st) < 0) {
		fprintf(stderr, "powerreplay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	size_t size = (size_t)st.st_size;
	const uint8_t *p = size ? mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
	close(fd);
	if (size < sizeof(struct wlog_head) || p == MAP_FAILED ||
	    memcmp(p, WLOG_MAGIC, 8)) {
		fprintf(stderr, "powerreplay: %s: not a glassfs write log\n", path);
		return -1;
	}
	ndevs = ((const struct wlog_head *)p)->ndevs;
	size_t at = sizeof(struct wlog_head), cap = 0;
	while (at + sizeof(struct wlog_rec) <= size) {
		const struct wlog_rec *h = (const void *)(p + at);
		size_t dl = h->op == WLOG_WRITE ? h->len : 0;
		if (h->magic != WLOG_REC_MAGIC || h->op == WLOG_BROKEN ||
		    at + sizeof(*h) + dl > size) {
			fprintf(stderr, "powerreplay: %s: the log ends at byte %zu (%s)\n", path, at,
				h->op == WLOG_BROKEN ? "the daemon could not write it" : "damaged");
			break;
		}
		if (h->dev >= ndevs || h->dev >= MAXDEV) {
			fprintf(stderr, "powerreplay: record %zu: device %u not in the mount's list\n",
				nrec, h->dev);
			return -1;
		}
		if (nrec == cap) {
			cap = cap ? cap * 2 : 4096;
			recs = realloc(recs, cap * sizeof(*recs));
			if (!recs)
				return -1;
		}
		recs[nrec++] = (struct rec){ h, (const uint8_t *)(h + 1), at };
		at += sizeof(*h) + dl;
	}
	return 0;
}

static unsigned rs;
static unsigned lcg(void)
{
	rs = rs * 1103515245u + 12345u;
	return rs >> 8;
}

/* Write record i onto fd, whole (tear 0) or only the 4 KiB sectors in tear. */
static int apply(int fd, size_t i, uint64_t tear)
{
	static const uint8_t zero[4096];
	const struct wlog_rec *h = recs[i].h;

	for (uint64_t o = 0; o < h->len; o += 4096) {
		uint64_t n = h->len - o < 4096 ? h->len - o : 4096;
		if (tear && (o / 4096 >= 64 || !(tear >> (o / 4096) & 1)))
			continue;
		const void *b = h->op == WLOG_WRITE ? recs[i].data + o : zero;
		if (pwrite(fd, b, n, (off_t)(h->off + o)) != (ssize_t)n) {
			perror("powerreplay: pwrite");
			return -1;
		}
	}
	return 0;
}

static int build(size_t cut, const char *which, char *imgs)
{
	unsigned seed = 0;
	long k = -1;		/* drop:K, only:K */
	int mode = 0;		/* 0 seed, 1 all, 2 drop, 3 only */

	if (!strcmp(which, "all"))
		mode = 1;
	else if (!strncmp(which, "drop:", 5))
		mode = 2, k = strtol(which + 5, NULL, 10);
	else if (!strncmp(which, "only:", 5))
		mode = 3, k = strtol(which + 5, NULL, 10);
	else
		seed = (unsigned)strtoul(which, NULL, 10);
	int fds[MAXDEV], n = 0;
	size_t last[MAXDEV] = { 0 };

	for (char *s = strtok(imgs, ":"); s; s = strtok(NULL, ":")) {
		if (n == MAXDEV || (fds[n] = open(s, O_WRONLY)) < 0) {
			fprintf(stderr, "powerreplay: %s: %s\n", s, n == MAXDEV ? "too many" : strerror(errno));
			return 1;
		}
		n++;
	}
	if ((uint32_t)n != ndevs || cut > nrec) {
		fprintf(stderr, "powerreplay: %d images for %u devices, cut %zu of %zu records\n", n,
			ndevs, cut, nrec);
		return 1;
	}
	for (size_t i = 0; i < cut; i++)
		if (recs[i].h->op == WLOG_FLUSH)
			last[recs[i].h->dev] = i + 1;
	size_t *fly = malloc((cut + 1) * sizeof(*fly)), nfly = 0, kept = 0, torn = 0, skipped = 0;
	uint64_t *tears = calloc(cut + 1, sizeof(*tears));
	if (!fly || !tears)
		return 1;
	rs = seed;
	for (size_t i = 0; i < cut; i++) {
		const struct wlog_rec *h = recs[i].h;
		if (h->op == WLOG_FLUSH)
			continue;
		if (i < last[h->dev]) {		/* durable */
			if (apply(fds[h->dev], i, 0))
				return 1;
			continue;
		}
		long nth = (long)nfly + (long)skipped;
		bool on = mode == 1 || (mode == 2 && nth != k) || (mode == 3 && nth == k) ||
			  (mode == 0 && seed && lcg() % 2);
		if (!on) {			/* lost */
			skipped++;
			continue;
		}
		if (!mode && h->len > 4096 && lcg() % 4 == 0) {
			tears[nfly] = ((uint64_t)lcg() << 40) ^ ((uint64_t)lcg() << 16) ^ lcg();
			if (!tears[nfly])
				tears[nfly] = 1;
			torn++;
		}
		fly[nfly++] = i;
	}
	for (size_t j = mode ? 0 : nfly; j > 1; j--) {	/* any order */
		size_t k = lcg() % j, t = fly[j - 1];
		uint64_t tt = tears[j - 1];
		fly[j - 1] = fly[k];
		tears[j - 1] = tears[k];
		fly[k] = t;
		tears[k] = tt;
	}
	for (size_t j = 0; j < nfly; j++, kept++)
		if (apply(fds[recs[fly[j]].h->dev], fly[j], tears[j]))
			return 1;
	for (int d = 0; d < n; d++)
		if (fsync(fds[d]) < 0 || close(fds[d]) < 0) {
			perror("powerreplay: image");
			return 1;
		}
	printf("cut %zu (log byte %zu), %s: %zu of %zu writes in flight on the devices, %zu torn\n",
	       cut, cut < nrec ? recs[cut].at : (nrec ? recs[nrec - 1].at : 0), which, kept,
	       kept + skipped, torn);
	free(fly);
	free(tears);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "list")) {
		if (load(argv[2]))
			return 1;
		size_t end = sizeof(struct wlog_head), last[MAXDEV] = { 0 };
		for (size_t i = 0; i < nrec; i++) {
			if (recs[i].h->op == WLOG_FLUSH) {
				size_t fly = 0;
				for (size_t j = 0; j < i; j++)
					if (recs[j].h->op != WLOG_FLUSH && j >= last[recs[j].h->dev])
						fly++;
				printf("flush %zu %zu %u %zu\n", i, recs[i].at, recs[i].h->dev, fly);
				last[recs[i].h->dev] = i + 1;
			}
			end = recs[i].at + sizeof(struct wlog_rec) +
			      (recs[i].h->op == WLOG_WRITE ? recs[i].h->len : 0);
		}
		printf("end %zu %zu\n", nrec, end);
		return 0;
	}
	if (argc == 6 && !strcmp(argv[1], "build")) {
		if (load(argv[2]))
			return 1;
		return build(strtoul(argv[3], NULL, 10), argv[4], argv[5]);
	}
	fprintf(stderr, "usage: powerreplay list LOG | powerreplay build LOG CUT "
		"0|all|drop:K|only:K|SEED IMG[:IMG...]\n");
	return 2;
}
