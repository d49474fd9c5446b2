/* SPDX-License-Identifier: MIT */
/*
 * progress.h — what glassctl, mkfs.glassfs and fsck.glassfs print while a
 * long operation runs: on a terminal (stderr), one line redrawn in place,
 * by bytes, with the rate and the time left:
 *
 *   scrub: 412.0MiB of 1.02GiB (40.4 %), 96.3MiB/s, 0:06 left
 *
 * Nothing when stderr is not a terminal or when quiet (-q), so a pipe or
 * a log gets only the final summary.  Sizes in binary units, as btrfs-progs.
 */
#ifndef GLASSFS_PROGRESS_H
#define GLASSFS_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct progress {
	const char *what;	/* "scrub", "balance", ... */
	bool on;		/* stderr is a terminal and not quiet */
	bool drawn;		/* a line is on screen */
	uint64_t t0_ns, last_ns;	/* start; last redraw */
	uint64_t done0;		/* done at start (rate from here) */
	bool have0;
};

/* Set up; quiet forces it off.  GLASSFS_PROGRESS=1 forces it on (tests). */
void progress_init(struct progress *p, const char *what, bool quiet);
/* Redraw (at most ten times a second) with done of total bytes. */
void progress_update(struct progress *p, uint64_t done, uint64_t total);
/* Erase the line, so the summary that follows starts clean. */
void progress_end(struct progress *p);
/* "1.50GiB", "512.00KiB", "12.00B" into buf (as btrfs-progs). */
const char *progress_size(uint64_t bytes, char *buf, size_t len);
/* Percent of done in total, 0..100 (100 for an empty total). */
double progress_pct(uint64_t done, uint64_t total);

#endif
