// SPDX-License-Identifier: MIT
/*
 * contend — a controlled lock-contention workload for the bpf tests.
 *
 *   contend SECONDS NTHREADS [HOLD_US [GO_FILE]]
 *
 * SECONDS may be a fraction (0.2: a short-lived process for the
 * symbolizer's tests).
 *
 * NTHREADS threads take one "tree root" glock (the engine's lock module,
 * fs/base/lock.c, firing the lock__* probes) in write mode through named,
 * never-inlined functions, hold it HOLD_US microseconds spinning, and let
 * go.  Waiters sleep in fs/base/lock.c's futex wait, so their off-CPU stacks read
 * worker -> contend_root_lock -> glock_lock -> futex kernel path.  Prints
 * the number of acquisitions at the end ("acquired N") and its pid at start.
 * GO_FILE: start the threads only once this file exists (at most 60 s):
 * tracers attach to the pid first, then the test creates the file.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "fs/base/lock.h"

static struct glock root_lock;
static atomic_ulong acquired;
static atomic_int stop;
static unsigned hold_us = 200;

static void __attribute__((noinline)) hold_root_lock(void)
{
	uint64_t end = glock_now_ns() + hold_us * 1000ULL;

	while (glock_now_ns() < end)
		__asm__ volatile("pause");
}

static void __attribute__((noinline)) contend_root_lock(void)
{
	glock_write(&root_lock);
	hold_root_lock();
	atomic_fetch_add(&acquired, 1);
	glock_write_unlock(&root_lock);
}

/*
 * Work outside the lock between acquisitions (half the hold time).
 * Without it the thread that lets go takes the lock straight back (the
 * fast path barges past the sleeping waiters), waiters starve, and a
 * one-second tracing window could see no contended acquisition at all.
 */
static void __attribute__((noinline)) think(void)
{
	uint64_t end = glock_now_ns() + hold_us * 500ULL;

	while (glock_now_ns() < end)
		__asm__ volatile("pause");
}

static void *worker(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		contend_root_lock();
		think();
	}
	return NULL;
}

int main(int argc, char **argv)
{
	double secs;
	struct timespec run;
	unsigned n;
	pthread_t *t;

	if (argc < 3) {
		fprintf(stderr, "usage: contend SECONDS NTHREADS [HOLD_US]\n");
		return 2;
	}
	secs = strtod(argv[1], NULL);
	n = atoi(argv[2]);
	if (argc > 3)
		hold_us = atoi(argv[3]);
	const char *go = argc > 4 ? argv[4] : NULL;
	if (!n || n > 256) {
		fprintf(stderr, "contend: NTHREADS must be 1..256\n");
		return 2;
	}
	glock_init(&root_lock, GLOCK_MUTEX, GLOCK_CLASS_ROOT, 5, 1, -1);
	t = calloc(n, sizeof(*t));
	printf("pid %d\n", getpid());
	fflush(stdout);
	for (int i = 0; go && access(go, F_OK) && i < 6000; i++)
		usleep(10000);
	for (unsigned i = 0; i < n; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	run.tv_sec = (time_t)secs;
	run.tv_nsec = (long)((secs - (double)run.tv_sec) * 1e9);
	while (nanosleep(&run, &run) && errno == EINTR)
		;
	atomic_store(&stop, 1);
	for (unsigned i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	printf("acquired %lu\n", atomic_load(&acquired));
	free(t);
	return 0;
}
