/* SPDX-License-Identifier: MIT */
/*
 * frames.h — a stack as an array of frame names, leaf first, built from
 * the addresses a BPF tool stored (bpf/stacktab.h) through THE symbolizer
 * (tools/lib/syms.h).  One way to name frames for every stack tool
 * (glass-offcputime, glass-profile), so their folded lines agree: kernel
 * frames suffixed "_[k]" in folded output, the tracer's own frames
 * dropped, a run of unresolved user frames as one "[unknown]", an address
 * in a mapped file without a symbol as "[file]".
 */
#ifndef GLASS_FRAMES_H
#define GLASS_FRAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FRAMES_MAX_DEPTH	127	/* STACK_MAX_DEPTH */
#define FRAMES_MAX		(2 * FRAMES_MAX_DEPTH + 8)

struct ksyms;
struct syms_cache;

struct frames {
	const char *f[FRAMES_MAX];	/* leaf first */
	char *owned[FRAMES_MAX];	/* what frames__reset() frees */
	size_t n;
};

/* Append name (owned: freed by frames__reset(), or NULL); past
 * FRAMES_MAX the frame is dropped (and owned freed). */
void frames__push(struct frames *fr, const char *name, char *owned);
void frames__reset(struct frames *fr);
/* Kernel addresses (leaf first, ends at the first 0 or the depth limit),
 * "_[k]"-suffixed when folded. */
void frames__kernel(struct frames *fr, const struct ksyms *ks,
		    const uint64_t *ips, bool folded);
/* User addresses of tgid (return addresses after the first: the call
 * site, ip - 1, is looked up). */
void frames__user(struct frames *fr, struct syms_cache *sc, int tgid,
		  const uint64_t *ips);

#endif
