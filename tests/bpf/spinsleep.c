// SPDX-License-Identifier: MIT
/*
 * spinsleep — the controlled workload of glass-profile's tests: THREADS
 * threads named spin-0, spin-1, ..., each repeating "spin SPIN_MS of its
 * own CPU time in spin_here(), then sleep SLEEP_MS" for SECONDS.  At exit
 * every thread prints what the kernel says it did, the oracle the tests
 * compare a profile with:
 *
 *     spin-N TID CPU_NS WALL_NS
 *
 * (CLOCK_THREAD_CPUTIME_ID and CLOCK_MONOTONIC over the thread's life.)
 * The spin is measured in thread CPU time, so a busy machine stretches the
 * cycle but not the spin: on-CPU time stays SPIN_MS per cycle.
 *
 * usage: spinsleep THREADS SPIN_MS SLEEP_MS SECONDS [wait]
 *
 * With "wait", the threads start only once a line is read from stdin, so
 * a tracer can attach first and see the threads' whole lives.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

static long spin_ms, sleep_ms, seconds;

static int64_t now(clockid_t c)
{
	struct timespec t;

	clock_gettime(c, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* The known function the profile must find on CPU.  The thread clock is
 * a system call (no vDSO fast path): read it about once a millisecond, so
 * nearly every sample lands in spin_here itself (a sample inside libc's
 * frameless clock_gettime would skip spin_here's frame). */
__attribute__((noinline)) void spin_here(int64_t cpu_ns)
{
	int64_t end = now(CLOCK_THREAD_CPUTIME_ID) + cpu_ns;
	volatile uint64_t x = 0;

	while (now(CLOCK_THREAD_CPUTIME_ID) < end)
		for (int i = 0; i < 500000; i++)
			x += i;
}

struct result {
	int idx;
	pid_t tid;
	int64_t cpu_ns, wall_ns;
};

static void *run(void *arg)
{
	struct result *r = arg;
	int64_t w0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_THREAD_CPUTIME_ID);
	int64_t end = w0 + seconds * 1000000000LL;
	char name[16];

	snprintf(name, sizeof(name), "spin-%d", r->idx);
	pthread_setname_np(pthread_self(), name);
	r->tid = syscall(SYS_gettid);
	while (now(CLOCK_MONOTONIC) < end) {
		if (spin_ms)
			spin_here(spin_ms * 1000000LL);
		if (sleep_ms) {
			struct timespec ts = { sleep_ms / 1000, (sleep_ms % 1000) * 1000000 };

			nanosleep(&ts, NULL);
		}
	}
	r->cpu_ns = now(CLOCK_THREAD_CPUTIME_ID) - c0;
	r->wall_ns = now(CLOCK_MONOTONIC) - w0;
	return NULL;
}

int main(int argc, char **argv)
{
	int n;
	pthread_t *th;
	struct result *r;

	if (argc != 5 && !(argc == 6 && !strcmp(argv[5], "wait"))) {
		fprintf(stderr, "usage: spinsleep THREADS SPIN_MS SLEEP_MS SECONDS [wait]\n");
		return 2;
	}
	n = atoi(argv[1]);
	spin_ms = atol(argv[2]);
	sleep_ms = atol(argv[3]);
	seconds = atol(argv[4]);
	if (n < 1 || n > 64 || spin_ms < 0 || sleep_ms < 0 || seconds < 1 ||
	    (!spin_ms && !sleep_ms)) {
		fprintf(stderr, "spinsleep: bad arguments\n");
		return 2;
	}
	if (argc == 6) {
		char line[16];

		if (!fgets(line, sizeof(line), stdin))
			return 1;
	}
	th = calloc(n, sizeof(*th));
	r = calloc(n, sizeof(*r));
	if (!th || !r)
		return 1;
	for (int i = 0; i < n; i++) {
		r[i].idx = i;
		if (pthread_create(&th[i], NULL, run, &r[i]))
			return 1;
	}
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < n; i++)
		printf("spin-%d %d %lld %lld\n", i, r[i].tid,
		       (long long)r[i].cpu_ns, (long long)r[i].wall_ns);
	return 0;
}
