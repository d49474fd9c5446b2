// SPDX-License-Identifier: MIT
/*
 * progress.c — the progress line of the programs (progress.h).
 */
#include "fs/cmd/progress.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

const char *progress_size(uint64_t b, char *buf, size_t len)
{
	static const char *const u[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	double v = (double)b;
	int i = 0;

	if (b < 1024) {
		snprintf(buf, len, "%llu.00B", (unsigned long long)b);
		return buf;
	}
	while (v >= 1024 && i < 5) {
		v /= 1024;
		i++;
	}
	snprintf(buf, len, "%.2f%s", v, u[i]);
	return buf;
}

double progress_pct(uint64_t done, uint64_t total)
{
	if (!total)
		return 100.0;
	if (done >= total)
		return 100.0;
	return 100.0 * (double)done / (double)total;
}

void progress_init(struct progress *p, const char *what, bool quiet)
{
	const char *force = getenv("GLASSFS_PROGRESS");

	memset(p, 0, sizeof(*p));
	p->what = what;
	p->on = !quiet && (isatty(STDERR_FILENO) || (force && !strcmp(force, "1")));
	p->t0_ns = now_ns();
}

void progress_update(struct progress *p, uint64_t done, uint64_t total)
{
	uint64_t t = now_ns();
	char a[32], b[32], r[32], left[32] = "";
	double secs, rate;

	if (!p->on)
		return;
	if (!p->have0) {
		p->done0 = done;
		p->have0 = true;
	}
	if (p->drawn && t - p->last_ns < 100000000ull)
		return;
	p->last_ns = t;
	if (done > total)	/* the total grew under us (writes meanwhile) */
		total = done;
	secs = (double)(t - p->t0_ns) / 1e9;
	rate = secs > 0.2 && done > p->done0 ? (double)(done - p->done0) / secs : 0;
	if (rate > 0 && total > done) {
		uint64_t s = (uint64_t)((double)(total - done) / rate + 0.5);
		snprintf(left, sizeof(left), ", %llu:%02llu left",
			 (unsigned long long)(s / 60), (unsigned long long)(s % 60));
	}
	fprintf(stderr, "\r\033[K%s: %s of %s (%.1f %%), %s/s%s", p->what,
		progress_size(done, a, sizeof(a)), progress_size(total, b, sizeof(b)),
		progress_pct(done, total), progress_size((uint64_t)rate, r, sizeof(r)), left);
	fflush(stderr);
	p->drawn = true;
}

void progress_end(struct progress *p)
{
	if (p->drawn) {
		fprintf(stderr, "\r\033[K");
		fflush(stderr);
	}
	p->drawn = false;
}
