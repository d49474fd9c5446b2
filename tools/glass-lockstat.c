// SPDX-License-Identifier: MIT
/*
 * glass-lockstat — wait and hold times of glassfs engine locks, per lock
 * class and B-tree level, from the glassfs:lock__* USDT probes; the most
 * contended lock instances; optionally the waiters' user stacks.
 *
 * By default only glassfs:lock__contended is attached (fired after a real
 * wait), so uncontended acquisitions cost the traced daemon nothing; --all
 * adds lock__acquired/lock__released for acquisition counts and hold times,
 * at the price of a trap per acquisition and per release (bpf/lockstat.h).
 */
#include <argp.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <signal.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bpf/lockstat.h"
#include "lockstat.skel.h"
#include "fs/base/lock.h"
#include "tools/lib/args.h"
#include "tools/lib/bpfutil.h"
#include "tools/lib/frames.h"
#include "tools/lib/hist.h"
#include "tools/lib/mmapwatch.h"
#include "tools/lib/syms.h"

static struct env {
	pid_t pid;
	const char *binary;
	unsigned duration, top;
	unsigned long stack_entries;
	__u64 min_wait_us;
	bool stacks, hists, json, verbose, all;
} env = { .top = 10, .stack_entries = 16384 };

const char *argp_program_version = "glass-lockstat " GLASSFS_VERSION;
static const char doc[] =
"Engine lock wait/hold times per class and B-tree level (glassfs USDT).\n"
"\n"
"USAGE: glass-lockstat (-p PID | -b BINARY) [-a] [-d SECONDS] [-n TOP] [-s [-m MIN_US]] [-H] [-j]\n"
"\n"
"EXAMPLES:\n"
"  glass-lockstat -p $(pidof glassfs) -d 10      # tables\n"
"  glass-lockstat -p $(pidof glassfs) -d 10 -H   # with log2 histograms\n"
"  glass-lockstat -p $(pidof glassfs) -a -d 10   # + acquisitions and hold times (costly)\n"
"  glass-lockstat -p $(pidof glassfs) -s -m 100  # waiter stacks of waits >= 100 us\n"
"  glass-lockstat -b /usr/local/bin/glassfs -s   # every glassfs process, waiter stacks\n"
"  glass-lockstat -p 185 -d 5 -j                 # JSON\n";

static const struct argp_option opts[] = {
	{ "pid", 'p', "PID", 0, "Trace this glassfs process (or the daemon of a glassfs mount point, e.g. -p /mnt/g)", 0 },
	{ "binary", 'b', "PATH", 0, "Trace every process running this binary", 0 },
	{ "duration", 'd', "SECONDS", 0, "Trace for SECONDS (default: until Ctrl-C)", 0 },
	{ "top", 'n', "N", 0, "Show the N most contended lock instances (default 10)", 0 },
	{ "all", 'a', NULL, 0, "Every acquisition and release too: acquisition counts and hold times (a trap per lock operation: slows the daemon down several times)", 0 },
	{ "stacks", 's', NULL, 0, "Record the waiters' user stacks", 0 },
	{ "min-wait", 'm', "MIN_US", 0, "With -s: stacks only for waits of at least MIN_US us", 0 },
	{ "stack-storage-size", 'S', "N", 0, "Distinct waiter stacks kept (default 16384); losses are reported", 0 },
	{ "histograms", 'H', NULL, 0, "Print log2 histograms of wait and hold times", 0 },
	{ "json", 'j', NULL, 0, "JSON output", 0 },
	{ "verbose", 'v', NULL, 0, "Verbose libbpf output", 0 },
	{},
};

static long parse_num(const char *s, const char *what, long lo, long hi)
{
	return args__num("glass-lockstat", s, what, lo, hi);
}

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	switch (key) {
	case 'p': env.pid = args__pid("glass-lockstat", arg); break;
	case 'b': env.binary = arg; break;
	case 'd': env.duration = parse_num(arg, "duration", 1, INT_MAX); break;
	case 'n': env.top = parse_num(arg, "top", 0, 100000); break;
	case 's': env.stacks = true; break;
	case 'a': env.all = true; break;
	case 'm': env.min_wait_us = parse_num(arg, "min wait", 0, LONG_MAX / 1000); break;
	case 'S': env.stack_entries = parse_num(arg, "stack storage size", 16, 1 << 22); break;
	case 'H': env.hists = true; break;
	case 'j': env.json = true; break;
	case 'v': env.verbose = true; break;
	case ARGP_KEY_ARG: args__unexpected(state, arg); break;
	default: return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* fs/base/lock.h names the classes; bpf/lockstat.h keeps LS_CLASSES of them. */
_Static_assert(GLOCK_CLASS_NR <= LS_CLASSES, "bpf/lockstat.h: raise LS_CLASSES");

static const char *class_name(int c)
{
	const char *s = glock_class_str(c);

	return s ? s : "unknown";
}

struct row {
	int cls, level, mode;
	struct ls_hist wait, hold;
};

static int row_cmp(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	if (x->wait.total_ns != y->wait.total_ns)
		return x->wait.total_ns < y->wait.total_ns ? 1 : -1;
	return x->hold.total_ns < y->hold.total_ns ? 1 : x->hold.total_ns > y->hold.total_ns ? -1 : 0;
}

struct inst {
	__u64 addr;
	struct ls_inst v;
};

struct stk {
	struct ls_skey k;
	struct ls_sval v;
};

/* Sum the per-CPU histograms; one row per (class, level, mode) seen. */
static size_t collect_rows(int fd, struct row **out)
{
	int ncpu = libbpf_num_possible_cpus();
	struct ls_hist *pc = calloc(ncpu > 0 ? ncpu : 1, sizeof(*pc));
	struct row *rows = calloc(LS_NHIST / 2, sizeof(*rows));
	size_t n = 0;

	*out = rows;
	if (!pc || !rows) {
		free(pc);
		return 0;
	}
	for (int cls = 0; cls < LS_CLASSES; cls++)
	for (int level = -1; level < LS_LEVELS - 1; level++)
	for (int mode = 0; mode < 2; mode++) {
		struct row *r = &rows[n];
		bool any = false;

		for (int kind = LS_WAIT; kind <= LS_HOLD; kind++) {
			__u32 idx = LS_HIST_IDX(cls, level, mode, kind);
			struct ls_hist *h = kind == LS_WAIT ? &r->wait : &r->hold;

			if (bpf_map_lookup_elem(fd, &idx, pc))
				continue;
			for (int c = 0; c < ncpu; c++) {
				for (int i = 0; i < LS_SLOTS; i++)
					h->slots[i] += pc[c].slots[i];
				h->count += pc[c].count;
				h->events += pc[c].events;
				h->total_ns += pc[c].total_ns;
				if (pc[c].max_ns > h->max_ns)
					h->max_ns = pc[c].max_ns;
			}
			any |= h->count || h->events;
		}
		if (any) {
			r->cls = cls;
			r->level = level;
			r->mode = mode;
			n++;
		} else {
			memset(r, 0, sizeof(*r));
		}
	}
	free(pc);
	qsort(rows, n, sizeof(*rows), row_cmp);
	return n;
}

static bool inst_contended(const void *e)
{
	return ((const struct inst *)e)->v.contended != 0;
}

static size_t collect_insts(int fd, struct inst **out)
{
	return bpfutil__map_top(fd, sizeof(__u64), offsetof(struct inst, v), sizeof(struct inst),
				inst_contended, offsetof(struct inst, v.wait_ns), (void **)out);
}

static size_t collect_stacks(int fd, struct stk **out)
{
	return bpfutil__map_top(fd, sizeof(struct ls_skey), offsetof(struct stk, v), sizeof(struct stk),
				NULL, offsetof(struct stk, v.wait_ns), (void **)out);
}

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", *s);
		else
			putchar(*s);
	}
	putchar('"');
}

/*
 * Acquisitions are counted only with -a (lock__acquired attached).  Text:
 * the count, or "-".  JSON: the count and "acquired_counted":true, or 0
 * and "acquired_counted":false (readers that want an integer still parse).
 */
struct acq_buf { char s[48]; };

static const char *acquired_text(struct acq_buf *b, __u64 n)
{
	if (!env.all)
		return "-";
	snprintf(b->s, sizeof(b->s), "%llu", (unsigned long long)n);
	return b->s;
}

static const char *acquired_json(struct acq_buf *b, __u64 n)
{
	if (!env.all)
		return "0,\"acquired_counted\":false";
	snprintf(b->s, sizeof(b->s), "%llu,\"acquired_counted\":true",
		 (unsigned long long)n);
	return b->s;
}

static __u64 avg(const struct ls_hist *h) { return h->events ? h->total_ns / h->events : 0; }

/* A waiter's stack, named as every stack tool names frames (frames.h:
 * a run of unresolved frames as one [unknown], none for the garbage a
 * walk through frameless code ends with). */
static void print_stack(struct syms_cache *sc, int smfd, const struct stk *s,
			bool json)
{
	static struct frames fr;
	__u64 ips[LS_MAX_DEPTH] = { 0 };
	__u64 id = s->k.stack;

	if (bpf_map_lookup_elem(smfd, &id, ips))
		return;
	frames__reset(&fr);
	frames__user(&fr, sc, s->k.tgid, (const uint64_t *)ips);
	for (size_t i = 0; i < fr.n; i++) {
		if (json) {
			printf("%s", i ? "," : "");
			json_str(fr.f[i]);
		} else {
			printf("      %s\n", fr.f[i]);
		}
	}
	frames__reset(&fr);
}

static void report(struct lockstat_bpf *skel, struct syms_cache *sc)
{
	struct row *rows;
	struct inst *insts;
	struct stk *stks = NULL;
	size_t nr = collect_rows(bpf_map__fd(skel->maps.hists), &rows);
	size_t ni = collect_insts(bpf_map__fd(skel->maps.insts), &insts);
	size_t ns = env.stacks ? collect_stacks(bpf_map__fd(skel->maps.wstacks), &stks) : 0;
	int smfd = bpf_map__fd(skel->maps.ustacks);
	size_t top = ni < env.top ? ni : env.top;

	if (env.json) {
		printf("{\"classes\":[");
		for (size_t i = 0; i < nr; i++) {
			struct row *r = &rows[i];
			struct acq_buf acq;

			printf("%s{\"class\":\"%s\",\"level\":%d,\"mode\":\"%s\","
			       "\"acquired\":%s,\"contended\":%llu,\"wait_ns\":%llu,"
			       "\"wait_max_ns\":%llu,\"hold_ns\":%llu,\"holds\":%llu,"
			       "\"hold_max_ns\":%llu,\"wait_hist\":",
			       i ? "," : "", class_name(r->cls), r->level,
			       r->mode ? "write" : "read",
			       acquired_json(&acq, r->wait.count),
			       (unsigned long long)r->wait.events,
			       (unsigned long long)r->wait.total_ns,
			       (unsigned long long)r->wait.max_ns,
			       (unsigned long long)r->hold.total_ns,
			       (unsigned long long)r->hold.events,
			       (unsigned long long)r->hold.max_ns);
			hist__print_json(stdout, r->wait.slots, LS_SLOTS);
			printf(",\"hold_hist\":");
			hist__print_json(stdout, r->hold.slots, LS_SLOTS);
			printf("}");
		}
		printf("],\"instances\":[");
		for (size_t i = 0; i < top; i++) {
			struct inst *in = &insts[i];
			struct acq_buf acq;

			printf("%s{\"addr\":\"0x%llx\",\"class\":\"%s\",\"tree\":%llu,"
			       "\"level\":%d,\"group\":%d,\"acquired\":%s,"
			       "\"contended\":%llu,\"wait_ns\":%llu,\"wait_max_ns\":%llu}",
			       i ? "," : "", (unsigned long long)in->addr,
			       class_name(in->v.cls), (unsigned long long)in->v.tree,
			       in->v.level, in->v.group,
			       acquired_json(&acq, in->v.acquired),
			       (unsigned long long)in->v.contended,
			       (unsigned long long)in->v.wait_ns,
			       (unsigned long long)in->v.max_wait_ns);
		}
		printf("],\"mode\":\"%s\",\"stacks\":[", env.all ? "all" : "contended");
		for (size_t i = 0; i < ns && i < env.top; i++) {
			printf("%s{\"class\":\"%s\",\"level\":%d,\"wait_ns\":%llu,\"count\":%llu,\"frames\":[",
			       i ? "," : "", class_name(stks[i].k.cls), stks[i].k.level,
			       (unsigned long long)stks[i].v.wait_ns,
			       (unsigned long long)stks[i].v.count);
			print_stack(sc, smfd, &stks[i], true);
			printf("]}");
		}
		printf("]}\n");
		goto out;
	}
	printf("Lock waits%s by class and B-tree level (times in us)%s:\n",
	       env.all ? " and holds" : "",
	       env.all ? "" : "; contended acquisitions only, -a for all and hold times");
	printf("%-7s %5s %-5s %10s %10s %12s %9s %9s %9s %12s %9s %9s\n",
	       "CLASS", "LEVEL", "MODE", "ACQUIRED", "CONTENDED", "WAIT_TOTAL",
	       "WAIT_AVG", "WAIT_P99", "WAIT_MAX", "HOLD_TOTAL", "HOLD_AVG", "HOLD_MAX");
	for (size_t i = 0; i < nr; i++) {
		struct row *r = &rows[i];
		struct acq_buf acq;
		char hold[48] = "           -         -         -";

		if (env.all)
			snprintf(hold, sizeof(hold), "%12.1f %9.1f %9.1f", r->hold.total_ns / 1e3,
				 avg(&r->hold) / 1e3, r->hold.max_ns / 1e3);
		printf("%-7s %5d %-5s %10s %10llu %12.1f %9.1f %9.1f %9.1f %s\n",
		       class_name(r->cls), r->level, r->mode ? "write" : "read",
		       acquired_text(&acq, r->wait.count),
		       (unsigned long long)r->wait.events,
		       r->wait.total_ns / 1e3, avg(&r->wait) / 1e3,
		       hist__percentile(r->wait.slots, LS_SLOTS, 99, r->wait.max_ns) / 1e3,
		       r->wait.max_ns / 1e3, hold);
	}
	if (!nr)
		printf(env.all ? "  (no lock activity)\n" :
		       "  (no contended lock: every lock was free when asked; the probe fires only\n"
		       "   after a wait.  A tracer that slows the daemon, e.g. glass-offcputime, can\n"
		       "   itself create waits.  -a counts every acquisition)\n");
	if (env.hists) {
		for (size_t i = 0; i < nr; i++) {
			struct row *r = &rows[i];

			printf("\n%s level %d %s: wait (contended acquisitions)\n",
			       class_name(r->cls), r->level, r->mode ? "write" : "read");
			hist__print_log2(stdout, r->wait.slots, LS_SLOTS, "nsecs");
			if (!env.all)
				continue;
			printf("%s level %d %s: hold\n", class_name(r->cls),
			       r->level, r->mode ? "write" : "read");
			hist__print_log2(stdout, r->hold.slots, LS_SLOTS, "nsecs");
		}
	}
	printf("\nTop %zu contended lock instances:\n", top);
	printf("%-18s %-7s %8s %5s %5s %10s %10s %12s %9s\n", "ADDR", "CLASS",
	       "TREE", "LEVEL", "GROUP", "ACQUIRED", "CONTENDED", "WAIT_TOTAL", "WAIT_MAX");
	for (size_t i = 0; i < top; i++) {
		struct inst *in = &insts[i];
		struct acq_buf acq;

		printf("0x%-16llx %-7s %8llu %5d %5d %10s %10llu %12.1f %9.1f\n",
		       (unsigned long long)in->addr, class_name(in->v.cls),
		       (unsigned long long)in->v.tree, in->v.level, in->v.group,
		       acquired_text(&acq, in->v.acquired),
		       (unsigned long long)in->v.contended,
		       in->v.wait_ns / 1e3, in->v.max_wait_ns / 1e3);
	}
	if (env.stacks) {
		printf("\nTop waiter stacks:\n");
		for (size_t i = 0; i < ns && i < env.top; i++) {
			printf("  %s level %d: %.1f us in %llu waits\n",
			       class_name(stks[i].k.cls), stks[i].k.level,
			       stks[i].v.wait_ns / 1e3,
			       (unsigned long long)stks[i].v.count);
			print_stack(sc, smfd, &stks[i], false);
		}
	}
out:
	free(rows);
	free(insts);
	free(stks);
}

static const char *const probes[] = { "lock__contended", "lock__acquired", "lock__released" };

int main(int argc, char **argv)
{
	static const struct argp argp = { .options = opts, .parser = parse_arg, .doc = doc };
	struct lockstat_bpf *skel = NULL;
	struct syms_cache *sc = NULL;
	struct mmapwatch *mw = NULL;
	char bin[PATH_MAX];
	int err, n;

	if (argp_parse(&argp, argc, argv, 0, NULL, NULL))
		return 2;
	bpfutil__init("glass-lockstat", env.verbose);
	if (!env.pid && !env.binary) {
		fprintf(stderr, "glass-lockstat: give -p PID or -b BINARY (see --help)\n");
		return 2;
	}
	if (bpfutil__start(env.pid, 0))
		return 1;
	if (bpfutil__usdt_binary(env.pid, env.binary, bin, sizeof(bin)))
		return 1;
	n = bpfutil__usdt_count(bin, "glassfs");
	if (n <= 0)
		return 1;

	skel = lockstat_bpf__open();
	if (!skel) {
		fprintf(stderr, "glass-lockstat: cannot open the BPF object: %s\n", strerror(errno));
		return 1;
	}
	skel->rodata->stacks = env.stacks;
	skel->rodata->min_wait_ns = env.min_wait_us * 1000;
	if (!env.all) {
		bpf_program__set_autoload(skel->progs.lock_acquired, false);
		bpf_program__set_autoload(skel->progs.lock_released, false);
	}
	if (env.stacks) {
		bpf_map__set_max_entries(skel->maps.ustacks, env.stack_entries);
		bpf_map__set_max_entries(skel->maps.wstacks, env.stack_entries);
	} else {
		bpf_map__set_max_entries(skel->maps.ustacks, 1);
		bpf_map__set_max_entries(skel->maps.wstacks, 1);
	}
	err = lockstat_bpf__load(skel);
	if (err) {
		fprintf(stderr, "glass-lockstat: cannot load the BPF programs: %s\n", strerror(-err));
		goto out;
	}
	skel->links.lock_contended = bpfutil__usdt_attach(skel->progs.lock_contended,
		env.pid ? env.pid : -1, bin, "glassfs", probes[0]);
	if (!skel->links.lock_contended) {
		err = -ENOENT;
		goto out;
	}
	if (env.all) {
		skel->links.lock_acquired = bpfutil__usdt_attach(skel->progs.lock_acquired,
			env.pid ? env.pid : -1, bin, "glassfs", probes[1]);
		skel->links.lock_released = bpfutil__usdt_attach(skel->progs.lock_released,
			env.pid ? env.pid : -1, bin, "glassfs", probes[2]);
		if (!skel->links.lock_acquired || !skel->links.lock_released) {
			err = -ENOENT;
			goto out;
		}
	}
	sc = syms_cache__new();
	if (!sc) {
		fprintf(stderr, "glass-lockstat: cannot start the symbolizer (libelf)\n");
		err = -ENOMEM;
		goto out;
	}
	if (env.pid)
		syms_cache__snapshot(sc, env.pid);
	/* Every process of the binary: one may start and exit within the
	 * run, and its waiter stacks are printed after it is gone. */
	if (env.stacks && !env.pid && !(mw = mmapwatch__new()))
		fprintf(stderr, "glass-lockstat: cannot log mmaps (perf_event_open: %s): processes that exit during the run may print [unknown] frames\n",
			strerror(errno));
	/* stderr, also with -j: scripts wait for it to know we attached */
	fprintf(stderr, "Tracing glassfs locks in %s%s... %s\n", bin,
			env.pid ? "" : " (every process)",
			env.duration ? "" : "Hit Ctrl-C to end.");
	bpfutil__run_for(env.duration);
	while (!bpfutil__exiting()) {
		usleep(100000);
		if (mw && mmapwatch__drain(mw, sc)) {
			fprintf(stderr, "glass-lockstat: symbolizer: out of memory\n");
			err = -ENOMEM;
			goto out;
		}
		if (env.pid && kill(env.pid, 0) && errno == ESRCH) {
			fprintf(stderr, "glass-lockstat: process %d exited\n", env.pid);
			break;
		}
	}
	/* Detach first: the report and the counters are one snapshot. */
	bpf_link__destroy(skel->links.lock_contended);
	bpf_link__destroy(skel->links.lock_acquired);
	bpf_link__destroy(skel->links.lock_released);
	skel->links.lock_contended = skel->links.lock_acquired = skel->links.lock_released = NULL;
	if (mw && mmapwatch__drain(mw, sc)) {
		fprintf(stderr, "glass-lockstat: symbolizer: out of memory\n");
		err = -ENOMEM;
		goto out;
	}
	report(skel, sc);
	{
		static const char *names[LSC_NR] = {
			[LSC_FIRED] = "probe firings",
			[LSC_INST_FULL] = "lock instances not tracked (instance map full)",
			[LSC_STACK_LOST] = "waiter stacks lost (stack table full: raise -S; or unreadable)",
			[LSC_WSTACKS_FULL] = "waiter stacks lost (stack table full: raise -S)",
			[LSC_BELOW_MIN] = "waits under -m (in the histograms, no stack)",
		};

		for (__u32 c = 0; c < LSC_NR; c++) {
			unsigned long long s;

			if (bpfutil__percpu_sum(bpf_map__fd(skel->maps.counters), c, &s))
				continue;
			if (s || c == LSC_FIRED)
				fprintf(stderr, "glass-lockstat: %llu %s\n", s, names[c]);
		}
	}
out:
	lockstat_bpf__destroy(skel);
	mmapwatch__free(mw);
	syms_cache__free(sc);
	return err ? 1 : 0;
}
