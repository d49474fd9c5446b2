// SPDX-License-Identifier: MIT
/*
 * crashload — the crash test's workload and checker.
 *
 *   crashload run DIR MANIFEST SEED ROUND   mixed workload until killed
 *   crashload scenario DIR MANIFEST SEED [big]  fixed fsync cases, then waits
 *   crashload verify DIR MANIFEST SEED      check every durable file
 *
 * The manifest (a file outside the tested mount) says what must hold
 * after the crash; for each path its LAST line counts:
 *   F PATH SIZE KEY         fsync returned: exactly SIZE bytes of pat(KEY)
 *   G PATH MIN MAX KEY      being appended (not yet fsync'd): old or new
 *                           state — size in [MIN, MAX], bytes pat(KEY)
 *   D PATH                  being deleted: either way
 *   A PATH                  gone for good (renamed away or unlinked, then
 *                           a later fsync committed that): must be absent
 *   X PATH NAME VALUE       (scenario) xattr NAME must be VALUE
 *   Y PATH NAME LEN KEY     (scenario) xattr NAME must be LEN bytes of
 *                           the pattern of KEY
 * F/G/A lines are appended only after the fsync returned (G before the
 * appends start), D before the unlink.
 *
 * run: two threads, each creating "durable" files (in DIR or in a
 * subdirectory of the round) with deterministic contents (from SEED, the
 * name and the offset), written in random pieces and fsync'd — directly,
 * or under a temporary name renamed into place and fsync'd again;
 * appending to durable files and fsyncing them; deleting some.  Between
 * them, scratch work in scratch/: creates, overwrites, truncates,
 * renames, links, mkdir/rmdir, unlinks, files unlinked while open
 * (orphans) — never checked, there to be interrupted.  Any error other
 * than the expected ones ends the thread (the daemon was killed).
 *
 * scenario: one pass over the fsync log's cases (new file, append to a
 * committed file, truncate, rename over a file, new file in a new
 * directory, a name removed then a new file, xattrs, a hard link, many
 * fsyncs of one file, fdatasync), then prints "ready" and sleeps until
 * killed.  With "big", the first fsync after the hard link's commit is of
 * a file with two 9000-byte xattrs: its record (about 18 KiB) does not
 * fit the 16 KiB slot that commit reserved for the log's first segment,
 * so that segment goes elsewhere and a superblock names it — the log
 * crash.test damages to check that fsck and mount catch a damaged
 * segment a superblock vouches for (a log that starts in the slot has
 * none: damage there reads as a torn write).
 *
 * verify: every rule of the manifest.  Prints one line per problem; exit 1.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/xattr.h>
#include <unistd.h>

static const char *dir;
static int manfd;
static uint64_t seed;
static int round_no;
static pthread_mutex_t manlock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static unsigned char pat(uint64_t key, uint64_t off)
{
	uint64_t x = (key + 1) * 0x9e3779b97f4a7c15ULL ^ (off / 8) * 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 31;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 29;
	return (unsigned char)(x >> ((off % 8) * 8));
}

static uint64_t file_key(int r, int t, long n)
{
	return seed * 1000003ULL + (uint64_t)r * 7919ULL + (uint64_t)t * 104729ULL + (uint64_t)n * 31ULL;
}

static void manifest(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void manifest(const char *fmt, ...)
{
	char line[8192];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&manlock);
	if (write(manfd, line, strlen(line)) < 0) {
		perror("crashload: manifest");
		exit(3);
	}
	pthread_mutex_unlock(&manlock);
}

/* Write bytes [from, to) of pat(key) at their offsets, in random pieces
 * (in order when seq, else the two halves in random order). */
static int write_pat(int fd, uint64_t key, uint64_t from, uint64_t to, int seq, uint64_t *rs)
{
	unsigned char *buf = malloc(to - from + 1);
	uint64_t half = from + (to - from) / 2;
	uint64_t order[2][2] = { { half, to }, { from, half } };
	int ret = 0;

	for (uint64_t i = from; i < to; i++)
		buf[i - from] = pat(key, i);
	if (seq || (rnd(rs) & 1)) {
		order[0][0] = from; order[0][1] = half;
		order[1][0] = half; order[1][1] = to;
	}
	for (int h = 0; h < 2 && !ret; h++) {
		uint64_t o = order[h][0];
		while (o < order[h][1]) {
			uint64_t piece = 1 + rnd(rs) % 70000;
			if (piece > order[h][1] - o)
				piece = order[h][1] - o;
			ssize_t w = pwrite(fd, buf + (o - from), piece, (off_t)o);
			if (w <= 0) {
				ret = -1;
				break;
			}
			o += (uint64_t)w;
		}
	}
	free(buf);
	return ret;
}

#define FUSE_SUPER_MAGIC 0x65735546

/* fsync or fdatasync, then make sure the file is on the FUSE mount: once
 * the daemon is killed and the mount lazily detached, paths lead to the
 * directory underneath, and nothing written there may enter the manifest. */
static int do_sync(int fd, uint64_t *rs)
{
	struct statfs sf;

	if ((rnd(rs) & 1 ? fsync(fd) : fdatasync(fd)) < 0)
		return -1;
	if (fstatfs(fd, &sf) < 0 || sf.f_type != FUSE_SUPER_MAGIC) {
		errno = EXDEV;
		return -1;
	}
	return 0;
}

static void durable_path(char *p, size_t n, int t, long i, int sub)
{
	if (sub)
		snprintf(p, n, "%s/sub%dt%d/r%dt%d_%ld", dir, round_no, t, round_no, t, i);
	else
		snprintf(p, n, "%s/r%dt%d_%ld", dir, round_no, t, i);
}

struct made {
	long n;
	int sub;
	uint64_t size;
};

static int make_durable(int t, long n, int sub, uint64_t *rs, struct made *m)
{
	char path[4096], tmp[4200];
	uint64_t size, key = file_key(round_no, t, n);
	int via_rename = rnd(rs) % 4 == 0;

	switch (rnd(rs) % 4) {
	case 0: size = rnd(rs) % 2000; break;		/* inline */
	case 1: size = rnd(rs) % 20000; break;
	case 2: size = 4096 * (1 + rnd(rs) % 16); break;
	default: size = rnd(rs) % 300000; break;
	}
	durable_path(path, sizeof(path), t, n, sub);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	int fd = open(via_rename ? tmp : path, O_CREAT | O_EXCL | O_WRONLY, 0644);
	if (fd < 0)
		return -1;
	if (write_pat(fd, key, 0, size, 0, rs) < 0 || do_sync(fd, rs) < 0) {
		close(fd);
		return -1;
	}
	if (via_rename) {
		/* the atomic-replace idiom: the rename then an fsync */
		if (rename(tmp, path) < 0 || do_sync(fd, rs) < 0) {
			close(fd);
			return -1;
		}
		manifest("A %s\n", tmp);
	}
	if (close(fd) < 0)
		return -1;
	manifest("F %s %llu %llu\n", path, (unsigned long long)size, (unsigned long long)key);
	*m = (struct made){ n, sub, size };
	return 0;
}

/* Append to a durable file and fsync it. */
static int grow(int t, struct made *m, uint64_t *rs)
{
	char path[4096];
	uint64_t key = file_key(round_no, t, m->n), add = 1 + rnd(rs) % 50000;

	durable_path(path, sizeof(path), t, m->n, m->sub);
	int fd = open(path, O_WRONLY);
	if (fd < 0)
		return -1;
	manifest("G %s %llu %llu %llu\n", path, (unsigned long long)m->size,
		 (unsigned long long)(m->size + add), (unsigned long long)key);
	if (write_pat(fd, key, m->size, m->size + add, 1, rs) < 0 || do_sync(fd, rs) < 0) {
		close(fd);
		return -1;
	}
	close(fd);
	m->size += add;
	manifest("F %s %llu %llu\n", path, (unsigned long long)m->size, (unsigned long long)key);
	return 0;
}

static int scratch(int t, uint64_t *rs)
{
	char a[4096], b[4096];
	static const char zeros[65536];
	int fd;

	snprintf(a, sizeof(a), "%s/scratch/t%d_%llu", dir, t, (unsigned long long)(rnd(rs) % 40));
	snprintf(b, sizeof(b), "%s/scratch/t%d_%llu", dir, t, (unsigned long long)(rnd(rs) % 40));
	switch (rnd(rs) % 10) {
	case 9:		/* written and fsync'd, then changed again: never checked */
		fd = open(a, O_CREAT | O_WRONLY, 0644);
		if (fd < 0)
			return errno == EISDIR || errno == ENOENT ? 0 : -1;
		if (pwrite(fd, zeros, 1 + rnd(rs) % sizeof(zeros), (off_t)(rnd(rs) % 100000)) < 0 ||
		    fsync(fd) < 0 || ftruncate(fd, (off_t)(rnd(rs) % 50000)) < 0) {
			close(fd);
			return -1;
		}
		return close(fd);
	case 8:		/* unlinked while open: an orphan until close */
		fd = open(a, O_CREAT | O_RDWR, 0644);
		if (fd < 0)
			return errno == EISDIR || errno == ENOENT ? 0 : -1;
		if (unlink(a) < 0 && errno != ENOENT) {
			close(fd);
			return -1;
		}
		if (pwrite(fd, zeros, 1 + rnd(rs) % sizeof(zeros), 0) < 0 ||
		    (rnd(rs) % 4 == 0 && fsync(fd) < 0)) {
			close(fd);
			return -1;
		}
		return close(fd);
	case 0: case 1:
		fd = open(a, O_CREAT | O_WRONLY, 0644);
		if (fd < 0)
			return errno == ENOENT || errno == EISDIR ? 0 : -1;
		if (pwrite(fd, zeros, 1 + rnd(rs) % sizeof(zeros), (off_t)(rnd(rs) % 200000)) < 0) {
			close(fd);
			return -1;
		}
		return close(fd);
	case 2:
		if (truncate(a, (off_t)(rnd(rs) % 100000)) < 0 && errno != ENOENT && errno != EISDIR)
			return -1;
		return 0;
	case 3:
		if (rename(a, b) < 0 && errno != ENOENT && errno != EISDIR && errno != ENOTDIR &&
		    errno != ENOTEMPTY && errno != EEXIST)
			return -1;
		return 0;
	case 4:
		if (unlink(a) < 0 && errno != ENOENT && errno != EISDIR)
			return -1;
		return 0;
	case 5:
		if (mkdir(a, 0755) < 0 && errno != EEXIST)
			return -1;
		return 0;
	case 6:
		if (rmdir(a) < 0 && errno != ENOENT && errno != ENOTDIR && errno != ENOTEMPTY)
			return -1;
		return 0;
	default:
		if (link(a, b) < 0 && errno != ENOENT && errno != EEXIST && errno != EPERM)
			return -1;
		return 0;
	}
}

static void *worker(void *arg)
{
	int t = (int)(intptr_t)arg;
	uint64_t rs = seed * 2654435761ULL + (uint64_t)round_no * 97 + (uint64_t)t * 13 + 1;
	long n = 0;
	static __thread struct made made[4096];
	int nmade = 0;
	char sub[4096];

	/* a new directory: its first files fall back to a full commit */
	snprintf(sub, sizeof(sub), "%s/sub%dt%d", dir, round_no, t);
	if (mkdir(sub, 0755) < 0 && errno != EEXIST)
		return NULL;
	for (;;) {
		int r = 0;
		uint64_t c = rnd(&rs) % 12;
		if (c < 4) {
			struct made m;
			r = make_durable(t, n, (int)(rnd(&rs) % 3 == 0), &rs, &m);
			if (r == 0 && nmade < 4096)
				made[nmade++] = m;
			n++;
		} else if (c < 6 && nmade > 0) {
			r = grow(t, &made[rnd(&rs) % (uint64_t)nmade], &rs);
		} else if (c == 6 && nmade > 0) {
			int i = (int)(rnd(&rs) % (uint64_t)nmade);
			char path[4096];
			durable_path(path, sizeof(path), t, made[i].n, made[i].sub);
			manifest("D %s\n", path);
			r = unlink(path);
			made[i] = made[--nmade];
		} else {
			r = scratch(t, &rs);
		}
		if (r < 0)
			return NULL;	/* the daemon is gone */
	}
}

/* ---- scenario ------------------------------------------------------------ */

static int fail_at(int line)
{
	fprintf(stderr, "crashload scenario: step at line %d: %s\n", line, strerror(errno));
	exit(1);
}
#define OK(x) ((x) < 0 ? fail_at(__LINE__) : 0)

/* Create path with size bytes of pat(key); optionally fsync. */
static void put_file(const char *path, uint64_t size, uint64_t key, int sync, uint64_t *rs)
{
	int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
	OK(fd);
	OK(write_pat(fd, key, 0, size, 0, rs));
	if (sync)
		OK(fsync(fd));
	OK(close(fd));
}

/* n bytes of pat(key) as the value of xattr name on path */
static void put_xattr(const char *path, const char *name, size_t n, uint64_t key)
{
	unsigned char *v = malloc(n);

	if (!v)
		fail_at(__LINE__);
	for (size_t i = 0; i < n; i++)
		v[i] = pat(key, i);
	OK(setxattr(path, name, v, n, 0));
	free(v);
}

static int scenario(int big)
{
	char p[4096], q[4096];
	uint64_t rs = seed | 1, k = seed * 7 + 1;
	int fd;

	/* committed before the fsyncs below (syncfs): the "old" state */
	snprintf(p, sizeof(p), "%s/old_append", dir);
	put_file(p, 10000, k + 1, 0, &rs);
	snprintf(p, sizeof(p), "%s/old_trunc", dir);
	put_file(p, 200000, k + 2, 0, &rs);
	snprintf(p, sizeof(p), "%s/target", dir);
	put_file(p, 5000, k + 3, 0, &rs);
	snprintf(p, sizeof(p), "%s/gone", dir);
	put_file(p, 3000, k + 4, 0, &rs);
	snprintf(p, sizeof(p), "%s/d1", dir);
	OK(mkdir(p, 0755));
	fd = open(dir, O_RDONLY | O_DIRECTORY);
	OK(fd);
	OK(syncfs(fd));
	close(fd);

	/* 1 a new file */
	snprintf(p, sizeof(p), "%s/new1", dir);
	put_file(p, 123457, k + 10, 1, &rs);
	manifest("F %s 123457 %llu\n", p, (unsigned long long)(k + 10));
	/* 2 a small (inline) new file in a committed directory */
	snprintf(p, sizeof(p), "%s/d1/small", dir);
	put_file(p, 700, k + 11, 1, &rs);
	manifest("F %s 700 %llu\n", p, (unsigned long long)(k + 11));
	/* 3 append to a committed file */
	snprintf(p, sizeof(p), "%s/old_append", dir);
	fd = open(p, O_WRONLY);
	OK(fd);
	OK(write_pat(fd, k + 1, 10000, 90000, 1, &rs));
	OK(fdatasync(fd));
	close(fd);
	manifest("F %s 90000 %llu\n", p, (unsigned long long)(k + 1));
	/* 4 truncate a committed file down */
	snprintf(p, sizeof(p), "%s/old_trunc", dir);
	OK(truncate(p, 4097));
	fd = open(p, O_WRONLY);
	OK(fd);
	OK(fsync(fd));
	close(fd);
	manifest("F %s 4097 %llu\n", p, (unsigned long long)(k + 2));
	/* 5 write a temporary file, rename it over a committed one, fsync */
	snprintf(p, sizeof(p), "%s/target.tmp", dir);
	snprintf(q, sizeof(q), "%s/target", dir);
	put_file(p, 77777, k + 12, 1, &rs);
	OK(rename(p, q));
	fd = open(q, O_RDONLY);
	OK(fd);
	OK(fsync(fd));
	close(fd);
	manifest("F %s 77777 %llu\nA %s\n", q, (unsigned long long)(k + 12), p);
	/* 6 a new file in a new directory */
	snprintf(p, sizeof(p), "%s/d2", dir);
	OK(mkdir(p, 0755));
	snprintf(p, sizeof(p), "%s/d2/f", dir);
	put_file(p, 40000, k + 13, 1, &rs);
	manifest("F %s 40000 %llu\n", p, (unsigned long long)(k + 13));
	/* 7 a name removed, then a new file in that directory */
	snprintf(p, sizeof(p), "%s/gone", dir);
	OK(unlink(p));
	snprintf(q, sizeof(q), "%s/gone2", dir);
	put_file(q, 6000, k + 14, 1, &rs);
	manifest("F %s 6000 %llu\nA %s\n", q, (unsigned long long)(k + 14), p);
	/* 8 xattrs */
	snprintf(p, sizeof(p), "%s/xat", dir);
	put_file(p, 100, k + 15, 0, &rs);
	OK(setxattr(p, "user.fsync", "logged", 6, 0));
	fd = open(p, O_RDONLY);
	OK(fd);
	OK(fsync(fd));
	close(fd);
	manifest("F %s 100 %llu\nX %s user.fsync logged\n", p, (unsigned long long)(k + 15), p);
	/* 9 many fsyncs of one new file, the last one counts */
	snprintf(p, sizeof(p), "%s/many", dir);
	fd = open(p, O_CREAT | O_WRONLY, 0644);
	OK(fd);
	for (int i = 0; i < 50; i++) {
		OK(write_pat(fd, k + 16, (uint64_t)i * 3000, (uint64_t)(i + 1) * 3000, 1, &rs));
		OK(fsync(fd));
	}
	close(fd);
	manifest("F %s 150000 %llu\n", p, (unsigned long long)(k + 16));
	/* 10 a hard link (names changed: a full commit) */
	snprintf(p, sizeof(p), "%s/new1", dir);
	snprintf(q, sizeof(q), "%s/d1/new1-link", dir);
	OK(link(p, q));
	fd = open(q, O_RDONLY);
	OK(fd);
	OK(fsync(fd));
	close(fd);
	manifest("F %s 123457 %llu\n", q, (unsigned long long)(k + 10));
	/* 11 after that commit, log again: (big: a first record larger than
	 * the commit's slot,) a new file and an append */
	if (big) {
		snprintf(p, sizeof(p), "%s/d2/bigx", dir);
		put_file(p, 100, k + 18, 0, &rs);
		put_xattr(p, "user.big1", 9000, k + 19);
		put_xattr(p, "user.big2", 9000, k + 20);
		fd = open(p, O_RDONLY);
		OK(fd);
		OK(fsync(fd));
		close(fd);
		manifest("F %s 100 %llu\nY %s user.big1 9000 %llu\nY %s user.big2 9000 %llu\n", p,
			 (unsigned long long)(k + 18), p, (unsigned long long)(k + 19), p,
			 (unsigned long long)(k + 20));
	}
	snprintf(p, sizeof(p), "%s/d2/late", dir);
	put_file(p, 9999, k + 17, 1, &rs);
	manifest("F %s 9999 %llu\n", p, (unsigned long long)(k + 17));
	snprintf(p, sizeof(p), "%s/old_append", dir);
	fd = open(p, O_WRONLY);
	OK(fd);
	OK(write_pat(fd, k + 1, 90000, 100000, 1, &rs));
	OK(fsync(fd));
	close(fd);
	manifest("F %s 100000 %llu\n", p, (unsigned long long)(k + 1));
	/* unsynced changes after the last fsyncs: old or new state */
	snprintf(p, sizeof(p), "%s/many", dir);
	manifest("G %s 150000 170000 %llu\n", p, (unsigned long long)(k + 16));
	fd = open(p, O_WRONLY);
	OK(fd);
	OK(write_pat(fd, k + 16, 150000, 170000, 1, &rs));
	close(fd);
	printf("ready\n");
	fflush(stdout);
	for (;;)
		pause();
	return 0;
}

/* ---- verify ---------------------------------------------------------------- */

struct rule {
	char kind;
	char *path;
	uint64_t a, b, key;
	char *xname, *xval;
	size_t seq;
};

static int cmp_rule(const void *x, const void *y)
{
	const struct rule *a = x, *b = y;
	int c = strcmp(a->path, b->path);

	if (c)
		return c;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static int check_content(const char *path, uint64_t min, uint64_t max, uint64_t key,
			 unsigned char *buf, size_t bufsz)
{
	struct stat st;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || fstat(fd, &st) < 0) {
		printf("%s: fsync'd file: %s\n", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return 1;
	}
	if ((uint64_t)st.st_size < min || (uint64_t)st.st_size > max) {
		if (min == max)
			printf("%s: size %lld, fsync'd with %llu\n", path, (long long)st.st_size,
			       (unsigned long long)min);
		else
			printf("%s: size %lld, neither the old nor the new state (%llu..%llu)\n", path,
			       (long long)st.st_size, (unsigned long long)min, (unsigned long long)max);
		close(fd);
		return 1;
	}
	ssize_t got = pread(fd, buf, bufsz, 0);
	close(fd);
	if (got != st.st_size) {
		printf("%s: read %zd of %lld bytes (%s)\n", path, got, (long long)st.st_size,
		       got < 0 ? strerror(errno) : "short");
		return 1;
	}
	for (ssize_t j = 0; j < got; j++)
		if (buf[j] != pat(key, (uint64_t)j)) {
			printf("%s: content differs at byte %zd (size %zd)\n", path, j, got);
			return 1;
		}
	return 0;
}

/* xattr name of path holds n bytes of pat(key): 0, or 1 with a line */
static int check_xattr(const char *path, const char *name, uint64_t n, uint64_t key)
{
	unsigned char *v = malloc(n + 1);
	ssize_t got = v ? getxattr(path, name, v, n + 1) : -1;
	int bad = got < 0 || (uint64_t)got != n;

	for (uint64_t i = 0; !bad && i < n; i++)
		bad = v[i] != pat(key, i);
	if (bad)
		printf("%s: xattr %s: %s\n", path, name,
		       got < 0 ? strerror(errno) : (uint64_t)got != n ? "wrong length" : "wrong value");
	free(v);
	return bad;
}

static int verify(void)
{
	FILE *f = fdopen(manfd, "r");
	struct rule *v = NULL;
	size_t nv = 0, cap = 0;
	char line[8192];
	int bad = 0;
	unsigned checked = 0;

	while (fgets(line, sizeof(line), f)) {
		struct rule r = { 0 };
		char path[4096], xn[256], xv[256];
		unsigned long long a, b, key;
		r.kind = line[0];
		if (r.kind == 'F' && sscanf(line + 2, "%4095s %llu %llu", path, &a, &key) == 3) {
			r.a = r.b = a;
			r.key = key;
		} else if (r.kind == 'G' && sscanf(line + 2, "%4095s %llu %llu %llu", path, &a, &b, &key) == 4) {
			r.a = a;
			r.b = b;
			r.key = key;
		} else if ((r.kind == 'D' || r.kind == 'A') && sscanf(line + 2, "%4095s", path) == 1) {
		} else if (r.kind == 'X' && sscanf(line + 2, "%4095s %255s %255s", path, xn, xv) == 3) {
			r.xname = strdup(xn);
			r.xval = strdup(xv);
		} else if (r.kind == 'Y' &&
			   sscanf(line + 2, "%4095s %255s %llu %llu", path, xn, &a, &key) == 4) {
			r.xname = strdup(xn);
			r.a = a;
			r.key = key;
		} else {
			continue;	/* a line torn by the kill */
		}
		r.path = strdup(path);
		r.seq = nv;
		if (nv == cap) {
			cap = cap ? cap * 2 : 1024;
			v = realloc(v, cap * sizeof(*v));
		}
		v[nv++] = r;
	}
	qsort(v, nv, sizeof(*v), cmp_rule);
	size_t bufsz = 4 << 20;
	unsigned char *buf = malloc(bufsz);
	for (size_t i = 0; i < nv; i++) {
		struct rule *r = &v[i];
		if (r->kind == 'X') {
			char val[256];
			ssize_t n = getxattr(r->path, r->xname, val, sizeof(val) - 1);
			if (n < 0 || (val[n] = 0, strcmp(val, r->xval))) {
				printf("%s: xattr %s: %s\n", r->path, r->xname,
				       n < 0 ? strerror(errno) : "wrong value");
				bad++;
			}
			continue;
		}
		if (r->kind == 'Y') {
			bad += check_xattr(r->path, r->xname, r->a, r->key);
			continue;
		}
		/* the last F/G/D/A rule of a path counts */
		size_t j = i + 1;
		while (j < nv && !strcmp(v[j].path, r->path) && (v[j].kind == 'X' || v[j].kind == 'Y'))
			j++;
		if (j < nv && !strcmp(v[j].path, r->path))
			continue;
		if (r->kind == 'D')
			continue;
		if (r->kind == 'A') {
			struct stat st;
			if (lstat(r->path, &st) == 0) {
				printf("%s: still exists; its removal was made durable by a later fsync\n",
				       r->path);
				bad++;
			}
			continue;
		}
		checked++;
		bad += check_content(r->path, r->a, r->b, r->key, buf, bufsz);
	}
	free(buf);
	for (size_t i = 0; i < nv; i++) {
		free(v[i].path);
		free(v[i].xname);
		free(v[i].xval);
	}
	free(v);
	printf("verified %u fsync'd files, %d bad\n", checked, bad);
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc < 5 || (strcmp(argv[1], "run") && strcmp(argv[1], "verify") &&
			 strcmp(argv[1], "scenario"))) {
		fprintf(stderr, "usage: crashload run DIR MANIFEST SEED ROUND\n"
				"       crashload scenario DIR MANIFEST SEED [big]\n"
				"       crashload verify DIR MANIFEST SEED\n");
		return 2;
	}
	dir = argv[2];
	seed = strtoull(argv[4], NULL, 0);
	if (!strcmp(argv[1], "verify")) {
		manfd = open(argv[3], O_RDONLY);
		if (manfd < 0) {
			perror(argv[3]);
			return 2;
		}
		return verify();
	}
	manfd = open(argv[3], O_WRONLY | O_APPEND | O_CREAT, 0644);
	if (manfd < 0) {
		perror(argv[3]);
		return 2;
	}
	if (!strcmp(argv[1], "scenario"))
		return scenario(argc > 5 && !strcmp(argv[5], "big"));
	if (argc < 6)
		return 2;
	round_no = atoi(argv[5]);
	char sd[4096];
	snprintf(sd, sizeof(sd), "%s/scratch", dir);
	mkdir(sd, 0755);
	pthread_t th[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	return 0;
}
