// SPDX-License-Identifier: MIT
/*
 * dev_readahead.c — read-ahead of sequential data streams on a device.
 *
 * Why: the kernel sends a sequential FUSE reader's bytes as READs of 128 or
 * 256 KiB (its readahead window for a FUSE mount), one or two in flight,
 * and each READ waits for its device read.  The OS's own readahead on the
 * device file does not keep ahead of that (measured; the likely reason:
 * the daemon's worker threads share one file descriptor and their reads
 * reach it slightly out of order, which its heuristics take for random
 * reads).  Traced on a 512 MiB fio read after drop_caches, 392 to
 * 1,190 of ~2,200 device reads waited for the disk (over 0.5 ms); with
 * this, 16-57 (docs/benchmarks.md).  So the engine keeps the streams: each
 * data read that continues a stream (starts within DEV_RA_SLACK of where
 * the stream got to) asks the OS, by posix_fadvise(WILLNEED), for the
 * bytes up to DEV_RA_WINDOW ahead — in steps of half a window, so a 1 GiB
 * read costs ~256 calls, not one per READ.  A read that continues no
 * stream starts one in the least recently used slot and asks for nothing:
 * random reads cost a lock and a scan of DEV_RA_STREAMS slots.
 *
 * Who asks: the volume's read-ahead thread, fed through a small queue
 * (dev_readahead.h).  posix_fadvise is not cheap — it finds and allocates
 * the page-cache pages of the range and submits their reads — and run in
 * the READ's thread it was 29 % of the daemon's CPU in a cold sequential
 * read; the READ waited for it before replying.
 *
 * Physical addresses: a file written in order lies in order on the device
 * (the allocator's goals, fs/items/file.c), and a stream that crosses to
 * another chunk simply starts again.  The bytes asked for are the page
 * cache's; nothing is read into the daemon, so there is nothing to keep
 * coherent with writes, and a hint for bytes never read costs only I/O.
 *
 * Write-behind (dev_readahead_written), the same thread's other job: a
 * sequential write's data sits in the OS's cache until a flush — fio's
 * end_fsync on 512 MiB waited ~170 ms in fdatasync for all of it at once
 * (issue 22), after the writer was done.  Asking the OS to start writing
 * each few MiB (sync_file_range WRITE, which waits for nothing but
 * request slots) lets the device work while the writer goes on.  Not
 * in the writer's thread: starting writeback costs the OS's page walk
 * and block allocation, and the writer holds its inode's lock.  Nothing
 * changes for durability or order: the flush still comes before the
 * superblock that points at the data.
 */
#include "fs/store/dev_readahead.h"
#include "fs/store/dev.h"
#include "fs/core/core_types.h"
#include "fs/base/lock.h"
#include "fs/base/probe.h"

#include <fcntl.h>

#define DEV_RA_WINDOW	(8ull << 20)	/* asked for ahead of a stream */
#define DEV_RA_SLACK	(2ull << 20)	/* how far out of order its reads may come */
#define DEV_WB_STEP	(8ull << 20)	/* write-behind asked for in steps of this */
#define DEV_WB_LAG	(8ull << 20)	/* ... this far behind a stream's furthest write */
#define DEV_WB_SLACK	(32ull << 20)	/* how far out of order its writes may come */
#define DEV_WB_MIN	(256ull << 10)	/* smaller writes are not noted */

/* The stream a read at off continues, or NULL.  Under ra_lock. */
static struct dev_ra_stream *ra_find(struct dev *d, uint64_t off)
{
	for (int i = 0; i < DEV_RA_STREAMS; i++) {
		struct dev_ra_stream *s = &d->ra[i];

		if (s->next && off + DEV_RA_SLACK >= s->next && off <= s->next + DEV_RA_SLACK)
			return s;
	}
	return NULL;
}

/* Ask the OS for one hint's bytes.  The read-ahead thread, or the reader
 * when no thread runs. */
static void ra_issue(const struct dev_ra_req *r)
{
	if (r->write) {
		(void)sync_file_range(r->fd, (off_t)r->off, (off_t)r->len, SYNC_FILE_RANGE_WRITE);
		return;
	}
	(void)posix_fadvise(r->fd, (off_t)r->off, (off_t)r->len, POSIX_FADV_WILLNEED);
	if (PROBE_ON(READAHEAD_ISSUED))
		GLASSFS_READAHEAD_ISSUED(r->devid, r->off, r->len,
					 r->queued_ns ? glock_now_ns() - r->queued_ns : 0);
}

static void *ra_thread(void *arg)
{
	struct dev_ra_queue *q = arg;

	glock_write(&q->lock);
	for (;;) {
		if (!gthread_wait_queued(&q->thread, &q->lock, &q->cond, &q->n))
			break;
		struct dev_ra_req r = q->v[q->head];
		q->head = (q->head + 1) % DEV_RA_QUEUE;
		q->n--;
		q->busy = true;
		glock_write_unlock(&q->lock);
		ra_issue(&r);
		glock_write(&q->lock);
		q->busy = false;
		gcond_broadcast(&q->cond);	/* dev_readahead_wait */
	}
	glock_write_unlock(&q->lock);
	return NULL;
}

int dev_readahead_open(struct core *c)
{
	struct dev_ra_queue *q = &c->ra;

	glock_init(&q->lock, GLOCK_MUTEX, GLOCK_CLASS_DEV, 0, -1, -1);
	gcond_init(&q->cond);
	return gthread_start(&q->thread, ra_thread, q);
}

void dev_readahead_close(struct core *c)
{
	struct dev_ra_queue *q = &c->ra;

	gthread_stop(&q->thread, &q->lock, &q->cond);
}

void dev_readahead_wait(struct core *c)
{
	struct dev_ra_queue *q = &c->ra;

	if (!q->thread.started)
		return;
	glock_write(&q->lock);
	while (q->n || q->busy)
		gcond_wait(&q->cond, &q->lock);
	glock_write_unlock(&q->lock);
}

/* Hand r to the read-ahead thread.  False when the queue is full. */
static bool ra_queue(struct dev_ra_queue *q, const struct dev_ra_req *r)
{
	bool ok;

	glock_write(&q->lock);
	ok = q->n < DEV_RA_QUEUE;
	if (ok) {
		q->v[(q->head + q->n) % DEV_RA_QUEUE] = *r;
		q->n++;
		gcond_broadcast(&q->cond);
	} else {
		q->dropped++;
	}
	glock_write_unlock(&q->lock);
	return ok;
}

void dev_readahead_note(struct core *c, struct dev *d, uint64_t off, uint64_t len)
{
	uint64_t end = off + len, from = 0, to = 0;
	struct dev_ra_stream *s;

	if (!len || end > d->size)
		return;
	glock_lock(&d->ra_lock, GLOCK_WRITE);
	d->ra_tick++;
	s = ra_find(d, off);
	if (!s) {		/* a new stream: one read says nothing yet */
		s = &d->ra[0];
		for (int i = 1; i < DEV_RA_STREAMS; i++)
			if (d->ra[i].used < s->used)
				s = &d->ra[i];
		s->next = s->hinted = end;
		s->used = d->ra_tick;
		glock_unlock(&d->ra_lock, GLOCK_WRITE);
		return;
	}
	if (end > s->next)
		s->next = end;
	s->used = d->ra_tick;
	if (s->hinted < s->next + DEV_RA_WINDOW / 2) {
		from = s->hinted > s->next ? s->hinted : s->next;
		to = s->next + DEV_RA_WINDOW;
		if (to > d->size)
			to = d->size;
		s->hinted = to;
	}
	glock_unlock(&d->ra_lock, GLOCK_WRITE);
	if (to <= from)
		return;
	struct dev_ra_req r = {
		.fd = d->fd, .devid = d->devid, .off = from, .len = to - from,
		.queued_ns = PROBE_ON(READAHEAD_ISSUED) ? glock_now_ns() : 0,
	};
	if (!c->ra.thread.started) {
		ra_issue(&r);
	} else if (!ra_queue(&c->ra, &r)) {
		/* dropped: the stream's next read asks from here again (else
		 * those bytes are never asked for and each READ of them waits
		 * for the device) — unless the slot moved on meanwhile */
		glock_lock(&d->ra_lock, GLOCK_WRITE);
		if (s->hinted == to)
			s->hinted = from;
		glock_unlock(&d->ra_lock, GLOCK_WRITE);
		return;
	}
	/* counted when handed on: asked of the OS, now or by the thread */
	__atomic_fetch_add(&d->cnt.ra_ios, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&d->cnt.ra_bytes, to - from, __ATOMIC_RELAXED);
}

void dev_readahead_written(struct core *c, struct dev *d, uint64_t off, uint64_t len)
{
	uint64_t end = off + len, from = 0, to = 0;

	if (len < DEV_WB_MIN || d->readonly)
		return;
	glock_lock(&d->ra_lock, GLOCK_WRITE);
	/* the writeback cache's threads send a stream's pieces out of
	 * order, up to ~24 MiB apart (file.c, data_goal): the stream is
	 * where it was asked up to (wb_from) and its furthest write (wb_to),
	 * and what lies DEV_WB_LAG behind that is asked for, the pieces
	 * still missing there most likely in by then (one that is not waits
	 * for the flush) */
	if (d->wb_to && off + DEV_WB_SLACK >= d->wb_from && off <= d->wb_to + DEV_WB_SLACK) {
		if (end > d->wb_to)
			d->wb_to = end;
	} else {		/* another stream: the old one's rest waits for the flush */
		d->wb_from = off;
		d->wb_to = end;
	}
	if (d->wb_to >= d->wb_from + DEV_WB_STEP + DEV_WB_LAG) {
		from = d->wb_from;
		to = d->wb_to - DEV_WB_LAG;
		d->wb_from = to;
	}
	glock_unlock(&d->ra_lock, GLOCK_WRITE);
	if (to <= from)
		return;
	struct dev_ra_req r = { .fd = d->fd, .devid = d->devid, .off = from, .len = to - from,
				.write = true };
	if (!c->ra.thread.started)
		return;		/* mkfs, tools: the flush writes it */
	if (!ra_queue(&c->ra, &r)) {
		/* dropped: the stream's next step asks from here again
		 * (else these bytes wait for the flush, the very wait
		 * write-behind is for) — unless another stream or step
		 * moved it on meanwhile */
		glock_lock(&d->ra_lock, GLOCK_WRITE);
		if (d->wb_from == to)
			d->wb_from = from;
		glock_unlock(&d->ra_lock, GLOCK_WRITE);
		return;
	}
	__atomic_fetch_add(&d->cnt.wb_ios, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&d->cnt.wb_bytes, to - from, __ATOMIC_RELAXED);
}
