/* SPDX-License-Identifier: MIT */
/*
 * lockstat.h — shared by bpf/lockstat.bpf.c and tools/glass-lockstat.c.
 * Fed by the glassfs:lock__* USDT probes (fs/probes.d, fired by fs/lock.c).
 */
#ifndef GLASS_LOCKSTAT_H
#define GLASS_LOCKSTAT_H

#define LS_SLOTS	64	/* log2 slots, tools/lib/hist.h's HIST_SLOTS */
#define LS_MAX_DEPTH	127

enum ls_kind { LS_WAIT = 0, LS_HOLD = 1 };

/* One histogram per (class, level, mode, kind). */
struct ls_hkey {
	__s32 cls;
	__s32 level;
	__s32 mode;
	__s32 kind;
};

struct ls_hist {
	__u64 slots[LS_SLOTS];
	__u64 count;		/* acquisitions (wait) or releases (hold) */
	__u64 events;		/* waits that really waited (wait_ns > 0) */
	__u64 total_ns;
	__u64 max_ns;
};

/* One lock instance. */
struct ls_inst {
	__s32 cls;
	__s32 level;
	__s32 group;
	__u32 pad;
	__u64 tree;
	__u64 acquired;
	__u64 contended;
	__u64 wait_ns;
	__u64 max_wait_ns;
};

/* Waiter user stacks (-s): time waited per (class, level, stack). */
struct ls_skey {
	__s32 cls;
	__s32 level;
	__s32 stack_id;
	__u32 tgid;
};

struct ls_sval {
	__u64 wait_ns;
	__u64 count;
};

enum ls_counter { LSC_FIRED, LSC_INST_FULL, LSC_STACK_LOST, LSC_NR };

#endif
