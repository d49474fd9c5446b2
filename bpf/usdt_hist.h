/* SPDX-License-Identifier: MIT */
/*
 * usdt_hist.h — the keyed log2 histogram shared by the small USDT tools
 * (commitlat, trimstat): key (what, idx) -> count, sum, max, bytes and log2
 * slots of a duration.  Included by BPF code (with uh_add()) and loaders.
 */
#ifndef GLASS_USDT_HIST_H
#define GLASS_USDT_HIST_H

#define UH_SLOTS 64

struct uh_key {
	__u32 what;		/* the tool's enum */
	__u32 idx;		/* phase, reason, device... */
};

struct uh_val {
	__u64 slots[UH_SLOTS];
	__u64 count;
	__u64 total_ns;
	__u64 max_ns;
	__u64 bytes;
	__u64 nodes;
};

#ifdef __BPF__
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct uh_key);
	__type(value, struct uh_val);
	__uint(max_entries, 256);
} uh_hists SEC(".maps");

static struct uh_val uh_zero;

static __always_inline void uh_add(__u32 what, __u32 idx, __u64 ns,
				   __u64 bytes, __u64 nodes)
{
	struct uh_key k = { what, idx };
	struct uh_val *v = bpf_map_lookup_elem(&uh_hists, &k);
	__u32 s = 0;
	__u64 x = ns;

	if (!v) {
		bpf_map_update_elem(&uh_hists, &k, &uh_zero, BPF_NOEXIST);
		v = bpf_map_lookup_elem(&uh_hists, &k);
		if (!v)
			return;
	}
	for (int i = 0; i < 64 && x; i++) {
		x >>= 1;
		s++;
	}
	__sync_fetch_and_add(&v->count, 1);
	__sync_fetch_and_add(&v->total_ns, ns);
	__sync_fetch_and_add(&v->bytes, bytes);
	__sync_fetch_and_add(&v->nodes, nodes);
	__sync_fetch_and_add(&v->slots[s & (UH_SLOTS - 1)], 1);
	if (ns > v->max_ns)
		v->max_ns = ns;
}
#endif

#endif
