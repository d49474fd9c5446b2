// SPDX-License-Identifier: MIT
/*
 * profile.bpf.c — on-CPU stacks sampled by a perf event (the loader opens
 * a software cpu-clock event per CPU at -F Hz and attaches this program to
 * each).  Every sample of a traced thread counts one under (thread, comm,
 * kernel stack, user stack); the stacks go once into the shared hashed
 * stack table (bpf/stacktab.h), as glass-offcputime's do, so none is lost
 * to a bucket collision.  Samples of the idle task are only counted.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "profile.h"

#define PF_KTHREAD	0x00200000
#define MAX_ENTRIES	10240	/* resized by the loader */

const volatile __u32 targ_tgid = 0;
const volatile __u32 targ_pid = 0;
const volatile bool user_only = false;
const volatile bool kernel_only = false;
const volatile bool no_kstack = false;	/* -U: user stacks only */
const volatile bool no_ustack = false;	/* -K: kernel stacks only */

STACKTAB(stacks, MAX_ENTRIES);

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct profile_key);
	__type(value, __u64);
	__uint(max_entries, MAX_ENTRIES);
} counts SEC(".maps");

/* Two slots: kernel and user stack of one sample. */
STACKTAB_SCRATCH(scratch, 2);

/* counters, seen, events: the tracers' shared maps. */
#define TRACEMAPS_COUNTERS	PC_NR
#define TRACEMAPS_SEEN		MAX_ENTRIES
#include "tracemaps.h"

static __always_inline __u64 take_stack(void *ctx, __u32 slot, bool user)
{
	struct stack_ips *buf = bpf_map_lookup_elem(&scratch, &slot);
	long bytes;
	__u64 h;

	if (!buf)
		return 0;
	bytes = bpf_get_stack(ctx, buf->ips, sizeof(buf->ips),
			      user ? BPF_F_USER_STACK : 0);
	/* 0 bytes: no stack of that kind (a kernel stack of a sample
	 * taken in user mode); < 0: it could not be read. */
	if (bytes <= 0) {
		if (bytes < 0)
			tracemaps_count(user ? PC_USTACK_FAIL : PC_KSTACK_FAIL);
		return 0;
	}
	if (bytes / 8 >= PROFILE_MAX_DEPTH)
		tracemaps_count(user ? PC_USTACK_TRUNC : PC_KSTACK_TRUNC);
	h = stacktab_put(&stacks, buf, bytes);
	if (!h)
		tracemaps_count(PC_STACKS_FULL);
	return h;
}

static __always_inline void note_tgid(__u32 tgid)
{
	struct profile_event *e;

	if (!tracemaps_first_sight(tgid))
		return;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e)
		return;
	e->tgid = tgid;
	bpf_ringbuf_submit(e, 0);
}

SEC("perf_event")
int do_sample(struct bpf_perf_event_data *ctx)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct profile_key k = {};
	bool kthread = t->flags & PF_KTHREAD;
	__u64 one = 1, *v;

	k.pid = t->pid;
	k.tgid = t->tgid;
	if (!k.pid) {
		tracemaps_count(PC_IDLE);
		return 0;
	}
	if (targ_tgid && k.tgid != targ_tgid)
		return 0;
	if (targ_pid && k.pid != targ_pid)
		return 0;
	if ((user_only && kthread) || (kernel_only && !kthread))
		return 0;
	tracemaps_count(PC_SAMPLES);
	k.flags = kthread ? PROFILE_F_KTHREAD : 0;
	bpf_get_current_comm(k.comm, sizeof(k.comm));
	if (!no_kstack)
		k.kstack = take_stack(ctx, 0, false);
	if (!no_ustack && !kthread) {
		k.ustack = take_stack(ctx, 1, true);
		note_tgid(k.tgid);
	}
	v = bpf_map_lookup_elem(&counts, &k);
	if (v) {
		__sync_fetch_and_add(v, 1);
		return 0;
	}
	if (bpf_map_update_elem(&counts, &k, &one, BPF_NOEXIST)) {
		v = bpf_map_lookup_elem(&counts, &k);
		if (v)
			__sync_fetch_and_add(v, 1);
		else
			tracemaps_count(PC_COUNTS_FULL);
	}
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
