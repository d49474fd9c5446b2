// SPDX-License-Identifier: MIT
/*
 * glass-trimstat — glassfs discards: queued, issued and completed (bytes,
 * latency histogram) and the operations or commits that stalled waiting on
 * them, from the glassfs:discard__* USDT probes.
 */
#include <argp.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/trimstat.h"
#include "trimstat.skel.h"
#include "tools/lib/hist.h"
#include "tools/lib/uhist.h"

static struct uhist_env env = { .tool = "glass-trimstat" };

const char *argp_program_version = "glass-trimstat " GLASSFS_VERSION;
static const char doc[] =
"glassfs discards: bytes queued/issued/done, discard latency, stalls caused.\n"
"\n"
"USAGE: glass-trimstat (-p PID | -b BINARY) [-d SECONDS] [-j]\n"
"\n"
"EXAMPLES:\n"
"  glass-trimstat -p $(pidof glassfs) -d 30\n"
"  glass-trimstat -b /usr/local/bin/glassfs -j\n";

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
		printf("},\"stalls\":{");
		uhist__print_json_waits(stdout, st);
		printf("}}\n");
		free(e);
		return;
	}
	printf("%-8s %10s %14s\n", "", "COUNT", "BYTES");
	printf("%-8s %10llu %14llu\n", "queued", (unsigned long long)q.count, (unsigned long long)q.bytes);
	printf("%-8s %10llu %14llu\n", "issued", (unsigned long long)is.count, (unsigned long long)is.bytes);
	printf("%-8s %10llu %14llu\n", "done", (unsigned long long)d.count, (unsigned long long)d.bytes);
	printf("\n");
	uhist__print_latency(stdout, "Discard latency", &d);
	printf("\n");
	uhist__print_waits(stdout, "Stalls waiting on discards", st);
	free(e);
}

int main(int argc, char **argv)
{
	static const struct argp argp = {
		.options = uhist_options, .parser = uhist__parse_arg, .doc = doc,
	};
	struct trimstat_bpf *skel;
	int err;

	if (argp_parse(&argp, argc, argv, 0, NULL, &env))
		return 2;
	if (uhist__start(&env))
		return 1;
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
