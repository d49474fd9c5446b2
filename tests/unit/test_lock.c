// SPDX-License-Identifier: MIT
/*
 * test_lock.c — fs/base/lock.c: rwlock/mutex/spin semantics, contention with an
 * invariant checked under the lock, writer preference, gcond.
 * SEED=n replays a run (thread counts and iteration mixes come from it).
 */
#include "fs/base/lock.h"

#include <errno.h>
#include <sched.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

static unsigned seed;

/* ---- contention: a pair of counters that must always be equal --------- */
struct shared {
	struct glock l;
	volatile uint64_t a, b;
	int iters;
	volatile int bad;
	volatile int reads;
};

static void *writer(void *arg)
{
	struct shared *s = arg;
	for (int i = 0; i < s->iters; i++) {
		glock_write(&s->l);
		s->a++;
		if (i % 7 == 0)
			sched_yield();	/* widen the window a broken lock would let through */
		s->b++;
		glock_write_unlock(&s->l);
	}
	return NULL;
}

static void *reader(void *arg)
{
	struct shared *s = arg;
	for (int i = 0; i < s->iters; i++) {
		glock_read(&s->l);
		if (s->a != s->b)
			s->bad = 1;
		__atomic_fetch_add(&s->reads, 1, __ATOMIC_RELAXED);
		glock_read_unlock(&s->l);
	}
	return NULL;
}

static void contention(enum glock_type type, int nw, int nr, int iters)
{
	struct shared s;
	pthread_t th[64];
	char name[96];
	int n = 0;

	memset(&s, 0, sizeof(s));
	glock_init(&s.l, type, GLOCK_CLASS_MISC, 0, -1, -1);
	s.iters = iters;
	for (int i = 0; i < nw; i++)
		pthread_create(&th[n++], NULL, writer, &s);
	for (int i = 0; i < nr; i++)
		pthread_create(&th[n++], NULL, reader, &s);
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	snprintf(name, sizeof(name), "contention %s %dw/%dr x%d", glock_type_name(type),
		 nw, nr, iters);
	CHECK(name, s.a == (uint64_t)nw * iters && s.b == s.a && !s.bad &&
		    s.reads == nr * iters && s.l.state == 0);
}

/* ---- semantics -------------------------------------------------------- */
static void semantics(void)
{
	struct glock l;

	glock_init(&l, GLOCK_RWLOCK, GLOCK_CLASS_NODE, 5, 0, -1);
	glock_read(&l);
	CHECK("rwlock: readers share", glock_trylock(&l, GLOCK_READ));
	CHECK("rwlock: writer excluded by readers", !glock_trylock(&l, GLOCK_WRITE));
	glock_read_unlock(&l);
	glock_read_unlock(&l);
	CHECK("rwlock: free after reads", l.state == 0);
	glock_write(&l);
	CHECK("rwlock: reader excluded by writer", !glock_trylock(&l, GLOCK_READ));
	CHECK("rwlock: writer excluded by writer", !glock_trylock(&l, GLOCK_WRITE));
	glock_write_unlock(&l);
	CHECK("rwlock: free after write", l.state == 0 && l.waiters == 0);

	glock_init(&l, GLOCK_MUTEX, GLOCK_CLASS_MISC, 0, -1, -1);
	glock_read(&l);
	CHECK("mutex: read is exclusive", !glock_trylock(&l, GLOCK_READ));
	glock_read_unlock(&l);
	CHECK("mutex: trylock when free", glock_trylock(&l, GLOCK_WRITE));
	glock_write_unlock(&l);

	glock_init(&l, GLOCK_SPIN, GLOCK_CLASS_MISC, 0, -1, -1);
	glock_read(&l);
	CHECK("spin: read is exclusive", !glock_trylock(&l, GLOCK_WRITE) &&
	      !glock_trylock(&l, GLOCK_READ));
	glock_read_unlock(&l);
	CHECK("spin: free", l.state == 0);

	enum glock_type t;
	CHECK("parse rwlock", glock_type_parse("rwlock", &t) == 0 && t == GLOCK_RWLOCK);
	CHECK("parse spin", glock_type_parse("spin", &t) == 0 && t == GLOCK_SPIN);
	CHECK("parse bad", glock_type_parse("semaphore", &t) == -EINVAL);
	CHECK("class name", strcmp(glock_class_name(GLOCK_CLASS_ROOT), "root") == 0);
	CHECK("class name: last class", strcmp(glock_class_name(GLOCK_CLASS_MISC), "misc") == 0);
	CHECK("class name: not a class", strcmp(glock_class_name(0), "?") == 0 &&
	      strcmp(glock_class_name(GLOCK_CLASS_NR), "?") == 0 &&
	      !glock_class_str(0) && !glock_class_str(GLOCK_CLASS_NR) &&
	      !glock_class_str(-1u));
	glock_relabel(&l, GLOCK_CLASS_NODE, 7, 2, 3);
	CHECK("relabel", l.cls == GLOCK_CLASS_NODE && l.tree == 7 && l.level == 2 && l.group == 3);
}

/* Writer preference: once a writer waits, new readers must wait too. */
struct pref { struct glock l; volatile int writer_got; };
static void *pref_writer(void *arg)
{
	struct pref *p = arg;
	glock_write(&p->l);
	p->writer_got = 1;
	glock_write_unlock(&p->l);
	return NULL;
}

static void writer_preference(void)
{
	struct pref p = { .writer_got = 0 };
	struct glock_stats s0, s1;
	pthread_t th;
	int blocked = 0;

	glock_stats_read(&s0);
	glock_init(&p.l, GLOCK_RWLOCK, GLOCK_CLASS_MISC, 0, -1, -1);
	glock_read(&p.l);
	pthread_create(&th, NULL, pref_writer, &p);
	for (int i = 0; i < 2000 && !blocked; i++) {	/* up to 2 s for it to announce */
		if (!glock_trylock(&p.l, GLOCK_READ))
			blocked = 1;
		else
			glock_read_unlock(&p.l);
		usleep(1000);
	}
	CHECK("rwlock: waiting writer blocks new readers", blocked && !p.writer_got);
	glock_read_unlock(&p.l);
	pthread_join(th, NULL);
	CHECK("rwlock: writer ran after readers left", p.writer_got && p.l.state == 0);
	/* the writer waited (>= 1 ms: it announced before the loop saw it):
	 * the statistics count that wait under the lock's class, no tracer on */
	glock_stats_read(&s1);
	CHECK("stats: the wait is counted in its class",
	      s1.waits[GLOCK_CLASS_MISC] - s0.waits[GLOCK_CLASS_MISC] >= 1 &&
	      s1.wait_ns[GLOCK_CLASS_MISC] - s0.wait_ns[GLOCK_CLASS_MISC] >= 1000000 &&
	      s1.waits[GLOCK_CLASS_ROOT] == s0.waits[GLOCK_CLASS_ROOT]);
}

/* glock_counts_read: this thread's acquisitions, by class and mode, with
 * trylock successes and without another thread's. */
static void *count_other(void *arg)
{
	struct glock *l = arg;

	for (int i = 0; i < 5; i++) {
		glock_write(l);
		glock_write_unlock(l);
	}
	return NULL;
}

static void thread_counts(void)
{
	struct glock_counts c0, c1;
	struct glock l;
	pthread_t th;

	glock_init(&l, GLOCK_RWLOCK, GLOCK_CLASS_GROUP, 0, 1, 3);
	glock_counts_read(&c0);
	for (int i = 0; i < 3; i++) {
		glock_read(&l);
		glock_read_unlock(&l);
	}
	glock_write(&l);
	glock_write_unlock(&l);
	if (glock_trylock(&l, GLOCK_WRITE))
		glock_write_unlock(&l);
	pthread_create(&th, NULL, count_other, &l);
	pthread_join(th, NULL);
	glock_counts_read(&c1);
	/* glock_busy: would an acquisition wait now */
	{
		struct glock m;
		bool free_ok, rd, wr;

		glock_init(&m, GLOCK_MUTEX, GLOCK_CLASS_MISC, 0, -1, -1);
		free_ok = !glock_busy(&l, GLOCK_WRITE) && !glock_busy(&m, GLOCK_READ);
		glock_read(&l);
		rd = !glock_busy(&l, GLOCK_READ) && glock_busy(&l, GLOCK_WRITE);
		glock_read_unlock(&l);
		glock_write(&l);
		glock_read(&m);		/* a mutex's read is exclusive */
		wr = glock_busy(&l, GLOCK_READ) && glock_busy(&m, GLOCK_READ);
		glock_read_unlock(&m);
		glock_write_unlock(&l);
		CHECK("busy: free, shared by readers, excluded by a writer or a mutex holder",
		      free_ok && rd && wr);
	}
	CHECK("counts: this thread's acquisitions by class and mode",
	      c1.acquired[GLOCK_CLASS_GROUP][GLOCK_READ] - c0.acquired[GLOCK_CLASS_GROUP][GLOCK_READ] == 3 &&
	      c1.acquired[GLOCK_CLASS_GROUP][GLOCK_WRITE] - c0.acquired[GLOCK_CLASS_GROUP][GLOCK_WRITE] == 2 &&
	      c1.acquired[GLOCK_CLASS_NODE][GLOCK_WRITE] == c0.acquired[GLOCK_CLASS_NODE][GLOCK_WRITE]);
}

/* ---- gcond ------------------------------------------------------------ */
struct cq { struct glock l; struct gcond c; int items, consumed, done; };

static void *consumer(void *arg)
{
	struct cq *q = arg;
	glock_write(&q->l);
	for (;;) {
		while (q->items == 0 && !q->done)
			gcond_wait(&q->c, &q->l);
		if (q->items == 0 && q->done)
			break;
		q->items--;
		q->consumed++;
	}
	glock_write_unlock(&q->l);
	return NULL;
}

static void gcond_tests(int ncons, int nitems)
{
	struct cq q = { .items = 0 };
	pthread_t th[16];

	glock_init(&q.l, GLOCK_MUTEX, GLOCK_CLASS_TXN, 0, -1, -1);
	gcond_init(&q.c);
	for (int i = 0; i < ncons; i++)
		pthread_create(&th[i], NULL, consumer, &q);
	for (int i = 0; i < nitems; i++) {
		glock_write(&q.l);
		q.items++;
		gcond_broadcast(&q.c);
		glock_write_unlock(&q.l);
	}
	glock_write(&q.l);
	q.done = 1;
	gcond_broadcast(&q.c);
	glock_write_unlock(&q.l);
	for (int i = 0; i < ncons; i++)
		pthread_join(th[i], NULL);
	CHECK("gcond: every item consumed", q.consumed == nitems && q.items == 0);

	uint64_t t0 = glock_now_ns();
	glock_write(&q.l);
	bool woke = gcond_timedwait(&q.c, &q.l, 20 * 1000000ull);
	glock_write_unlock(&q.l);
	uint64_t dt = glock_now_ns() - t0;
	CHECK("gcond: timedwait times out", !woke && dt >= 19 * 1000000ull && dt < 2000000000ull);
}

/*
 * One writer woken at a time: many writers through one lock with short
 * holds (the FUSE workers of issue 22 on one file's inode lock).  A release
 * that finds writers waiting wakes one and marks it; the releases that
 * follow before a waiter runs its loop again wake nobody.  Counted
 * (glock_stats): FUTEX_WAKE calls for writers, against what can consume a
 * mark — a waiting writer's acquisition or its going to sleep.  Each wake
 * needs a mark consumed since the one before, or the woken writer to have
 * not run for STALE_WAKE_US (a re-wake, counted apart), so wakes -
 * rewakes <= waits + sleeps + 1 whatever the scheduling.  Without the mark every release that saw a
 * waiter announced woke one: 9-12 wakes per contended acquisition here on
 * 2 CPUs, most of them waking nobody or a writer that found the lock
 * taken again and slept.
 */
struct wake_run { struct glock l; int iters; volatile uint64_t n; };
static void *wake_worker(void *arg)
{
	struct wake_run *w = arg;

	for (int i = 0; i < w->iters; i++) {
		glock_write(&w->l);
		w->n++;
		for (int k = 0; k < 200; k++)	/* ~ a short engine hold */
			__asm__ __volatile__("" ::: "memory");
		if (i % 64 == 0)
			sched_yield();	/* now and then a holder is not running */
		glock_write_unlock(&w->l);
		for (int k = 0; k < 100; k++)
			__asm__ __volatile__("" ::: "memory");
	}
	return NULL;
}

static void wake_once(enum glock_type type, int nthreads, int iters)
{
	struct wake_run w = { .iters = iters };
	struct glock_stats s0, s1;
	pthread_t th[16];
	uint64_t waits, wakes, sleeps, rewakes;

	glock_init(&w.l, type, GLOCK_CLASS_INODE, 0, -1, -1);
	glock_stats_read(&s0);
	for (int i = 0; i < nthreads; i++)
		pthread_create(&th[i], NULL, wake_worker, &w);
	for (int i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	glock_stats_read(&s1);
	waits = s1.waits[GLOCK_CLASS_INODE] - s0.waits[GLOCK_CLASS_INODE];
	wakes = s1.writer_wakes - s0.writer_wakes;
	sleeps = s1.writer_sleeps - s0.writer_sleeps;
	rewakes = s1.writer_rewakes - s0.writer_rewakes;
	printf("  %s, %d writers: %llu waits, %llu sleeps, %llu writer wakes (%llu re-wakes)\n",
	       glock_type_name(type), nthreads, (unsigned long long)waits,
	       (unsigned long long)sleeps, (unsigned long long)wakes,
	       (unsigned long long)rewakes);
	CHECK("wake once: every acquisition made, the lock left free",
	      w.n == (uint64_t)nthreads * (uint64_t)iters && w.l.state == 0);
	CHECK("wake once: a writer wake per waiter's acquisition or sleep at most",
	      rewakes <= wakes && wakes - rewakes <= waits + sleeps + 1);
}

/*
 * The lock word's counts (lock.c): WW, writers waiting, is 11 bits —
 * 2,047 at most — and glock.waiters, sleeping readers, 16 bits.  The
 * daemon's FUSE workers are its threads= option (up to 1,000,000), each
 * one blocked writer of an inode at most: 2,048 writers of one file is
 * a big machine's ordinary load.  A count past its field must not carry
 * into the bit above (WW into W: the lock reads free while it is held)
 * or wrap (waiters: a release that sees none wakes nobody).
 *
 * ww_limit: the test holds a lock; 2,047 writers announce and sleep; a
 * 2,048th comes.  Until the test releases nobody may get in; then each
 * gets in once, alone.  Real threads (64 KiB stacks).
 */
#define WW_THREADS 2048
struct ww_run {
	struct glock l;
	int inside, bad, done, entered;
};

static void *ww_thread(void *arg)
{
	struct ww_run *w = arg;

	__atomic_add_fetch(&w->entered, 1, __ATOMIC_SEQ_CST);
	glock_write(&w->l);
	if (__atomic_add_fetch(&w->inside, 1, __ATOMIC_SEQ_CST) != 1)
		w->bad = 1;
	__atomic_sub_fetch(&w->inside, 1, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&w->done, 1, __ATOMIC_SEQ_CST);
	glock_write_unlock(&w->l);
	return NULL;
}

/* Wait (yielding) until cond; false after `secs` — a hang, not timing. */
#define WAIT_FOR(cond, secs) ({ \
	uint64_t _t0 = glock_now_ns(); bool _ok; \
	while (!(_ok = (cond)) && glock_now_ns() - _t0 < (uint64_t)(secs) * 1000000000ull) \
		sched_yield(); \
	_ok; })

static void ww_limit(void)
{
	static struct ww_run w;
	static pthread_t th[WW_THREADS];
	struct glock_stats s0, s1;
	pthread_attr_t at;
	int n = 0;

	memset(&w, 0, sizeof(w));
	glock_init(&w.l, GLOCK_RWLOCK, GLOCK_CLASS_INODE, 0, -1, -1);
	pthread_attr_init(&at);
	pthread_attr_setstacksize(&at, 64 << 10);
	glock_write(&w.l);
	for (; n < WW_THREADS - 1; n++)
		if (pthread_create(&th[n], &at, ww_thread, &w))
			break;
	CHECK("ww limit: 2,047 writers wait", n == WW_THREADS - 1 &&
	      WAIT_FOR(((__atomic_load_n(&w.l.state, __ATOMIC_SEQ_CST) >> 20) & 0x7ff) == 0x7ff, 60));
	glock_stats_read(&s0);
	uint32_t before = __atomic_load_n(&w.l.state, __ATOMIC_SEQ_CST);
	if (n == WW_THREADS - 1 && !pthread_create(&th[n], &at, ww_thread, &w))
		n++;
	/* the 2,048th has come to the announcement: it changed the word, or
	 * waits unannounced (writer_unannounced) */
	bool came = WAIT_FOR(__atomic_load_n(&w.l.state, __ATOMIC_SEQ_CST) != before ||
			     (glock_stats_read(&s1), s1.writer_unannounced != s0.writer_unannounced),
			     60);
	CHECK("ww limit: the 2,048th writer reached the lock", came && n == WW_THREADS);
	CHECK("ww limit: the lock still held with 2,048 writers waiting",
	      (__atomic_load_n(&w.l.state, __ATOMIC_SEQ_CST) & 0x80000000u) &&
	      !glock_trylock(&w.l, GLOCK_WRITE) && __atomic_load_n(&w.done, __ATOMIC_SEQ_CST) == 0);
	glock_write_unlock(&w.l);
	bool all = WAIT_FOR(__atomic_load_n(&w.done, __ATOMIC_SEQ_CST) == n, 60);
	CHECK("ww limit: every writer gets in once, alone", all && !w.bad);
	if (!all) {	/* some sleep with nobody to wake them: cannot join */
		printf("ww limit: %d of %d writers got in; state %#x\n", w.done, n, w.l.state);
		fflush(stdout);
		_exit(1);
	}
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	CHECK("ww limit: the lock left free", w.l.state == 0);
	pthread_attr_destroy(&at);
}

/*
 * waiters_limit: glock.waiters at its most (65,535 sleeping readers,
 * set by hand: as many threads are more than a test should start) and a
 * reader that must wait behind a writer.  It must not wrap the count to
 * 0 and sleep: the writer's release would then see no sleeping reader
 * and wake nobody.
 */
static struct glock wl_lock;
static int wl_got;

static void *wl_reader(void *arg)
{
	(void)arg;
	glock_read(&wl_lock);
	__atomic_store_n(&wl_got, 1, __ATOMIC_SEQ_CST);
	glock_read_unlock(&wl_lock);
	return NULL;
}

static void waiters_limit(void)
{
	pthread_t th;
	struct glock_stats s0, s1;

	glock_init(&wl_lock, GLOCK_RWLOCK, GLOCK_CLASS_INODE, 0, -1, -1);
	glock_write(&wl_lock);
	wl_lock.waiters = UINT16_MAX;
	wl_got = 0;
	glock_stats_read(&s0);
	if (pthread_create(&th, NULL, wl_reader, NULL)) {
		CHECK("waiters limit: thread", false);
		return;
	}
	/* the reader came to the count: it took it (0 after a wrap) or
	 * waits uncounted */
	bool came = WAIT_FOR(__atomic_load_n(&wl_lock.waiters, __ATOMIC_SEQ_CST) != UINT16_MAX ||
			     (glock_stats_read(&s1), s1.reader_uncounted != s0.reader_uncounted), 60);
	glock_write_unlock(&wl_lock);
	bool got = came && WAIT_FOR(__atomic_load_n(&wl_got, __ATOMIC_SEQ_CST), 10);
	CHECK("waiters limit: a reader past 65,535 sleeping ones gets in after the release", got);
	if (!got) {
		printf("waiters limit: the reader sleeps, waiters %u\n", wl_lock.waiters);
		fflush(stdout);
		_exit(1);
	}
	pthread_join(th, NULL);
	CHECK("waiters limit: the count left as it was", wl_lock.waiters == UINT16_MAX);
}

int main(void)
{
	const char *e = getenv("SEED");
	seed = e ? (unsigned)strtoul(e, NULL, 0) : (unsigned)(glock_now_ns() ^ getpid());
	printf("seed: %u\n", seed);
	srand(seed);

	semantics();
	writer_preference();
	thread_counts();
	for (int t = GLOCK_RWLOCK; t <= GLOCK_SPIN; t++) {
		int nw = 2 + rand() % 6, nr = 1 + rand() % 6;
		if (t == GLOCK_SPIN) {	/* spinners on a shared 2-CPU box: keep it small */
			nw = 2;
			nr = 1;
		}
		contention((enum glock_type)t, nw, nr, 5000 + rand() % 10000);
	}
	contention(GLOCK_RWLOCK, 16, 16, 2000);
	gcond_tests(1 + rand() % 8, 1000 + rand() % 5000);
	wake_once(GLOCK_MUTEX, 16, 20000);
	wake_once(GLOCK_RWLOCK, 8, 20000);
	ww_limit();
	waiters_limit();
	return fails ? 1 : 0;
}
