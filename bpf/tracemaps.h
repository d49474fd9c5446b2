/* SPDX-License-Identifier: MIT */
/*
 * tracemaps.h — the maps every stack tracer's BPF side (profile,
 * offcputime) declares the same way, and their helpers:
 *
 *   counters  per-CPU __u64 counters (lost stacks, blocks recorded, ...),
 *             summed and printed by the loader at exit
 *             (bpfutil__percpu_sum); tracemaps_count(c) bumps one
 *   seen      the processes seen so far (tgid)
 *   events    a ring buffer to the loader: tracemaps_first_sight(tgid) is
 *             true once per process, and the caller then sends the event
 *             that makes the loader snapshot the process's maps
 *
 * Include it after the tool's other maps, with TRACEMAPS_COUNTERS (how
 * many counters) defined, and TRACEMAPS_SEEN (how many processes) for
 * seen and events (a tool that symbolizes no stacks, lockstat, has none).
 */
#ifndef GLASS_TRACEMAPS_H
#define GLASS_TRACEMAPS_H

#ifndef TRACEMAPS_COUNTERS
#error "define TRACEMAPS_COUNTERS before including tracemaps.h"
#endif

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, TRACEMAPS_COUNTERS);
} counters SEC(".maps");

static __always_inline void tracemaps_count(__u32 c)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &c);

	if (v)
		(*v)++;
}

#ifdef TRACEMAPS_SEEN
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u8);
	__uint(max_entries, TRACEMAPS_SEEN);
} seen SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 64 * 1024);
} events SEC(".maps");

/* True the first time tgid is seen (false also when `seen` is full: the
 * loader still snapshots the process at print time). */
static __always_inline bool tracemaps_first_sight(__u32 tgid)
{
	__u8 one = 1;

	if (bpf_map_lookup_elem(&seen, &tgid))
		return false;
	return !bpf_map_update_elem(&seen, &tgid, &one, BPF_NOEXIST);
}
#endif /* TRACEMAPS_SEEN */

#endif
