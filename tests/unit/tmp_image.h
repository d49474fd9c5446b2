/* SPDX-License-Identifier: MIT */
/*
 * tmp_image.h — the unit tests' image files (t_image), and what keeps a
 * killed run from leaving them in TMPDIR.  libc only: core_test.h and
 * items_test.h both take it.
 */
#ifndef TMP_IMAGE_H
#define TMP_IMAGE_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/*
 * Images are named TMPDIR/glassfs-unit-PID-XXXXXX, and what a test makes
 * beside one (NAME.crash, NAME.fsck, copies) starts with its name, so that
 * a killed run leaves none of them behind:
 *  - SIGTERM (tests/run.sh's timeout), SIGINT (^C), SIGHUP: t_img_on_kill,
 *    installed by the first t_image unless the test handles the signal
 *    itself, unlinks this pid's files and dies by the signal;
 *  - SIGKILL, a crash: the first t_image of a later run in the same
 *    directory removes the files of every pid that no longer runs.
 * A pid is judged dead by kill(pid, 0) in this pid namespace: tests in
 * another namespace must not share the TMPDIR (a live pid reused here only
 * keeps stale files a while longer).  A forked child's files would be
 * swept once it exits: children must not make images (none do).
 */
#define T_IMG_PREFIX "glassfs-unit-"
static char t_img_dir[256];

/* "glassfs-unit-PID-" into p (at least 40 bytes): its length.  No stdio:
 * called from the signal handler. */
static __attribute__((unused)) size_t t_img_prefix(char *p, pid_t pid)
{
	char d[16];
	size_t n = 0, k = 0;

	for (const char *s = T_IMG_PREFIX; *s; s++)
		p[n++] = *s;
	do
		d[k++] = (char)('0' + pid % 10);
	while ((pid /= 10) > 0);
	while (k)
		p[n++] = d[--k];
	p[n++] = '-';
	p[n] = 0;
	return n;
}

/* Unlink this pid's files in t_img_dir, with async-signal-safe calls only
 * (getdents64, unlinkat): a pass is made again until one removes nothing,
 * since entries removed during a scan may hide others from it. */
static __attribute__((unused)) void t_img_on_kill(int sig)
{
	char pre[40], buf[4096] __attribute__((aligned(8)));
	size_t np = t_img_prefix(pre, getpid());
	int fd = open(t_img_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), removed = 1;

	while (fd >= 0 && removed) {
		long n;
		removed = 0;
		lseek(fd, 0, SEEK_SET);
		while ((n = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0)
			for (long o = 0; o < n;) {
				struct { uint64_t ino; int64_t off; unsigned short reclen;
					 unsigned char type; char name[]; } *e = (void *)(buf + o);
				size_t i = 0;
				while (i < np && e->name[i] == pre[i])
					i++;
				if (i == np && unlinkat(fd, e->name, 0) == 0)
					removed = 1;
				o += e->reclen;
			}
	}
	if (fd >= 0)
		close(fd);
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Once a process: remove dead runs' files from dir, and catch the kill
 * signals the test does not handle itself. */
static __attribute__((unused)) void t_img_init(const char *dir)
{
	static const int sigs[] = { SIGTERM, SIGINT, SIGHUP };
	DIR *d = opendir(dir);
	struct dirent *e;

	snprintf(t_img_dir, sizeof(t_img_dir), "%s", dir);
	while (d && (e = readdir(d))) {
		const char *s = e->d_name + strlen(T_IMG_PREFIX);
		char *end;
		struct stat st;
		if (strncmp(e->d_name, T_IMG_PREFIX, strlen(T_IMG_PREFIX)) || *s < '1' || *s > '9')
			continue;
		long pid = strtol(s, &end, 10);
		if (*end != '-' || pid == getpid() || (kill((pid_t)pid, 0) < 0 ? errno != ESRCH : 1))
			continue;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    st.st_uid == geteuid() && S_ISREG(st.st_mode))
			unlinkat(dirfd(d), e->d_name, 0);
	}
	if (d)
		closedir(d);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		struct sigaction old, sa = { .sa_handler = t_img_on_kill };
		sigemptyset(&sa.sa_mask);
		if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_DFL &&
		    !(old.sa_flags & SA_SIGINFO))
			sigaction(sigs[i], &sa, NULL);
	}
}

/* A sparse image file of size bytes; path in buf (256 bytes will do). */
static __attribute__((unused)) int t_image(char *buf, size_t n, uint64_t size)
{
	static bool init;
	const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	char pre[40];

	if (!init) {
		t_img_init(dir);
		init = true;
	}
	t_img_prefix(pre, getpid());
	snprintf(buf, n, "%s/%sXXXXXX", dir, pre);
	int fd = mkstemp(buf);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size) < 0) {
		close(fd);
		return -errno;
	}
	close(fd);
	return 0;
}

#endif
