/* SPDX-License-Identifier: MIT */
/*
 * stacktab.h — the hashed stack table the BPF tools share (offcputime,
 * lockstat -s): one implementation, for the BPF side and the loaders.
 *
 * A stack (kernel or user addresses, leaf first) is stored once in a
 * BPF_MAP_TYPE_HASH keyed by a 64-bit FNV-1a hash of its addresses; a
 * record names its stack by that hash, 0 meaning "none".  Unlike a
 * STACK_TRACE map (bpf_get_stackid), whose buckets collide long before it
 * is full (-EEXIST: the stack is lost), this loses a stack only when the
 * table is really full, and it is not preallocated, so the loader can size
 * it from the workload.  User space reads a stack with
 * bpf_map_lookup_elem(fd, &hash, ips): STACK_MAX_DEPTH addresses, the
 * stack ends at the first 0 (or at the depth limit).
 */
#ifndef GLASS_STACKTAB_H
#define GLASS_STACKTAB_H

#define STACK_MAX_DEPTH		127	/* PERF_MAX_STACK_DEPTH */

struct stack_ips {
	__u64 ips[STACK_MAX_DEPTH];
};

#ifdef __bpf__
/* The table: declare one per tool with STACKTAB(name, max_entries). */
#define STACKTAB(name, entries)					\
	struct {						\
		__uint(type, BPF_MAP_TYPE_HASH);		\
		__uint(map_flags, BPF_F_NO_PREALLOC);		\
		__type(key, __u64);				\
		__type(value, struct stack_ips);		\
		__uint(max_entries, entries);			\
	} name SEC(".maps")

/* Per-CPU buffers a stack is read into before stacktab_put(): one slot for
 * each program (or stack) that may be in flight on a CPU at once. */
#define STACKTAB_SCRATCH(name, slots)				\
	struct {						\
		__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);	\
		__type(key, __u32);				\
		__type(value, struct stack_ips);		\
		__uint(max_entries, slots);			\
	} name SEC(".maps")

/*
 * Store the first bytes / 8 addresses of buf (as bpf_get_stack() returns
 * them) in the table.  buf gets one terminating 0 after them (readers stop
 * there; the tail is not cleared).  Returns the stack's hash (never 0), or
 * 0 when there is no stack (bytes <= 0) or the table is full (or the
 * kernel could not allocate an entry): the caller counts that.  A stack
 * that fills the depth limit (bytes / 8 >= STACK_MAX_DEPTH) is truncated:
 * the caller counts that too.
 */
static __always_inline __u64 stacktab_put(void *tab, struct stack_ips *buf, long bytes)
{
	__u64 h = 0xcbf29ce484222325ULL;
	int n = bytes > 0 ? (__u64)bytes / 8 : 0;	/* BPF has no signed division */

	if (n <= 0)
		return 0;
	for (int i = 0; i < STACK_MAX_DEPTH; i++) {
		if (i >= n)
			break;
		h ^= buf->ips[i];
		h *= 0x100000001b3ULL;
	}
	if (n < STACK_MAX_DEPTH) {
		__u32 k = n;

		barrier_var(k);	/* keep the bound check on k itself */
		if (k < STACK_MAX_DEPTH)
			buf->ips[k] = 0;
	}
	if (!h)
		h = 1;
	if (bpf_map_lookup_elem(tab, &h))
		return h;
	if (bpf_map_update_elem(tab, &h, buf, BPF_NOEXIST) &&
	    !bpf_map_lookup_elem(tab, &h))
		return 0;
	return h;
}
#endif /* __bpf__ */

#endif
