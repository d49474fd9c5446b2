// SPDX-License-Identifier: MIT
/*
 * enginebench — the talk's lock experiment (fs_mark zero-length creates,
 * one directory per thread) driven in-process through the engine's
 * operation API (fs/ops/fsops.h), with no FUSE in the way.
 *
 * One run = one configuration on a fresh volume: a sparse image file is
 * formatted, opened with the given lock scheme, and T threads each work in
 * a directory of their own (or, with -s, in the root directory of a
 * subvolume of their own: T tree roots).  Phases, each timed alone and
 * each printed as one line:
 *   create  N zero-length files per thread (fsops_mknod, as FUSE's create
 *           does; -f: fsops_fsync after each, fs_mark -S 1)
 *   stat    a lookup of every name (fsops_lookup, the stat of fs_mark -L)
 *   mixed   per name: lookup it, create a new one, unlink the old one
 *   unlink  every remaining name
 * -p PHASES picks phases (comma list, default all; create always runs).
 *
 * Each line: phase, ops/s, CPU per op (getrusage of the process, so the
 * commit thread counts), and from the lock module's statistics
 * (glock_stats_read, fs/base/lock.h) the share of the threads' time spent
 * waiting for B-tree locks (classes root, node, group, summed wait over
 * T x wall time), the root locks' and the leaves' (level 0, the root
 * node when it is a leaf included) shares of that wait, and the share spent
 * waiting for every other lock (inodes, transaction, allocator, cache),
 * and the root-class locks (every tree's root pointer and root node) the
 * threads write-locked per operation (glock_counts), all and those that
 * could wait (not taken by trylock).
 *
 * Usage: enginebench -i IMAGE [-t T] [-n N] [-l node|groups:G] [-T rwlock|mutex|spin]
 *                    [-c path|leaf] [-s] [-S] [-f] [-p create,stat,mixed,unlink] [-N NODESIZE]
 * (-S: inode numbers spread by directory, the inode_spread=on mount option)
 * Output lines: key=value pairs (tests/bench/engine.bench parses them).
 * Exit: 0, or 1 with the failing operation and its errno on stderr.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "fs/ops/mount.h"
#include "fs/base/lock.h"
#include "fs/core/core.h"
#include "fs/format/keys.h"
#include "fs/items/subvol.h"
#include "fs/ops/fsops.h"

#define MAX_THREADS 256

enum phase { PH_CREATE, PH_STAT, PH_MIXED, PH_UNLINK, PH_NR };
static const char *const phase_names[PH_NR] = { "create", "stat", "mixed", "unlink" };

struct worker {
	pthread_t th;
	int idx;
	struct fsctx *fs;	/* the default tree, or the thread's subvolume */
	uint64_t dir;		/* its directory in fs */
	int err;		/* first -errno */
	const char *what;	/* the operation that failed */
};

static struct {
	int threads, files, fsync;
	enum phase phase;
	pthread_barrier_t start;
	/* the workers' root-class write locks (glock_counts: per thread, so
	 * each worker adds its own): all, and those taken by trylock */
	uint64_t root_w, root_w_tried;
} g = { .threads = 1, .files = 2000 };

static const struct fsops_cred cred = { .uid = 0, .gid = 0, .umask = 022 };

static int fail(struct worker *w, const char *what, int err)
{
	if (!w->err) {
		w->err = err;
		w->what = what;
	}
	return err;
}

static int create_one(struct worker *w, const char *name)
{
	struct stat st;
	int ret = fsops_mknod(w->fs, w->dir, name, S_IFREG | 0644, 0, &cred, &st);

	if (ret)
		return fail(w, "create", ret);
	if (g.fsync && (ret = fsops_fsync(w->fs, st.st_ino, 0)))
		return fail(w, "fsync", ret);
	fsops_forget(w->fs, st.st_ino, 1);
	return 0;
}

static int stat_one(struct worker *w, const char *name)
{
	struct stat st;
	int ret = fsops_lookup(w->fs, w->dir, name, &st);

	if (ret)
		return fail(w, "lookup", ret);
	fsops_forget(w->fs, st.st_ino, 1);
	return 0;
}

static int unlink_one(struct worker *w, const char *name)
{
	int ret = fsops_unlink(w->fs, w->dir, name);

	return ret ? fail(w, "unlink", ret) : 0;
}

static void *work(void *arg)
{
	struct worker *w = arg;
	char a[32], b[32];
	struct glock_counts k0, k1;

	pthread_barrier_wait(&g.start);
	glock_counts_read(&k0);
	for (int i = 0; i < g.files && !w->err; i++) {
		/* fs_mark's names are long and random-looking; the hash
		 * spreads them over the directory's key range alike */
		snprintf(a, sizeof(a), "f%08x.%d", (unsigned)i * 2654435761u, w->idx);
		snprintf(b, sizeof(b), "m%08x.%d", (unsigned)i * 2654435761u, w->idx);
		switch (g.phase) {
		case PH_CREATE: create_one(w, a); break;
		case PH_STAT:   stat_one(w, a); break;
		case PH_MIXED:
			if (!stat_one(w, a) && !create_one(w, b))
				unlink_one(w, a);
			break;
		case PH_UNLINK: unlink_one(w, b); break;
		default: break;
		}
	}
	glock_counts_read(&k1);
	__atomic_fetch_add(&g.root_w, k1.acquired[GLOCK_CLASS_ROOT][GLOCK_WRITE] -
			   k0.acquired[GLOCK_CLASS_ROOT][GLOCK_WRITE], __ATOMIC_RELAXED);
	__atomic_fetch_add(&g.root_w_tried, k1.tried[GLOCK_CLASS_ROOT][GLOCK_WRITE] -
			   k0.tried[GLOCK_CLASS_ROOT][GLOCK_WRITE], __ATOMIC_RELAXED);
	return NULL;
}

static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static int run_phase(struct worker *w, enum phase ph)
{
	struct glock_stats s0, s1;
	uint64_t t0, t1, bt = 0, rt = 0, other = 0;
	double c0, c1, wall, ops;

	g.phase = ph;
	g.root_w = g.root_w_tried = 0;
	pthread_barrier_init(&g.start, NULL, (unsigned)g.threads + 1);
	for (int i = 0; i < g.threads; i++)
		if (pthread_create(&w[i].th, NULL, work, &w[i])) {
			fprintf(stderr, "enginebench: pthread_create failed\n");
			exit(1);
		}
	glock_stats_read(&s0);
	c0 = cpu_s();
	t0 = glock_now_ns();
	pthread_barrier_wait(&g.start);
	for (int i = 0; i < g.threads; i++)
		pthread_join(w[i].th, NULL);
	t1 = glock_now_ns();
	c1 = cpu_s();
	glock_stats_read(&s1);
	pthread_barrier_destroy(&g.start);
	for (int i = 0; i < g.threads; i++)
		if (w[i].err) {
			fprintf(stderr, "enginebench: %s: thread %d: %s: %s\n", phase_names[ph],
				i, w[i].what, strerror(-w[i].err));
			return 1;
		}
	for (int c = 0; c < GLOCK_CLASS_NR; c++) {
		uint64_t d = s1.wait_ns[c] - s0.wait_ns[c];

		if (c == GLOCK_CLASS_ROOT || c == GLOCK_CLASS_NODE || c == GLOCK_CLASS_GROUP)
			bt += d;
		else
			other += d;
		if (c == GLOCK_CLASS_ROOT)
			rt = d;
	}
	wall = (double)(t1 - t0) / 1e9;
	ops = (double)g.threads * g.files;
	double thread_ns = (double)g.threads * (double)(t1 - t0);
	char root[16] = "-", leaf[16] = "-";	/* "-": nothing waited on B-tree locks */

	if (bt) {
		snprintf(root, sizeof(root), "%.1f", 100.0 * (double)rt / (double)bt);
		snprintf(leaf, sizeof(leaf), "%.1f",
			 100.0 * (double)(s1.leaf_wait_ns - s0.leaf_wait_ns) / (double)bt);
	}
	printf("phase=%s ops=%.0f secs=%.3f rate=%.0f cpu_us=%.1f btree_wait_pct=%.1f "
	       "root_pct=%s leaf_pct=%s other_wait_pct=%.1f root_w_per_op=%.3f "
	       "root_w_wait_per_op=%.3f\n",
	       phase_names[ph], ops, wall, ops / wall, 1e6 * (c1 - c0) / ops,
	       100.0 * (double)bt / thread_ns, root, leaf, 100.0 * (double)other / thread_ns,
	       (double)g.root_w / ops, (double)(g.root_w - g.root_w_tried) / ops);
	fflush(stdout);
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: enginebench -i IMAGE [-t THREADS] [-n FILES_PER_THREAD] "
		"[-l node|groups:N] [-T rwlock|mutex|spin] [-c path|leaf] [-s] [-S] [-f] "
		"[-p create,stat,mixed,unlink] [-N NODESIZE]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *img = NULL, *phases = "create,stat,mixed,unlink";
	struct core_opts o;
	struct format_opts fo = { .label = "enginebench", .force = true };
	struct worker w[MAX_THREADS];
	struct core *c = NULL;
	struct fsctx *fs = NULL;
	int subvols = 0, opt, ret, fd;

	core_opts_default(&o);
	while ((opt = getopt(argc, argv, "i:t:n:l:T:c:sSfp:N:")) != -1) {
		switch (opt) {
		case 'i': img = optarg; break;
		case 't': g.threads = atoi(optarg); break;
		case 'n': g.files = atoi(optarg); break;
		case 'l':
			if (!strcmp(optarg, "node"))
				o.lock_groups = 0;
			else if (!strncmp(optarg, "groups:", 7))
				o.lock_groups = (unsigned)atoi(optarg + 7);
			else
				usage();
			if (o.lock_groups > 64 || (o.lock_groups & (o.lock_groups - 1)))
				usage();
			break;
		case 'T': if (glock_type_parse(optarg, &o.locktype)) usage(); break;
		case 'c':
			if (!strcmp(optarg, "path")) o.cow_lock_path = true;
			else if (!strcmp(optarg, "leaf")) o.cow_lock_path = false;
			else usage();
			break;
		case 's': subvols = 1; break;
		case 'S': o.inode_spread = true; break;	/* inode_spread=on */
		case 'f': g.fsync = 1; break;
		case 'p': phases = optarg; break;
		case 'N': fo.nodesize = (uint32_t)atoi(optarg); break;
		default: usage();
		}
	}
	if (!img || g.threads < 1 || g.threads > MAX_THREADS || g.files < 1)
		usage();

	/* a fresh sparse image each run: 64 KiB of metadata per file is ample */
	fd = open(img, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || ftruncate(fd, (off_t)(1ull << 30) +
			       (off_t)g.threads * g.files * 65536) < 0) {
		fprintf(stderr, "enginebench: %s: %s\n", img, strerror(errno));
		return 1;
	}
	close(fd);
	const char *devs[] = { img };
	if ((ret = mount_format(devs, 1, &fo)) || (ret = mount_open(devs, 1, &o, &c)) ||
	    (ret = fsops_mount(c, &o, &fs))) {
		fprintf(stderr, "enginebench: format/open/mount %s: %s\n", img, strerror(-ret));
		return 1;
	}
	for (int i = 0; i < g.threads; i++) {
		char name[32];
		struct stat st;
		uint64_t id;

		memset(&w[i], 0, sizeof(w[i]));
		w[i].idx = i;
		snprintf(name, sizeof(name), "%d", i);
		if (subvols) {
			ret = subvol_create(fs, ROOT_DIR_INO, name, &cred, &id);
			w[i].fs = subvol_fs(fs, id);
			w[i].dir = ROOT_DIR_INO;
		} else {
			ret = fsops_mkdir(fs, ROOT_DIR_INO, name, 0755, &cred, &st);
			w[i].fs = fs;
			w[i].dir = (uint64_t)st.st_ino;
		}
		if (ret) {
			fprintf(stderr, "enginebench: %s %s: %s\n", subvols ? "subvolume" : "mkdir",
				name, strerror(-ret));
			return 1;
		}
	}
	/* the directories and subvolumes on disk before the clock starts */
	if ((ret = fsops_sync(fs))) {
		fprintf(stderr, "enginebench: sync: %s\n", strerror(-ret));
		return 1;
	}
	printf("config threads=%d files=%d locking=%s%.0u locktype=%s cowlock=%s subvols=%d fsync=%d\n",
	       g.threads, g.files, o.lock_groups ? "groups:" : "node", o.lock_groups,
	       glock_type_name(o.locktype), o.cow_lock_path ? "path" : "leaf", subvols, g.fsync);
	for (int ph = 0; ph < PH_NR; ph++) {
		char want[16];
		snprintf(want, sizeof(want), ",%s,", phase_names[ph]);
		char lst[80];
		snprintf(lst, sizeof(lst), ",%s,", phases);
		if (ph != PH_CREATE && !strstr(lst, want))
			continue;
		if (ph == PH_UNLINK && !strstr(lst, ",mixed,"))
			continue;	/* unlink removes the names mixed made */
		if (run_phase(w, (enum phase)ph))
			return 1;
	}
	fsops_unmount(fs);
	ret = mount_close(c);
	unlink(img);
	if (ret) {
		fprintf(stderr, "enginebench: close: %s\n", strerror(-ret));
		return 1;
	}
	return 0;
}
