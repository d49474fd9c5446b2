/* SPDX-License-Identifier: MIT */
/*
 * uhist.h — what the small USDT histogram tools (glass-commitlat,
 * glass-trimstat) share: their command line (-p PID | -b BINARY,
 * -d SECONDS, -j, -v) and start-up checks; reading a bpf/usdt_hist.h map
 * (key (what, idx) -> log2 histogram) into memory; the one run loop
 * (attach a list of programs to glassfs probes of a binary/process, trace
 * until the deadline, Ctrl-C or the target's exit); and the report lines
 * they print alike for one latency histogram.
 */
#ifndef GLASS_UHIST_H
#define GLASS_UHIST_H

#include <argp.h>
#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>
#include "bpf/usdt_hist.h"

struct bpf_program;
struct bpf_link;

/*
 * The command line: a tool's argp is { .options = uhist_options,
 * .parser = uhist__parse_arg, .doc = ITS_DOC }, parsed with
 * argp_parse(&argp, argc, argv, 0, NULL, &env) where env.tool is set.
 * A bad number prints "TOOL: invalid PID: ARG" and exits 2.
 */
struct uhist_env {
	const char *tool;		/* "glass-NAME", for messages */
	pid_t pid;			/* -p */
	const char *binary;		/* -b */
	unsigned duration;		/* -d, 0: until Ctrl-C */
	bool json, verbose;		/* -j, -v */
};
extern const struct argp_option uhist_options[];
error_t uhist__parse_arg(int key, char *arg, struct argp_state *state);
/* After parsing: the libbpf print callback, root and BTF checks, and the
 * signal handlers (so a Ctrl-C while loading is not lost).  0 or -errno
 * (message printed). */
int uhist__start(const struct uhist_env *env);

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

/* Report pieces, in us.  Text: "TITLE:", the log2 histogram, then
 * "avg A us, max M us" when there were any. */
void uhist__print_latency(FILE *f, const char *title, const struct uh_val *v);
/* Text: "TITLE: N, total T us, max M us", then the histogram when N > 0. */
void uhist__print_waits(FILE *f, const char *title, const struct uh_val *v);
/* JSON members (no braces): "count":N,"total_ns":T,"max_ns":M,"hist":[...] */
void uhist__print_json_waits(FILE *f, const struct uh_val *v);

#endif
