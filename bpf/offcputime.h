/* SPDX-License-Identifier: MIT */
/*
 * offcputime.h — what bpf/offcputime.bpf.c and tools/glass-offcputime.c
 * share: the aggregation key, its value, the stack buffer and the counters
 * the loader reports at exit.
 *
 * Stacks live in two places.  Stacks taken from the task that runs
 * (bpf_get_stackid) are ids in the `stackmap` STACK_TRACE map.  Stacks taken
 * from a task that is not running (the resuming task's kernel stack at
 * switch-in, via bpf_get_task_stack) are hashed in BPF and stored in the
 * `stacks` hash (hash -> struct offcpu_stack).  A key names each of its
 * stacks by one or the other; an id < 0 and a hash of 0 mean "none".
 */
#ifndef GLASS_OFFCPUTIME_H
#define GLASS_OFFCPUTIME_H

#define OFFCPU_MAX_DEPTH	127	/* PERF_MAX_STACK_DEPTH */
#define OFFCPU_COMM_LEN		16
#define OFFCPU_PENDING		4	/* blocks waiting for a user stack, per task */

/* key.flags */
#define OFFCPU_F_INPROGRESS	0x1	/* still off-CPU when the run ended */
#define OFFCPU_F_NOUSER		0x2	/* user stack could not be taken */
#define OFFCPU_F_KTHREAD	0x4

struct offcpu_key {
	__u32 tgid;
	__u32 pid;
	__u64 kstack_hash;	/* in `stacks`, 0 none */
	__u64 ustack_hash;	/* in `stacks`, 0 none (in-progress walk) */
	__s32 kstack_id;	/* in `stackmap`, < 0 none */
	__s32 ustack_id;	/* in `stackmap`, < 0 none */
	__s32 w_kstack_id;	/* waker's stacks (--wakeup), < 0 none */
	__s32 w_ustack_id;
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

struct offcpu_stack {
	__u64 ips[OFFCPU_MAX_DEPTH];
};

/* Per-CPU counters (array index), summed and printed at exit. */
enum offcpu_counter {
	OC_BLOCKS,		/* blocks that passed the filters */
	OC_INPROGRESS,		/* ... of which still in progress at the end */
	OC_KSTACK_TRUNC,	/* kernel stack filled the depth limit */
	OC_KSTACK_FAIL,		/* bpf_get_task_stack / get_stackid failed */
	OC_STACKS_FULL,		/* `stacks` hash full */
	OC_USTACK_EEXIST,	/* stackmap bucket collision */
	OC_USTACK_EFAULT,	/* user stack unreadable */
	OC_USTACK_ENOMEM,	/* stackmap full */
	OC_USTACK_OTHER,
	OC_COUNTS_FULL,		/* aggregation map full: block lost */
	OC_PENDING_OVERFLOW,	/* > OFFCPU_PENDING blocks in one syscall */
	OC_PENDING_EXIT,	/* task exited before its syscall returned */
	OC_STORAGE_FAIL,	/* task storage could not be created */
	OC_NR,
};

/* Ring buffer events: a process seen for the first time (snapshot its
 * maps now) and a process that exits (snapshot again while we can). */
enum offcpu_event_type { OFFCPU_EV_NEW = 1, OFFCPU_EV_EXIT = 2 };
struct offcpu_event {
	__u32 type;
	__u32 tgid;
};

#endif
