// SPDX-License-Identifier: MIT
/*
 * copy_fence.c — the segment a resync or relocation is copying: writers
 * of it wait, the rest go on.  The design is copy_fence.h's header.
 */
#include "fs/core/core_types.h"
#include "fs/store/copy_fence.h"

#define SC __ATOMIC_SEQ_CST

void copy_fence_init(struct copy_fence *f)
{
	glock_init(&f->lock, GLOCK_MUTEX, GLOCK_CLASS_MISC, 0, -1, -1);
	gcond_init(&f->cond);
	f->start = f->end = 0;
	f->epoch = f->draining = 0;
	f->writers[0] = f->writers[1] = 0;
	f->waits = f->passed = 0;
}

/* Under f->lock: does [logical, +len) overlap the segment? */
static bool overlaps(const struct copy_fence *f, uint64_t logical, uint64_t len)
{
	return f->end && logical < f->end && logical + len > f->start;
}

/* Under f->lock: wait until count e is empty.  Timed, so that a wake-up
 * lost to a writer that left between our load and our sleep costs a
 * millisecond, not a hang (the SC pair makes it rare). */
static void drain(struct copy_fence *f, int e)
{
	while (__atomic_load_n(&f->writers[e], SC))
		gcond_timedwait(&f->cond, &f->lock, 1000000);
}

void copy_fence_begin(struct core *c, uint64_t logical, uint64_t len)
{
	struct copy_fence *f = &c->copy_fence;
	int e;

	glock_write(&f->lock);
	while (f->end)	/* another copier's segment */
		gcond_wait(&f->cond, &f->lock);
	f->start = logical;
	__atomic_store_n(&f->end, logical + (len ? len : 1), SC);
	__atomic_store_n(&f->draining, 1, SC);
	e = (int)__atomic_load_n(&f->epoch, SC);
	drain(f, !e);	/* read the epoch before the last flip */
	__atomic_store_n(&f->epoch, (uint32_t)!e, SC);
	drain(f, e);
	__atomic_store_n(&f->draining, 0, SC);
	glock_write_unlock(&f->lock);
}

void copy_fence_end(struct core *c)
{
	struct copy_fence *f = &c->copy_fence;

	glock_write(&f->lock);
	__atomic_store_n(&f->end, 0, SC);
	gcond_broadcast(&f->cond);
	glock_write_unlock(&f->lock);
}

/* Leave count e; wake a copier draining it when it empties. */
static void leave(struct copy_fence *f, int e, bool locked)
{
	if (__atomic_sub_fetch(&f->writers[e], 1, SC) || !__atomic_load_n(&f->draining, SC))
		return;
	if (!locked)
		glock_write(&f->lock);
	gcond_broadcast(&f->cond);
	if (!locked)
		glock_write_unlock(&f->lock);
}

int copy_fence_enter(struct core *c, uint64_t logical, uint64_t len)
{
	struct copy_fence *f = &c->copy_fence;

	for (;;) {
		int e = (int)__atomic_load_n(&f->epoch, SC);

		__atomic_add_fetch(&f->writers[e], 1, SC);
		if (!__atomic_load_n(&f->end, SC))
			return e;	/* nothing copied: the common case */
		glock_write(&f->lock);
		if (!overlaps(f, logical, len)) {
			glock_write_unlock(&f->lock);
			__atomic_fetch_add(&f->passed, 1, __ATOMIC_RELAXED);
			return e;
		}
		leave(f, e, true);
		__atomic_fetch_add(&f->waits, 1, __ATOMIC_RELAXED);
		while (overlaps(f, logical, len))
			gcond_wait(&f->cond, &f->lock);
		glock_write_unlock(&f->lock);
	}
}

void copy_fence_exit(struct core *c, int ticket)
{
	leave(&c->copy_fence, ticket, false);
}

void copy_fence_counts(struct core *c, uint64_t *waits, uint64_t *passed)
{
	*waits = __atomic_load_n(&c->copy_fence.waits, __ATOMIC_RELAXED);
	*passed = __atomic_load_n(&c->copy_fence.passed, __ATOMIC_RELAXED);
}
