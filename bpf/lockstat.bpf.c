// SPDX-License-Identifier: MIT
/*
 * lockstat.bpf.c — wait and hold times of every engine lock, from the
 * glassfs lock USDT probes (attached by the loader with
 * bpf_program__attach_usdt).  See lockstat.h for the cost model:
 *   lock_contended (always): wait histogram, contended instances, waiter
 *     stacks (-s) for waits of at least min_wait_ns;
 *   lock_acquired + lock_released (--all): acquisition counts, hold times.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>
#include "lockstat.h"

const volatile bool stacks = false;
const volatile __u64 min_wait_ns = 0;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct ls_hist);
	__uint(max_entries, LS_NHIST);
} hists SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u64);
	__type(value, struct ls_inst);
	__uint(max_entries, 65536);
} insts SEC(".maps");

STACKTAB(ustacks, 4096);		/* resized by the loader (-S) */

STACKTAB_SCRATCH(scratch, 1);

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct ls_skey);
	__type(value, struct ls_sval);
	__uint(max_entries, 4096);	/* resized by the loader (-S) */
} wstacks SEC(".maps");

/* counters: the tracers' shared per-CPU counters. */
#define TRACEMAPS_COUNTERS	LSC_NR
#include "tracemaps.h"

static __always_inline __u32 log2_slot(__u64 v)
{
	__u32 s = 0;

	for (int i = 0; i < 64 && v; i++) {
		v >>= 1;
		s++;
	}
	return s < LS_SLOTS ? s : LS_SLOTS - 1;
}

/* This CPU's histogram: plain increments, nobody else writes it. */
static __always_inline struct ls_hist *hist(int cls, int level, int mode, int kind)
{
	__u32 i = LS_HIST_IDX(cls, level, mode, kind);

	return bpf_map_lookup_elem(&hists, &i);
}

static __always_inline void hist_time(struct ls_hist *h, __u64 ns)
{
	h->events++;
	h->total_ns += ns;
	h->slots[log2_slot(ns) & (LS_SLOTS - 1)]++;
	if (ns > h->max_ns)
		h->max_ns = ns;
}

static __always_inline struct ls_inst *inst(__u64 addr, int cls, __u64 tree,
					    int level, int group)
{
	struct ls_inst *in, zero = {};

	in = bpf_map_lookup_elem(&insts, &addr);
	if (in) {
		in->cls = cls;		/* a node may be relabelled (level change) */
		in->level = level;
		return in;
	}
	zero.cls = cls;
	zero.level = level;
	zero.group = group;
	zero.tree = tree;
	if (bpf_map_update_elem(&insts, &addr, &zero, BPF_NOEXIST) &&
	    !bpf_map_lookup_elem(&insts, &addr)) {
		tracemaps_count(LSC_INST_FULL);
		return NULL;
	}
	return bpf_map_lookup_elem(&insts, &addr);
}

SEC("usdt")
int BPF_USDT(lock_contended, __u64 addr, int cls, __u64 tree, int level,
	     int group, int mode, __u64 wait_ns)
{
	struct ls_hist *h;
	struct ls_inst *in;

	tracemaps_count(LSC_FIRED);
	h = hist(cls, level, mode, LS_WAIT);
	if (h)
		hist_time(h, wait_ns);
	in = inst(addr, cls, tree, level, group);
	if (in) {
		__sync_fetch_and_add(&in->contended, 1);
		__sync_fetch_and_add(&in->wait_ns, wait_ns);
		if (wait_ns > in->max_wait_ns)
			in->max_wait_ns = wait_ns;	/* racy max: good enough */
	}
	if (!stacks)
		return 0;
	if (wait_ns < min_wait_ns) {
		tracemaps_count(LSC_BELOW_MIN);
		return 0;
	}
	{
		struct ls_skey sk = { cls, level, bpf_get_current_pid_tgid() >> 32 };
		struct ls_sval *sv, sz = {};
		struct stack_ips *buf;
		__u32 zero = 0;
		long bytes;

		buf = bpf_map_lookup_elem(&scratch, &zero);
		if (!buf)
			return 0;
		bytes = bpf_get_stack(ctx, buf->ips, sizeof(buf->ips), BPF_F_USER_STACK);
		sk.stack = stacktab_put(&ustacks, buf, bytes);
		if (!sk.stack) {
			tracemaps_count(LSC_STACK_LOST);
			return 0;
		}
		sv = bpf_map_lookup_elem(&wstacks, &sk);
		if (!sv) {
			if (bpf_map_update_elem(&wstacks, &sk, &sz, BPF_NOEXIST) &&
			    !bpf_map_lookup_elem(&wstacks, &sk)) {
				tracemaps_count(LSC_WSTACKS_FULL);
				return 0;
			}
			sv = bpf_map_lookup_elem(&wstacks, &sk);
			if (!sv)
				return 0;
		}
		__sync_fetch_and_add(&sv->wait_ns, wait_ns);
		__sync_fetch_and_add(&sv->count, 1);
	}
	return 0;
}

/* --all: every acquisition (counts) ... */
SEC("usdt")
int BPF_USDT(lock_acquired, __u64 addr, int cls, __u64 tree, int level,
	     int group, int mode)
{
	struct ls_hist *h;
	struct ls_inst *in;

	tracemaps_count(LSC_FIRED);
	h = hist(cls, level, mode, LS_WAIT);
	if (h)
		h->count++;
	in = inst(addr, cls, tree, level, group);
	if (in)
		__sync_fetch_and_add(&in->acquired, 1);
	return 0;
}

/* ... and every release (hold times of exclusive holds). */
SEC("usdt")
int BPF_USDT(lock_released, __u64 addr, int cls, __u64 tree, int level,
	     int group, int mode, __u64 hold_ns)
{
	struct ls_hist *h;

	tracemaps_count(LSC_FIRED);
	if (!hold_ns)
		return 0;
	h = hist(cls, level, mode, LS_HOLD);
	if (h) {
		h->count++;
		hist_time(h, hold_ns);
	}
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
