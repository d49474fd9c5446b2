// SPDX-License-Identifier: MIT
/*
 * crashload — the crash test's workload and checker.
 *
 *   crashload run DIR MANIFEST SEED ROUND   mixed workload until killed
 *   crashload verify DIR MANIFEST SEED      check every durable file
 *
 * run: two threads, each creating "durable" files r<ROUND>t<T>_<N> with
 * deterministic contents (from SEED, the name and the offset), written in
 * random pieces and fsync'd; only after fsync returns is "R T N SIZE"
 * appended to MANIFEST (a file outside the tested mount).  Durable files
 * are never changed afterwards; some are deleted, and "del R T N" goes to
 * the manifest BEFORE the unlink.  Between them, scratch work in scratch/:
 * creates, overwrites, truncates, renames, links, mkdir/rmdir, unlinks,
 * files unlinked while open (orphans) —
 * never checked, there to be interrupted.  Any error other than the
 * expected ones ends the thread (the daemon was killed).
 *
 * verify: every durable, undeleted file of the manifest must exist with
 * exactly its size and contents.  Prints one line per problem; exit 1.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

static void manifest(const char *line)
{
	pthread_mutex_lock(&manlock);
	if (write(manfd, line, strlen(line)) < 0) {
		perror("crashload: manifest");
		exit(3);
	}
	pthread_mutex_unlock(&manlock);
}

static int make_durable(int t, long n, uint64_t *rs)
{
	char path[4096], line[128];
	uint64_t size, key = file_key(round_no, t, n);
	unsigned char *buf;

	switch (rnd(rs) % 4) {
	case 0: size = rnd(rs) % 2000; break;		/* inline */
	case 1: size = rnd(rs) % 20000; break;
	case 2: size = 4096 * (1 + rnd(rs) % 16); break;
	default: size = rnd(rs) % 300000; break;
	}
	snprintf(path, sizeof(path), "%s/r%dt%d_%ld", dir, round_no, t, n);
	int fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0644);
	if (fd < 0)
		return -1;
	buf = malloc(size + 1);
	for (uint64_t i = 0; i < size; i++)
		buf[i] = pat(key, i);
	/* random pieces, in random order of two halves */
	uint64_t half = size / 2;
	uint64_t order[2][2] = { { half, size }, { 0, half } };
	if (rnd(rs) & 1) {
		order[0][0] = 0; order[0][1] = half;
		order[1][0] = half; order[1][1] = size;
	}
	for (int h = 0; h < 2; h++) {
		uint64_t o = order[h][0];
		while (o < order[h][1]) {
			uint64_t piece = 1 + rnd(rs) % 70000;
			if (piece > order[h][1] - o)
				piece = order[h][1] - o;
			ssize_t w = pwrite(fd, buf + o, piece, (off_t)o);
			if (w <= 0) {
				free(buf);
				close(fd);
				return -1;
			}
			o += (uint64_t)w;
		}
	}
	free(buf);
	if ((rnd(rs) & 1 ? fsync(fd) : fdatasync(fd)) < 0) {
		close(fd);
		return -1;
	}
	if (close(fd) < 0)
		return -1;
	snprintf(line, sizeof(line), "%d %d %ld %llu\n", round_no, t, n, (unsigned long long)size);
	manifest(line);
	return 0;
}

static int scratch(int t, uint64_t *rs)
{
	char a[4096], b[4096];
	static const char zeros[65536];
	int fd;

	snprintf(a, sizeof(a), "%s/scratch/t%d_%llu", dir, t, (unsigned long long)(rnd(rs) % 40));
	snprintf(b, sizeof(b), "%s/scratch/t%d_%llu", dir, t, (unsigned long long)(rnd(rs) % 40));
	switch (rnd(rs) % 9) {
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
			return errno == ENOENT ? 0 : -1;
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
	long made[4096];
	int nmade = 0;

	for (;;) {
		int r = 0;
		uint64_t c = rnd(&rs) % 10;
		if (c < 4) {
			r = make_durable(t, n, &rs);
			if (r == 0 && nmade < 4096)
				made[nmade++] = n;
			n++;
		} else if (c == 4 && nmade > 0) {
			int i = (int)(rnd(&rs) % (uint64_t)nmade);
			char line[128], path[4096];
			snprintf(line, sizeof(line), "del %d %d %ld\n", round_no, t, made[i]);
			manifest(line);
			snprintf(path, sizeof(path), "%s/r%dt%d_%ld", dir, round_no, t, made[i]);
			r = unlink(path);
			made[i] = made[--nmade];
		} else {
			r = scratch(t, &rs);
		}
		if (r < 0)
			return NULL;	/* the daemon is gone */
	}
}

struct ent {
	int r, t;
	long n;
	uint64_t size;
	int deleted;
};

static int verify(void)
{
	FILE *f = fdopen(manfd, "r");
	struct ent *v = NULL;
	size_t nv = 0, cap = 0;
	char line[256];
	int bad = 0;
	unsigned checked = 0;

	while (fgets(line, sizeof(line), f)) {
		struct ent e = { 0 };
		unsigned long long sz;
		if (!strncmp(line, "del ", 4)) {
			if (sscanf(line + 4, "%d %d %ld", &e.r, &e.t, &e.n) != 3)
				continue;
			for (size_t i = 0; i < nv; i++)
				if (v[i].r == e.r && v[i].t == e.t && v[i].n == e.n)
					v[i].deleted = 1;
			continue;
		}
		if (sscanf(line, "%d %d %ld %llu", &e.r, &e.t, &e.n, &sz) != 4)
			continue;
		e.size = sz;
		if (nv == cap) {
			cap = cap ? cap * 2 : 1024;
			v = realloc(v, cap * sizeof(*v));
		}
		v[nv++] = e;
	}
	unsigned char *buf = malloc(1 << 20);
	for (size_t i = 0; i < nv; i++) {
		char path[4096];
		struct stat st;
		if (v[i].deleted)
			continue;
		snprintf(path, sizeof(path), "%s/r%dt%d_%ld", dir, v[i].r, v[i].t, v[i].n);
		int fd = open(path, O_RDONLY);
		if (fd < 0 || fstat(fd, &st) < 0) {
			printf("%s: fsync'd file: %s\n", path, strerror(errno));
			bad++;
			if (fd >= 0)
				close(fd);
			continue;
		}
		checked++;
		if ((uint64_t)st.st_size != v[i].size) {
			printf("%s: size %lld, fsync'd with %llu\n", path, (long long)st.st_size,
			       (unsigned long long)v[i].size);
			bad++;
			close(fd);
			continue;
		}
		uint64_t key = file_key(v[i].r, v[i].t, v[i].n);
		ssize_t got = pread(fd, buf, 1 << 20, 0);
		if (got != (ssize_t)v[i].size) {
			printf("%s: read %zd of %llu bytes (%s)\n", path, got,
			       (unsigned long long)v[i].size, got < 0 ? strerror(errno) : "short");
			bad++;
		} else {
			for (ssize_t j = 0; j < got; j++)
				if (buf[j] != pat(key, (uint64_t)j)) {
					printf("%s: content differs at byte %zd\n", path, j);
					bad++;
					break;
				}
		}
		close(fd);
	}
	free(buf);
	free(v);
	printf("verified %u fsync'd files, %d bad\n", checked, bad);
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc < 5 || (strcmp(argv[1], "run") && strcmp(argv[1], "verify"))) {
		fprintf(stderr, "usage: crashload run DIR MANIFEST SEED ROUND\n"
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
	if (argc < 6)
		return 2;
	round_no = atoi(argv[5]);
	manfd = open(argv[3], O_WRONLY | O_APPEND | O_CREAT, 0644);
	if (manfd < 0) {
		perror(argv[3]);
		return 2;
	}
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
