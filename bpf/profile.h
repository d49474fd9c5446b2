/* SPDX-License-Identifier: MIT */
/*
 * profile.h — what bpf/profile.bpf.c and tools/glass-profile.c share: the
 * on-CPU sample key (thread, comm, kernel and user stacks by their hash in
 * the shared stack table, bpf/stacktab.h), the counters reported at exit,
 * and the ring buffer event that asks the loader to snapshot a process's
 * maps.
 */
#ifndef GLASS_PROFILE_H
#define GLASS_PROFILE_H

#include "stacktab.h"

#define PROFILE_MAX_DEPTH	STACK_MAX_DEPTH
#define PROFILE_COMM_LEN	16

/* key.flags */
#define PROFILE_F_KTHREAD	0x1

struct profile_key {
	__u32 tgid;
	__u32 pid;
	__u64 kstack;		/* hashes in `stacks`, 0 none */
	__u64 ustack;
	__u32 flags;
	__u32 cpu_pad;
	char comm[PROFILE_COMM_LEN];
};

/* Per-CPU counters (array index), summed and printed at exit. */
enum profile_counter {
	PC_SAMPLES,		/* samples of traced threads */
	PC_IDLE,		/* samples of the idle task (not recorded) */
	PC_KSTACK_TRUNC,
	PC_USTACK_TRUNC,
	PC_KSTACK_FAIL,
	PC_USTACK_FAIL,		/* user thread whose user stack could not be read */
	PC_STACKS_FULL,		/* stack table full: stack lost */
	PC_COUNTS_FULL,		/* aggregation map full: sample lost */
	PC_NR,
};

/* Ring buffer event: a process seen for the first time. */
struct profile_event {
	__u32 tgid;
};

#endif
