// SPDX-License-Identifier: MIT
/*
 * dev.c — devices (see dev.h).
 */
#include "fs/store/dev.h"
#include "fs/store/dev_claim.h"
#include "fs/store/dev_map.h"
#include "fs/base/lock.h"
#include "fs/base/probe.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

static void lat_from_env(struct dev *d)
{
	const char *e = getenv("GLASSFS_DEV_LATENCY");
	static const char *const names[] = { "read", "write", "flush", "discard" };
	char *s, *tok, *save = NULL;

	if (!e || !*e)
		return;
	s = strdup(e);
	if (!s)
		return;
	for (tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		if (!eq)
			continue;
		*eq = 0;
		for (int i = 0; i < 4; i++)
			if (strcmp(tok, names[i]) == 0)
				d->lat_ns[i] = strtoull(eq + 1, NULL, 10) * 1000ull;
	}
	free(s);
}

/*
 * GLASSFS_DEV_FAIL="PATHSUFFIX:LIST": LIST is comma-separated op names
 * (read, write, flush, discard), each failing with -EIO from the start,
 * or after N good operations of its kind with "write@N"; "nodiscard" plays a
 * device that cannot discard (-EOPNOTSUPP).
 */
static void fail_from_env(struct dev *d)
{
	const char *e = getenv("GLASSFS_DEV_FAIL");
	static const char *const names[] = { "read", "write", "flush", "discard" };
	const char *colon;
	size_t plen, len = strlen(d->path);
	char *s, *tok, *save = NULL;

	if (!e || !(colon = strchr(e, ':')))
		return;
	plen = (size_t)(colon - e);
	if (plen == 0 || plen > len || strncmp(d->path + len - plen, e, plen))
		return;
	s = strdup(colon + 1);
	if (!s)
		return;
	for (tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *at = strchr(tok, '@');
		if (at)
			*at = 0;
		if (strcmp(tok, "nodiscard") == 0) {
			d->no_discard = true;
			continue;
		}
		for (int i = 0; i < 4; i++) {
			if (strcmp(tok, names[i]))
				continue;
			if (at)
				d->fail_after[i] = strtoull(at + 1, NULL, 10) + 1;
			else
				d->fail[i] = 1;
		}
	}
	free(s);
}

/* Rotational flag of a block device from sysfs; image files inherit the
 * flag of the device under their filesystem when we can tell, else 0. */
static bool sysfs_rotational(dev_t rdev)
{
	char p[128];
	int v = 0;
	FILE *f;

	snprintf(p, sizeof(p), "/sys/dev/block/%u:%u/queue/rotational",
		 major(rdev), minor(rdev));
	f = fopen(p, "r");
	if (!f) {	/* a partition: the queue is on the parent */
		snprintf(p, sizeof(p), "/sys/dev/block/%u:%u/../queue/rotational",
			 major(rdev), minor(rdev));
		f = fopen(p, "r");
	}
	if (!f)
		return false;
	if (fscanf(f, "%d", &v) != 1)
		v = 0;
	fclose(f);
	return v == 1;
}

int dev_open(const char *path, unsigned flags, struct dev **out)
{
	struct stat st;
	struct dev *d;
	bool readonly = flags & DEV_RDONLY;
	int oflags = (readonly ? O_RDONLY : O_RDWR) | O_CLOEXEC;

	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	glock_init(&d->ra_lock, GLOCK_SPIN, GLOCK_CLASS_DEV, 0, -1, -1);
	d->path = strdup(path);
	if (!d->path) {
		free(d);
		return -ENOMEM;
	}
	if (stat(path, &st) < 0)
		goto fail_errno;
	if (!S_ISBLK(st.st_mode) && !S_ISREG(st.st_mode)) {
		errno = EINVAL;
		goto fail_errno;
	}
	if (flags & DEV_NOCLAIM) {
		d->fd = open(path, oflags);
		d->unclaimed = true;
		if (d->fd < 0)
			goto fail_errno;
	} else {
		int ret = dev_claim_open(path, oflags, S_ISBLK(st.st_mode), readonly, &d->fd);
		if (ret < 0) {
			free(d->path);
			free(d);
			return ret;
		}
	}
	d->readonly = readonly;
	if (S_ISBLK(st.st_mode)) {
		uint64_t sz = 0;
		d->blockdev = true;
		if (ioctl(d->fd, BLKGETSIZE64, &sz) < 0) {
			int e = -errno;
			close(d->fd);
			free(d->path);
			free(d);
			return e;
		}
		d->size = sz;
		d->rotational = sysfs_rotational(st.st_rdev);
	} else {
		d->size = (uint64_t)st.st_size;
		d->rotational = sysfs_rotational(st.st_dev);
	}
	lat_from_env(d);
	fail_from_env(d);
	glock_init(&d->flusher.lock, GLOCK_MUTEX, GLOCK_CLASS_DEV, 0, -1, -1);
	gcond_init(&d->flusher.cond);
	*out = d;
	return 0;
fail_errno: {
		int e = -errno;
		free(d->path);
		free(d);
		return e;
	}
}

void dev_close(struct dev *d)
{
	if (!d)
		return;
	gthread_stop(&d->flusher.th, &d->flusher.lock, &d->flusher.cond);
	dev_map_release(d);
	close(d->fd);
	free(d->path);
	free(d);
}

static void lat_sleep(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static uint64_t io_begin(struct dev *d, enum dev_op op, uint64_t off, uint64_t len)
{
	if (PROBE_ON(DEV_IO_SUBMIT))
		GLASSFS_DEV_IO_SUBMIT(d->devid, (int)op, off, len);
	return PROBE_ON(DEV_IO_DONE) ? glock_now_ns() : 0;
}

static void io_end(struct dev *d, enum dev_op op, uint64_t off, uint64_t len,
		   int ret, uint64_t t0)
{
	if (d->lat_ns[op])
		lat_sleep(d->lat_ns[op]);
	/* discards are hints (a device that cannot discard is no error) */
	if (ret && op != DEV_DISCARD)
		dev_note_error(d, op == DEV_READ ? DEV_ERR_READ :
			       op == DEV_WRITE ? DEV_ERR_WRITE : DEV_ERR_FLUSH);
	if (PROBE_ON(DEV_IO_DONE))
		GLASSFS_DEV_IO_DONE(d->devid, (int)op, off, len, ret,
				    t0 ? glock_now_ns() - t0 : 0);
}

#define ADD(f, v) __atomic_fetch_add(&d->cnt.f, (v), __ATOMIC_RELAXED)

static bool failing(struct dev *d, enum dev_op op)
{
	if (d->fail_after[op] &&
	    __atomic_add_fetch(&d->op_count[op], 1, __ATOMIC_RELAXED) >= d->fail_after[op])
		__atomic_store_n(&d->fail[op], 1, __ATOMIC_RELAXED);
	if (!__atomic_load_n(&d->fail[op], __ATOMIC_RELAXED))
		return false;
	__atomic_fetch_add(&d->errors, 1, __ATOMIC_RELAXED);
	return true;
}

static int check_range(const struct dev *d, uint64_t off, uint64_t len)
{
	if (off > d->size || len > d->size - off)
		return -EINVAL;	/* a mapping bug, never a user error */
	return 0;
}

int dev_read(struct dev *d, uint64_t off, void *buf, uint64_t len)
{
	uint64_t t0, done = 0;
	int ret = check_range(d, off, len);

	if (ret)
		return ret;
	t0 = io_begin(d, DEV_READ, off, len);
	if (failing(d, DEV_READ))
		ret = -EIO;
	while (!ret && done < len) {
		ssize_t n = pread(d->fd, (char *)buf + done, len - done, (off_t)(off + done));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			ret = -errno;
			break;
		}
		if (n == 0) {	/* past the end of an image file: reads as zeros */
			memset((char *)buf + done, 0, len - done);
			break;
		}
		done += (uint64_t)n;
	}
	ADD(read_ios, 1);
	ADD(read_bytes, len);
	io_end(d, DEV_READ, off, len, ret, t0);
	return ret;
}

int dev_write(struct dev *d, uint64_t off, const void *buf, uint64_t len)
{
	uint64_t t0, done = 0;
	int ret = check_range(d, off, len);

	if (ret)
		return ret;
	if (d->readonly)
		return -EROFS;
	t0 = io_begin(d, DEV_WRITE, off, len);
	if (failing(d, DEV_WRITE))
		ret = -EIO;
	while (!ret && done < len) {
		ssize_t n = pwrite(d->fd, (const char *)buf + done, len - done,
				   (off_t)(off + done));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			ret = -errno;
			break;
		}
		if (n == 0) {
			ret = -EIO;
			break;
		}
		done += (uint64_t)n;
	}
	ADD(write_ios, 1);
	ADD(write_bytes, len);
	if (!ret && d->recorder)
		d->recorder(d->recorder_arg, d, DEV_WRITE, off, buf, len);
	io_end(d, DEV_WRITE, off, len, ret, t0);
	return ret;
}

int dev_flush(struct dev *d)
{
	uint64_t t0;
	int ret = 0;

	if (d->readonly)
		return 0;
	t0 = io_begin(d, DEV_FLUSH, 0, 0);
	if (failing(d, DEV_FLUSH))
		ret = -EIO;
	else if (d->recorder)	/* before: it covers what was reported so far */
		d->recorder(d->recorder_arg, d, DEV_FLUSH, 0, NULL, 0);
	while (!ret && fdatasync(d->fd) < 0) {
		if (errno != EINTR) {
			ret = -errno;
			break;
		}
	}
	ADD(flushes, 1);
	io_end(d, DEV_FLUSH, 0, 0, ret, t0);
	return ret;
}

/*
 * A device's flush thread (struct dev_flusher): serves every request
 * queued when it looks, with one flush, until dev_close stops it (the
 * requests still queued then are served first).
 */
static void *flush_thread(void *arg)
{
	struct dev *d = arg;
	struct dev_flusher *f = &d->flusher;

	glock_write(&f->lock);
	for (;;) {
		struct dev_flush_req *batch = f->queue;
		if (!batch) {
			if (f->th.stop)
				break;
			gcond_wait(&f->cond, &f->lock);
			continue;
		}
		f->queue = NULL;
		glock_write_unlock(&f->lock);
		int ret = dev_flush(d);
		glock_write(&f->lock);
		for (struct dev_flush_req *r = batch; r; ) {
			struct dev_flush_req *next = r->next;	/* r is gone once done */
			r->ret = ret;
			r->done = true;
			r = next;
		}
		gcond_broadcast(&f->cond);
	}
	glock_write_unlock(&f->lock);
	return NULL;
}

/* Queue r on d's flush thread (started on first use).  false: no thread,
 * the caller flushes d itself. */
static bool flush_queue(struct dev *d, struct dev_flush_req *r)
{
	struct dev_flusher *f = &d->flusher;
	bool ok = true;

	glock_write(&f->lock);
	if (!f->th.started && !f->broken && gthread_start(&f->th, flush_thread, d))
		f->broken = true;	/* no thread (out of memory): flush in order */
	if (f->broken) {
		ok = false;
	} else {
		*r = (struct dev_flush_req){ .next = f->queue };
		f->queue = r;
		gcond_broadcast(&f->cond);
	}
	glock_write_unlock(&f->lock);
	return ok;
}

static int flush_wait(struct dev *d, struct dev_flush_req *r)
{
	struct dev_flusher *f = &d->flusher;

	glock_write(&f->lock);
	while (!r->done)
		gcond_wait(&f->cond, &f->lock);
	glock_write_unlock(&f->lock);
	return r->ret;
}

void dev_flush_all(struct dev *const *devs, int n, int *err)
{
	struct dev_flush_req req[DEV_FLUSH_ALL_MAX];
	bool queued[DEV_FLUSH_ALL_MAX] = { false };

	if (n > DEV_FLUSH_ALL_MAX) {	/* a caller's bug: still flush every one */
		for (int i = 0; i < n; i++)
			err[i] = dev_flush(devs[i]);
		return;
	}
	for (int i = 1; i < n; i++)
		queued[i] = !devs[i]->readonly && flush_queue(devs[i], &req[i]);
	if (n > 0)
		err[0] = dev_flush(devs[0]);
	for (int i = 1; i < n; i++)
		err[i] = queued[i] ? flush_wait(devs[i], &req[i]) : dev_flush(devs[i]);
}

int dev_discard(struct dev *d, uint64_t off, uint64_t len)
{
	uint64_t t0;
	int ret = check_range(d, off, len);

	if (ret)
		return ret;
	if (d->readonly)
		return -EROFS;
	t0 = io_begin(d, DEV_DISCARD, off, len);
	if (failing(d, DEV_DISCARD))
		ret = -EIO;
	else if (d->no_discard)
		ret = -EOPNOTSUPP;
	else if (d->blockdev) {
		uint64_t range[2] = { off, len };
		if (ioctl(d->fd, BLKDISCARD, range) < 0)
			ret = -errno;
	} else if (fallocate(d->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			     (off_t)off, (off_t)len) < 0) {
		ret = -errno;
	}
	if (ret == -ENOTTY || ret == -EINVAL)
		ret = -EOPNOTSUPP;
	if (!ret && d->recorder)
		d->recorder(d->recorder_arg, d, DEV_DISCARD, off, NULL, len);
	ADD(discards, 1);
	ADD(discard_bytes, len);
	io_end(d, DEV_DISCARD, off, len, ret, t0);
	return ret;
}

bool dev_allocated(struct dev *d, uint64_t off, uint64_t len)
{
	if (d->blockdev)
		return true;
	off_t hole = lseek(d->fd, (off_t)off, SEEK_HOLE);
	return hole >= 0 && (uint64_t)hole >= off + len;
}

void dev_set_latency(struct dev *d, enum dev_op op, uint64_t ns)
{
	d->lat_ns[op] = ns;
}

void dev_set_fail(struct dev *d, enum dev_op op, bool on)
{
	__atomic_store_n(&d->fail[op], on ? 1 : 0, __ATOMIC_RELAXED);
}

void dev_counters(const struct dev *d, struct dev_counters *o)
{
	o->read_ios = __atomic_load_n(&d->cnt.read_ios, __ATOMIC_RELAXED);
	o->read_bytes = __atomic_load_n(&d->cnt.read_bytes, __ATOMIC_RELAXED);
	o->write_ios = __atomic_load_n(&d->cnt.write_ios, __ATOMIC_RELAXED);
	o->write_bytes = __atomic_load_n(&d->cnt.write_bytes, __ATOMIC_RELAXED);
	o->flushes = __atomic_load_n(&d->cnt.flushes, __ATOMIC_RELAXED);
	o->discards = __atomic_load_n(&d->cnt.discards, __ATOMIC_RELAXED);
	o->discard_bytes = __atomic_load_n(&d->cnt.discard_bytes, __ATOMIC_RELAXED);
	o->ra_ios = __atomic_load_n(&d->cnt.ra_ios, __ATOMIC_RELAXED);
	o->ra_bytes = __atomic_load_n(&d->cnt.ra_bytes, __ATOMIC_RELAXED);
	o->wb_ios = __atomic_load_n(&d->cnt.wb_ios, __ATOMIC_RELAXED);
	o->wb_bytes = __atomic_load_n(&d->cnt.wb_bytes, __ATOMIC_RELAXED);
}

void dev_note_error(struct dev *d, enum dev_err e)
{
	__atomic_fetch_add(&d->err[e], 1, __ATOMIC_RELAXED);
}

void dev_errors(struct dev *d, uint64_t out[DEV_ERR_NR], bool reset)
{
	for (int i = 0; i < DEV_ERR_NR; i++)
		out[i] = reset ? __atomic_exchange_n(&d->err[i], 0, __ATOMIC_RELAXED) :
				 __atomic_load_n(&d->err[i], __ATOMIC_RELAXED);
}

void dev_set_recorder(struct dev *d, dev_record_fn fn, void *arg)
{
	d->recorder_arg = arg;
	d->recorder = fn;
}
