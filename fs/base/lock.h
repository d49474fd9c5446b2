/* SPDX-License-Identifier: MIT */
/*
 * lock.h — the one lock module.  Every lock in the engine is a struct glock
 * and goes through these functions; nobody outside fs/base/lock.c names a
 * pthread or futex primitive.  Every acquisition and release fires the
 * glassfs:lock_* USDT probes (fs/base/probes.d) with the lock's address, class,
 * tree id, B-tree level, lock group and mode, so lock waits can be told
 * apart by what they guard.
 *
 * Waits block in fs/base/lock.c (a futex syscall from our own code, built with
 * frame pointers), so an off-CPU user stack shows the engine path that
 * waited, not a frame-pointer-less libc function.
 *
 * The primitive behind a lock is chosen at init (mount option locktype=):
 *   GLOCK_RWLOCK  readers share, writers exclude (writer-preferring);
 *   GLOCK_MUTEX   every mode is exclusive (read == write);
 *   GLOCK_SPIN    exclusive, spins (with pause) and never sleeps.
 *
 * Lock order (outermost first), declared here so every user sees it:
 *   txn state  >  inode (by ino ascending)  >  tree root  >  B-tree nodes
 *   top-down (parent before child; within a node, groups ascending)  >
 *   allocator  >  chunk map  >  node cache  >  device.
 * A B-tree search couples from the root: child locked before the parent
 * is released.  Never lock a node's parent while holding the node.
 */
#ifndef GLASSFS_LOCK_H
#define GLASSFS_LOCK_H

#include <stdint.h>
#include <stdbool.h>
#include <stddef.h>

enum glock_class {		/* the probe's "class" argument */
	GLOCK_CLASS_NODE  = 1,	/* a B-tree node (level > 0 below the root, or leaf) */
	GLOCK_CLASS_ROOT  = 2,	/* the root node of a tree */
	GLOCK_CLASS_GROUP = 3,	/* one lock group of a node (locking=groups:N) */
	GLOCK_CLASS_ALLOC = 4,	/* allocator / free space */
	GLOCK_CLASS_TXN   = 5,	/* transaction state (join/commit) */
	GLOCK_CLASS_INODE = 6,	/* an in-memory inode */
	GLOCK_CLASS_CACHE = 7,	/* node cache */
	GLOCK_CLASS_DEV   = 8,	/* device state, discard queue */
	GLOCK_CLASS_CHUNK = 9,	/* chunk map */
	GLOCK_CLASS_MISC  = 10,
	GLOCK_CLASS_NR,		/* one past the last class */
};

enum glock_type {
	GLOCK_RWLOCK = 0,
	GLOCK_MUTEX  = 1,
	GLOCK_SPIN   = 2,
};

enum glock_mode {		/* the probe's "mode" argument */
	GLOCK_READ  = 0,
	GLOCK_WRITE = 1,
};

/*
 * Threads that can hold one read lock at once (the R field of the lock
 * word, lock.c).  Not guarded on the fast path: whoever starts threads
 * that take glocks keeps their number below it (main.c's threads= cap).
 */
#define GLOCK_MAX_HOLDERS 524287u

/*
 * A lock.  Small (fits in a node's in-memory header many times over) and
 * zero-initialisable apart from glock_init().  Fields below `state` are
 * descriptive: they only feed the probes.
 */
struct glock {
	uint32_t state;		/* lock word (futex); owned by lock.c */
	uint16_t waiters;	/* sleeping readers; owned by lock.c */
	uint16_t woken_us;	/* when a release last woke a writer (µs, wraps
				 * in 65 ms); owned by lock.c */
	uint8_t  type;		/* enum glock_type, fixed at init */
	uint8_t  cls;		/* enum glock_class */
	int16_t  level;		/* B-tree level, -1 if not a node lock */
	int32_t  group;		/* lock group index, -1 if none */
	uint64_t tree;		/* tree id (objectid of the root), 0 if none */
	uint64_t wr_since_ns;	/* write hold start, set only while probes listen */
};

void glock_init(struct glock *l, enum glock_type type, enum glock_class cls,
		uint64_t tree, int level, int group);
/* Re-label a lock whose owner changed (a node reused at another level). */
void glock_relabel(struct glock *l, enum glock_class cls, uint64_t tree,
		   int level, int group);

void glock_lock(struct glock *l, enum glock_mode mode);
bool glock_trylock(struct glock *l, enum glock_mode mode);
void glock_unlock(struct glock *l, enum glock_mode mode);
/*
 * A hint: an acquisition of l in mode would wait right now (held in a
 * conflicting mode, or — rwlock readers — a writer is waiting).  Racy by
 * nature: the answer may be stale when it returns.  Lets a caller that
 * holds other locks release them before it waits (btree.c: lock coupling
 * waits for a busy child without holding the path above it).
 */
bool glock_busy(const struct glock *l, enum glock_mode mode);

/* Convenience wrappers. */
static inline void glock_read(struct glock *l)    { glock_lock(l, GLOCK_READ); }
static inline void glock_write(struct glock *l)   { glock_lock(l, GLOCK_WRITE); }
static inline void glock_read_unlock(struct glock *l)  { glock_unlock(l, GLOCK_READ); }
static inline void glock_write_unlock(struct glock *l) { glock_unlock(l, GLOCK_WRITE); }

/*
 * gcond — wait for a condition guarded by a glock held in write mode (e.g.
 * "the commit finished").  Futex-based, waits in our code.
 *   gcond_wait: atomically releases l, sleeps until a broadcast (or
 *   spuriously), re-acquires l in write mode.  Callers loop on their
 *   condition.  gcond_timedwait returns false on timeout (ns relative).
 */
struct gcond {
	uint32_t seq;
};
void gcond_init(struct gcond *c);
void gcond_wait(struct gcond *c, struct glock *l);
bool gcond_timedwait(struct gcond *c, struct glock *l, uint64_t timeout_ns);
void gcond_broadcast(struct gcond *c);

/*
 * Process-wide lock-wait statistics, per class: how many acquisitions had
 * to wait and how long they waited in total.  Counted on the contended
 * path only (an uncontended acquisition costs nothing extra), whether or
 * not a probe listens, so an in-process benchmark reads the same figures a
 * tracer would see without attaching one.  Monotonic since the process
 * started: a reader takes the difference of two reads.
 */
struct glock_stats {
	uint64_t waits[GLOCK_CLASS_NR];
	uint64_t wait_ns[GLOCK_CLASS_NR];
	uint64_t leaf_wait_ns;	/* of the B-tree classes' wait: on leaves
				 * (level 0), to tell leaf waits from the
				 * interior nodes' below the root */
	uint64_t writer_wakes;	/* releases that woke a waiting writer
				 * (FUTEX_WAKE calls for writers), every class */
	uint64_t writer_sleeps;	/* FUTEX_WAIT calls of waiting writers */
	uint64_t writer_rewakes; /* of writer_wakes, those made while a writer
				  * woken earlier had not run for STALE_WAKE_US */
	uint64_t writer_unannounced; /* writers that found WW full (2,047
				      * waiting) and waited unannounced */
	uint64_t reader_uncounted; /* readers that found glock.waiters full
				    * (65,535 asleep) and waited awake */
};
void glock_stats_read(struct glock_stats *out);

/*
 * Acquisitions made by the calling thread, per class and mode (contended
 * or not, trylock successes included).  Thread-local: counting costs one
 * increment of the thread's own memory, no shared line, so it is always
 * on.  A test takes the difference of two reads around an operation to
 * see how many locks of a class it took (e.g. how many of a root node's
 * groups a child split write-locks).  Monotonic since the thread started.
 */
struct glock_counts {
	uint64_t acquired[GLOCK_CLASS_NR][2];	/* [class][enum glock_mode] */
	uint64_t tried[GLOCK_CLASS_NR][2];	/* of those, taken by glock_trylock:
						 * acquisitions that could not wait */
};
void glock_counts_read(struct glock_counts *out);

/* Monotonic clock in ns (the same clock the probes' durations use). */
uint64_t glock_now_ns(void);

/* The locktype= mount option: "rwlock", "mutex", "spin". 0 or -EINVAL. */
int glock_type_parse(const char *s, enum glock_type *out);
const char *glock_type_name(enum glock_type t);
/* The class's name, "?" for a number that is no class. */
const char *glock_class_name(enum glock_class c);

/*
 * The class's name ("node", "root", ...), or NULL for a number that is no
 * class (e.g. a probe's class argument from another build).  The one table
 * of class names: the engine (glock_class_name) and the tools that decode
 * the probes' class argument (glass-lockstat) both name classes through it,
 * so a new class is named once, here.  Inline so that a tool uses it
 * without linking the engine.
 */
static inline const char *glock_class_str(unsigned c)
{
	static const char *const names[] = {
		[GLOCK_CLASS_NODE]  = "node",
		[GLOCK_CLASS_ROOT]  = "root",
		[GLOCK_CLASS_GROUP] = "group",
		[GLOCK_CLASS_ALLOC] = "alloc",
		[GLOCK_CLASS_TXN]   = "txn",
		[GLOCK_CLASS_INODE] = "inode",
		[GLOCK_CLASS_CACHE] = "cache",
		[GLOCK_CLASS_DEV]   = "dev",
		[GLOCK_CLASS_CHUNK] = "chunk",
		[GLOCK_CLASS_MISC]  = "misc",
	};

	_Static_assert(sizeof(names) / sizeof(names[0]) == GLOCK_CLASS_NR,
		       "every glock class needs a name here");
	return c < GLOCK_CLASS_NR ? names[c] : NULL;
}

#endif
