// SPDX-License-Identifier: MIT
/*
 * wrbench — the engine's cost per WRITE request in-process (issue 22),
 * with no FUSE in the way: the CPU a 4 KiB random overwrite costs the
 * daemon's engine, which with the writeback cache sets the rate fio's
 * buffered random writes are throttled to.
 *
 * A fresh volume on a sparse image; one file laid out by sequential
 * 1 MiB writes (fsops_write, as writeback's large WRITEs), synced; then N
 * random block-aligned writes of B bytes (fsops_write_as with the
 * writeback cache's credentials), timed alone.  Output, key=value:
 *   phase=randwrite ops=N us_per_op=CPU (getrusage of the process, so
 *   the commit thread counts) wall_us_per_op=... node_lookups_per_op=
 *   node cache hits and misses per write (B-tree nodes visited: a count,
 *   steady under load, unlike the times) dev_writes_per_op=...
 *   dev_write_kib_per_op (bytes written to the devices: data, nodes,
 *   log segments and the log's arena zero fills), log_arenas and
 *   log_arena_fills (arenas the fsync log reserved, and of those the
 *   ones written with zeros: a hole of the image under them),
 *   dev_flushes_per_op, commits_per_10k.  With -f, each write is
 *   followed by fsops_fsync (datasync): phase=fsyncrand, a database's
 *   pattern, the fsync log's cost per fsync in the engine (issue 22).
 *   With -x PCT, that percent of the writes cover two blocks (B bytes
 *   each, side by side) instead of one, as the writeback cache sends
 *   two adjacent dirty pages as one WRITE (issue 22: a WRITE over two
 *   blocks each copied on write earlier in the transaction goes in place
 *   as two extents); rewrites_per_op counts the extents written in
 *   place (data_rewrites).
 *   -c sets the periodic commit's interval: a long one (-c 3600) keeps
 *   the commits of a run at the same writes whatever its speed (under
 *   valgrind, say), so instruction counts of two builds compare.
 *   With -t T (threads, default 1) the N writes are shared by T threads
 *   writing the one file, as the daemon's FUSE workers do with the
 *   writeback cache's WRITEs, and the lock module's counts per write
 *   follow: inode_waits_per_op (acquisitions of an inode lock that had to
 *   wait), writer_sleeps_per_op and writer_wakes_per_op (FUTEX_WAIT and
 *   FUTEX_WAKE calls for waiting writers, every lock; writer_rewakes_per_op:
 *   of those, made while a writer woken earlier had not run yet).
 *
 * Usage: wrbench -i IMAGE [-s FILE_MiB (512)] [-n WRITES (100000)] [-b BYTES (4096)]
 *                [-S SEED] [-t THREADS (1)] [-x PCT_TWO_BLOCKS (0)]
 *                [-c COMMIT_INTERVAL_S (the engine's default)] [-f]
 * Exit: 0, or 1 with the failing operation and its errno on stderr.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "fs/base/lock.h"
#include "fs/ops/mount.h"
#include "fs/core/core.h"
#include "fs/format/keys.h"
#include "fs/ops/fsops.h"
#include "fs/items/log.h"

static double cpu_us(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

static double wall_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* one writer thread's share of the random writes */
struct writer {
	struct fsctx *fs;
	const struct fsops_cred *cr;
	uint64_t ino;
	long n, blocks, bs, two_pct;
	bool fsync;		/* -f: fdatasync after each write */
	unsigned seed;
	int err;
	pthread_t th;
};

static void *write_random(void *arg)
{
	struct writer *w = arg;
	char *buf = malloc(2 * (size_t)w->bs);

	if (!buf) {
		w->err = ENOMEM;
		return NULL;
	}
	memset(buf, 0xa5, 2 * (size_t)w->bs);
	for (long i = 0; i < w->n; i++) {
		long blk = rand_r(&w->seed) % w->blocks;
		long len = w->bs;
		if (w->two_pct && rand_r(&w->seed) % 100 < w->two_pct && blk + 1 < w->blocks)
			len *= 2;
		uint64_t off = (uint64_t)blk * (uint64_t)w->bs;
		buf[0] = (char)i;
		ssize_t r = fsops_write_as(w->fs, w->ino, buf, (size_t)len, off, w->cr);
		if (r != len) {
			w->err = r < 0 ? (int)-r : EIO;
			break;
		}
		if (w->fsync && (r = fsops_fsync(w->fs, w->ino, 1))) {
			w->err = (int)-r;
			break;
		}
	}
	free(buf);
	return NULL;
}

int main(int argc, char **argv)
{
	const char *img = NULL;
	long mib = 512, n = 100000, bs = 4096, nthreads = 1, two_pct = 0;
	unsigned seed = 1;
	bool fsync = false;
	struct core_opts o;
	struct format_opts fo = { .label = "wrbench", .force = true };
	struct fsops_cred cr = { .uid = 0, .gid = 0, .umask = 022,
				 .kernel_kills_privs = true, .kernel_times = true };
	struct core *c = NULL;
	struct fsctx *fs = NULL;
	struct stat st;
	int opt, ret, fd;

	core_opts_default(&o);
	while ((opt = getopt(argc, argv, "i:s:n:b:S:t:x:c:f")) != -1) {
		switch (opt) {
		case 'i': img = optarg; break;
		case 's': mib = atol(optarg); break;
		case 'n': n = atol(optarg); break;
		case 'b': bs = atol(optarg); break;
		case 'S': seed = (unsigned)atol(optarg); break;
		case 't': nthreads = atol(optarg); break;
		case 'x': two_pct = atol(optarg); break;
		case 'c': o.commit_interval_s = (uint32_t)atol(optarg); break;
		case 'f': fsync = true; break;
		default: img = NULL; optind = argc; break;
		}
	}
	if (!img || mib < 1 || n < 1 || bs < 4096 || bs % 4096 || bs > (1 << 20) ||
	    nthreads < 1 || nthreads > 64 || two_pct < 0 || two_pct > 100) {
		fprintf(stderr, "usage: wrbench -i IMAGE [-s FILE_MiB] [-n WRITES] [-b BYTES] [-S SEED] "
			"[-t THREADS] [-x PCT_TWO_BLOCKS] [-c COMMIT_INTERVAL_S] [-f]\n");
		return 2;
	}
	fd = open(img, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || ftruncate(fd, (off_t)(mib * 4 + 1024) << 20) < 0) {
		fprintf(stderr, "wrbench: %s: %s\n", img, strerror(errno));
		return 1;
	}
	close(fd);
	const char *devs[] = { img };
	if ((ret = mount_format(devs, 1, &fo)) || (ret = mount_open(devs, 1, &o, &c)) ||
	    (ret = fsops_mount(c, &o, &fs)) ||
	    (ret = fsops_mknod(fs, ROOT_DIR_INO, "data", S_IFREG | 0644, 0, &cr, &st))) {
		fprintf(stderr, "wrbench: format/open/mount/create %s: %s\n", img, strerror(-ret));
		return 1;
	}
	char *buf = malloc(1 << 20);
	if (!buf)
		return 1;
	memset(buf, 0xa5, 1 << 20);
	for (long i = 0; i < mib; i++) {
		ssize_t w = fsops_write_as(fs, (uint64_t)st.st_ino, buf, 1 << 20, (uint64_t)i << 20, &cr);
		if (w != 1 << 20) {
			fprintf(stderr, "wrbench: layout write: %s\n", strerror(w < 0 ? (int)-w : EIO));
			return 1;
		}
	}
	if ((ret = fsops_sync(fs))) {
		fprintf(stderr, "wrbench: sync: %s\n", strerror(-ret));
		return 1;
	}
	long blocks = (mib << 20) / bs;
	struct writer w[64];
	struct core_stats s0, s1;
	struct glock_stats l0, l1;
	struct log_stats g0, g1;
	mount_stats(c, &s0);
	log_stats(c, &g0);
	glock_stats_read(&l0);
	double c0 = cpu_us(), w0 = wall_us();
	for (long t = 0; t < nthreads; t++) {
		w[t] = (struct writer){ .fs = fs, .cr = &cr, .ino = (uint64_t)st.st_ino,
					.n = n / nthreads + (t < n % nthreads), .blocks = blocks,
					.bs = bs, .two_pct = two_pct, .fsync = fsync, .seed = seed + (unsigned)t };
		if (nthreads == 1)
			write_random(&w[t]);
		else if (pthread_create(&w[t].th, NULL, write_random, &w[t]))
			w[t].err = EAGAIN;
	}
	for (long t = 0; t < nthreads && nthreads > 1; t++)
		if (w[t].err != EAGAIN)
			pthread_join(w[t].th, NULL);
	double c1 = cpu_us(), w1 = wall_us();
	mount_stats(c, &s1);
	log_stats(c, &g1);
	glock_stats_read(&l1);
	for (long t = 0; t < nthreads; t++) {
		if (w[t].err) {
			fprintf(stderr, "wrbench: write: %s\n", strerror(w[t].err));
			return 1;
		}
	}
	printf("phase=%s ops=%ld bs=%ld file_mib=%ld threads=%ld us_per_op=%.2f wall_us_per_op=%.2f "
	       "node_lookups_per_op=%.2f dev_writes_per_op=%.2f dev_write_kib_per_op=%.2f "
	       "dev_flushes_per_op=%.2f "
	       "commits_per_10k=%.1f inode_waits_per_op=%.3f "
	       "writer_sleeps_per_op=%.3f writer_wakes_per_op=%.3f writer_rewakes_per_op=%.3f "
	       "two_block_pct=%ld rewrites_per_op=%.3f log_arenas=%llu log_arena_fills=%llu\n",
	       fsync ? "fsyncrand" : "randwrite", n, bs, mib, nthreads, (c1 - c0) / (double)n,
	       (w1 - w0) / (double)n,
	       (double)(s1.cache_hits + s1.cache_misses - s0.cache_hits - s0.cache_misses) / (double)n,
	       (double)(s1.dev_write_ios - s0.dev_write_ios) / (double)n,
	       (double)(s1.dev_write_bytes - s0.dev_write_bytes) / 1024.0 / (double)n,
	       (double)(s1.dev_flushes - s0.dev_flushes) / (double)n,
	       (double)(s1.commits - s0.commits) * 1e4 / (double)n,
	       (double)(l1.waits[GLOCK_CLASS_INODE] - l0.waits[GLOCK_CLASS_INODE]) / (double)n,
	       (double)(l1.writer_sleeps - l0.writer_sleeps) / (double)n,
	       (double)(l1.writer_wakes - l0.writer_wakes) / (double)n,
	       (double)(l1.writer_rewakes - l0.writer_rewakes) / (double)n, two_pct,
	       (double)(s1.data_rewrites - s0.data_rewrites) / (double)n,
	       (unsigned long long)(g1.arenas - g0.arenas), (unsigned long long)(g1.fills - g0.fills));
	free(buf);
	fsops_unmount(fs);
	ret = mount_close(c);
	unlink(img);
	return ret ? 1 : 0;
}
