/* SPDX-License-Identifier: MIT */
/*
 * gthread.h — a background thread its owner starts at open and stops at
 * close: the commit thread (txn), the subvolume cleaner (items), the
 * discard thread and the read-ahead thread (store).  The owner's lock and condition guard stop; the
 * thread loops until it sees stop under that lock, waiting on that
 * condition, so gthread_stop's broadcast wakes it wherever it waits.
 */
#ifndef GLASSFS_GTHREAD_H
#define GLASSFS_GTHREAD_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "fs/base/lock.h"

struct gthread {
	pthread_t thread;
	bool started;	/* gthread_start succeeded and gthread_stop has not run */
	bool stop;	/* under the owner's lock: the thread returns */
};

/* Run fn(arg) in w's thread.  0, or -errno (nothing started). */
int gthread_start(struct gthread *w, void *(*fn)(void *), void *arg);
/* Set stop under lock, wake cond's waiters, join.  Nothing when w was
 * not started. */
void gthread_stop(struct gthread *w, struct glock *lock, struct gcond *cond);
/*
 * For a thread that drains its owner's queue of *n entries: called with
 * lock held, waits on cond until an entry is queued or stop is set.
 * true: *n > 0, take one; false: stop is set and the queue is empty, return.
 * The queue is drained before the thread stops.
 */
bool gthread_wait_queued(struct gthread *w, struct glock *lock, struct gcond *cond,
			 const size_t *n);

#endif
