// SPDX-License-Identifier: MIT
/*
 * fsynclat — fsync latency, timed around each fsync call.
 *
 *   fsynclat DIR THREADS N SIZE new|append
 *
 * new:    each thread creates N files DIR/tT/fI, writes SIZE bytes,
 *         fsyncs, closes (fs_mark -S 1's pattern);
 * append: each thread appends SIZE bytes to its file DIR/tT.log and
 *         fsyncs, N times (a database or log writer's pattern).
 * Prints one line: files, seconds, ops/s, and fsync latency p50, p90,
 * p99, max and mean in microseconds.  Exit 1 on any error.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *dir;
static long n, size;
static int append;
static uint64_t *lat;	/* threads * n latencies, ns */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *worker(void *arg)
{
	long t = (long)(intptr_t)arg;
	char path[4096];
	char *buf = malloc((size_t)size + 1);
	int fd = -1;

	memset(buf, 'a' + (int)(t % 26), (size_t)size);
	if (append) {
		snprintf(path, sizeof(path), "%s/t%ld.log", dir, t);
		fd = open(path, O_CREAT | O_TRUNC | O_WRONLY | O_APPEND, 0644);
		if (fd < 0)
			goto fail;
	} else {
		snprintf(path, sizeof(path), "%s/t%ld", dir, t);
		if (mkdir(path, 0755) < 0 && errno != EEXIST)
			goto fail;
	}
	for (long i = 0; i < n; i++) {
		if (!append) {
			snprintf(path, sizeof(path), "%s/t%ld/f%ld", dir, t, i);
			fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0644);
			if (fd < 0)
				goto fail;
		}
		if (size && write(fd, buf, (size_t)size) != size)
			goto fail;
		uint64_t t0 = now_ns();
		if (fsync(fd) < 0)
			goto fail;
		lat[t * n + i] = now_ns() - t0;
		if (!append && close(fd) < 0)
			goto fail;
	}
	if (append)
		close(fd);
	free(buf);
	return NULL;
fail:
	fprintf(stderr, "fsynclat: %s: %s\n", path, strerror(errno));
	exit(1);
}

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	if (argc != 6 || (strcmp(argv[5], "new") && strcmp(argv[5], "append"))) {
		fprintf(stderr, "usage: fsynclat DIR THREADS N SIZE new|append\n");
		return 2;
	}
	dir = argv[1];
	int threads = atoi(argv[2]);
	n = atol(argv[3]);
	size = atol(argv[4]);
	append = !strcmp(argv[5], "append");
	if (threads < 1 || threads > 256 || n < 1 || size < 0) {
		fprintf(stderr, "fsynclat: bad THREADS, N or SIZE\n");
		return 2;
	}
	lat = calloc((size_t)threads * (size_t)n, sizeof(*lat));
	pthread_t th[256];
	uint64_t t0 = now_ns();
	for (int i = 0; i < threads; i++)
		pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
	for (int i = 0; i < threads; i++)
		pthread_join(th[i], NULL);
	double secs = (double)(now_ns() - t0) / 1e9;
	size_t tot = (size_t)threads * (size_t)n;
	uint64_t sum = 0;
	qsort(lat, tot, sizeof(*lat), cmp);
	for (size_t i = 0; i < tot; i++)
		sum += lat[i];
#define PCT(p) ((double)lat[(size_t)((double)(tot - 1) * (p))] / 1000.0)
	printf("ops %zu secs %.3f rate %.1f p50_us %.1f p90_us %.1f p99_us %.1f max_us %.1f mean_us %.1f\n",
	       tot, secs, (double)tot / secs, PCT(0.50), PCT(0.90), PCT(0.99),
	       (double)lat[tot - 1] / 1000.0, (double)sum / (double)tot / 1000.0);
	free(lat);
	return 0;
}
