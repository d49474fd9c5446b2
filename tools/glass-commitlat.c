// SPDX-License-Identifier: MIT
/*
 * glass-commitlat — glassfs commit latency: a log2 histogram, the per-phase
 * breakdown and the operations that blocked behind a commit, from the
 * glassfs:commit__* USDT probes.
 */
#include <argp.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/commitlat.h"
#include "commitlat.skel.h"
#include "tools/lib/hist.h"
#include "tools/lib/uhist.h"

static struct uhist_env env = { .tool = "glass-commitlat" };

const char *argp_program_version = "glass-commitlat " GLASSFS_VERSION;
static const char doc[] =
"glassfs commit latency, per-phase breakdown, operations blocked behind commits.\n"
"\n"
"USAGE: glass-commitlat (-p PID | -b BINARY) [-d SECONDS] [-j]\n"
"\n"
"EXAMPLES:\n"
"  glass-commitlat -p $(pidof glassfs) -d 30\n"
"  glass-commitlat -b /usr/local/bin/glassfs -j\n";

/* fs/base/probes.d's numbering. */
static const char *const phases[] = { "?", "wait writers", "run refs",
	"free space", "write nodes", "flush", "super", "discard", "unpin" };
static const char *const reasons[] = { "?", "periodic", "sync", "unmount",
	"dirty threshold", "fsync", "other", "space" };
#define NPHASES 8
#define NREASONS 7

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
			printf("%s{\"phase\":\"%s\",", first ? "" : ",", phases[p]);
			uhist__print_json_waits(stdout, v);
			printf("}");
			first = 0;
		}
		printf("],\"blocked\":{");
		uhist__print_json_waits(stdout, w);
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
	printf("\n\n");
	uhist__print_latency(stdout, "Commit latency", c);
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
	printf("\n");
	uhist__print_waits(stdout, "Operations blocked behind a commit", w);
	free(e);
}

int main(int argc, char **argv)
{
	static const struct argp argp = {
		.options = uhist_options, .parser = uhist__parse_arg, .doc = doc,
	};
	struct commitlat_bpf *skel;
	int err;

	if (argp_parse(&argp, argc, argv, 0, NULL, &env))
		return 2;
	if (uhist__start(&env))
		return 1;
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
