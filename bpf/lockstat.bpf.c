// SPDX-License-Identifier: MIT
/*
 * lockstat.bpf.c — wait and hold time of every engine lock, from the
 * glassfs:lock__acquired / lock__released USDT probes (attached by the
 * loader with bpf_program__attach_usdt).  Per (class, level, mode): log2
 * histograms; per lock address: contention; optionally (stacks) the
 * waiter's user stack, taken only for acquisitions that waited.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>
#include "lockstat.h"

const volatile bool stacks = false;
const volatile __u64 min_wait_ns = 0;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct ls_hkey);
	__type(value, struct ls_hist);
	__uint(max_entries, 1024);
} hists SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u64);
	__type(value, struct ls_inst);
	__uint(max_entries, 65536);
} insts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, LS_MAX_DEPTH * sizeof(__u64));
	__uint(max_entries, 4096);
} stackmap SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct ls_skey);
	__type(value, struct ls_sval);
	__uint(max_entries, 4096);
} wstacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, LSC_NR);
} counters SEC(".maps");

static struct ls_hist zero_hist;	/* too big for the BPF stack */

static __always_inline void count(__u32 c)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &c);

	if (v)
		(*v)++;
}

static __always_inline __u32 log2_slot(__u64 v)
{
	__u32 s = 0;

	for (int i = 0; i < 64 && v; i++) {
		v >>= 1;
		s++;
	}
	return s < LS_SLOTS ? s : LS_SLOTS - 1;
}

static __always_inline void hist_add(int cls, int level, int mode, int kind,
				     __u64 ns)
{
	struct ls_hkey k = { cls, level, mode, kind };
	struct ls_hist *h;

	h = bpf_map_lookup_elem(&hists, &k);
	if (!h) {
		bpf_map_update_elem(&hists, &k, &zero_hist, BPF_NOEXIST);
		h = bpf_map_lookup_elem(&hists, &k);
		if (!h)
			return;
	}
	__sync_fetch_and_add(&h->count, 1);
	if (kind == LS_WAIT && !ns)
		return;		/* uncontended: counted, not in the histogram */
	__sync_fetch_and_add(&h->events, 1);
	__sync_fetch_and_add(&h->total_ns, ns);
	__sync_fetch_and_add(&h->slots[log2_slot(ns) & (LS_SLOTS - 1)], 1);
	if (ns > h->max_ns)
		h->max_ns = ns;	/* racy max: good enough for a report */
}

SEC("usdt")
int BPF_USDT(lock_acquired, __u64 addr, int cls, __u64 tree, int level,
	     int group, int mode, __u64 wait_ns)
{
	struct ls_inst *in, zero = {};

	count(LSC_FIRED);
	hist_add(cls, level, mode, LS_WAIT, wait_ns);
	in = bpf_map_lookup_elem(&insts, &addr);
	if (!in) {
		zero.cls = cls;
		zero.level = level;
		zero.group = group;
		zero.tree = tree;
		if (bpf_map_update_elem(&insts, &addr, &zero, BPF_NOEXIST) &&
		    !bpf_map_lookup_elem(&insts, &addr))
			count(LSC_INST_FULL);
		in = bpf_map_lookup_elem(&insts, &addr);
		if (!in)
			return 0;
	}
	in->cls = cls;		/* a node may be relabelled (level change) */
	in->level = level;
	__sync_fetch_and_add(&in->acquired, 1);
	if (!wait_ns)
		return 0;
	__sync_fetch_and_add(&in->contended, 1);
	__sync_fetch_and_add(&in->wait_ns, wait_ns);
	if (wait_ns > in->max_wait_ns)
		in->max_wait_ns = wait_ns;
	if (stacks && wait_ns >= min_wait_ns) {
		struct ls_skey sk = { cls, level, 0, bpf_get_current_pid_tgid() >> 32 };
		struct ls_sval *sv, sz = {};
		long id = bpf_get_stackid(ctx, &stackmap, BPF_F_USER_STACK);

		if (id < 0) {
			count(LSC_STACK_LOST);
			return 0;
		}
		sk.stack_id = id;
		sv = bpf_map_lookup_elem(&wstacks, &sk);
		if (!sv) {
			bpf_map_update_elem(&wstacks, &sk, &sz, BPF_NOEXIST);
			sv = bpf_map_lookup_elem(&wstacks, &sk);
			if (!sv)
				return 0;
		}
		__sync_fetch_and_add(&sv->wait_ns, wait_ns);
		__sync_fetch_and_add(&sv->count, 1);
	}
	return 0;
}

SEC("usdt")
int BPF_USDT(lock_released, __u64 addr, int cls, __u64 tree, int level,
	     int group, int mode, __u64 hold_ns)
{
	count(LSC_FIRED);
	if (hold_ns)
		hist_add(cls, level, mode, LS_HOLD, hold_ns);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
