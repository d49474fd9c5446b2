/* SPDX-License-Identifier: MIT */
/*
 * uhist.h — read a bpf/usdt_hist.h map (key (what, idx) -> log2 histogram)
 * into memory, and the one run loop of the small USDT tools: attach a list
 * of programs to glassfs probes of a binary/process, trace until the
 * deadline, Ctrl-C or the target's exit.
 */
#ifndef GLASS_UHIST_H
#define GLASS_UHIST_H

#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include "bpf/usdt_hist.h"

struct bpf_program;
struct bpf_link;

struct uhist_entry {
	struct uh_key k;
	struct uh_val v;
};

/* All entries, sorted by (what, idx).  Returns the count; *out is malloc'd. */
size_t uhist__read(int map_fd, struct uhist_entry **out);
/* The entry (what, idx), or a static all-zero value. */
const struct uh_val *uhist__get(const struct uhist_entry *e, size_t n,
				__u32 what, __u32 idx);

struct uhist_probe {
	struct bpf_program *prog;
	const char *name;		/* e.g. "commit__end" */
	struct bpf_link *link;		/* out */
};

/* Resolve the target (-p PID / -b BINARY), check it has glassfs probes,
 * attach every probe.  0 or -errno (message printed). */
int uhist__attach(pid_t pid, const char *binary, struct uhist_probe *p,
		  size_t n);
void uhist__detach(struct uhist_probe *p, size_t n);
/* Trace for `seconds` (0: until Ctrl-C); stops early if pid exits. */
void uhist__wait(pid_t pid, unsigned seconds);
/* The whole run of a probe-histogram tool: attach, say "Tracing glassfs
 * WHAT...", wait, detach.  0 or -errno (message printed); the caller then
 * reads its maps and reports. */
int uhist__trace(pid_t pid, const char *binary, unsigned seconds,
		 struct uhist_probe *p, size_t n, const char *what);

#endif
