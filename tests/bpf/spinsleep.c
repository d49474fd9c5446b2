// SPDX-License-Identifier: MIT
/*
 * spinsleep — the controlled workload of glass-profile's tests: THREADS
 * threads named spin-0, spin-1, ..., each repeating "spin SPIN_MS of its
 * own CPU time in spin_here(), then sleep SLEEP_MS" for SECONDS.  At exit
 * every thread prints what the kernel says it did, the oracle the tests
 * compare a profile with:
 *
 *     spin-N TID CPU_NS WALL_NS RUN_NS WAIT_NS SLICES
 *
 * over the thread's life up to the end of its loop: CLOCK_THREAD_CPUTIME_ID,
 * CLOCK_MONOTONIC from just before pthread_create(), and the scheduler's own
 * accounting, /proc/self/task/TID/schedstat: time on a CPU and time
 * runnable on a runqueue waiting for one (preempted, or woken or created
 * and not yet run), and how many times it was switched in; -1 -1 -1 where
 * schedstat is absent.
 * The spin is measured in thread CPU time, so a busy machine stretches the
 * cycle but not the spin: on-CPU time stays SPIN_MS per cycle.
 *
 * usage: spinsleep THREADS SPIN_MS SLEEP_MS SECONDS [wait|hold]
 *
 * With "wait", the threads start only once a line is read from stdin, so
 * a tracer can attach first and see the threads' whole lives.  "hold"
 * waits too, and then keeps the threads alive once they have measured
 * themselves: each blocks in a read of a pipe (pipe_read in the kernel,
 * its only blocking read) while the figures are printed, until a second
 * line on stdin lets them exit.  A tracer stopped in between has seen
 * every measured moment of their lives and nothing after it but that
 * read, instead of their exit path, which a loaded machine can stretch.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

static long spin_ms, sleep_ms, seconds;
static int hold_fd[2] = { -1, -1 };	/* "hold": the threads block reading [0] */
static int done;			/* threads that have measured themselves */

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
	int64_t t0;		/* CLOCK_MONOTONIC before pthread_create() */
	int64_t cpu_ns, wall_ns, run_ns, wait_ns, slices;
};

/* The calling thread's schedstat: ns on CPU, ns waiting on a runqueue,
 * switch-ins; -1 when the kernel does not keep it. */
static void schedstat(pid_t tid, int64_t *run, int64_t *wait, int64_t *slices)
{
	char path[64];
	long long r, w, n;
	FILE *f;

	*run = *wait = *slices = -1;
	snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", tid);
	f = fopen(path, "r");
	if (!f)
		return;
	if (fscanf(f, "%lld %lld %lld", &r, &w, &n) == 3) {
		*run = r;
		*wait = w;
		*slices = n;
	}
	fclose(f);
}

static void *run(void *arg)
{
	struct result *r = arg;
	int64_t end = now(CLOCK_MONOTONIC) + seconds * 1000000000LL;
	char name[16], c;

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
	/* schedstat first: the clocks read after it close the span */
	schedstat(r->tid, &r->run_ns, &r->wait_ns, &r->slices);
	r->cpu_ns = now(CLOCK_THREAD_CPUTIME_ID);
	r->wall_ns = now(CLOCK_MONOTONIC) - r->t0;
	if (hold_fd[0] < 0)
		return NULL;
	/* Straight into the read: nothing between the clocks and the block
	 * that could take a lock or wait (main polls the count). */
	__atomic_add_fetch(&done, 1, __ATOMIC_RELEASE);
	while (read(hold_fd[0], &c, 1) < 0 && errno == EINTR)
		;
	return NULL;
}

int main(int argc, char **argv)
{
	int n;
	pthread_t *th;
	struct result *r;

	bool hold = argc == 6 && !strcmp(argv[5], "hold");
	char line[16];

	if (argc != 5 && !(argc == 6 && (!strcmp(argv[5], "wait") || hold))) {
		fprintf(stderr, "usage: spinsleep THREADS SPIN_MS SLEEP_MS SECONDS [wait|hold]\n");
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
	if (argc == 6 && !fgets(line, sizeof(line), stdin))
		return 1;
	if (hold && pipe(hold_fd))
		return 1;
	th = calloc(n, sizeof(*th));
	r = calloc(n, sizeof(*r));
	if (!th || !r)
		return 1;
	for (int i = 0; i < n; i++) {
		r[i].idx = i;
		r[i].t0 = now(CLOCK_MONOTONIC);
		if (pthread_create(&th[i], NULL, run, &r[i]))
			return 1;
	}
	if (hold) {
		struct timespec ts = { 0, 10000000 };

		while (__atomic_load_n(&done, __ATOMIC_ACQUIRE) < n)
			nanosleep(&ts, NULL);
	} else {
		for (int i = 0; i < n; i++)
			pthread_join(th[i], NULL);
	}
	for (int i = 0; i < n; i++)
		printf("spin-%d %d %lld %lld %lld %lld %lld\n", i, r[i].tid,
		       (long long)r[i].cpu_ns, (long long)r[i].wall_ns,
		       (long long)r[i].run_ns, (long long)r[i].wait_ns,
		       (long long)r[i].slices);
	if (hold) {
		fflush(stdout);
		/* a line or EOF lets them go */
		(void)!fgets(line, sizeof(line), stdin);
		close(hold_fd[1]);
		for (int i = 0; i < n; i++)
			pthread_join(th[i], NULL);
	}
	return 0;
}
