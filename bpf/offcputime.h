/* SPDX-License-Identifier: MIT */
/*
 * offcputime.h — what bpf/offcputime.bpf.c and tools/glass-offcputime.c
 * share: the aggregation key, its value, the stack buffer and the counters
 * the loader reports at exit.
 *
 * Every stack (kernel or user, of the blocked task or of its waker) is
 * stored once in the `stacks` table (bpf/stacktab.h: hash -> struct
 * stack_ips); a key names its stacks by hash, 0 meaning "none".
 */
#ifndef GLASS_OFFCPUTIME_H
#define GLASS_OFFCPUTIME_H

#include "stacktab.h"

#define OFFCPU_MAX_DEPTH	STACK_MAX_DEPTH
#define OFFCPU_COMM_LEN		16
#define OFFCPU_PENDING		8	/* blocks waiting for a user stack, per task */

/* key.flags */
#define OFFCPU_F_INPROGRESS	0x1	/* still off-CPU when the run ended */
#define OFFCPU_F_NOUSER		0x2	/* user stack could not be taken */
#define OFFCPU_F_KTHREAD	0x4
#define OFFCPU_F_RUNQ		0x8	/* runnable, waiting on a runqueue (rodata runq) */

struct offcpu_key {
	__u32 tgid;
	__u32 pid;
	__u64 kstack;		/* hashes in `stacks`, 0 none */
	__u64 ustack;
	__u64 w_kstack;		/* waker's stacks (--wakeup), 0 none */
	__u64 w_ustack;
	__u32 w_tgid;
	__u32 w_pid;
	__u32 flags;
	__u32 state;		/* prev_state at switch-out */
	char comm[OFFCPU_COMM_LEN];
	char w_comm[OFFCPU_COMM_LEN];
};

struct offcpu_val {
	__u64 total_ns;
	__u64 count;
};

/*
 * rodata oncpu: a thread's time on a CPU in the window, measured at its
 * context switches (switch-in to switch-out), in the `runtime` map under
 * its thread id.  glass-profile --wall spreads it over the thread's
 * sampled stacks.
 */
struct offcpu_run {
	__u64 ns;
	__u64 slices;		/* switch-ins counted */
	__u32 tgid;
	__u32 flags;		/* OFFCPU_F_KTHREAD */
	char comm[OFFCPU_COMM_LEN];
};

/* Per-CPU counters (array index), summed and printed at exit. */
enum offcpu_counter {
	OC_BLOCKS,		/* blocks that passed the filters */
	OC_INPROGRESS,		/* ... of which still in progress at the end */
	OC_KSTACK_TRUNC,	/* kernel stack filled the depth limit */
	OC_USTACK_TRUNC,	/* user stack filled the depth limit */
	OC_KSTACK_FAIL,		/* kernel stack could not be read */
	OC_USTACK_FAIL,		/* user stack could not be read (-EFAULT...) */
	OC_STACKS_FULL,		/* `stacks` map full: stack lost */
	OC_COUNTS_FULL,		/* aggregation map full: block lost */
	OC_PENDING_OVERFLOW,	/* > OFFCPU_PENDING blocks in one syscall */
	OC_PENDING_EXIT,	/* task exited before its syscall returned */
	OC_STORAGE_FAIL,	/* task storage could not be created */
	OC_IDLE_SKIPPED,	/* --no-idle: blocks in a /dev/fuse read not tracked */
	OC_EARLY_USTACK,	/* user stacks taken at switch-out, before the block's length was known */
	OC_RUNTIME_FULL,	/* rodata oncpu: a thread's on-CPU time lost (`runtime` full, no memory) */
	OC_UNSEEN_SWITCH_IN,	/* rodata oncpu: a thread back on a CPU with no sched_switch naming it */
	OC_NR,
};

/* Ring buffer events: a process seen for the first time (snapshot its
 * maps now), a process seen before that execs (its maps are new: snapshot
 * again) and a process that exits (snapshot again while we can). */
enum offcpu_event_type { OFFCPU_EV_NEW = 1, OFFCPU_EV_EXIT = 2, OFFCPU_EV_EXEC = 3 };
struct offcpu_event {
	__u32 type;
	__u32 tgid;
};

#endif
