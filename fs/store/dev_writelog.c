// SPDX-License-Identifier: MIT
/*
 * dev_writelog.c — the device write log as a side file (dev_writelog.h).
 */
#include "fs/store/dev_writelog.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

struct dev_writelog {
	int fd;			/* O_APPEND */
	int ndevs;
	char **devs;		/* fixed after open */
	int broken;		/* a record failed: nothing more is written (atomic) */
};

int dev_writelog_open(const char *path, const char *const *devs, int ndevs,
		      struct dev_writelog **out)
{
	struct dev_writelog *w = calloc(1, sizeof(*w));
	struct wlog_head h = { .ndevs = (uint32_t)ndevs };

	if (!w)
		return -ENOMEM;
	memcpy(h.magic, WLOG_MAGIC, sizeof(h.magic));
	w->devs = calloc((size_t)ndevs, sizeof(*w->devs));
	w->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
	if (!w->devs || w->fd < 0) {
		int e = w->devs ? -errno : -ENOMEM;
		if (w->fd >= 0)
			close(w->fd);
		free(w->devs);
		free(w);
		return e;
	}
	w->ndevs = ndevs;
	for (int i = 0; i < ndevs; i++)
		if (!(w->devs[i] = strdup(devs[i]))) {
			dev_writelog_close(w);
			return -ENOMEM;
		}
	if (write(w->fd, &h, sizeof(h)) != (ssize_t)sizeof(h)) {
		int e = errno ? -errno : -EIO;
		dev_writelog_close(w);
		return e;
	}
	*out = w;
	return 0;
}

/*
 * One record is one writev() on an O_APPEND file: Linux appends a regular
 * file's writes under its inode lock, so records of concurrent I/O threads
 * do not interleave and need no lock of ours.  A flush is reported before
 * it is issued and a write after it returned (dev_types.h), so the file's
 * order is one a device could have seen.
 */
void dev_writelog_record(void *arg, const struct dev *d, int op, uint64_t off,
			 const void *buf, uint64_t len)
{
	struct dev_writelog *w = arg;
	struct wlog_rec r = { .magic = WLOG_REC_MAGIC, .op = (uint16_t)op,
			      .dev = WLOG_DEV_OTHER, .off = off, .len = len };
	struct iovec iov[2] = { { &r, sizeof(r) }, { (void *)buf, op == DEV_WRITE ? len : 0 } };

	if (__atomic_load_n(&w->broken, __ATOMIC_RELAXED))
		return;
	for (int i = 0; i < w->ndevs; i++)
		if (strcmp(d->path, w->devs[i]) == 0)
			r.dev = (uint16_t)i;
	ssize_t want = (ssize_t)(sizeof(r) + iov[1].iov_len);
	ssize_t n = writev(w->fd, iov, iov[1].iov_len ? 2 : 1);
	if (n != want && !__atomic_exchange_n(&w->broken, 1, __ATOMIC_RELAXED)) {
		struct wlog_rec b = { .magic = WLOG_REC_MAGIC, .op = WLOG_BROKEN,
				      .dev = WLOG_DEV_OTHER };
		fprintf(stderr, "glassfs: write log: %s; nothing more is logged\n",
			n < 0 ? strerror(errno) : "short write");
		if (write(w->fd, &b, sizeof(b)) < 0) {
			/* the replayer sees the log end short of a record */
		}
	}
}

void dev_writelog_close(struct dev_writelog *w)
{
	if (!w)
		return;
	if (w->fd >= 0)
		close(w->fd);
	for (int i = 0; i < w->ndevs; i++)
		free(w->devs[i]);
	free(w->devs);
	free(w);
}
