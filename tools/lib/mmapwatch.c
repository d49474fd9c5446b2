// SPDX-License-Identifier: MIT
/*
 * mmapwatch.c — executable mappings, execs and forks as the kernel logs
 * them, applied to a syms_cache.  See mmapwatch.h for why.
 */
#include "tools/lib/mmapwatch.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "tools/lib/syms.h"

/* Data pages per CPU (a power of two): 256 KiB holds ~2000 mappings, the
 * start of ~300 dynamically linked processes between two drains. */
#define RING_PAGES	64

struct ring {
	int fd;
	struct perf_event_mmap_page *meta;
	char *data;
	size_t size;
};

/* A record copied out of its ring, applied once all rings are sorted. */
struct rec {
	uint64_t time, seq;
	uint32_t type, pid, ppid, maj, min;
	uint64_t addr, len, pgoff, ino;
	char *path;
};

struct mmapwatch {
	struct ring *rings;
	int nrings;
	size_t mmap_len;
	struct mmapwatch_stats st;
	uint64_t seq;
	struct rec *recs;
	size_t nrecs, cap;
};

void mmapwatch__free(struct mmapwatch *mw)
{
	if (!mw)
		return;
	for (int i = 0; i < mw->nrings; i++) {
		if (mw->rings[i].meta)
			munmap(mw->rings[i].meta, mw->mmap_len);
		close(mw->rings[i].fd);
	}
	for (size_t i = 0; i < mw->nrecs; i++)
		free(mw->recs[i].path);
	free(mw->recs);
	free(mw->rings);
	free(mw);
}

struct mmapwatch *mmapwatch__new(void)
{
	long page = sysconf(_SC_PAGESIZE), ncpu = sysconf(_SC_NPROCESSORS_CONF);
	struct perf_event_attr a = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(a),
		.config = PERF_COUNT_SW_DUMMY,
		/* the time at the end of every record: rings are merged */
		.sample_type = PERF_SAMPLE_TIME,
		.sample_id_all = 1,
		.mmap = 1,		/* executable mappings only */
		.mmap2 = 1,		/* with device and inode */
		.comm = 1,
		.comm_exec = 1,
		.task = 1,		/* fork records */
		.watermark = 1,
		.wakeup_watermark = RING_PAGES * page / 4,
	};
	struct mmapwatch *mw = calloc(1, sizeof(*mw));
	int err = 0;

	if (!mw || !(mw->rings = calloc(ncpu, sizeof(*mw->rings)))) {
		free(mw);
		errno = ENOMEM;
		return NULL;
	}
	mw->mmap_len = (RING_PAGES + 1) * page;
	for (long cpu = 0; cpu < ncpu; cpu++) {
		struct ring *r = &mw->rings[mw->nrings];
		int fd = syscall(SYS_perf_event_open, &a, -1, (int)cpu, -1,
				 PERF_FLAG_FD_CLOEXEC);

		if (fd < 0) {
			if (errno == ENODEV)	/* CPU offline */
				continue;
			err = errno;
			break;
		}
		r->fd = fd;
		mw->nrings++;
		r->meta = mmap(NULL, mw->mmap_len, PROT_READ | PROT_WRITE,
			       MAP_SHARED, fd, 0);
		if (r->meta == MAP_FAILED) {
			r->meta = NULL;
			err = errno;
			break;
		}
		r->data = (char *)r->meta + page;
		r->size = RING_PAGES * page;
	}
	if (!err && !mw->nrings)
		err = ENODEV;
	if (err) {
		mmapwatch__free(mw);
		errno = err;
		return NULL;
	}
	return mw;
}

int mmapwatch__add_to_epoll(struct mmapwatch *mw, int ep)
{
	for (int i = 0; i < mw->nrings; i++) {
		struct epoll_event ev = { .events = EPOLLIN, .data.fd = mw->rings[i].fd };

		if (epoll_ctl(ep, EPOLL_CTL_ADD, mw->rings[i].fd, &ev))
			return -errno;
	}
	return 0;
}

void mmapwatch__stats(const struct mmapwatch *mw, struct mmapwatch_stats *st)
{
	*st = mw->st;
}

/* Fixed parts of the records we read (after perf_event_header). */
struct mmap2_body {
	uint32_t pid, tid;
	uint64_t addr, len, pgoff;
	uint32_t maj, min;
	uint64_t ino, ino_generation;
	uint32_t prot, flags;
	char filename[];
};

struct pid_body {		/* COMM starts so, FORK too (pid, ppid) */
	uint32_t pid, other;
};

static int rec__push(struct mmapwatch *mw, const struct rec *r)
{
	if (mw->nrecs == mw->cap) {
		size_t cap = mw->cap ? mw->cap * 2 : 256;
		struct rec *nr = realloc(mw->recs, cap * sizeof(*nr));

		if (!nr)
			return -ENOMEM;
		mw->recs = nr;
		mw->cap = cap;
	}
	mw->recs[mw->nrecs++] = *r;
	return 0;
}

/* Copy out one record (whole, hdr->size bytes) if it is one we apply. */
static int rec__parse(struct mmapwatch *mw, const struct perf_event_header *h)
{
	const char *p = (const char *)(h + 1);
	struct rec r = { .type = h->type, .seq = mw->seq++ };
	const struct pid_body *pb = (const void *)p;

	if (h->type == PERF_RECORD_LOST) {
		mw->st.lost += ((const uint64_t *)p)[1];
		return 0;
	}
	if (h->size < sizeof(*h) + sizeof(uint64_t))
		return 0;
	r.time = *(const uint64_t *)((const char *)h + h->size - sizeof(uint64_t));
	switch (h->type) {
	case PERF_RECORD_MMAP2: {
		const struct mmap2_body *m = (const void *)p;
		size_t room = h->size - sizeof(*h) - sizeof(*m) - sizeof(uint64_t);

		if (h->size < sizeof(*h) + sizeof(*m) + sizeof(uint64_t) ||
		    !(m->prot & PROT_EXEC) ||
		    (h->misc & PERF_RECORD_MISC_MMAP_BUILD_ID))
			return 0;
		r.pid = m->pid;
		r.addr = m->addr;
		r.len = m->len;
		r.pgoff = m->pgoff;
		r.maj = m->maj;
		r.min = m->min;
		r.ino = m->ino;
		r.path = strndup(m->filename, room);
		if (!r.path)
			return -ENOMEM;
		break;
	}
	case PERF_RECORD_COMM:
		if (!(h->misc & PERF_RECORD_MISC_COMM_EXEC))
			return 0;
		r.pid = pb->pid;
		break;
	case PERF_RECORD_FORK:
		if (pb->pid == pb->other)	/* a new thread */
			return 0;
		r.pid = pb->pid;
		r.ppid = pb->other;
		break;
	default:
		return 0;
	}
	if (rec__push(mw, &r)) {
		free(r.path);
		return -ENOMEM;
	}
	return 0;
}

static void ring__read(struct mmapwatch *mw, struct ring *r, int *err)
{
	static char buf[1 << 16];	/* a record wrapping the ring's end */
	uint64_t head = __atomic_load_n(&r->meta->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = r->meta->data_tail;

	while (tail < head) {
		size_t at = tail & (r->size - 1);
		const struct perf_event_header *h = (const void *)(r->data + at);
		size_t len;

		if (at + sizeof(*h) > r->size) {
			memcpy(buf, r->data + at, r->size - at);
			memcpy(buf + r->size - at, r->data, sizeof(*h) - (r->size - at));
			h = (const void *)buf;
		}
		len = h->size;
		if (!len)
			break;
		if (at + len > r->size) {
			memcpy(buf, r->data + at, r->size - at);
			memcpy(buf + r->size - at, r->data, len - (r->size - at));
			h = (const void *)buf;
		}
		if (!*err)
			*err = rec__parse(mw, h);
		tail += len;
	}
	__atomic_store_n(&r->meta->data_tail, tail, __ATOMIC_RELEASE);
}

static int rec__cmp(const void *a, const void *b)
{
	const struct rec *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void mmapwatch__first_sight(struct mmapwatch *mw, struct syms_cache *sc, int tgid)
{
	if (mw && syms_cache__has(sc, tgid))
		syms_cache__pin(sc, tgid);
	else
		syms_cache__snapshot(sc, tgid);
}

int mmapwatch__drain(struct mmapwatch *mw, struct syms_cache *sc)
{
	uint64_t t0 = now_ns();
	int err = 0;

	for (int i = 0; i < mw->nrings; i++)
		ring__read(mw, &mw->rings[i], &err);
	/* One process's records can sit in several rings (it migrates):
	 * an exec must come before the mappings of its new image. */
	qsort(mw->recs, mw->nrecs, sizeof(*mw->recs), rec__cmp);
	for (size_t i = 0; i < mw->nrecs; i++) {
		struct rec *r = &mw->recs[i];

		if (err)
			;
		else if (r->type == PERF_RECORD_MMAP2)
			err = syms_cache__add_map(sc, r->pid, r->addr, r->addr + r->len,
						  r->pgoff, r->maj, r->min, r->ino,
						  r->path);
		else if (r->type == PERF_RECORD_COMM)
			syms_cache__exec(sc, r->pid);
		else
			err = syms_cache__fork(sc, r->ppid, r->pid);
		free(r->path);
	}
	mw->st.records += mw->nrecs;
	mw->nrecs = 0;
	mw->st.drain_ns += now_ns() - t0;
	return err;
}
