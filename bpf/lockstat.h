/* SPDX-License-Identifier: MIT */
/*
 * lockstat.h — shared by bpf/lockstat.bpf.c and tools/glass-lockstat.c.
 * Fed by the glassfs:lock__* USDT probes (fs/base/probes.d, fired by fs/base/lock.c).
 *
 * Cost model.  A USDT probe costs a trap into the kernel every time it
 * fires (~1-2 us here), whatever the BPF program does.  The engine takes
 * ~130 locks per file it creates and nearly all are uncontended, so the
 * default mode listens only to lock__contended (fired after a real wait)
 * and costs nothing on the uncontended path.  --all adds lock__acquired and
 * lock__released at every acquisition and release, for acquisition counts
 * and hold times: exact, and as costly as that sounds.
 *
 * Histograms live in a per-CPU array indexed by (class, level, mode, kind):
 * no hash lookup and no atomic on the probe path; the loader sums the CPUs.
 */
#ifndef GLASS_LOCKSTAT_H
#define GLASS_LOCKSTAT_H

#include "stacktab.h"

#define LS_SLOTS	64	/* log2 slots, tools/lib/hist.h's HIST_SLOTS */
#define LS_MAX_DEPTH	STACK_MAX_DEPTH

#define LS_CLASSES	16	/* fs/base/lock.h GLOCK_CLASS_* (0..15) */
#define LS_LEVELS	10	/* level -1 (not a B-tree lock) .. 8 */
enum ls_kind { LS_WAIT = 0, LS_HOLD = 1 };

/* hists[] index of (class, level, mode, kind); level clamped to the range */
#define LS_HIST_IDX(cls, level, mode, kind) \
	(((((cls) & (LS_CLASSES - 1)) * LS_LEVELS + \
	   ((level) < -1 ? 0 : (level) > LS_LEVELS - 2 ? LS_LEVELS - 1 : (level) + 1)) * 2 + \
	  ((mode) ? 1 : 0)) * 2 + (kind))
#define LS_NHIST	(LS_CLASSES * LS_LEVELS * 2 * 2)

struct ls_hist {
	__u64 slots[LS_SLOTS];
	__u64 count;		/* wait: acquisitions (--all only); hold: releases */
	__u64 events;		/* wait: contended acquisitions; hold: timed holds */
	__u64 total_ns;
	__u64 max_ns;
};

/* One lock instance (contended ones; every one with --all). */
struct ls_inst {
	__s32 cls;
	__s32 level;
	__s32 group;
	__u32 pad;
	__u64 tree;
	__u64 acquired;		/* --all only */
	__u64 contended;
	__u64 wait_ns;
	__u64 max_wait_ns;
};

/* Waiter user stacks (-s): time waited per (class, level, stack); the
 * stack is a hash in the `stacks` table (bpf/stacktab.h). */
struct ls_skey {
	__s32 cls;
	__s32 level;
	__u32 tgid;
	__u32 pad;
	__u64 stack;
};

struct ls_sval {
	__u64 wait_ns;
	__u64 count;
};

enum ls_counter {
	LSC_FIRED,		/* probe firings (traps paid) */
	LSC_INST_FULL,		/* instances map full: instance not tracked */
	LSC_STACK_LOST,		/* waiter stack not taken (stack table full, unreadable) */
	LSC_WSTACKS_FULL,	/* waiter stacks map full */
	LSC_BELOW_MIN,		/* contended waits under --min-wait: histogram only */
	LSC_NR,
};

#endif
