// SPDX-License-Identifier: MIT
/*
 * glass-trimstat — glassfs discards: queued, issued and completed (bytes,
 * latency histogram) and the operations or commits that stalled waiting on
 * them, from the glassfs:discard__* USDT probes.
 */
#include <argp.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/trimstat.h"
#include "trimstat.skel.h"
#include "tools/lib/bpfutil.h"
#include "tools/lib/hist.h"
#include "tools/lib/uhist.h"

static struct env {
	pid_t pid;
	const char *binary;
	unsigned duration;
	bool json, verbose;
} env;

const char *argp_program_version = "glass-trimstat 0.1";
static const char doc[] =
"glassfs discards: bytes queued/issued/done, discard latency, stalls caused.\n"
"\n"
"USAGE: glass-trimstat (-p PID | -b BINARY) [-d SECONDS] [-j]\n"
"\n"
"EXAMPLES:\n"
"  glass-trimstat -p $(pidof glassfs) -d 30\n"
"  glass-trimstat -b /usr/local/bin/glassfs -j\n";

static const struct argp_option opts[] = {
	{ "pid", 'p', "PID", 0, "Trace this glassfs process", 0 },
	{ "binary", 'b', "PATH", 0, "Trace every process running this binary", 0 },
	{ "duration", 'd', "SECONDS", 0, "Trace for SECONDS (default: until Ctrl-C)", 0 },
	{ "json", 'j', NULL, 0, "JSON output", 0 },
	{ "verbose", 'v', NULL, 0, "Verbose libbpf output", 0 },
	{},
};

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	char *end;

	switch (key) {
	case 'p':
	case 'd':
		errno = 0;
		long v = strtol(arg, &end, 10);
		if (errno || *end || v <= 0 || v > INT_MAX) {
			fprintf(stderr, "glass-trimstat: invalid %s: %s\n",
				key == 'p' ? "PID" : "duration", arg);
			exit(2);
		}
		if (key == 'p')
			env.pid = v;
		else
			env.duration = v;
		break;
	case 'b': env.binary = arg; break;
	case 'j': env.json = true; break;
	case 'v': env.verbose = true; break;
	case ARGP_KEY_ARG: argp_usage(state); break;
	default: return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static void report(struct trimstat_bpf *skel)
{
	struct uhist_entry *e;
	size_t n = uhist__read(bpf_map__fd(skel->maps.uh_hists), &e);
	const struct uh_val *st = uhist__get(e, n, TS_STALL, 0);
	struct uh_val q = { 0 }, is = { 0 }, d = { 0 };

	/* Totals over devices; the latency histogram is summed too. */
	for (size_t i = 0; i < n; i++) {
		struct uh_val *t = e[i].k.what == TS_QUEUED ? &q :
				   e[i].k.what == TS_ISSUED ? &is :
				   e[i].k.what == TS_DONE ? &d : NULL;

		if (!t)
			continue;
		t->count += e[i].v.count;
		t->bytes += e[i].v.bytes;
		t->total_ns += e[i].v.total_ns;
		if (e[i].v.max_ns > t->max_ns)
			t->max_ns = e[i].v.max_ns;
		for (int s = 0; s < UH_SLOTS; s++)
			t->slots[s] += e[i].v.slots[s];
	}
	if (env.json) {
		printf("{\"queued\":{\"count\":%llu,\"bytes\":%llu},"
		       "\"issued\":{\"count\":%llu,\"bytes\":%llu},"
		       "\"done\":{\"count\":%llu,\"bytes\":%llu,\"total_ns\":%llu,\"max_ns\":%llu,\"hist\":",
		       (unsigned long long)q.count, (unsigned long long)q.bytes,
		       (unsigned long long)is.count, (unsigned long long)is.bytes,
		       (unsigned long long)d.count, (unsigned long long)d.bytes,
		       (unsigned long long)d.total_ns, (unsigned long long)d.max_ns);
		hist__print_json(stdout, d.slots, UH_SLOTS);
		printf("},\"stalls\":{\"count\":%llu,\"total_ns\":%llu,\"max_ns\":%llu,\"hist\":",
		       (unsigned long long)st->count, (unsigned long long)st->total_ns,
		       (unsigned long long)st->max_ns);
		hist__print_json(stdout, st->slots, UH_SLOTS);
		printf("}}\n");
		free(e);
		return;
	}
	printf("%-8s %10s %14s\n", "", "COUNT", "BYTES");
	printf("%-8s %10llu %14llu\n", "queued", (unsigned long long)q.count, (unsigned long long)q.bytes);
	printf("%-8s %10llu %14llu\n", "issued", (unsigned long long)is.count, (unsigned long long)is.bytes);
	printf("%-8s %10llu %14llu\n", "done", (unsigned long long)d.count, (unsigned long long)d.bytes);
	printf("\nDiscard latency:\n");
	hist__print_log2(stdout, d.slots, UH_SLOTS, "nsecs");
	if (d.count)
		printf("avg %.1f us, max %.1f us\n", d.total_ns / 1e3 / d.count, d.max_ns / 1e3);
	printf("\nStalls waiting on discards: %llu, total %.1f us, max %.1f us\n",
	       (unsigned long long)st->count, st->total_ns / 1e3, st->max_ns / 1e3);
	if (st->count)
		hist__print_log2(stdout, st->slots, UH_SLOTS, "nsecs");
	free(e);
}

int main(int argc, char **argv)
{
	static const struct argp argp = { .options = opts, .parser = parse_arg, .doc = doc };
	struct trimstat_bpf *skel;
	int err;

	if (argp_parse(&argp, argc, argv, 0, NULL, NULL))
		return 2;
	bpfutil__init("glass-trimstat", env.verbose);
	if (bpfutil__check_env())
		return 1;
	/* Catch Ctrl-C/SIGTERM from the start: a signal that arrives while
	 * loading must end the run, not be lost (or kill us unreported). */
	bpfutil__run_for(0);
	skel = trimstat_bpf__open_and_load();
	if (!skel) {
		fprintf(stderr, "glass-trimstat: cannot load the BPF programs: %s\n", strerror(errno));
		return 1;
	}
	struct uhist_probe p[] = {
		{ skel->progs.discard_queued, "discard__queued", NULL },
		{ skel->progs.discard_issued, "discard__issued", NULL },
		{ skel->progs.discard_done, "discard__done", NULL },
		{ skel->progs.discard_stall, "discard__stall", NULL },
	};
	const size_t np = sizeof(p) / sizeof(p[0]);

	err = uhist__trace(env.pid, env.binary, env.duration, p, np, "discards");
	if (!err)
		report(skel);
	trimstat_bpf__destroy(skel);
	return err ? 1 : 0;
}
