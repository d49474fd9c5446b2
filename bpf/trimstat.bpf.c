// SPDX-License-Identifier: MIT
/*
 * trimstat.bpf.c — discards queued, issued and completed (latency, bytes)
 * and the stalls they caused, from the glassfs:discard__* USDT probes.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>
#include "trimstat.h"

SEC("usdt")
int BPF_USDT(discard_queued, __u64 devid, __u64 offset, __u64 len)
{
	uh_add(TS_QUEUED, devid, 0, len, 0);
	return 0;
}

SEC("usdt")
int BPF_USDT(discard_issued, __u64 devid, __u64 offset, __u64 len)
{
	uh_add(TS_ISSUED, devid, 0, len, 0);
	return 0;
}

SEC("usdt")
int BPF_USDT(discard_done, __u64 devid, __u64 offset, __u64 len, __u64 dur_ns)
{
	uh_add(TS_DONE, devid, dur_ns, len, 0);
	return 0;
}

SEC("usdt")
int BPF_USDT(discard_stall, __u64 transid, __u64 dur_ns)
{
	uh_add(TS_STALL, 0, dur_ns, 0, 0);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
