// SPDX-License-Identifier: MIT
/*
 * commitlat.bpf.c — commit latency, per-phase breakdown and the operations
 * that blocked behind commits, from the glassfs:commit__* USDT probes.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>
#include "commitlat.h"

SEC("usdt")
int BPF_USDT(commit_start, __u64 transid, int reason)
{
	uh_add(CL_START, reason, 0, 0, 0);
	return 0;
}

SEC("usdt")
int BPF_USDT(commit_phase, __u64 transid, int phase, __u64 dur_ns)
{
	uh_add(CL_PHASE, phase, dur_ns, 0, 0);
	return 0;
}

SEC("usdt")
int BPF_USDT(commit_end, __u64 transid, __u64 dur_ns, __u64 nodes, __u64 bytes)
{
	uh_add(CL_COMMIT, 0, dur_ns, bytes, nodes);
	return 0;
}

SEC("usdt")
int BPF_USDT(commit_wait, __u64 transid, __u64 dur_ns)
{
	uh_add(CL_WAIT, 0, dur_ns, 0, 0);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
