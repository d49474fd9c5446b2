// SPDX-License-Identifier: MIT
/*
 * glass-profile — on-CPU time by kernel + user stack, sampled by a perf
 * event (software cpu-clock, one per CPU, at -F Hz: hardware counters are
 * often absent in VMs), and, with --wall, the wall-clock view: each
 * thread's window split three ways, in one folded profile where each
 * thread's total is its wall-clock time over the window.  glass-
 * offcputime's BPF side (bpf/offcputime.bpf.c), loaded beside ours, times
 * every context switch of the traced threads:
 *
 *   [oncpu]     time on a CPU, measured from switch-in to switch-out per
 *               thread and spread over the thread's sampled stacks in
 *               proportion to their samples (a thread that ran but was
 *               never sampled: one "[unsampled]" frame).  Samples only
 *               say where; how long is measured, so lost or unlucky
 *               samples (a loaded machine slicing the thread) move time
 *               between the thread's stacks, not out of its total.
 *   [runqueue]  runnable, waiting for a CPU: preempted, or woken and not
 *               yet running (the scheduler's run_delay in schedstat)
 *   [offcpu]    blocked (sleeping, waiting for I/O or a lock), up to the
 *               wakeup
 *
 * Output: human-readable stacks (default) or folded (-f: comm as root
 * frame, user frames, then kernel frames suffixed "_[k]"; value: samples,
 * or microseconds with --wall).  --wall puts the half's frame under the
 * comm, so glass-flamegraph colours them apart.
 */
#include <argp.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "bpf/offcputime.h"
#include "bpf/profile.h"
#include "offcputime.skel.h"
#include "profile.skel.h"
#include "tools/lib/args.h"
#include "tools/lib/bpfutil.h"
#include "tools/lib/folded.h"
#include "tools/lib/frames.h"
#include "tools/lib/mmapwatch.h"
#include "tools/lib/pprof.h"
#include "tools/lib/syms.h"

#define TOOL	"glass-profile"

static struct env {
	pid_t pid, tid;
	bool user_only, kernel_only, no_kstack, no_ustack, folded, wall;
	bool per_thread, verbose, cost;
	unsigned freq, duration;
	unsigned long stack_storage;
	const char *pprof;
} env = { .freq = 99 };

const char *argp_program_version = TOOL " " GLASSFS_VERSION;
static const char doc[] =
"Sample on-CPU stacks (kernel and user) at a fixed frequency; with --wall,\n"
"join them with off-CPU time into one wall-clock profile: each thread's\n"
"window split into [oncpu] (time on a CPU, measured at context switches,\n"
"spread over the sampled stacks), [runqueue] (runnable, waiting for a CPU)\n"
"and [offcpu] (blocked).\n"
"\n"
"USAGE: glass-profile [-p PID | -t TID] [-F HZ] [-f] [--wall] [-d SECONDS]\n"
"\n"
"EXAMPLES:\n"
"  glass-profile -d 5                   # all threads, 99 Hz, 5 seconds\n"
"  glass-profile -p /mnt/g -f -d 10     # the daemon of a mount, folded\n"
"  glass-profile -p 185 --wall -f -d 10 # where its wall-clock time goes\n";

enum { OPT_PPROF = 1000, OPT_STORAGE, OPT_WALL, OPT_PER_THREAD, OPT_COST };

static const struct argp_option opts[] = {
	{ "pid", 'p', "PID", 0, "Trace this process only (or the glassfs daemon of the mount point PID names, e.g. -p /mnt/g)", 0 },
	{ "tid", 't', "TID", 0, "Trace this thread only", 0 },
	{ "user-threads-only", 'u', NULL, 0, "User threads only (no kernel threads)", 0 },
	{ "kernel-threads-only", 'k', NULL, 0, "Kernel threads only (no user threads)", 0 },
	{ "user-stacks-only", 'U', NULL, 0, "Show user stacks only (no kernel frames)", 0 },
	{ "kernel-stacks-only", 'K', NULL, 0, "Show kernel stacks only (no user frames)", 0 },
	{ "frequency", 'F', "HZ", 0, "Samples per second per CPU (default 99)", 0 },
	{ "duration", 'd', "SECONDS", 0, "Trace for SECONDS (default: until Ctrl-C)", 0 },
	{ "folded", 'f', NULL, 0, "Folded output for flame graphs (value: samples; us with --wall)", 0 },
	{ "wall", OPT_WALL, NULL, 0, "Wall-clock view: measured on-CPU time over the sampled stacks, runnable waits and blocks, under [oncpu]/[runqueue]/[offcpu] frames (value: us)", 0 },
	{ "per-thread", OPT_PER_THREAD, NULL, 0, "Root frame COMM-TID instead of COMM (one root per thread)", 0 },
	{ "stack-storage-size", OPT_STORAGE, "N", 0, "Distinct stacks kept (default 65536)", 0 },
	{ "pprof", OPT_PPROF, "FILE", 0, "Also write a gzip'ed pprof profile (values: samples and cpu ns; wall ns with --wall)", 0 },
	{ "cost", OPT_COST, NULL, 0, "Print the sampling program's run count and time, and with --wall the context-switch and wakeup programs' (turns on the kernel's BPF run-time statistics for the run)", 0 },
	{ "verbose", 'v', NULL, 0, "Verbose libbpf output and symbolizer counts", 0 },
	{},
};

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	switch (key) {
	case 'p': env.pid = args__pid(TOOL, arg); break;
	case 't': env.tid = args__num(TOOL, arg, "TID", 1, INT_MAX); break;
	case 'u': env.user_only = true; break;
	case 'k': env.kernel_only = true; break;
	case 'U': env.no_kstack = true; break;
	case 'K': env.no_ustack = true; break;
	case 'F': env.freq = args__num(TOOL, arg, "frequency", 1, 10000); break;
	case 'd': env.duration = args__num(TOOL, arg, "duration", 1, INT_MAX); break;
	case 'f': env.folded = true; break;
	case 'v': env.verbose = true; break;
	case OPT_WALL: env.wall = true; break;
	case OPT_PER_THREAD: env.per_thread = true; break;
	case OPT_COST: env.cost = true; break;
	case OPT_PPROF: env.pprof = arg; break;
	case OPT_STORAGE: env.stack_storage = args__num(TOOL, arg, "stack storage size", 64, 1 << 24); break;
	case ARGP_KEY_ARG:
		args__unexpected(state, arg);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

struct ctx {
	struct ksyms *ks;
	struct syms_cache *sc;
	struct mmapwatch *mw;	/* NULL: no mmap log, snapshots only */
	struct pprof *pp;
	__u64 period_ns;	/* CPU time one sample stands for */
	/* --wall: the on-CPU half, measured vs sampled (stderr at the end) */
	__u64 measured_ns, sampled_ns, estimated_ns;
	size_t measured_threads, unsampled_threads, estimated_stacks;
};

/* A process seen first (either ring buffer): its maps snapshot or, with
 * the mmap log, its files pinned. */
static int on_profile_event(void *c, void *data, size_t len)
{
	const struct profile_event *e = data;
	struct ctx *x = c;

	if (len >= sizeof(*e))
		mmapwatch__first_sight(x->mw, x->sc, e->tgid);
	return 0;
}

static int on_offcpu_event(void *c, void *data, size_t len)
{
	const struct offcpu_event *e = data;
	struct ctx *x = c;

	if (len >= sizeof(*e))
		mmapwatch__first_sight(x->mw, x->sc, e->tgid);
	return 0;
}

/*
 * One stack out: folded line or pprof sample (or both), or the
 * human-readable block.  marker is "[oncpu]"/"[runqueue]"/"[offcpu]"
 * (--wall) or NULL; leaf, if not NULL, is the only frame above it (no
 * stacks: the on-CPU time of a thread never sampled).
 */
static int emit(struct ctx *x, int stacks_fd, __u32 tgid, __u32 pid,
		const char *comm, bool kthread, __u64 kh, __u64 uh,
		const char *marker, const char *leaf, __u64 value,
		const int64_t *pvals)
{
	static __u64 kips[STACK_MAX_DEPTH], uips[STACK_MAX_DEPTH];
	static struct frames fr;
	bool have_k = bpfutil__read_stack(stacks_fd, kh, kips);
	bool have_u = bpfutil__read_stack(stacks_fd, uh, uips);
	char root[PROFILE_COMM_LEN + 16];

	if (env.per_thread)
		snprintf(root, sizeof(root), "%.*s-%u", PROFILE_COMM_LEN, comm, pid);
	else
		snprintf(root, sizeof(root), "%.*s", PROFILE_COMM_LEN, comm);
	frames__reset(&fr);
	if (!env.folded) {
		if (have_k)
			frames__kernel(&fr, x->ks, (uint64_t *)kips, false);
		for (size_t i = 0; i < fr.n; i++)
			printf("    %s\n", fr.f[i]);
		frames__reset(&fr);
		printf("    --\n");
		if (have_u)
			frames__user(&fr, x->sc, tgid, (uint64_t *)uips);
		for (size_t i = 0; i < fr.n; i++)
			printf("    %s\n", fr.f[i]);
		frames__reset(&fr);
		if (leaf)
			printf("    %s\n", leaf);
		printf("    -                %s (%u)%s%s\n        %llu %s\n\n", comm, pid,
		       marker ? " " : "", marker ? marker : "",
		       (unsigned long long)value, env.wall ? "us" : "samples");
		if (!x->pp)
			return 0;
	}
	if (leaf)
		frames__push(&fr, leaf, NULL);
	if (have_k && !env.no_kstack)
		frames__kernel(&fr, x->ks, (uint64_t *)kips, true);
	if (have_u && !env.no_ustack)
		frames__user(&fr, x->sc, tgid, (uint64_t *)uips);
	else if (!kthread && !env.no_ustack && !leaf)
		frames__push(&fr, "[missing user stack]", NULL);
	if (marker)
		frames__push(&fr, marker, NULL);
	frames__push(&fr, root, NULL);
	if (env.folded && folded_write_stack(stdout, fr.f, fr.n, value, FOLDED_LEAF_FIRST))
		return -EIO;
	if (x->pp && pprof__add(x->pp, fr.f, fr.n, pvals)) {
		fprintf(stderr, TOOL ": out of memory building the pprof profile\n");
		return -ENOMEM;
	}
	return 0;
}

struct pentry {
	struct profile_key k;
	__u64 n;
};

struct oentry {
	struct offcpu_key k;
	struct offcpu_val v;
};

/* --wall: a thread's measured on-CPU time, and its samples as they are
 * spread (sum: samples of the thread; done: samples handed out so far). */
struct rentry {
	__u32 pid;
	struct offcpu_run v;
	__u64 sum, done;
};

static int rentry_cmp(const void *a, const void *b)
{
	__u32 x = ((const struct rentry *)a)->pid, y = ((const struct rentry *)b)->pid;

	return x < y ? -1 : x > y;
}

static struct rentry *rentry_find(struct rentry *r, size_t n, __u32 pid)
{
	struct rentry key = { .pid = pid };

	return n ? bsearch(&key, r, n, sizeof(*r), rentry_cmp) : NULL;
}

/*
 * The share of a thread's measured on-CPU time that a stack with n of its
 * samples stands for: cumulative, so the thread's stacks add up to the
 * measured time to the nanosecond whatever the order.
 */
static __u64 spread(struct rentry *r, __u64 n)
{
	unsigned __int128 ns = r->v.ns;
	__u64 a = ns * r->done / r->sum, b;

	r->done += n;
	b = ns * r->done / r->sum;
	return b - a;
}

/*
 * The on-CPU half.  Without --wall: samples (pprof: samples and their
 * period's CPU time).  With --wall: each thread's measured on-CPU time
 * spread over its sampled stacks; a thread that ran without a sample
 * gets "[unsampled]"; a thread with samples but no measured time (the
 * runtime map was full) keeps samples x period, counted as estimated.
 */
static int print_oncpu(struct ctx *x, struct profile_bpf *skel,
		       struct offcputime_bpf *o)
{
	struct pentry *e = NULL;
	struct rentry *r = NULL, *t;
	size_t n = bpfutil__map_top(bpf_map__fd(skel->maps.counts), sizeof(e->k),
				    offsetof(struct pentry, n), sizeof(*e), NULL,
				    offsetof(struct pentry, n), (void **)&e);
	size_t nr = 0;
	int stacks_fd = bpf_map__fd(skel->maps.stacks), err = 0;

	if (o) {
		nr = bpfutil__map_read(bpf_map__fd(o->maps.runtime), sizeof(r->pid),
				       offsetof(struct rentry, v), sizeof(*r), NULL,
				       (void **)&r);
		for (size_t i = 0; i < nr; i++) {
			r[i].sum = r[i].done = 0;
			x->measured_ns += r[i].v.ns;
		}
		x->measured_threads = nr;
		qsort(r, nr, sizeof(*r), rentry_cmp);
		for (size_t i = 0; env.verbose && i < nr; i++)
			fprintf(stderr, TOOL ": thread %u (%.*s): %.6f s on a CPU in %llu slices\n",
				r[i].pid, OFFCPU_COMM_LEN, r[i].v.comm, r[i].v.ns / 1e9,
				(unsigned long long)r[i].v.slices);
		for (size_t i = 0; i < n; i++)
			if ((t = rentry_find(r, nr, e[i].k.pid)))
				t->sum += e[i].n;
	}
	for (size_t i = 0; i < n && !err; i++) {
		__u64 ns = e[i].n * x->period_ns;
		int64_t v2[2] = { e[i].n, ns }, v1[1];

		x->sampled_ns += ns;
		if (o) {
			t = rentry_find(r, nr, e[i].k.pid);
			if (t && t->v.ns) {
				ns = spread(t, e[i].n);
			} else {
				x->estimated_ns += ns;
				x->estimated_stacks++;
			}
		}
		v1[0] = ns;
		err = emit(x, stacks_fd, e[i].k.tgid, e[i].k.pid, e[i].k.comm,
			   e[i].k.flags & PROFILE_F_KTHREAD, e[i].k.kstack,
			   e[i].k.ustack, env.wall ? "[oncpu]" : NULL, NULL,
			   env.wall ? ns / 1000 : e[i].n, env.wall ? v1 : v2);
	}
	for (size_t i = 0; i < nr && !err; i++) {
		int64_t v1[1] = { r[i].v.ns };

		if (r[i].sum || !r[i].v.ns)
			continue;
		x->unsampled_threads++;
		err = emit(x, stacks_fd, r[i].v.tgid, r[i].pid, r[i].v.comm,
			   r[i].v.flags & OFFCPU_F_KTHREAD, 0, 0, "[oncpu]",
			   "[unsampled]", r[i].v.ns / 1000, v1);
	}
	free(r);
	free(e);
	return err;
}

static int print_offcpu(struct ctx *x, struct offcputime_bpf *skel)
{
	struct oentry *e = NULL;
	size_t n = bpfutil__map_top(bpf_map__fd(skel->maps.counts), sizeof(e->k),
				    offsetof(struct oentry, v), sizeof(*e), NULL,
				    offsetof(struct oentry, v.total_ns), (void **)&e);
	int stacks_fd = bpf_map__fd(skel->maps.stacks), err = 0;

	for (size_t i = 0; i < n && !err; i++) {
		int64_t v1[1] = { e[i].v.total_ns };

		err = emit(x, stacks_fd, e[i].k.tgid, e[i].k.pid, e[i].k.comm,
			   e[i].k.flags & OFFCPU_F_KTHREAD, e[i].k.kstack,
			   e[i].k.ustack,
			   e[i].k.flags & OFFCPU_F_RUNQ ? "[runqueue]" : "[offcpu]",
			   NULL, e[i].v.total_ns / 1000, v1);
	}
	free(e);
	return err;
}

static const char *pc_names[PC_NR] = {
	[PC_SAMPLES] = "samples of traced threads",
	[PC_IDLE] = "samples of idle CPUs (not recorded)",
	[PC_KSTACK_TRUNC] = "kernel stacks truncated at the depth limit",
	[PC_USTACK_TRUNC] = "user stacks truncated at the depth limit",
	[PC_KSTACK_FAIL] = "kernel stacks lost (could not be read)",
	[PC_USTACK_FAIL] = "user stacks lost (could not be read)",
	[PC_STACKS_FULL] = "stacks lost (stack table full or no memory: raise --stack-storage-size if full)",
	[PC_COUNTS_FULL] = "samples lost (aggregation map full: raise --stack-storage-size)",
};

static const char *oc_names[OC_NR] = {
	[OC_BLOCKS] = "off-CPU blocks recorded",
	[OC_STACKS_FULL] = "off-CPU stacks lost (stack table full or no memory: raise --stack-storage-size if full)",
	[OC_COUNTS_FULL] = "off-CPU blocks lost (aggregation map full: raise --stack-storage-size)",
	[OC_STORAGE_FAIL] = "off-CPU blocks lost (task storage allocation failed)",
	[OC_RUNTIME_FULL] = "threads' measured on-CPU time lost (runtime map full or no memory: raise --stack-storage-size if full)",
	[OC_UNSEEN_SWITCH_IN] = "switch-ins no sched_switch event reported (slice and block split by the scheduler's CPU time)",
};

/* Runs of prog the kernel skipped (another BPF program in progress on
 * that CPU): samples or context switches the profile never saw. */
static void report_misses(struct bpf_program *prog, const char *what)
{
	struct bpf_prog_info info = { 0 };
	__u32 len = sizeof(info);

	if (prog && bpf_program__fd(prog) >= 0 &&
	    !bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len) &&
	    info.recursion_misses)
		fprintf(stderr, TOOL ": %llu %s missed by the kernel (BPF recursion check)\n",
			(unsigned long long)info.recursion_misses, what);
}

static void report_counters(struct profile_bpf *p, struct offcputime_bpf *o)
{
	unsigned long long sum;

	report_misses(p->progs.do_sample, "samples");
	if (o) {
		report_misses(o->progs.sched_switch, "context switches");
		report_misses(o->progs.sched_wakeup, "wakeups");
	}

	for (__u32 c = 0; c < PC_NR; c++)
		if (!bpfutil__percpu_sum(bpf_map__fd(p->maps.counters), c, &sum) &&
		    (sum || c == PC_SAMPLES) && (c != PC_IDLE || env.verbose))
			fprintf(stderr, TOOL ": %llu %s\n", sum, pc_names[c]);
	for (__u32 c = 0; o && c < OC_NR; c++)
		if (oc_names[c] &&
		    !bpfutil__percpu_sum(bpf_map__fd(o->maps.counters), c, &sum) &&
		    (sum || c == OC_BLOCKS))
			fprintf(stderr, TOOL ": %llu %s\n", sum, oc_names[c]);
}

/* glass-offcputime's BPF side, set up for the wall-clock view: every
 * block of the traced threads from 1 us, user stacks at switch-out, the
 * runnable part of each apart (runq), each thread's on-CPU time (oncpu). */
static struct offcputime_bpf *offcpu_open(struct ctx *x)
{
	struct offcputime_bpf *o = offcputime_bpf__open();

	if (!o) {
		fprintf(stderr, TOOL ": cannot open the off-CPU BPF object: %s\n", strerror(errno));
		return NULL;
	}
	o->rodata->targ_tgid = env.pid;
	o->rodata->targ_pid = env.tid;
	o->rodata->user_only = env.user_only;
	o->rodata->kernel_only = env.kernel_only;
	o->rodata->targ_state = -1;
	o->rodata->min_ns = 1000;
	o->rodata->max_ns = ~0ULL;
	o->rodata->defer_ustack = false;
	o->rodata->resume_ustack = false;
	o->rodata->fuse_dev_read_addr = ksyms__addr(x->ks, "fuse_dev_read");
	o->rodata->user_min_addr = bpfutil__mmap_min_addr();
	o->rodata->runq = true;
	o->rodata->oncpu = true;
	bpf_map__set_max_entries(o->maps.stacks, env.stack_storage);
	bpf_map__set_max_entries(o->maps.counts, env.stack_storage);
	bpf_map__set_max_entries(o->maps.runtime, env.stack_storage);
	bpf_program__set_autoload(o->progs.sys_exit, false);
	bpf_program__set_autoload(o->progs.rseq_update, false);
	bpf_program__set_autoload(o->progs.sched_waking, false);
	if (offcputime_bpf__load(o)) {
		fprintf(stderr, TOOL ": cannot load the off-CPU BPF programs (run with -v for the verifier log)\n");
		offcputime_bpf__destroy(o);
		return NULL;
	}
	/* sched_switch may store two new stacks in one run (bpfutil.h). */
	bpfutil__prime_map(bpf_map__fd(o->maps.stacks));
	bpfutil__prime_map(bpf_map__fd(o->maps.counts));
	bpfutil__prime_map(bpf_map__fd(o->maps.runtime));
	return o;
}

/* One cpu-clock sampling event per possible CPU, each running prog. */
static int attach_perf(struct bpf_program *prog, struct bpf_link ***links, int *nlinks)
{
	int ncpu = libbpf_num_possible_cpus();
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.size = sizeof(attr),
		.sample_period = 1000000000ULL / env.freq,
	};

	if (ncpu <= 0)
		return -EINVAL;
	*links = calloc(ncpu, sizeof(**links));
	if (!*links)
		return -ENOMEM;
	*nlinks = ncpu;
	for (int cpu = 0; cpu < ncpu; cpu++) {
		int fd = syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);

		if (fd < 0) {
			if (errno == ENODEV)	/* possible but not online */
				continue;
			fprintf(stderr, TOOL ": perf_event_open(cpu-clock, cpu %d): %s\n", cpu, strerror(errno));
			return -errno;
		}
		(*links)[cpu] = bpf_program__attach_perf_event(prog, fd);
		if (!(*links)[cpu]) {
			int e = -errno;

			fprintf(stderr, TOOL ": cannot attach to the perf event of cpu %d: %s\n", cpu, strerror(-e));
			close(fd);
			return e;
		}
	}
	return 0;
}

/* --cost: prog's runs and time in the window (BPF run-time statistics on). */
static void report_cost(struct bpf_program *prog, const char *what, double secs)
{
	struct bpf_prog_info info = { 0 };
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len))
		return;
	fprintf(stderr, TOOL ": cost: %llu %s in %.0f ns each on average: %.4f %% of one CPU\n",
		(unsigned long long)info.run_cnt, what,
		info.run_cnt ? (double)info.run_time_ns / info.run_cnt : 0.0,
		secs > 0 ? 100.0 * info.run_time_ns / 1e9 / secs : 0.0);
}

static int64_t ns_of(const struct timespec *t)
{
	return (int64_t)t->tv_sec * 1000000000 + t->tv_nsec;
}

int main(int argc, char **argv)
{
	static const struct argp argp = { .options = opts, .parser = parse_arg, .doc = doc };
	struct profile_bpf *skel = NULL;
	struct offcputime_bpf *oskel = NULL;
	struct ring_buffer *rb = NULL;
	struct mmapwatch *mw = NULL;
	struct bpf_link **plinks = NULL;
	int nplinks = 0, stats_fd = -1, err;
	struct ctx x = { 0 };
	struct timespec t_start, t_mono0, t_mono1;

	err = argp_parse(&argp, argc, argv, 0, NULL, NULL);
	if (err)
		return 2;
	bpfutil__init(TOOL, env.verbose);
	if (env.user_only && env.kernel_only) {
		fprintf(stderr, TOOL ": -u and -k exclude each other\n");
		return 2;
	}
	if (env.no_kstack && env.no_ustack) {
		fprintf(stderr, TOOL ": -U and -K exclude each other\n");
		return 2;
	}
	if (bpfutil__start(env.pid, env.tid))
		return 1;
	if (!env.stack_storage)
		env.stack_storage = 65536;
	x.period_ns = 1000000000ULL / env.freq;

	x.ks = ksyms__load();
	if (!x.ks) {
		fprintf(stderr, TOOL ": cannot read kernel symbols from /proc/kallsyms: %s\n", strerror(errno));
		return 1;
	}
	skel = profile_bpf__open();
	if (!skel) {
		fprintf(stderr, TOOL ": cannot open the BPF object: %s\n", strerror(errno));
		err = -errno;
		goto out;
	}
	skel->rodata->targ_tgid = env.pid;
	skel->rodata->targ_pid = env.tid;
	skel->rodata->user_only = env.user_only;
	skel->rodata->kernel_only = env.kernel_only;
	skel->rodata->no_kstack = env.no_kstack;
	skel->rodata->no_ustack = env.no_ustack;
	bpf_map__set_max_entries(skel->maps.stacks, env.stack_storage);
	bpf_map__set_max_entries(skel->maps.counts, env.stack_storage);
	err = profile_bpf__load(skel);
	if (err) {
		fprintf(stderr, TOOL ": cannot load the BPF program: %s (run with -v for the verifier log)\n", strerror(-err));
		goto out;
	}
	/* A sample stores its kernel and user stack in one run: without
	 * priming, the first sample on each CPU lost one (bpfutil.h). */
	bpfutil__prime_map(bpf_map__fd(skel->maps.stacks));
	bpfutil__prime_map(bpf_map__fd(skel->maps.counts));
	if (env.wall && !(oskel = offcpu_open(&x))) {
		err = -EINVAL;
		goto out;
	}
	x.sc = syms_cache__new();
	if (!x.sc) {
		fprintf(stderr, TOOL ": cannot start the symbolizer (libelf)\n");
		err = -ENOMEM;
		goto out;
	}
	x.mw = mw = mmapwatch__new();
	if (!mw)
		fprintf(stderr, TOOL ": cannot log mmaps (perf_event_open: %s): processes that exit early may print [unknown] user frames\n",
			strerror(errno));
	if (env.pid)
		syms_cache__snapshot(x.sc, env.pid);
	rb = ring_buffer__new(bpf_map__fd(skel->maps.events), on_profile_event, &x, NULL);
	if (!rb || (oskel && ring_buffer__add(rb, bpf_map__fd(oskel->maps.events),
					       on_offcpu_event, &x))) {
		err = -errno;
		fprintf(stderr, TOOL ": cannot open the ring buffer: %s\n", strerror(errno));
		goto out;
	}
	/* Off-CPU first, then the samples: the window opens when both run. */
	if (oskel) {
		err = offcputime_bpf__attach(oskel);
		if (err) {
			fprintf(stderr, TOOL ": cannot attach the off-CPU programs: %s\n", strerror(-err));
			goto out;
		}
	}
	/* --cost: the kernel times BPF programs only while someone holds
	 * this descriptor (it costs two clock reads per program run). */
	if (env.cost && (stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME)) < 0)
		fprintf(stderr, TOOL ": --cost: cannot enable BPF run-time statistics: %s\n", strerror(errno));
	err = attach_perf(skel->progs.do_sample, &plinks, &nplinks);
	if (err)
		goto out;
	clock_gettime(CLOCK_MONOTONIC, &t_mono0);
	clock_gettime(CLOCK_REALTIME, &t_start);
	if (oskel && bpfutil__run_iter(oskel->links.seed))
		fprintf(stderr, TOOL ": could not seed the tasks already sleeping\n");
	/* On stderr, also with -f: scripts wait for it to know we attached. */
	fprintf(stderr, "Tracing %s at %u Hz of %s%.0d... %s\n",
		env.wall ? "wall-clock time (us)" : "on-CPU stacks", env.freq,
		env.pid ? "PID " : env.tid ? "TID " : "all threads",
		env.pid ? env.pid : env.tid, env.duration ? "" : "Hit Ctrl-C to end.");
	bpfutil__run_for(env.duration);
	err = bpfutil__wait_events(rb, mw, x.sc);
	if (err < 0)
		goto out;
	err = 0;
	/* Close the window: stop sampling and switch tracing together, then
	 * add what is still off-CPU. */
	for (int i = 0; i < nplinks; i++) {
		bpf_link__destroy(plinks[i]);
		plinks[i] = NULL;
	}
	if (oskel) {
		bpf_link__destroy(oskel->links.sched_switch);
		oskel->links.sched_switch = NULL;
		bpf_link__destroy(oskel->links.sched_wakeup_new);
		oskel->links.sched_wakeup_new = NULL;
	}
	clock_gettime(CLOCK_MONOTONIC, &t_mono1);
	if (stats_fd >= 0) {
		double secs = (ns_of(&t_mono1) - ns_of(&t_mono0)) / 1e9;

		report_cost(skel->progs.do_sample, "samples", secs);
		if (oskel) {
			report_cost(oskel->progs.sched_switch, "context switches", secs);
			report_cost(oskel->progs.sched_wakeup, "wakeups", secs);
		}
		close(stats_fd);
		stats_fd = -1;
	}
	if (oskel && bpfutil__run_iter(oskel->links.inprogress))
		fprintf(stderr, TOOL ": could not add sleeps in progress\n");
	if (mw && mmapwatch__drain(mw, x.sc)) {
		err = -ENOMEM;
		fprintf(stderr, TOOL ": symbolizer: out of memory\n");
		goto out;
	}
	ring_buffer__consume(rb);
	if (env.pprof) {
		static const char *const t2[] = { "samples", "cpu" }, *const u2[] = { "count", "nanoseconds" };
		static const char *const t1[] = { "wall" }, *const u1[] = { "nanoseconds" };

		x.pp = env.wall ? pprof__new(1, t1, u1, "wall") : pprof__new(2, t2, u2, "cpu");
		if (!x.pp) {
			err = -ENOMEM;
			goto out;
		}
		pprof__set_time(x.pp, ns_of(&t_start), ns_of(&t_mono1) - ns_of(&t_mono0));
	}
	err = print_oncpu(&x, skel, oskel);
	if (!err && oskel)
		err = print_offcpu(&x, oskel);
	fflush(stdout);
	if (env.verbose) {
		struct syms_stats st;

		syms_cache__stats(x.sc, &st);
		fprintf(stderr, TOOL ": symbols: %zu processes, %zu maps snapshots, %zu files, %zu loaded in %.1f ms\n",
			st.procs, st.snapshots, st.files, st.files_loaded, st.load_ns / 1e6);
	}
	if (!err && x.pp)
		err = pprof__write(x.pp, env.pprof, TOOL);
	report_counters(skel, oskel);
	if (oskel)
		fprintf(stderr, TOOL ": on-CPU: %.6f s measured at context switches (%zu threads, %zu never sampled), %.6f s in samples x period\n",
			x.measured_ns / 1e9, x.measured_threads, x.unsampled_threads,
			x.sampled_ns / 1e9);
	if (x.estimated_ns)
		fprintf(stderr, TOOL ": %.6f s of on-CPU time estimated from samples (%zu stacks of threads without a measured time)\n",
			x.estimated_ns / 1e9, x.estimated_stacks);
	/* The window, for checking a wall-clock profile's per-thread totals. */
	fprintf(stderr, TOOL ": window %.6f s, sample period %llu ns\n",
		(ns_of(&t_mono1) - ns_of(&t_mono0)) / 1e9, (unsigned long long)x.period_ns);
out:
	if (stats_fd >= 0)
		close(stats_fd);
	for (int i = 0; i < nplinks; i++)
		bpf_link__destroy(plinks[i]);
	free(plinks);
	mmapwatch__free(mw);
	ring_buffer__free(rb);
	pprof__free(x.pp);
	offcputime_bpf__destroy(oskel);
	profile_bpf__destroy(skel);
	syms_cache__free(x.sc);
	ksyms__free(x.ks);
	return err ? 1 : 0;
}
