// SPDX-License-Identifier: MIT
/*
 * glass-commitlat — glassfs commit latency: a log2 histogram, the per-phase
 * breakdown and the operations that blocked behind a commit, from the
 * glassfs:commit__* USDT probes.
 */
#include <argp.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/commitlat.h"
#include "commitlat.skel.h"
#include "tools/lib/bpfutil.h"
#include "tools/lib/hist.h"
#include "tools/lib/uhist.h"

static struct env {
	pid_t pid;
	const char *binary;
	unsigned duration;
	bool json, verbose;
} env;

const char *argp_program_version = "glass-commitlat 0.1";
static const char doc[] =
"glassfs commit latency, per-phase breakdown, operations blocked behind commits.\n"
"\n"
"USAGE: glass-commitlat (-p PID | -b BINARY) [-d SECONDS] [-j]\n"
"\n"
"EXAMPLES:\n"
"  glass-commitlat -p $(pidof glassfs) -d 30\n"
"  glass-commitlat -b /usr/local/bin/glassfs -j\n";

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
			fprintf(stderr, "glass-commitlat: invalid %s: %s\n",
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

/* fs/probes.d's numbering. */
static const char *const phases[] = { "?", "wait writers", "run refs",
	"free space", "write nodes", "flush", "super", "discard", "unpin" };
static const char *const reasons[] = { "?", "periodic", "sync", "unmount",
	"dirty threshold", "fsync", "other" };
#define NPHASES 8
#define NREASONS 6

static void report(struct commitlat_bpf *skel)
{
	struct uhist_entry *e;
	size_t n = uhist__read(bpf_map__fd(skel->maps.uh_hists), &e);
	const struct uh_val *c = uhist__get(e, n, CL_COMMIT, 0);
	const struct uh_val *w = uhist__get(e, n, CL_WAIT, 0);
	__u64 phase_total = 0;

	for (unsigned p = 1; p <= NPHASES; p++)
		phase_total += uhist__get(e, n, CL_PHASE, p)->total_ns;
	if (env.json) {
		printf("{\"commits\":%llu,\"nodes_written\":%llu,\"bytes_written\":%llu,"
		       "\"latency_ns\":{\"total\":%llu,\"max\":%llu,\"hist\":",
		       (unsigned long long)c->count, (unsigned long long)c->nodes,
		       (unsigned long long)c->bytes, (unsigned long long)c->total_ns,
		       (unsigned long long)c->max_ns);
		hist__print_json(stdout, c->slots, UH_SLOTS);
		printf("},\"reasons\":{");
		for (unsigned r = 1, first = 1; r <= NREASONS; r++) {
			const struct uh_val *v = uhist__get(e, n, CL_START, r);

			if (!v->count)
				continue;
			printf("%s\"%s\":%llu", first ? "" : ",", reasons[r],
			       (unsigned long long)v->count);
			first = 0;
		}
		printf("},\"phases\":[");
		for (unsigned p = 1, first = 1; p <= NPHASES; p++) {
			const struct uh_val *v = uhist__get(e, n, CL_PHASE, p);

			if (!v->count)
				continue;
			printf("%s{\"phase\":\"%s\",\"count\":%llu,\"total_ns\":%llu,\"max_ns\":%llu,\"hist\":",
			       first ? "" : ",", phases[p], (unsigned long long)v->count,
			       (unsigned long long)v->total_ns, (unsigned long long)v->max_ns);
			hist__print_json(stdout, v->slots, UH_SLOTS);
			printf("}");
			first = 0;
		}
		printf("],\"blocked\":{\"count\":%llu,\"total_ns\":%llu,\"max_ns\":%llu,\"hist\":",
		       (unsigned long long)w->count, (unsigned long long)w->total_ns,
		       (unsigned long long)w->max_ns);
		hist__print_json(stdout, w->slots, UH_SLOTS);
		printf("}}\n");
		free(e);
		return;
	}
	printf("commits %llu  nodes written %llu  bytes written %llu\n",
	       (unsigned long long)c->count, (unsigned long long)c->nodes,
	       (unsigned long long)c->bytes);
	printf("by reason:");
	for (unsigned r = 1; r <= NREASONS; r++) {
		const struct uh_val *v = uhist__get(e, n, CL_START, r);

		if (v->count)
			printf("  %s %llu", reasons[r], (unsigned long long)v->count);
	}
	printf("\n\nCommit latency:\n");
	hist__print_log2(stdout, c->slots, UH_SLOTS, "nsecs");
	if (c->count)
		printf("avg %.1f us, max %.1f us\n", c->total_ns / 1e3 / c->count,
		       c->max_ns / 1e3);
	printf("\nPer phase:\n%-16s %8s %12s %10s %10s %6s\n", "PHASE", "COUNT",
	       "TOTAL_us", "AVG_us", "MAX_us", "SHARE");
	for (unsigned p = 1; p <= NPHASES; p++) {
		const struct uh_val *v = uhist__get(e, n, CL_PHASE, p);

		if (!v->count)
			continue;
		printf("%-16s %8llu %12.1f %10.1f %10.1f %5.1f%%\n", phases[p],
		       (unsigned long long)v->count, v->total_ns / 1e3,
		       v->total_ns / 1e3 / v->count, v->max_ns / 1e3,
		       phase_total ? 100.0 * v->total_ns / phase_total : 0.0);
	}
	printf("\nOperations blocked behind a commit: %llu, total %.1f us, max %.1f us\n",
	       (unsigned long long)w->count, w->total_ns / 1e3, w->max_ns / 1e3);
	if (w->count)
		hist__print_log2(stdout, w->slots, UH_SLOTS, "nsecs");
	free(e);
}

int main(int argc, char **argv)
{
	static const struct argp argp = { .options = opts, .parser = parse_arg, .doc = doc };
	struct commitlat_bpf *skel;
	int err;

	if (argp_parse(&argp, argc, argv, 0, NULL, NULL))
		return 2;
	bpfutil__init("glass-commitlat", env.verbose);
	if (bpfutil__check_env())
		return 1;
	/* Catch Ctrl-C/SIGTERM from the start: a signal that arrives while
	 * loading must end the run, not be lost (or kill us unreported). */
	bpfutil__run_for(0);
	skel = commitlat_bpf__open_and_load();
	if (!skel) {
		fprintf(stderr, "glass-commitlat: cannot load the BPF programs: %s\n", strerror(errno));
		return 1;
	}
	struct uhist_probe p[] = {
		{ skel->progs.commit_start, "commit__start", NULL },
		{ skel->progs.commit_phase, "commit__phase", NULL },
		{ skel->progs.commit_end, "commit__end", NULL },
		{ skel->progs.commit_wait, "commit__wait", NULL },
	};
	const size_t np = sizeof(p) / sizeof(p[0]);

	err = uhist__trace(env.pid, env.binary, env.duration, p, np, "commits");
	if (!err)
		report(skel);
	commitlat_bpf__destroy(skel);
	return err ? 1 : 0;
}
