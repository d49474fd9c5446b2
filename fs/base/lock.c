// SPDX-License-Identifier: MIT
/*
 * lock.c — the one lock module (see lock.h for the contract and lock order).
 *
 * Every wait blocks in a futex syscall issued from this file, which is built
 * with frame pointers: an off-CPU stack taken while a thread sleeps here
 * unwinds through glock_lock() into the engine path that wanted the lock.
 *
 * Lock word (struct glock.state) of GLOCK_RWLOCK and GLOCK_MUTEX:
 *
 *   bit 31      W   held for writing (exclusive)
 *   bits 20-30  WW  writers waiting (announced, may not be asleep yet)
 *   bit 19      K   a writer was woken and has not run its loop yet
 *   bits 0-18   R   readers holding the lock
 *
 * Limits: WW counts 2,047 waiting writers and glock.waiters 65,535
 * sleeping readers.  The daemon's threads= allows up to 100,000 FUSE
 * workers, so both can be reached (2,048 writers of one file): a writer
 * that finds WW full and a reader that finds waiters full wait awake,
 * uncounted (sched_yield between tries; writer_unannounced and
 * reader_uncounted in glock_stats) — a count past its field carried
 * into W (the lock read free while held) or wrapped to 0 (a release
 * woke nobody).  R (GLOCK_MAX_HOLDERS, 524,287) is not guarded, on the
 * fast path: main.c's threads= cap stays below it (a static assertion
 * there), with room for the daemon's own few threads.  woken_us is
 * 16 bits of microseconds and wraps in 65 ms (now_us: harmless).
 *
 * Writer preference: a reader enters only while W == 0 and WW == 0, so a
 * stream of readers cannot starve a writer.  A writer enters when W == 0
 * and R == 0, taking its WW announcement back in the same CAS.
 *
 * Sleepers use FUTEX_WAIT_BITSET on the lock word with bit 0 for writers and
 * bit 1 for readers, so a release wakes exactly whom it can let in: one
 * writer if any is waiting, otherwise every sleeping reader.  A sleeper
 * passes the word it last saw, so a release that happened since makes the
 * syscall return at once (no lost wakeup).  glock.waiters counts sleeping
 * readers so a read release with nobody asleep costs no syscall.
 *
 * One writer woken at a time (K, as Go's sync.Mutex mutexWoken): a release
 * that wakes a writer sets K, and releases while K is set wake nobody.
 * Without it, every release between a wake and the woken writer's first
 * instruction saw WW and woke again: on 2 CPUs with 16 FUSE workers
 * writing one file (issue 22, 4 KiB random writes), the daemon made ~0.95
 * FUTEX_WAKE calls per WRITE for ~0.2 contended inode-lock acquisitions,
 * waking writers that found the lock re-taken and slept again.  K is
 * cleared by every waiter's next CAS — the one that takes the lock and the
 * one it makes before it sleeps — so a set K always has a waiter awake
 * that will clear it (the woken one, or one whose futex_wait returns at
 * once because the word changed), and a waiter never sleeps leaving K set:
 * the next release wakes again.  Bargers (the fast path) ignore K.
 * A woken writer that has not run for STALE_WAKE_US (its CPU busy with
 * other work: on a loaded machine that is milliseconds) does not hold the
 * others asleep: a release past that wakes one more (writer_rewakes), so
 * the lock is not left idle behind one thread waiting for a CPU — without
 * it, 16 threads writing one file under load 17 ran at half the old rate
 * (wrbench -t 16), their process runnable as one thread.
 *
 * Spin before sleep: a contended sleeping lock retries SPIN_BEFORE_SLEEP
 * rounds of pause (~40 ns each on x86, so well under a microsecond) before it
 * sleeps.  That covers a holder that is about to release a leaf lock (the
 * inode-cache locks are held ~0.3 us), but not a B-tree node or root lock,
 * whose write holds are ~10 us: those waits sleep, and so show up as off-CPU
 * time in glock_lock -> futex_wait with the B-tree path above it, which is
 * what the profiling tools are for.  Spinning longer (the old 64 rounds)
 * hid part of the root-lock contention as on-CPU time and bought nothing on
 * this 2-core machine, where the holder is often not running at all.
 *
 * The futex calls are raw syscalls issued by inline asm from this file, not
 * glibc's syscall(): that one is built without frame pointers, and a
 * frame-pointer walk from inside it skips its caller, so the off-CPU user
 * stack lost glock_lock's caller (the B-tree function that waited).
 *
 * GLOCK_MUTEX uses the same word with every mode taken as a writer.
 * GLOCK_SPIN uses W only and never sleeps (pause; a sched_yield every
 * SPIN_YIELD rounds so an oversubscribed machine still makes progress).
 *
 * Probes: lock__wait__begin only when the lock could not be taken at once,
 * lock__acquired(wait_ns) and lock__released(hold_ns) at every acquisition
 * and release, lock__contended(wait_ns) only after a wait: a tracer that
 * wants wait times alone listens to that one and pays nothing (no trap)
 * for the uncontended acquisitions, which are nearly all of them.  Timestamps are read
 * on the fast path only while the probe's semaphore says someone listens
 * (PROBE_ON), so the untraced cost of each probe point is one predictable
 * branch; the contended path always times its wait, for the per-class
 * wait statistics (glock_stats_read) that in-process benchmarks read.
 */
#include "fs/base/lock.h"
#include "fs/base/probe.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define LK_W		0x80000000u
#define LK_WW_ONE	0x00100000u
#define LK_WW_MASK	0x7ff00000u
#define LK_K		0x00080000u
#define LK_R_MASK	0x0007ffffu
_Static_assert(LK_R_MASK == GLOCK_MAX_HOLDERS, "lock.h's GLOCK_MAX_HOLDERS is R's field");

#define WAKE_WRITER	1u
#define WAKE_READER	2u

#define SPIN_BEFORE_SLEEP 8	/* rounds of pause before a sleeping lock sleeps (see top) */
#define SPIN_YIELD	1024
#define STALE_WAKE_US	100u	/* a woken writer not run by then: wake another */

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

static inline uint32_t ld(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_SEQ_CST);
}

static inline bool cas(uint32_t *p, uint32_t *old, uint32_t new)
{
	return __atomic_compare_exchange_n(p, old, new, false, __ATOMIC_SEQ_CST,
					   __ATOMIC_SEQ_CST);
}

/*
 * futex(2) as a raw syscall from this file: no libc frame between our code
 * and the kernel, so a frame-pointer unwind from the syscall entry reaches
 * the caller.  Returns the kernel's result (-errno on failure).
 */
static inline long raw_futex(uint32_t *addr, int op, uint32_t val,
			     const struct timespec *ts, uint32_t bits)
{
#if defined(__x86_64__)
	register long r10 __asm__("r10") = (long)ts;
	register long r8 __asm__("r8") = 0;	/* uaddr2 */
	register long r9 __asm__("r9") = (long)bits;
	long ret;

	__asm__ __volatile__("syscall"
			     : "=a"(ret)
			     : "0"((long)SYS_futex), "D"(addr), "S"((long)op),
			       "d"((long)val), "r"(r10), "r"(r8), "r"(r9)
			     : "rcx", "r11", "memory");
	return ret;
#elif defined(__aarch64__)
	register long x8 __asm__("x8") = SYS_futex;
	register long x0 __asm__("x0") = (long)addr;
	register long x1 __asm__("x1") = op;
	register long x2 __asm__("x2") = val;
	register long x3 __asm__("x3") = (long)ts;
	register long x4 __asm__("x4") = 0;
	register long x5 __asm__("x5") = (long)bits;

	__asm__ __volatile__("svc 0"
			     : "+r"(x0)
			     : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
			     : "memory");
	return x0;
#else
	long r = syscall(SYS_futex, addr, op, val, ts, NULL, bits);
	return r < 0 ? -errno : r;
#endif
}

/* The one place the engine sleeps on a lock.  noinline keeps it a frame. */
static __attribute__((noinline)) int futex_wait_bits(uint32_t *addr, uint32_t val,
						     uint32_t bits,
						     const struct timespec *abs)
{
	long r;

	/* A function whose only "call" is inline asm counts as a leaf, and gcc
	 * gives it no frame even with -mno-omit-leaf-frame-pointer: then the
	 * unwind from the syscall skips glock_lock.  Asking for our own frame
	 * address makes gcc set one up. */
	__asm__ __volatile__("" : : "r"(__builtin_frame_address(0)));
	r = raw_futex(addr, FUTEX_WAIT_BITSET_PRIVATE, val, abs, bits);
	return r < 0 ? (int)r : 0;
}

static void futex_wake_bits(uint32_t *addr, int n, uint32_t bits)
{
	raw_futex(addr, FUTEX_WAKE_BITSET_PRIVATE, (uint32_t)n, NULL, bits);
}

uint64_t glock_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void glock_init(struct glock *l, enum glock_type type, enum glock_class cls,
		uint64_t tree, int level, int group)
{
	memset(l, 0, sizeof(*l));
	l->type = (uint8_t)type;
	l->cls = (uint8_t)cls;
	l->level = (int16_t)level;
	l->group = group;
	l->tree = tree;
}

void glock_relabel(struct glock *l, enum glock_class cls, uint64_t tree,
		   int level, int group)
{
	l->cls = (uint8_t)cls;
	l->tree = tree;
	l->level = (int16_t)level;
	l->group = group;
}

/* Mutex locks treat every mode as exclusive; the probe still reports the
 * mode the caller asked for. */
static inline bool excl(const struct glock *l, enum glock_mode mode)
{
	return mode == GLOCK_WRITE || l->type != GLOCK_RWLOCK;
}

static inline bool try_fast(struct glock *l, bool ex)
{
	uint32_t s = ld(&l->state);

	if (ex) {
		if (s & (LK_W | LK_R_MASK))
			return false;
		return cas(&l->state, &s, s | LK_W);
	}
	while (!(s & (LK_W | LK_WW_MASK))) {
		if (cas(&l->state, &s, s + 1))
			return true;
	}
	return false;
}

static void lock_spin(struct glock *l)
{
	unsigned n = 0;

	for (;;) {
		uint32_t s = ld(&l->state);
		if (!(s & LK_W) && cas(&l->state, &s, s | LK_W))
			return;
		cpu_relax();
		if (++n % SPIN_YIELD == 0)
			sched_yield();
	}
}

/* glock_stats_read's counters: written only on the contended path. */
static struct glock_stats lock_stats;

/* Slow path of an exclusive acquisition on a sleeping lock. */
static void lock_excl_slow(struct glock *l)
{
	uint32_t s;

	for (int i = 0; i < SPIN_BEFORE_SLEEP; i++) {
		cpu_relax();
		if (try_fast(l, true))
			return;
	}
	/* announce in WW: 11 bits, 2,047 writers — one more would carry
	 * into W and the lock would read free while held (threads= allows
	 * far more FUSE workers, each a writer of one inode at most).  A
	 * writer that finds WW full waits unannounced: awake, taking the
	 * lock as a barger between yields, since a release wakes only the
	 * sleepers WW counts */
	for (bool noted = false;;) {
		s = ld(&l->state);
		if ((s & LK_WW_MASK) != LK_WW_MASK) {
			if (cas(&l->state, &s, s + LK_WW_ONE))
				break;
			continue;
		}
		if (!noted) {
			__atomic_fetch_add(&lock_stats.writer_unannounced, 1, __ATOMIC_RELAXED);
			noted = true;
		}
		sched_yield();
		if (try_fast(l, true))
			return;
	}
	for (;;) {
		s = ld(&l->state);
		if (!(s & (LK_W | LK_R_MASK))) {
			if (cas(&l->state, &s, ((s - LK_WW_ONE) | LK_W) & ~LK_K))
				return;
			continue;
		}
		/* never sleep leaving K set: the next release must wake */
		if ((s & LK_K) && !cas(&l->state, &s, s & ~LK_K))
			continue;
		__atomic_fetch_add(&lock_stats.writer_sleeps, 1, __ATOMIC_RELAXED);
		futex_wait_bits(&l->state, s & ~LK_K, WAKE_WRITER, NULL);
	}
}

static void lock_shared_slow(struct glock *l)
{
	uint32_t s;

	for (int i = 0; i < SPIN_BEFORE_SLEEP; i++) {
		cpu_relax();
		if (try_fast(l, false))
			return;
	}
	for (bool noted = false;;) {
		s = ld(&l->state);
		if (!(s & (LK_W | LK_WW_MASK))) {
			if (cas(&l->state, &s, s + 1))
				return;
			continue;
		}
		/* counted in glock.waiters before it sleeps: 16 bits, 65,535
		 * readers — one more would wrap it to 0, and a write release
		 * that sees none asleep wakes nobody.  Full: wait awake */
		uint16_t w = __atomic_load_n(&l->waiters, __ATOMIC_SEQ_CST);
		if (w == UINT16_MAX) {
			if (!noted) {
				__atomic_fetch_add(&lock_stats.reader_uncounted, 1, __ATOMIC_RELAXED);
				noted = true;
			}
			sched_yield();
			continue;
		}
		if (!__atomic_compare_exchange_n(&l->waiters, &w, (uint16_t)(w + 1), false,
						 __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
			continue;
		futex_wait_bits(&l->state, s, WAKE_READER, NULL);
		__atomic_fetch_sub(&l->waiters, 1, __ATOMIC_SEQ_CST);
	}
}

/* FIRE() expands the argument list before the probe macro counts it. */
#define FIRE(probe, ...) probe(__VA_ARGS__)
#define PROBE_ARGS(l, mode) (uint64_t)(uintptr_t)(l), (int)(l)->cls, (l)->tree, \
	(int)(l)->level, (int)(l)->group, (int)(mode)

/* glock_counts_read's counters: this thread's acquisitions. */
static __thread struct glock_counts thread_counts;

static inline void note_acquired(struct glock *l, enum glock_mode mode,
				 uint64_t wait_ns)
{
	thread_counts.acquired[l->cls < GLOCK_CLASS_NR ? l->cls : GLOCK_CLASS_MISC][mode & 1]++;
	if (PROBE_ON(LOCK_ACQUIRED))
		FIRE(GLASSFS_LOCK_ACQUIRED, PROBE_ARGS(l, mode), wait_ns);
	if (excl(l, mode) && PROBE_ON(LOCK_RELEASED))
		l->wr_since_ns = glock_now_ns();
}


static void note_wait(const struct glock *l, uint64_t wait_ns)
{
	unsigned c = l->cls < GLOCK_CLASS_NR ? l->cls : GLOCK_CLASS_MISC;

	__atomic_fetch_add(&lock_stats.waits[c], 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&lock_stats.wait_ns[c], wait_ns, __ATOMIC_RELAXED);
	if (l->level == 0 && (c == GLOCK_CLASS_NODE || c == GLOCK_CLASS_ROOT || c == GLOCK_CLASS_GROUP))
		__atomic_fetch_add(&lock_stats.leaf_wait_ns, wait_ns, __ATOMIC_RELAXED);
}

void glock_lock(struct glock *l, enum glock_mode mode)
{
	bool ex = excl(l, mode);
	uint64_t t0;

	if (__builtin_expect(try_fast(l, ex), 1)) {
		note_acquired(l, mode, 0);
		return;
	}
	if (PROBE_ON(LOCK_WAIT_BEGIN))
		FIRE(GLASSFS_LOCK_WAIT_BEGIN, PROBE_ARGS(l, mode));
	/* the slow path always times its wait: two clock reads next to a
	 * spin or a futex sleep, and the statistics below need it */
	t0 = glock_now_ns();
	if (l->type == GLOCK_SPIN)
		lock_spin(l);
	else if (ex)
		lock_excl_slow(l);
	else
		lock_shared_slow(l);
	uint64_t wait_ns = glock_now_ns() - t0;

	note_wait(l, wait_ns);
	if (PROBE_ON(LOCK_CONTENDED))
		FIRE(GLASSFS_LOCK_CONTENDED, PROBE_ARGS(l, mode), wait_ns);
	note_acquired(l, mode, wait_ns);
}

void glock_stats_read(struct glock_stats *out)
{
	for (int i = 0; i < GLOCK_CLASS_NR; i++) {
		out->waits[i] = __atomic_load_n(&lock_stats.waits[i], __ATOMIC_RELAXED);
		out->wait_ns[i] = __atomic_load_n(&lock_stats.wait_ns[i], __ATOMIC_RELAXED);
	}
	out->leaf_wait_ns = __atomic_load_n(&lock_stats.leaf_wait_ns, __ATOMIC_RELAXED);
	out->writer_wakes = __atomic_load_n(&lock_stats.writer_wakes, __ATOMIC_RELAXED);
	out->writer_sleeps = __atomic_load_n(&lock_stats.writer_sleeps, __ATOMIC_RELAXED);
	out->writer_rewakes = __atomic_load_n(&lock_stats.writer_rewakes, __ATOMIC_RELAXED);
	out->writer_unannounced = __atomic_load_n(&lock_stats.writer_unannounced, __ATOMIC_RELAXED);
	out->reader_uncounted = __atomic_load_n(&lock_stats.reader_uncounted, __ATOMIC_RELAXED);
}

void glock_counts_read(struct glock_counts *out)
{
	*out = thread_counts;
}

bool glock_busy(const struct glock *l, enum glock_mode mode)
{
	uint32_t s = __atomic_load_n(&l->state, __ATOMIC_RELAXED);

	if (excl(l, mode))
		return (s & (LK_W | LK_R_MASK)) != 0;
	return (s & (LK_W | LK_WW_MASK)) != 0;
}

bool glock_trylock(struct glock *l, enum glock_mode mode)
{
	if (!try_fast(l, excl(l, mode)))
		return false;
	note_acquired(l, mode, 0);
	thread_counts.tried[l->cls < GLOCK_CLASS_NR ? l->cls : GLOCK_CLASS_MISC][mode & 1]++;
	return true;
}

/* The time K was set, in a 16-bit field: wraps in 65 ms, which at worst
 * takes a writer woken that long ago for a fresh one until the next release. */
static uint16_t now_us(void)
{
	return (uint16_t)(glock_now_ns() / 1000u);
}

/*
 * A release saw writers waiting: wake one, unless one woken less than
 * STALE_WAKE_US ago has not run yet (K) or the lock is held again (its
 * holder's release wakes).  A stamp read before the CAS's store lands
 * costs at most one wake more.
 */
static void wake_writer(struct glock *l)
{
	uint32_t s = ld(&l->state);

	while ((s & LK_WW_MASK) && !(s & (LK_W | LK_R_MASK))) {
		if (s & LK_K) {
			/* woken earlier: wake another only if that one is stale */
			uint16_t t = now_us();
			if ((uint16_t)(t - __atomic_load_n(&l->woken_us, __ATOMIC_RELAXED)) < STALE_WAKE_US)
				return;
			__atomic_store_n(&l->woken_us, t, __ATOMIC_RELAXED);
			__atomic_fetch_add(&lock_stats.writer_rewakes, 1, __ATOMIC_RELAXED);
			break;
		}
		if (cas(&l->state, &s, s | LK_K)) {
			__atomic_store_n(&l->woken_us, now_us(), __ATOMIC_RELAXED);
			break;
		}
	}
	if (!(s & LK_WW_MASK) || (s & (LK_W | LK_R_MASK)))
		return;
	__atomic_fetch_add(&lock_stats.writer_wakes, 1, __ATOMIC_RELAXED);
	futex_wake_bits(&l->state, 1, WAKE_WRITER);
}

void glock_unlock(struct glock *l, enum glock_mode mode)
{
	bool ex = excl(l, mode);
	uint32_t s;

	if (PROBE_ON(LOCK_RELEASED)) {
		uint64_t since = ex ? l->wr_since_ns : 0;
		FIRE(GLASSFS_LOCK_RELEASED, PROBE_ARGS(l, mode),
		     since ? glock_now_ns() - since : 0);
	}
	if (ex) {
		l->wr_since_ns = 0;
		s = __atomic_and_fetch(&l->state, ~LK_W, __ATOMIC_SEQ_CST);
		if (l->type == GLOCK_SPIN)
			return;
		if (s & LK_WW_MASK)
			wake_writer(l);
		else if (__atomic_load_n(&l->waiters, __ATOMIC_SEQ_CST))
			futex_wake_bits(&l->state, INT_MAX, WAKE_READER);
		return;
	}
	s = __atomic_sub_fetch(&l->state, 1, __ATOMIC_SEQ_CST);
	if (!(s & LK_R_MASK) && (s & LK_WW_MASK))
		wake_writer(l);
}

/* ---- gcond ------------------------------------------------------------ */

void gcond_init(struct gcond *c)
{
	c->seq = 0;
}

static bool cond_wait(struct gcond *c, struct glock *l, uint64_t timeout_ns,
		      bool timed)
{
	uint32_t seq = ld(&c->seq);
	struct timespec abs, *absp = NULL;
	int r;

	if (timed) {
		/* FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC time. */
		uint64_t t = glock_now_ns() + timeout_ns;
		abs.tv_sec = (time_t)(t / 1000000000ull);
		abs.tv_nsec = (long)(t % 1000000000ull);
		absp = &abs;
	}
	glock_unlock(l, GLOCK_WRITE);
	do {
		r = futex_wait_bits(&c->seq, seq, FUTEX_BITSET_MATCH_ANY, absp);
	} while (r == -EINTR);
	glock_lock(l, GLOCK_WRITE);
	return r != -ETIMEDOUT;
}

void gcond_wait(struct gcond *c, struct glock *l)
{
	cond_wait(c, l, 0, false);
}

bool gcond_timedwait(struct gcond *c, struct glock *l, uint64_t timeout_ns)
{
	return cond_wait(c, l, timeout_ns, true);
}

void gcond_broadcast(struct gcond *c)
{
	__atomic_fetch_add(&c->seq, 1, __ATOMIC_SEQ_CST);
	futex_wake_bits(&c->seq, INT_MAX, FUTEX_BITSET_MATCH_ANY);
}

/* ---- names ------------------------------------------------------------ */

int glock_type_parse(const char *s, enum glock_type *out)
{
	static const char *const names[] = { "rwlock", "mutex", "spin" };

	for (int i = 0; i < 3; i++) {
		if (s && strcmp(s, names[i]) == 0) {
			*out = (enum glock_type)i;
			return 0;
		}
	}
	return -EINVAL;
}

const char *glock_type_name(enum glock_type t)
{
	switch (t) {
	case GLOCK_RWLOCK: return "rwlock";
	case GLOCK_MUTEX: return "mutex";
	case GLOCK_SPIN: return "spin";
	}
	return "?";
}

const char *glock_class_name(enum glock_class c)
{
	const char *s = glock_class_str(c);

	return s ? s : "?";
}
