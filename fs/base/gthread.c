// SPDX-License-Identifier: MIT
/*
 * gthread.c — see gthread.h.
 */
#include "fs/base/gthread.h"

int gthread_start(struct gthread *w, void *(*fn)(void *), void *arg)
{
	int e;

	e = pthread_create(&w->thread, NULL, fn, arg);
	if (e)
		return -e;
	w->started = true;
	return 0;
}

void gthread_stop(struct gthread *w, struct glock *lock, struct gcond *cond)
{
	if (!w->started)
		return;
	glock_write(lock);
	w->stop = true;
	gcond_broadcast(cond);
	glock_write_unlock(lock);
	pthread_join(w->thread, NULL);
	w->started = false;
}

bool gthread_wait_queued(struct gthread *w, struct glock *lock, struct gcond *cond,
			 const size_t *n)
{
	while (!*n && !w->stop)
		gcond_wait(cond, lock);
	return *n != 0;
}
