// SPDX-License-Identifier: MIT
/*
 * glass-offcputime — off-CPU time by kernel + user stack, offcputime style,
 * at a fraction of the cost: time first, stacks only for blocks that pass
 * the filters (see bpf/offcputime.bpf.c).
 *
 * Output: human-readable stacks (default) or folded (-f, comm as root
 * frame, user frames, then kernel frames suffixed "_[k]", value in us).
 * Sleeps still in progress at the end are included; stacks that could not
 * be taken are counted and reported on stderr, never silently dropped.
 */
#include <argp.h>
#include <dirent.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bpf/offcputime.h"
#include "offcputime.skel.h"
#include "tools/lib/args.h"
#include "tools/lib/bpfutil.h"
#include "tools/lib/folded.h"
#include "tools/lib/frames.h"
#include "tools/lib/mmapwatch.h"
#include "tools/lib/pprof.h"
#include "tools/lib/syms.h"

static struct env {
	pid_t pid, tid;
	bool user_only, kernel_only, folded, wakeup, no_idle, eager, verbose;
	int state;
	int ustack_at;		/* USTACK_AUTO, USTACK_SWITCH, ... */
	__u64 min_us, max_us;
	unsigned duration;
	unsigned long stack_storage;
	const char *pprof;
} env = { .state = -1, .min_us = 1, .max_us = ~0ULL };

/*
 * Where user stacks are taken (--ustack-at); the stacks are the same, the
 * cost is not.  Deferred until the block's length is known, a block
 * shorter than -m costs no user stack:
 *   exit    at the blocked syscall's exit: the sys_exit program then runs
 *           at every syscall of every process (and puts every syscall on
 *           the kernel's slow path); blocks that do not begin inside a
 *           syscall (preempted after it returned, in user mode, page
 *           faults) still take theirs at switch-out.
 *   resume  on the way back to user mode (rseq_update, for tasks with an
 *           rseq area: glibc >= 2.35 threads): every kind of block, and
 *           the program runs about once per context switch of a traced
 *           task rather than at every syscall; tasks without rseq take
 *           theirs at switch-out.  Needs the 6.18-and-earlier rseq code.
 *   switch  at switch-out, for blocks that passed the other filters; no
 *           extra program at all.
 * Deferring only pays when -m filters out many blocks: "auto" defers
 * (resume, else exit) from -m DEFER_MIN_US on and takes them at switch-out
 * below it, where nearly every block is kept anyway.
 */
enum { USTACK_AUTO, USTACK_SWITCH, USTACK_EXIT, USTACK_RESUME };
#define DEFER_MIN_US	100

static bool kernel_has_resume(void)
{
	return bpfutil__kernel_has_tp("rseq_update") &&
	       bpfutil__kernel_has_member("task_struct", "rseq_event_mask");
}

const char *argp_program_version = "glass-offcputime " GLASSFS_VERSION;
static const char doc[] =
"Summarize off-CPU time by kernel and user stack.\n"
"\n"
"USAGE: glass-offcputime [-p PID | -t TID] [-u | -k] [-m MIN] [-M MAX] [-f] [-d SECONDS]\n"
"\n"
"EXAMPLES:\n"
"  glass-offcputime -d 5              # all threads, 5 seconds\n"
"  glass-offcputime -p 185 -f -d 10   # one process, folded for flame graphs\n"
"  glass-offcputime -m 1000 --state 2 # uninterruptible blocks >= 1 ms\n"
"  glass-offcputime -p 185 --wakeup -f  # blocked stack joined with its waker's\n"
"  glass-offcputime -p 185 --no-idle  # hide FUSE workers waiting for requests\n"
"\n"
"User stacks are taken at switch-out below -m 100 and, from -m 100 on, when\n"
"the task returns to user mode (--ustack-at): the same stacks, at a lower cost.\n";

enum { OPT_STATE = 1000, OPT_WAKEUP, OPT_NOIDLE, OPT_EAGER, OPT_PPROF, OPT_STORAGE, OPT_USTACK_AT };

static const struct argp_option opts[] = {
	{ "pid", 'p', "PID", 0, "Trace this process only (or the glassfs daemon of the mount point PID names, e.g. -p /mnt/g)", 0 },
	{ "tid", 't', "TID", 0, "Trace this thread only", 0 },
	{ "user-threads-only", 'u', NULL, 0, "User threads only (no kernel threads)", 0 },
	{ "kernel-threads-only", 'k', NULL, 0, "Kernel threads only (no user threads)", 0 },
	{ "state", OPT_STATE, "STATE", 0, "Only blocks in this state: 0/R preempted, 1/S interruptible, 2/D uninterruptible", 0 },
	{ "min-block-time", 'm', "MIN", 0, "Only blocks of at least MIN us (default 1)", 0 },
	{ "max-block-time", 'M', "MAX", 0, "Only blocks of at most MAX us", 0 },
	{ "duration", 'd', "SECONDS", 0, "Trace for SECONDS (default: until Ctrl-C)", 0 },
	{ "folded", 'f', NULL, 0, "Folded output for flame graphs (value: us)", 0 },
	{ "wakeup", OPT_WAKEUP, NULL, 0, "Join each blocked stack with its waker's stacks", 0 },
	{ "no-idle", OPT_NOIDLE, NULL, 0, "Ignore threads idle in a FUSE request read (read of /dev/fuse), in the kernel", 0 },
	{ "stack-storage-size", OPT_STORAGE, "N", 0, "Distinct stacks (and stack pairs) kept; default from the target's thread count, at least 32768", 0 },
	{ "ustack-at", OPT_USTACK_AT, "WHEN", 0, "Take user stacks at 'switch' (switch-out of blocks that pass the filters), 'exit' (the blocked syscall's exit, only for blocks of at least -m), 'resume' (the return to user mode, only for blocks of at least -m) or 'auto' (default: resume, else exit, from -m 100 on)", 0 },
	{ "eager", OPT_EAGER, NULL, 0, "Take both stacks at every switch-out (the classic, costly method; for comparison)", 0 },
	{ "pprof", OPT_PPROF, "FILE", 0, "Also write a gzip'ed pprof profile (values: blocks, off-CPU nanoseconds; frames as in -f)", 0 },
	{ "verbose", 'v', NULL, 0, "Verbose libbpf output", 0 },
	{},
};

static long parse_num(const char *s, const char *what, long lo, long hi)
{
	return args__num("glass-offcputime", s, what, lo, hi);
}

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	switch (key) {
	case 'p': env.pid = args__pid("glass-offcputime", arg); break;
	case 't': env.tid = parse_num(arg, "TID", 1, INT_MAX); break;
	case 'u': env.user_only = true; break;
	case 'k': env.kernel_only = true; break;
	case 'f': env.folded = true; break;
	case 'v': env.verbose = true; break;
	case 'm': env.min_us = parse_num(arg, "min block time", 0, LONG_MAX); break;
	case 'M': env.max_us = parse_num(arg, "max block time", 0, LONG_MAX); break;
	case 'd': env.duration = parse_num(arg, "duration", 1, INT_MAX); break;
	case OPT_WAKEUP: env.wakeup = true; break;
	case OPT_NOIDLE: env.no_idle = true; break;
	case OPT_EAGER: env.eager = true; break;
	case OPT_PPROF: env.pprof = arg; break;
	case OPT_USTACK_AT:
		if (!strcmp(arg, "auto")) env.ustack_at = USTACK_AUTO;
		else if (!strcmp(arg, "switch")) env.ustack_at = USTACK_SWITCH;
		else if (!strcmp(arg, "exit")) env.ustack_at = USTACK_EXIT;
		else if (!strcmp(arg, "resume")) env.ustack_at = USTACK_RESUME;
		else {
			fprintf(stderr, "glass-offcputime: --ustack-at: '%s' is not one of auto, switch, exit, resume\n", arg);
			argp_usage(state);
		}
		break;
	case OPT_STORAGE: env.stack_storage = parse_num(arg, "stack storage size", 64, 1 << 24); break;
	case OPT_STATE:
		if (!strcmp(arg, "R")) env.state = 0;
		else if (!strcmp(arg, "S")) env.state = 1;
		else if (!strcmp(arg, "D")) env.state = 2;
		else env.state = parse_num(arg, "state", 0, 2);
		break;
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
	int stacks_fd;
};

static int on_event(void *c, void *data, size_t len)
{
	struct ctx *x = c;
	const struct offcpu_event *e = data;

	if (len < sizeof(*e))
		return 0;
	/* First sight, exec and exit: maps snapshot or files pinned. */
	mmapwatch__first_sight(x->mw, x->sc, e->tgid);
	return 0;
}

static bool read_stack(struct ctx *x, __u64 hash, __u64 *ips)
{
	return bpfutil__read_stack(x->stacks_fd, hash, ips);
}

static void push_kernel(struct ctx *x, struct frames *fr, const __u64 *ips,
			bool folded)
{
	frames__kernel(fr, x->ks, (const uint64_t *)ips, folded);
}

static void push_user(struct ctx *x, struct frames *fr, int tgid,
		      const __u64 *ips)
{
	frames__user(fr, x->sc, tgid, (const uint64_t *)ips);
}

static bool is_idle_fuse(struct ctx *x, const __u64 *kips)
{
	for (int i = 0; i < OFFCPU_MAX_DEPTH && kips[i]; i++) {
		const char *n = ksyms__name(x->ks, kips[i], NULL);

		if (n && (!strcmp(n, "fuse_dev_read") ||
			  !strcmp(n, "fuse_dev_do_read") ||
			  !strcmp(n, "fuse_dev_splice_read")))
			return true;
	}
	return false;
}

struct entry {
	struct offcpu_key k;
	struct offcpu_val v;
};

static const char *counter_names[OC_NR] = {
	[OC_BLOCKS] = "blocks recorded",
	[OC_INPROGRESS] = "sleeps still in progress at the end (included)",
	[OC_KSTACK_TRUNC] = "kernel stacks truncated at the depth limit",
	[OC_USTACK_TRUNC] = "user stacks truncated at the depth limit",
	[OC_KSTACK_FAIL] = "kernel stacks lost (could not be read)",
	[OC_USTACK_FAIL] = "user stacks lost (could not be read)",
	[OC_STACKS_FULL] = "stacks lost (stack table full or no memory: raise --stack-storage-size if full)",
	[OC_COUNTS_FULL] = "blocks lost (aggregation map full or no memory: raise --stack-storage-size if full)",
	[OC_PENDING_OVERFLOW] = "blocks lost (too many blocks in one syscall)",
	[OC_PENDING_EXIT] = "user stacks lost (thread exited inside the syscall)",
	[OC_STORAGE_FAIL] = "blocks lost (task storage allocation failed)",
	[OC_IDLE_SKIPPED] = "blocks of idle FUSE workers ignored (--no-idle)",
	[OC_EARLY_USTACK] = "user stacks taken at switch-out (runnable switch-outs: before the block's length is known)",
	[OC_RUNTIME_FULL] = "threads' on-CPU time lost (runtime map full or no memory)",
	[OC_UNSEEN_SWITCH_IN] = "switch-ins no sched_switch event reported",
};

/* Entries in a BPF hash map (a key walk). */
static size_t map_count(int fd, size_t key_size)
{
	char k[key_size], nk[key_size];
	size_t n = 0;
	void *prev = NULL;

	while (!bpf_map_get_next_key(fd, prev, nk)) {
		n++;
		memcpy(k, nk, key_size);
		prev = k;
	}
	return n;
}

static void report_counters(struct offcputime_bpf *skel, int *lost)
{
	*lost = 0;
	for (__u32 c = 0; c < OC_NR; c++) {
		unsigned long long sum;

		if (bpfutil__percpu_sum(bpf_map__fd(skel->maps.counters), c, &sum))
			continue;
		if (c != OC_BLOCKS && c != OC_INPROGRESS && c != OC_KSTACK_TRUNC &&
		    c != OC_USTACK_TRUNC && c != OC_IDLE_SKIPPED &&
		    c != OC_EARLY_USTACK && sum)
			*lost += 1;
		if (c == OC_EARLY_USTACK && !env.verbose)
			continue;
		if (sum || c == OC_BLOCKS)
			fprintf(stderr, "glass-offcputime: %llu %s\n", sum,
				counter_names[c]);
		if (sum && (c == OC_STACKS_FULL || c == OC_COUNTS_FULL)) {
			struct bpf_map *m = c == OC_STACKS_FULL ? skel->maps.stacks : skel->maps.counts;

			fprintf(stderr, "glass-offcputime:   (%s holds %zu of %u entries%s)\n",
				bpf_map__name(m), map_count(bpf_map__fd(m), bpf_map__key_size(m)),
				bpf_map__max_entries(m),
				map_count(bpf_map__fd(m), bpf_map__key_size(m)) < bpf_map__max_entries(m) ?
				": not full, the kernel could not allocate an entry at that moment" : "");
		}
	}
}

/* The folded frames of an entry, leaf first, comm last (also for pprof). */
static void folded_frames(struct ctx *x, const struct entry *e, struct frames *fr)
{
	static __u64 kips[OFFCPU_MAX_DEPTH], uips[OFFCPU_MAX_DEPTH];
	static __u64 wk[OFFCPU_MAX_DEPTH], wu[OFFCPU_MAX_DEPTH];
	const struct offcpu_key *k = &e->k;
	bool have_k = read_stack(x, k->kstack, kips);
	bool have_u = read_stack(x, k->ustack, uips);

	frames__reset(fr);
	/* Leaf first: the waker's side, reversed, comes last in the line. */
	if (env.wakeup && k->w_pid) {
		struct frames wf = { .n = 0 };

		frames__push(fr, k->w_comm, NULL);
		/* The waker is printed root-last: its frames leaf..root
		 * after "--", so the line ends with the waker's comm. */
		if (read_stack(x, k->w_ustack, wu))
			push_user(x, &wf, k->w_tgid, wu);
		for (size_t i = 0; i < wf.n; i++)
			frames__push(fr, wf.f[wf.n - 1 - i], wf.owned[wf.n - 1 - i]);
		wf.n = 0;
		if (read_stack(x, k->w_kstack, wk))
			push_kernel(x, &wf, wk, true);
		for (size_t i = 0; i < wf.n; i++)
			frames__push(fr, wf.f[wf.n - 1 - i], wf.owned[wf.n - 1 - i]);
		frames__push(fr, "--", NULL);
	}
	if (have_k)
		push_kernel(x, fr, kips, true);
	if (have_u)
		push_user(x, fr, k->tgid, uips);
	else if (!(k->flags & OFFCPU_F_KTHREAD))
		frames__push(fr, "[missing user stack]", NULL);
	frames__push(fr, k->comm, NULL);
}

static void print_entry(struct ctx *x, const struct entry *e, FILE *out)
{
	static __u64 kips[OFFCPU_MAX_DEPTH], uips[OFFCPU_MAX_DEPTH];
	static __u64 wk[OFFCPU_MAX_DEPTH], wu[OFFCPU_MAX_DEPTH];
	static struct frames fr;
	const struct offcpu_key *k = &e->k;
	bool have_k, have_u, waker = env.wakeup && k->w_pid;

	if (env.folded) {
		folded_frames(x, e, &fr);
		folded_write_stack(out, fr.f, fr.n, e->v.total_ns / 1000,
				   FOLDED_LEAF_FIRST);
		return;
	}
	frames__reset(&fr);
	have_k = read_stack(x, k->kstack, kips);
	have_u = read_stack(x, k->ustack, uips);
	if (have_k) {
		push_kernel(x, &fr, kips, false);
		for (size_t i = 0; i < fr.n; i++)
			fprintf(out, "    %s\n", fr.f[i]);
		frames__reset(&fr);
	} else {
		fprintf(out, "    [missing kernel stack]\n");
	}
	fprintf(out, "    --\n");
	if (have_u) {
		push_user(x, &fr, k->tgid, uips);
		for (size_t i = 0; i < fr.n; i++)
			fprintf(out, "    %s\n", fr.f[i]);
		frames__reset(&fr);
	} else if (!(k->flags & OFFCPU_F_KTHREAD)) {
		fprintf(out, "    [missing user stack]\n");
	}
	fprintf(out, "    -                %s (%u)%s\n", k->comm, k->pid,
		k->flags & OFFCPU_F_INPROGRESS ? " [still blocked at end]" : "");
	if (waker) {
		fprintf(out, "    --- woken by %s (%u):\n", k->w_comm, k->w_pid);
		if (read_stack(x, k->w_kstack, wk)) {
			push_kernel(x, &fr, wk, false);
			for (size_t i = 0; i < fr.n; i++)
				fprintf(out, "    %s\n", fr.f[i]);
			frames__reset(&fr);
		}
		fprintf(out, "    --\n");
		if (read_stack(x, k->w_ustack, wu)) {
			push_user(x, &fr, k->w_tgid, wu);
			for (size_t i = 0; i < fr.n; i++)
				fprintf(out, "    %s\n", fr.f[i]);
			frames__reset(&fr);
		}
	}
	fprintf(out, "        %llu us (%llu blocks)\n\n",
		(unsigned long long)(e->v.total_ns / 1000),
		(unsigned long long)e->v.count);
}

static int print_all(struct ctx *x, struct offcputime_bpf *skel, struct pprof *pp)
{
	int fd = bpf_map__fd(skel->maps.counts);
	struct offcpu_key k, *prev = NULL;
	struct entry *ents = NULL;
	size_t n = 0, cap = 0, hidden = 0;
	__u64 hidden_ns = 0;
	static __u64 kips[OFFCPU_MAX_DEPTH];

	while (!bpf_map_get_next_key(fd, prev, &k)) {
		if (n == cap) {
			struct entry *ne;

			cap = cap ? cap * 2 : 1024;
			ne = realloc(ents, cap * sizeof(*ne));
			if (!ne) {
				free(ents);
				return -ENOMEM;
			}
			ents = ne;
		}
		ents[n].k = k;
		if (!bpf_map_lookup_elem(fd, &k, &ents[n].v))
			n++;
		prev = &ents[n ? n - 1 : 0].k;
		if (!n)
			prev = NULL;
	}
	bpfutil__sort_desc(ents, n, sizeof(*ents), offsetof(struct entry, v.total_ns));
	for (size_t i = 0; i < n; i++) {
		if (env.no_idle &&
		    read_stack(x, ents[i].k.kstack, kips) &&
		    is_idle_fuse(x, kips)) {
			hidden++;
			hidden_ns += ents[i].v.total_ns;
			continue;
		}
		print_entry(x, &ents[i], stdout);
		if (pp) {
			static struct frames pf;
			int64_t vals[2] = { ents[i].v.count, ents[i].v.total_ns };

			folded_frames(x, &ents[i], &pf);
			if (pprof__add(pp, pf.f, pf.n, vals)) {
				fprintf(stderr, "glass-offcputime: out of memory building the pprof profile\n");
				free(ents);
				return -ENOMEM;
			}
		}
	}
	if (env.no_idle)
		fprintf(stderr, "glass-offcputime: --no-idle hid %zu stacks (%llu us) idle in a FUSE request read\n",
			hidden, (unsigned long long)(hidden_ns / 1000));
	fflush(stdout);
	free(ents);
	return 0;
}

/*
 * Stack storage: the maps are not preallocated, so this is a bound, not
 * memory spent up front.  Distinct stacks grow with the threads traced
 * (each thread blocks in its own few places): 2048 per thread of the
 * target, at least 32768 (every thread of the machine: 65536).
 */
static unsigned long default_storage(pid_t pid)
{
	char path[64];
	unsigned long n = 0, v;
	struct dirent *d;
	DIR *dir;

	if (!pid)
		return 65536;
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	dir = opendir(path);
	if (!dir)
		return 32768;
	while ((d = readdir(dir)))
		n += d->d_name[0] != '.';
	closedir(dir);
	v = n * 2048;
	return v < 32768 ? 32768 : v > (1UL << 20) ? 1UL << 20 : v;
}

int main(int argc, char **argv)
{
	static const struct argp argp = { .options = opts, .parser = parse_arg, .doc = doc };
	struct offcputime_bpf *skel = NULL;
	struct ring_buffer *rb = NULL;
	struct mmapwatch *mw = NULL;
	struct mmapwatch_stats mws = { 0 };
	struct ctx x = { 0 };
	struct pprof *pp = NULL;
	struct timespec t_start;
	int err, lost = 0;

	err = argp_parse(&argp, argc, argv, 0, NULL, NULL);
	if (err)
		return 2;
	bpfutil__init("glass-offcputime", env.verbose);
	if (env.user_only && env.kernel_only) {
		fprintf(stderr, "glass-offcputime: -u and -k exclude each other\n");
		return 2;
	}
	if (env.min_us > env.max_us) {
		fprintf(stderr, "glass-offcputime: -m %llu is above -M %llu\n",
			(unsigned long long)env.min_us, (unsigned long long)env.max_us);
		return 2;
	}
	if (bpfutil__start(env.pid, env.tid))
		return 1;

	x.ks = ksyms__load();
	if (!x.ks) {
		fprintf(stderr, "glass-offcputime: cannot read kernel symbols from /proc/kallsyms: %s\n",
			strerror(errno));
		return 1;
	}
	skel = offcputime_bpf__open();
	if (!skel) {
		fprintf(stderr, "glass-offcputime: cannot open the BPF object: %s\n", strerror(errno));
		return 1;
	}
	skel->rodata->targ_tgid = env.pid;
	skel->rodata->targ_pid = env.tid;
	skel->rodata->user_only = env.user_only;
	skel->rodata->kernel_only = env.kernel_only;
	skel->rodata->targ_state = env.state;
	skel->rodata->min_ns = env.min_us * 1000;
	skel->rodata->max_ns = env.max_us > ~0ULL / 1000 ? ~0ULL : env.max_us * 1000;
	skel->rodata->eager = env.eager;
	if (env.ustack_at == USTACK_AUTO)
		env.ustack_at = env.min_us < DEFER_MIN_US ? USTACK_SWITCH :
				kernel_has_resume() ? USTACK_RESUME : USTACK_EXIT;
	if (env.ustack_at == USTACK_RESUME && !env.eager && !kernel_has_resume()) {
		fprintf(stderr, "glass-offcputime: --ustack-at=resume: this kernel has no rseq_update tracepoint with the rseq fields it needs (task_struct.rseq_event_mask); use exit or switch\n");
		err = -ENOTSUP;
		goto out;
	}
	skel->rodata->defer_ustack = !env.eager && env.ustack_at == USTACK_EXIT;
	skel->rodata->resume_ustack = !env.eager && env.ustack_at == USTACK_RESUME;
	skel->rodata->wakeup = env.wakeup;
	skel->rodata->no_idle = env.no_idle;
	skel->rodata->fuse_dev_read_addr = ksyms__addr(x.ks, "fuse_dev_read");
	skel->rodata->user_min_addr = bpfutil__mmap_min_addr();
	if (env.no_idle && !skel->rodata->fuse_dev_read_addr && env.verbose)
		fprintf(stderr, "glass-offcputime: no fuse_dev_read in kallsyms: idle FUSE workers are filtered by stack only\n");
	if (!env.stack_storage)
		env.stack_storage = default_storage(env.pid);
	bpf_map__set_max_entries(skel->maps.stacks, env.stack_storage);
	bpf_map__set_max_entries(skel->maps.counts, env.stack_storage);
	if (!skel->rodata->defer_ustack)
		bpf_program__set_autoload(skel->progs.sys_exit, false);
	if (!skel->rodata->resume_ustack)
		bpf_program__set_autoload(skel->progs.rseq_update, false);
	if (env.verbose)
		fprintf(stderr, "glass-offcputime: user stacks taken at %s\n",
			env.eager ? "every switch-out (--eager)" :
			skel->rodata->defer_ustack ? "the blocked syscall's exit" :
			skel->rodata->resume_ustack ? "the return to user mode (rseq), switch-out for tasks without rseq" :
			"switch-out of the blocks that pass the filters");
	if (!env.wakeup)
		bpf_program__set_autoload(skel->progs.sched_waking, false);
	/* glass-profile --wall's runnable split and on-CPU time (rodata runq,
	 * oncpu): not this tool's output. */
	bpf_program__set_autoload(skel->progs.sched_wakeup, false);
	bpf_program__set_autoload(skel->progs.sched_wakeup_new, false);
	bpf_map__set_max_entries(skel->maps.runtime, 1);

	err = offcputime_bpf__load(skel);
	if (err) {
		fprintf(stderr, "glass-offcputime: cannot load the BPF programs: %s (run with -v for the verifier log)\n",
			strerror(-err));
		goto out;
	}
	/* sched_switch may store two new stacks in one run (bpfutil.h). */
	bpfutil__prime_map(bpf_map__fd(skel->maps.stacks));
	bpfutil__prime_map(bpf_map__fd(skel->maps.counts));
	x.sc = syms_cache__new();
	if (!x.sc) {
		fprintf(stderr, "glass-offcputime: cannot start the symbolizer (libelf)\n");
		err = -ENOMEM;
		goto out;
	}
	x.stacks_fd = bpf_map__fd(skel->maps.stacks);
	/* Before the first block is recorded: every executable mapping made
	 * from now on is known even if its process is gone before we look. */
	x.mw = mw = mmapwatch__new();
	if (!mw)
		fprintf(stderr, "glass-offcputime: cannot log mmaps (perf_event_open: %s): processes that exit early may print [unknown] user frames\n",
			strerror(errno));
	if (env.pid)
		syms_cache__snapshot(x.sc, env.pid);

	err = offcputime_bpf__attach(skel);
	if (err) {
		fprintf(stderr, "glass-offcputime: cannot attach: %s\n", strerror(-err));
		goto out;
	}
	/* Sleeps that began before us count from now (in-progress at the end). */
	if (bpfutil__run_iter(skel->links.seed))
		fprintf(stderr, "glass-offcputime: could not seed the tasks already sleeping\n");
	rb = ring_buffer__new(bpf_map__fd(skel->maps.events), on_event, &x, NULL);
	if (!rb) {
		err = -errno;
		fprintf(stderr, "glass-offcputime: cannot open the ring buffer: %s\n", strerror(errno));
		goto out;
	}
	/* On stderr, also with -f: scripts wait for it to know we attached. */
	if (env.pid || env.tid)
		fprintf(stderr, "Tracing off-CPU time (us) of %s %d... %s\n",
			env.pid ? "PID" : "TID", env.pid ? env.pid : env.tid,
			env.duration ? "" : "Hit Ctrl-C to end.");
	else
		fprintf(stderr, "Tracing off-CPU time (us) of all threads... %s\n",
			env.duration ? "" : "Hit Ctrl-C to end.");
	clock_gettime(CLOCK_REALTIME, &t_start);
	bpfutil__run_for(env.duration);
	/* Sleep until an event (a process seen first, exec'ing or exiting;
	 * a quarter-full mmap log), a signal or the end of -d: no polling
	 * while the programs do the work. */
	err = bpfutil__wait_events(rb, mw, x.sc);
	if (err < 0)
		goto out;
	err = 0;
	/* Stop tracing, then add what is still off-CPU. */
	bpf_link__destroy(skel->links.sched_switch);
	skel->links.sched_switch = NULL;
	bpf_link__destroy(skel->links.sys_exit);
	skel->links.sys_exit = NULL;
	bpf_link__destroy(skel->links.rseq_update);
	skel->links.rseq_update = NULL;
	bpf_link__destroy(skel->links.sched_waking);
	skel->links.sched_waking = NULL;
	if (bpfutil__run_iter(skel->links.inprogress))
		fprintf(stderr, "glass-offcputime: could not add sleeps in progress\n");
	if (mw && mmapwatch__drain(mw, x.sc)) {
		err = -ENOMEM;
		fprintf(stderr, "glass-offcputime: symbolizer: out of memory\n");
		goto out;
	}
	ring_buffer__consume(rb);
	if (mw)
		mmapwatch__stats(mw, &mws);
	if (mws.lost)
		fprintf(stderr, "glass-offcputime: %llu mmap records lost (log full): some exited processes may print [unknown] user frames\n",
			(unsigned long long)mws.lost);
	if (env.pprof) {
		static const char *const types[] = { "blocks", "off_cpu" };
		static const char *const units[] = { "count", "nanoseconds" };
		struct timespec now;

		pp = pprof__new(2, types, units, "off_cpu");
		if (!pp) {
			fprintf(stderr, "glass-offcputime: out of memory\n");
			err = -ENOMEM;
			goto out;
		}
		clock_gettime(CLOCK_REALTIME, &now);
		pprof__set_time(pp, (int64_t)t_start.tv_sec * 1000000000 + t_start.tv_nsec,
				((int64_t)now.tv_sec - t_start.tv_sec) * 1000000000 +
				now.tv_nsec - t_start.tv_nsec);
	}
	err = print_all(&x, skel, pp);
	if (env.verbose) {
		struct syms_stats st;

		syms_cache__stats(x.sc, &st);
		fprintf(stderr, "glass-offcputime: symbols: %zu processes, %zu maps snapshots in %.1f ms, %llu mmap log records (%zu mappings) in %.1f ms, %zu files opened, %zu of %zu loaded in %.1f ms\n",
			st.procs, st.snapshots, st.snapshot_ns / 1e6,
			(unsigned long long)mws.records, st.added, mws.drain_ns / 1e6,
			st.pinned, st.files_loaded, st.files, st.load_ns / 1e6);
	}
	if (!err && pp)
		err = pprof__write(pp, env.pprof, "glass-offcputime");
	report_counters(skel, &lost);
	if (lost)
		fprintf(stderr, "glass-offcputime: some stacks were lost (counted above)\n");
out:
	mmapwatch__free(mw);
	ring_buffer__free(rb);
	pprof__free(pp);
	offcputime_bpf__destroy(skel);
	syms_cache__free(x.sc);
	ksyms__free(x.ks);
	return err ? 1 : 0;
}
