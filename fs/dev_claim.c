// SPDX-License-Identifier: MIT
/*
 * dev_claim.c — the exclusive claim on a device (dev_claim.h) and who
 * holds one (dev_holder, dev.h).
 */
#include "fs/dev.h"
#include "fs/dev_claim.h"
#include "fs/lock.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#define CLAIM_LEN	2	/* bytes 0 and 1 */
#define IN_USE_BYTE	1
#define POLL_NS		20000000ull

static int lock_range(int fd, int cmd, short type, off_t start, off_t len, short *found)
{
	struct flock fl = {
		.l_type = type, .l_whence = SEEK_SET, .l_start = start, .l_len = len, .l_pid = 0,
	};

	if (fcntl(fd, cmd, &fl) < 0)
		return -errno;
	if (found)
		*found = fl.l_type;
	return 0;
}

enum holder { HOLDER_GONE, HOLDER_IN_USE, HOLDER_CLOSING };

/* Who holds the device that fd (holding nothing itself) is open on. */
static enum holder holder_of(int fd)
{
	short t = F_UNLCK;

	if (lock_range(fd, F_OFD_GETLK, F_WRLCK, IN_USE_BYTE, 1, &t) == 0 && t != F_UNLCK)
		return HOLDER_IN_USE;
	if (lock_range(fd, F_OFD_GETLK, F_WRLCK, 0, 1, &t) == 0 && t != F_UNLCK)
		return HOLDER_CLOSING;
	return HOLDER_GONE;
}

int dev_claim_open(const char *path, int oflags, bool blockdev, bool shared, int *out)
{
	uint64_t t0 = glock_now_ns();

	for (;;) {
		enum holder h;
		int fd = open(path, oflags | (blockdev ? O_EXCL : 0));

		if (fd >= 0) {
			int r = lock_range(fd, F_OFD_SETLK, shared ? F_RDLCK : F_WRLCK, 0, CLAIM_LEN, NULL);
			if (r == 0) {
				*out = fd;
				return 0;
			}
			if (r != -EAGAIN && r != -EACCES) {
				close(fd);
				return r;
			}
			h = holder_of(fd);
			close(fd);
		} else if (errno == EBUSY && blockdev) {
			/* O_EXCL refused: a glassfs holder shows by its locks; a
			 * kernel mount or another tool as one in use */
			int pfd = open(path, O_RDONLY | O_CLOEXEC);
			h = pfd < 0 ? HOLDER_IN_USE : holder_of(pfd);
			if (h == HOLDER_GONE)
				h = HOLDER_IN_USE;
			if (pfd >= 0)
				close(pfd);
		} else {
			return -errno;
		}
		uint64_t ms = (glock_now_ns() - t0) / 1000000ull;
		if ((h == HOLDER_IN_USE && ms >= DEV_CLAIM_GRACE_MS) || ms >= DEV_CLAIM_CLOSING_WAIT_MS)
			return -EBUSY;
		if (h != HOLDER_GONE) {
			struct timespec ts = { 0, (long)POLL_NS };
			nanosleep(&ts, NULL);
		}
	}
}

void dev_claim_closing(int fd)
{
	lock_range(fd, F_OFD_SETLK, F_UNLCK, IN_USE_BYTE, 1, NULL);
}

void dev_claim_drop(int fd)
{
	lock_range(fd, F_OFD_SETLK, F_UNLCK, 0, CLAIM_LEN, NULL);
}

void dev_closing(struct dev *d)
{
	if (d && !d->unclaimed)
		dev_claim_closing(d->fd);
}

void dev_unclaim(struct dev *d)
{
	if (d && !d->unclaimed) {
		dev_claim_drop(d->fd);
		d->unclaimed = true;
	}
}

/* "pid N (its command line)" into buf. */
static void describe(const char *pid, char *buf, size_t len)
{
	char p[300], cmd[256];
	size_t n = 0;
	FILE *f;

	snprintf(p, sizeof(p), "/proc/%s/cmdline", pid);
	f = fopen(p, "r");
	if (f) {
		n = fread(cmd, 1, sizeof(cmd) - 1, f);
		fclose(f);
	}
	while (n > 0 && cmd[n - 1] == 0)
		n--;
	for (size_t i = 0; i < n; i++)
		if (cmd[i] == 0)
			cmd[i] = ' ';
	cmd[n] = 0;
	snprintf(buf, len, n ? "pid %s (%s)" : "pid %s", pid, cmd);
}

static bool same_file(const struct stat *a, const struct stat *b)
{
	if (S_ISBLK(a->st_mode))
		return S_ISBLK(b->st_mode) && a->st_rdev == b->st_rdev;
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* Does process pid have the file open? */
static bool has_open(const char *pid, const struct stat *want)
{
	char p[300], link[600];
	struct dirent *e;
	struct stat st;
	bool found = false;
	DIR *fds;

	snprintf(p, sizeof(p), "/proc/%s/fd", pid);
	fds = opendir(p);
	if (!fds)
		return false;
	while (!found && (e = readdir(fds))) {
		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		snprintf(link, sizeof(link), "%s/%s", p, e->d_name);
		found = stat(link, &st) == 0 && same_file(want, &st);
	}
	closedir(fds);
	return found;
}

/* A kernel mount of block device rdev: its mount point into buf. */
static bool kernel_mount(dev_t rdev, char *buf, size_t len)
{
	char line[4096], mnt[4096];
	unsigned maj, min;
	bool found = false;
	FILE *f = fopen("/proc/self/mountinfo", "r");

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		if (sscanf(line, "%*d %*d %u:%u %*s %4095s", &maj, &min, mnt) == 3 &&
		    maj == major(rdev) && min == minor(rdev)) {
			snprintf(buf, len, "the kernel's mount on %s", mnt);
			found = true;
		}
	fclose(f);
	return found;
}

void dev_holder(const char *path, char *buf, size_t len)
{
	char self[32], mine[512] = "";
	struct dirent *e;
	struct stat want;
	DIR *proc;

	snprintf(buf, len, "another program");
	if (stat(path, &want) < 0)
		return;
	if (S_ISBLK(want.st_mode) && kernel_mount(want.st_rdev, buf, len))
		return;
	proc = opendir("/proc");
	if (!proc)
		return;
	snprintf(self, sizeof(self), "%d", (int)getpid());
	while ((e = readdir(proc))) {
		if (!isdigit((unsigned char)e->d_name[0]) || !has_open(e->d_name, &want))
			continue;
		if (strcmp(e->d_name, self)) {	/* another process: the holder */
			describe(e->d_name, buf, len);
			closedir(proc);
			return;
		}
		describe(self, mine, sizeof(mine));
	}
	closedir(proc);
	if (mine[0])	/* only we have it open: this very volume holds it */
		snprintf(buf, len, "%s", mine);
}
