// SPDX-License-Identifier: MIT
/* uhist.c — see uhist.h. */
#include "tools/lib/uhist.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/lib/args.h"
#include "tools/lib/bpfutil.h"
#include "tools/lib/hist.h"

const struct argp_option uhist_options[] = {
	{ "pid", 'p', "PID", 0, "Trace this glassfs process (or the daemon of a glassfs mount point, e.g. -p /mnt/g)", 0 },
	{ "binary", 'b', "PATH", 0, "Trace every process running this binary", 0 },
	{ "duration", 'd', "SECONDS", 0, "Trace for SECONDS (default: until Ctrl-C)", 0 },
	{ "json", 'j', NULL, 0, "JSON output", 0 },
	{ "verbose", 'v', NULL, 0, "Verbose libbpf output", 0 },
	{},
};

error_t uhist__parse_arg(int key, char *arg, struct argp_state *state)
{
	struct uhist_env *env = state->input;

	switch (key) {
	case 'p': env->pid = args__pid(env->tool, arg); break;
	case 'd': env->duration = args__num(env->tool, arg, "duration", 1, INT_MAX); break;
	case 'b': env->binary = arg; break;
	case 'j': env->json = true; break;
	case 'v': env->verbose = true; break;
	case ARGP_KEY_ARG: args__unexpected(state, arg); break;
	default: return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

int uhist__start(const struct uhist_env *env)
{
	int err;

	bpfutil__init(env->tool, env->verbose);
	err = bpfutil__check_env();
	if (err)
		return err;
	bpfutil__run_for(0);
	return 0;
}

static int entry_cmp(const void *a, const void *b)
{
	const struct uhist_entry *x = a, *y = b;

	if (x->k.what != y->k.what)
		return x->k.what < y->k.what ? -1 : 1;
	return x->k.idx < y->k.idx ? -1 : x->k.idx > y->k.idx;
}

size_t uhist__read(int fd, struct uhist_entry **out)
{
	void *v;
	size_t n = bpfutil__map_read(fd, sizeof(struct uh_key),
				     offsetof(struct uhist_entry, v),
				     sizeof(struct uhist_entry), NULL, &v);

	if (n)
		qsort(v, n, sizeof(struct uhist_entry), entry_cmp);
	*out = v;
	return n;
}

const struct uh_val *uhist__get(const struct uhist_entry *e, size_t n,
				__u32 what, __u32 idx)
{
	static const struct uh_val zero;

	for (size_t i = 0; i < n; i++)
		if (e[i].k.what == what && e[i].k.idx == idx)
			return &e[i].v;
	return &zero;
}

int uhist__attach(pid_t pid, const char *binary, struct uhist_probe *p,
		  size_t n)
{
	char bin[PATH_MAX];
	int c;

	if (!pid && !binary) {
		fprintf(stderr, "%s: give -p PID or -b BINARY (see --help)\n",
			bpfutil__tool());
		return -EINVAL;
	}
	if (pid && bpfutil__check_pid(pid, false))
		return -ESRCH;
	if (bpfutil__usdt_binary(pid, binary, bin, sizeof(bin)))
		return -ENOENT;
	c = bpfutil__usdt_count(bin, "glassfs");
	if (c <= 0)
		return c ? c : -ENOENT;
	for (size_t i = 0; i < n; i++) {
		p[i].link = bpfutil__usdt_attach(p[i].prog, pid ? pid : -1, bin,
						 "glassfs", p[i].name);
		if (!p[i].link) {
			uhist__detach(p, i);
			return -ENOENT;
		}
	}
	return 0;
}

void uhist__detach(struct uhist_probe *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		bpf_link__destroy(p[i].link);
		p[i].link = NULL;
	}
}

void uhist__wait(pid_t pid, unsigned seconds)
{
	bpfutil__run_for(seconds);
	while (!bpfutil__exiting()) {
		usleep(100000);
		if (pid && kill(pid, 0) && errno == ESRCH) {
			fprintf(stderr, "%s: process %d exited\n", bpfutil__tool(), pid);
			break;
		}
	}
}

int uhist__trace(pid_t pid, const char *binary, unsigned seconds,
		 struct uhist_probe *p, size_t n, const char *what)
{
	int err = uhist__attach(pid, binary, p, n);

	if (err)
		return err;
	fprintf(stderr, "Tracing glassfs %s... %s\n", what,
		seconds ? "" : "Hit Ctrl-C to end.");
	uhist__wait(pid, seconds);
	uhist__detach(p, n);
	return 0;
}

void uhist__print_latency(FILE *f, const char *title, const struct uh_val *v)
{
	fprintf(f, "%s:\n", title);
	hist__print_log2(f, v->slots, UH_SLOTS, "nsecs");
	if (v->count)
		fprintf(f, "avg %.1f us, max %.1f us\n", v->total_ns / 1e3 / v->count,
			v->max_ns / 1e3);
}

void uhist__print_waits(FILE *f, const char *title, const struct uh_val *v)
{
	fprintf(f, "%s: %llu, total %.1f us, max %.1f us\n", title,
		(unsigned long long)v->count, v->total_ns / 1e3, v->max_ns / 1e3);
	if (v->count)
		hist__print_log2(f, v->slots, UH_SLOTS, "nsecs");
}

void uhist__print_json_waits(FILE *f, const struct uh_val *v)
{
	fprintf(f, "\"count\":%llu,\"total_ns\":%llu,\"max_ns\":%llu,\"hist\":",
		(unsigned long long)v->count, (unsigned long long)v->total_ns,
		(unsigned long long)v->max_ns);
	hist__print_json(f, v->slots, UH_SLOTS);
}
