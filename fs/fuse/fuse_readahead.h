/* SPDX-License-Identifier: MIT */
/*
 * fuse_readahead.h — the kernel's read-ahead window for a FUSE mount
 * (readahead_kb=, docs/mount-options.md), set once the mount is up.
 *
 * Why: a FUSE mount's read-ahead is its bdi's read_ahead_kb, 128 KiB by
 * default, and the INIT reply's max_readahead can only lower it.  With
 * 128 KiB a sequential reader keeps one or two READs of 256 KiB in flight,
 * so the daemon's time per READ (wake-up, lookup, checksums, reply) sets
 * the rate; a window of 2 MiB keeps two to six READs of up to max_read
 * in flight (eleven at most), and the daemon's workers verify and reply some while the
 * reader copies others.  Wider is not better: each step up costs the
 * reader CPU (its pages are filled further ahead of its copy: 327, 352
 * and 384 ms of fio per warm 512 MiB read at 1, 2 and 4 MiB), and on a
 * loaded machine 4 MiB read slower than 1 or 2 (docs/benchmarks.md).
 * And a cold read (the image read from the disk) went slower at 2 MiB
 * than at the kernel's 128 KiB in five of six datapath.bench
 * comparisons (0.65-0.85x) and no faster in the sixth
 * (docs/benchmarks.md), so the default is 0: the kernel's window.  Only
 * root may write the bdi's knob: without it the window stays as it was.
 *
 * Used by the glassfs daemon and by the memfs ceiling (tests/bench), so
 * this file needs nothing but libc.
 */
#ifndef GLASSFS_FUSE_READAHEAD_H
#define GLASSFS_FUSE_READAHEAD_H

struct fuse_readahead {
	const char *mountpoint;	/* absolute, as /proc/self/mountinfo lists it */
	unsigned kb;		/* the window in KiB; 0: leave the kernel's */
	int state;		/* atomic: 0 not yet, 1 being set, 2 done */
	int err;		/* 0 or -errno of the attempt, once done */
};

/*
 * Set the window of ra->mountpoint's mount to ra->kb, once: the first
 * caller does it, later ones return at once.  Call it while answering
 * an OPEN or CREATE: after INIT (whose reply would lower the window
 * again) and before the kernel sizes the opened file's read-ahead from
 * the bdi (after the open's reply).  Returns ra->err.
 */
int fuse_readahead_apply(struct fuse_readahead *ra);

#endif
