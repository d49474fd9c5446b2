// SPDX-License-Identifier: MIT
/*
 * gfsop — one file-system call per invocation, for the mounted tests.
 *
 *   gfsop EXPECT OP ARGS...
 *
 * EXPECT is "ok" or an errno name (ENOENT, EEXIST, ...).  gfsop runs OP,
 * prints what it produced (stat fields, a value, a list) on stdout, and
 * exits 0 when the outcome matches EXPECT, else prints "got X, expected Y"
 * on stderr and exits 1.  Works on any directory (tmpfs, glassfs, ...).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <linux/falloc.h>

static const struct { int e; const char *n; } errs[] = {
#define E(x) { x, #x },
	E(EPERM) E(ENOENT) E(EIO) E(EBADF) E(EACCES) E(EEXIST) E(EXDEV) E(ENOTDIR)
	E(EISDIR) E(EINVAL) E(EFBIG) E(ENOSPC) E(EROFS) E(EMLINK) E(ERANGE)
	E(ENAMETOOLONG) E(ENOTEMPTY) E(ELOOP) E(ENODATA) E(ENXIO) E(EOPNOTSUPP)
	E(E2BIG) E(ENOTTY) E(EBUSY) E(ETXTBSY) E(ENOSYS) E(EUCLEAN) E(EINTR)
#undef E
};

static const char *ename(int e)
{
	static char buf[32];
	for (size_t i = 0; i < sizeof(errs) / sizeof(errs[0]); i++)
		if (errs[i].e == e)
			return errs[i].n;
	snprintf(buf, sizeof(buf), "errno%d", e);
	return buf;
}

static void die_usage(void)
{
	fprintf(stderr, "usage: gfsop EXPECT OP ARGS... (see the source for OPs)\n");
	exit(2);
}

static int oflags(const char *s)
{
	int f = 0, acc = O_RDONLY;
	for (; *s; s++) {
		switch (*s) {
		case 'r': break;
		case 'w': acc = O_WRONLY; break;
		case 'W': acc = O_RDWR; break;
		case 'c': f |= O_CREAT; break;
		case 'x': f |= O_EXCL; break;
		case 't': f |= O_TRUNC; break;
		case 'a': f |= O_APPEND; break;
		case 'd': f |= O_DIRECTORY; break;
		case 'n': f |= O_NOFOLLOW; break;
		}
	}
	return f | acc;
}

/* Deterministic bytes for (seed, offset). */
static unsigned char pat(uint64_t seed, uint64_t off)
{
	uint64_t x = (seed + 1) * 0x9e3779b97f4a7c15ULL ^ (off / 8) * 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 31;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 29;
	return (unsigned char)(x >> ((off % 8) * 8));
}

static void ts_arg(const char *s, const char *ns, struct timespec *t)
{
	if (!strcmp(s, "now"))
		t->tv_nsec = UTIME_NOW;
	else if (!strcmp(s, "omit"))
		t->tv_nsec = UTIME_OMIT;
	else {
		t->tv_sec = strtoll(s, NULL, 10);
		t->tv_nsec = strtol(ns, NULL, 10);
	}
}

static void print_stat(const struct stat *st)
{
	printf("mode=%o nlink=%lu uid=%u gid=%u size=%lld blocks=%lld ino=%llu rdev=%u:%u "
	       "atime=%lld.%09ld mtime=%lld.%09ld ctime=%lld.%09ld\n",
	       st->st_mode, (unsigned long)st->st_nlink, st->st_uid, st->st_gid,
	       (long long)st->st_size, (long long)st->st_blocks, (unsigned long long)st->st_ino,
	       major(st->st_rdev), minor(st->st_rdev),
	       (long long)st->st_atim.tv_sec, st->st_atim.tv_nsec,
	       (long long)st->st_mtim.tv_sec, st->st_mtim.tv_nsec,
	       (long long)st->st_ctim.tv_sec, st->st_ctim.tv_nsec);
}

static int cmpstr(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

#define NEED(n) do { if (argc < (n)) die_usage(); } while (0)

static volatile sig_atomic_t alarms;

static void on_alarm(int sig)
{
	(void)sig;
	alarms++;
}

/*
 * sigsync: dirty LEN bytes of PATH with the pattern of SEED, then fsync,
 * fdatasync and syncfs it, ROUNDS times, while an interval timer sends
 * SIGALRM every 100 us to a handler installed without SA_RESTART — so a
 * FUSE request in flight is interrupted (FUSE_INTERRUPT) over and over.
 * Linux's syncfs(2) has no EINTR, and fsync/fdatasync on a kernel
 * filesystem (ext4, the oracle) never give it for a caught signal: the
 * file system must finish the work.  Any error fails (errno as is, so
 * EXPECT names it); a write cut short by the signal is retried, as
 * write(2) allows.  The caller checks the data with `verify` after a
 * remount: durable, not only returned.
 */
static int sigsync(const char *path, uint64_t len, int rounds, uint64_t seed)
{
	struct sigaction sa = { .sa_handler = on_alarm };	/* no SA_RESTART */
	struct itimerval it = { { 0, 100 }, { 0, 100 } };
	unsigned char *buf = malloc(1 << 16);
	int fd = open(path, O_RDWR | O_CREAT, 0644), r = 0, e = 0;

	if (fd < 0 || !buf) {
		free(buf);
		return -1;
	}
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	for (int i = 0; i < rounds && r == 0; i++) {
		for (uint64_t off = 0; off < len && r == 0;) {
			size_t n = len - off > (1 << 16) ? 1 << 16 : len - off;
			for (size_t k = 0; k < n; k++)
				buf[k] = pat(seed + (uint64_t)i, off + k);
			ssize_t w = pwrite(fd, buf, n, off);
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0)
				r = -1;
			else
				off += (uint64_t)w;
		}
		if (r == 0 && (r = fsync(fd)) < 0)
			fprintf(stderr, "sigsync: fsync round %d: %s\n", i, strerror(errno));
		if (r == 0 && (r = fdatasync(fd)) < 0)
			fprintf(stderr, "sigsync: fdatasync round %d: %s\n", i, strerror(errno));
		if (r == 0 && (r = syncfs(fd)) < 0)
			fprintf(stderr, "sigsync: syncfs round %d: %s\n", i, strerror(errno));
	}
	e = errno;
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_REAL, &it, NULL);
	printf("alarms=%d\n", (int)alarms);
	free(buf);
	close(fd);
	errno = e;
	return r;
}


static int run(int argc, char **argv)
{
	const char *op = argv[0];
	struct stat st;
	int fd;

	if (!strcmp(op, "open")) {		/* open PATH FLAGS [MODE] */
		NEED(3);
		fd = open(argv[1], oflags(argv[2]), argc > 3 ? (mode_t)strtol(argv[3], NULL, 8) : 0644);
		if (fd < 0)
			return -1;
		close(fd);
		return 0;
	}
	if (!strcmp(op, "mkdir")) {
		NEED(2);
		return mkdir(argv[1], argc > 2 ? (mode_t)strtol(argv[2], NULL, 8) : 0755);
	}
	if (!strcmp(op, "rmdir")) { NEED(2); return rmdir(argv[1]); }
	if (!strcmp(op, "unlink")) { NEED(2); return unlink(argv[1]); }
	if (!strcmp(op, "rename")) {	/* rename A B [noreplace|exchange] */
		NEED(3);
		unsigned fl = 0;
		if (argc > 3)
			fl = !strcmp(argv[3], "noreplace") ? RENAME_NOREPLACE :
			     !strcmp(argv[3], "exchange") ? RENAME_EXCHANGE : 0;
		return renameat2(AT_FDCWD, argv[1], AT_FDCWD, argv[2], fl);
	}
	if (!strcmp(op, "link")) { NEED(3); return link(argv[1], argv[2]); }
	if (!strcmp(op, "symlink")) { NEED(3); return symlink(argv[1], argv[2]); }
	if (!strcmp(op, "readlink")) {
		char buf[8192];
		NEED(2);
		ssize_t n = readlink(argv[1], buf, sizeof(buf) - 1);
		if (n < 0)
			return -1;
		buf[n] = 0;
		printf("%s\n", buf);
		return 0;
	}
	if (!strcmp(op, "mknod")) {	/* mknod PATH fifo|sock|chr|blk [MAJ MIN] */
		NEED(3);
		mode_t m = !strcmp(argv[2], "fifo") ? S_IFIFO : !strcmp(argv[2], "sock") ? S_IFSOCK :
			   !strcmp(argv[2], "chr") ? S_IFCHR : S_IFBLK;
		dev_t dev = argc > 4 ? makedev(atoi(argv[3]), atoi(argv[4])) : 0;
		return mknod(argv[1], m | 0644, dev);
	}
	if (!strcmp(op, "truncate")) { NEED(3); return truncate(argv[1], strtoll(argv[2], NULL, 0)); }
	if (!strcmp(op, "stat") || !strcmp(op, "lstat")) {
		NEED(2);
		if ((op[0] == 'l' ? lstat : stat)(argv[1], &st) < 0)
			return -1;
		print_stat(&st);
		return 0;
	}
	if (!strcmp(op, "chmod")) { NEED(3); return chmod(argv[1], (mode_t)strtol(argv[2], NULL, 8)); }
	if (!strcmp(op, "chown")) { NEED(4); return lchown(argv[1], atoi(argv[2]), atoi(argv[3])); }
	if (!strcmp(op, "utimens")) {	/* utimens PATH AS ANS MS MNS (now|omit allowed) */
		struct timespec ts[2];
		NEED(6);
		ts_arg(argv[2], argv[3], &ts[0]);
		ts_arg(argv[4], argv[5], &ts[1]);
		return utimensat(AT_FDCWD, argv[1], ts, AT_SYMLINK_NOFOLLOW);
	}
	if (!strcmp(op, "setxattr")) {	/* setxattr PATH NAME VALUE [create|replace] */
		NEED(4);
		int fl = argc > 4 ? (!strcmp(argv[4], "create") ? XATTR_CREATE : XATTR_REPLACE) : 0;
		return lsetxattr(argv[1], argv[2], argv[3], strlen(argv[3]), fl);
	}
	if (!strcmp(op, "setxattr_size")) {	/* setxattr_size PATH NAME BYTES */
		NEED(4);
		size_t n = strtoul(argv[3], NULL, 0);
		char *v = malloc(n + 1);
		for (size_t i = 0; i < n; i++)
			v[i] = (char)pat(7, i);
		int r = lsetxattr(argv[1], argv[2], v, n, 0);
		free(v);
		return r;
	}
	if (!strcmp(op, "getxattr")) {
		char buf[70000];
		NEED(3);
		ssize_t n = lgetxattr(argv[1], argv[2], buf, sizeof(buf) - 1);
		if (n < 0)
			return -1;
		buf[n] = 0;
		printf("%s\n", buf);
		return 0;
	}
	if (!strcmp(op, "setxattr_hex")) {	/* setxattr_hex PATH NAME HEXBYTES */
		NEED(4);
		size_t n = strlen(argv[3]) / 2;
		unsigned char v[4096];
		for (size_t i = 0; i < n && i < sizeof(v); i++)
			sscanf(argv[3] + 2 * i, "%2hhx", &v[i]);
		return lsetxattr(argv[1], argv[2], v, n, 0);
	}
	if (!strcmp(op, "getxattr_hex")) {
		unsigned char v[4096];
		NEED(3);
		ssize_t n = lgetxattr(argv[1], argv[2], v, sizeof(v));
		if (n < 0)
			return -1;
		for (ssize_t i = 0; i < n; i++)
			printf("%02x", v[i]);
		printf("\n");
		return 0;
	}
	if (!strcmp(op, "getxattr_small")) {	/* getxattr into a 1-byte buffer: ERANGE */
		char buf[1];
		NEED(3);
		return lgetxattr(argv[1], argv[2], buf, sizeof(buf)) < 0 ? -1 : 0;
	}
	if (!strcmp(op, "listxattr")) {
		char buf[65536];
		char *names[1024];
		int n = 0;
		NEED(2);
		ssize_t len = llistxattr(argv[1], buf, sizeof(buf));
		if (len < 0)
			return -1;
		for (ssize_t o = 0; o < len && n < 1024; o += strlen(buf + o) + 1)
			names[n++] = buf + o;
		qsort(names, n, sizeof(*names), cmpstr);
		for (int i = 0; i < n; i++)
			printf("%s\n", names[i]);
		return 0;
	}
	if (!strcmp(op, "removexattr")) { NEED(3); return lremovexattr(argv[1], argv[2]); }
	if (!strcmp(op, "fallocate")) {	/* fallocate PATH 0|keep|punch OFF LEN [MS] */
		NEED(5);
		int m = !strcmp(argv[2], "keep") ? FALLOC_FL_KEEP_SIZE :
			!strcmp(argv[2], "punch") ? FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE : 0;
		fd = open(argv[1], O_WRONLY);
		if (fd < 0)
			return -1;
		if (argc > 5)	/* open, then wait MS: the call comes after a signal or stop */
			usleep((useconds_t)atoi(argv[5]) * 1000);
		int r = fallocate(fd, m, strtoll(argv[3], NULL, 0), strtoll(argv[4], NULL, 0));
		int e = errno;
		close(fd);
		errno = e;
		return r;
	}
	if (!strcmp(op, "seek")) {	/* seek PATH data|hole OFF: prints the offset */
		NEED(4);
		fd = open(argv[1], O_RDONLY);
		if (fd < 0)
			return -1;
		off_t r = lseek(fd, strtoll(argv[3], NULL, 0),
				!strcmp(argv[2], "data") ? SEEK_DATA : SEEK_HOLE);
		int e = errno;
		close(fd);
		errno = e;
		if (r < 0)
			return -1;
		printf("%lld\n", (long long)r);
		return 0;
	}
	if (!strcmp(op, "writeseek")) {	/* writeseek PATH OFF LEN */
		/* write LEN bytes at OFF and, the writer still open, seek
		 * with a second descriptor (a sparse-aware copy beside a
		 * writer): prints "data=D hole=H" for SEEK_DATA 0 and
		 * SEEK_HOLE OFF, -1 for an error */
		NEED(4);
		off_t off = strtoll(argv[2], NULL, 0);
		size_t len = strtoull(argv[3], NULL, 0);
		char *buf = malloc(len);
		fd = open(argv[1], O_RDWR | O_CREAT, 0644);
		if (fd < 0 || !buf)
			return -1;
		memset(buf, 0xab, len);
		if (pwrite(fd, buf, len, off) != (ssize_t)len)
			return -1;
		int rd = open(argv[1], O_RDONLY);
		if (rd < 0)
			return -1;
		off_t d = lseek(rd, 0, SEEK_DATA), h = lseek(rd, off, SEEK_HOLE);
		printf("data=%lld hole=%lld\n", (long long)d, (long long)h);
		close(rd);
		close(fd);
		free(buf);
		return 0;
	}
	if (!strcmp(op, "pwrite") || !strcmp(op, "verify")) {	/* OP PATH OFF LEN SEED */
		NEED(5);
		uint64_t off = strtoull(argv[2], NULL, 0), len = strtoull(argv[3], NULL, 0);
		uint64_t seed = strtoull(argv[4], NULL, 0);
		int w = op[0] == 'p';
		fd = open(argv[1], w ? O_WRONLY | O_CREAT : O_RDONLY, 0644);
		if (fd < 0)
			return -1;
		unsigned char *buf = malloc(1 << 20);
		for (uint64_t done = 0; done < len;) {
			size_t n = len - done > (1 << 20) ? 1 << 20 : len - done;
			ssize_t r;
			if (w) {
				for (size_t i = 0; i < n; i++)
					buf[i] = pat(seed, off + done + i);
				r = pwrite(fd, buf, n, off + done);
			} else {
				r = pread(fd, buf, n, off + done);
				if (r >= 0 && (size_t)r < n) {
					fprintf(stderr, "short read at %llu\n", (unsigned long long)(off + done + r));
					errno = EIO;
					r = -1;
				}
				for (ssize_t i = 0; r > 0 && i < r; i++)
					if (buf[i] != pat(seed, off + done + i)) {
						fprintf(stderr, "mismatch at %llu\n", (unsigned long long)(off + done + i));
						errno = EUCLEAN;
						r = -1;
					}
			}
			if (r < 0) {
				int e = errno;
				free(buf);
				close(fd);
				errno = e;
				return -1;
			}
			done += (uint64_t)r;
		}
		free(buf);
		return close(fd);
	}
	if (!strcmp(op, "either")) {	/* either PATH OFF LEN SEED1 SEED2: each 4 KiB block is one's */
		/* One read of the range: a block compared with two seeds in
		 * two reads could change between them (the kernel's cached
		 * copy of a write that failed at writeback, then the
		 * daemon's, once the kernel drops the page). */
		NEED(6);
		uint64_t off = strtoull(argv[2], NULL, 0), len = strtoull(argv[3], NULL, 0);
		uint64_t s1 = strtoull(argv[4], NULL, 0), s2 = strtoull(argv[5], NULL, 0);
		unsigned char *buf = malloc(len ? len : 1);
		ssize_t r;
		fd = open(argv[1], O_RDONLY);
		if (fd < 0 || !buf) {
			free(buf);
			return -1;
		}
		r = pread(fd, buf, len, off);
		close(fd);
		if (r != (ssize_t)len) {
			free(buf);
			errno = r < 0 ? errno : EIO;
			return -1;
		}
		for (uint64_t b = 0; b < len; b += 4096) {
			int m1 = 1, m2 = 1;
			for (uint64_t i = b; i < len && i < b + 4096 && (m1 || m2); i++) {
				m1 &= buf[i] == pat(s1, off + i);
				m2 &= buf[i] == pat(s2, off + i);
			}
			if (!m1 && !m2) {
				fprintf(stderr, "block at %llu is neither seed\n", (unsigned long long)(off + b));
				free(buf);
				errno = EUCLEAN;
				return -1;
			}
		}
		free(buf);
		return 0;
	}
	if (!strcmp(op, "zeros")) {	/* zeros PATH OFF LEN: the range reads as zeros */
		NEED(4);
		uint64_t off = strtoull(argv[2], NULL, 0), len = strtoull(argv[3], NULL, 0);
		fd = open(argv[1], O_RDONLY);
		if (fd < 0)
			return -1;
		char buf[65536];
		for (uint64_t done = 0; done < len;) {
			size_t n = len - done > sizeof(buf) ? sizeof(buf) : len - done;
			ssize_t r = pread(fd, buf, n, off + done);
			if (r <= 0) {
				close(fd);
				errno = r < 0 ? errno : EIO;
				return -1;
			}
			for (ssize_t i = 0; i < r; i++)
				if (buf[i]) {
					fprintf(stderr, "nonzero at %llu\n", (unsigned long long)(off + done + i));
					close(fd);
					errno = EUCLEAN;
					return -1;
				}
			done += (uint64_t)r;
		}
		return close(fd);
	}
	if (!strcmp(op, "write")) {	/* write PATH OFF STRING */
		NEED(4);
		fd = open(argv[1], O_WRONLY | O_CREAT, 0644);
		if (fd < 0)
			return -1;
		ssize_t r = pwrite(fd, argv[3], strlen(argv[3]), strtoll(argv[2], NULL, 0));
		int e = errno;
		close(fd);
		errno = e;
		return r < 0 ? -1 : 0;
	}
	if (!strcmp(op, "cat")) {	/* cat PATH: contents to stdout */
		char buf[65536];
		NEED(2);
		fd = open(argv[1], O_RDONLY);
		if (fd < 0)
			return -1;
		ssize_t r;
		while ((r = read(fd, buf, sizeof(buf))) > 0)
			fwrite(buf, 1, (size_t)r, stdout);
		int e = errno;
		close(fd);
		errno = e;
		return r < 0 ? -1 : 0;
	}
	if (!strcmp(op, "fsync") || !strcmp(op, "fdatasync")) {
		NEED(2);
		fd = open(argv[1], O_RDONLY);
		if (fd < 0)
			return -1;
		int r = op[1] == 's' ? fsync(fd) : fdatasync(fd);
		int e = errno;
		close(fd);
		errno = e;
		return r;
	}
	if (!strcmp(op, "syncfs")) {	/* syncfs PATH: syncfs(2) on PATH's filesystem */
		NEED(2);
		fd = open(argv[1], O_RDONLY | O_DIRECTORY);
		if (fd < 0)
			return -1;
		int r = syncfs(fd);
		int e = errno;
		close(fd);
		errno = e;
		return r;
	}
	if (!strcmp(op, "sigsync")) {	/* sigsync PATH LEN ROUNDS SEED */
		NEED(5);
		return sigsync(argv[1], strtoull(argv[2], NULL, 0), atoi(argv[3]),
			       strtoull(argv[4], NULL, 0));
	}
	if (!strcmp(op, "access")) {	/* access PATH r|w|x|f */
		NEED(3);
		int m = 0;
		for (const char *c = argv[2]; *c; c++)
			m |= *c == 'r' ? R_OK : *c == 'w' ? W_OK : *c == 'x' ? X_OK : F_OK;
		return access(argv[1], m);
	}
	if (!strcmp(op, "statfs")) {
		struct statvfs sv;
		NEED(2);
		if (statvfs(argv[1], &sv) < 0)
			return -1;
		printf("bsize=%lu blocks=%llu bfree=%llu bavail=%llu files=%llu ffree=%llu namemax=%lu\n",
		       sv.f_bsize, (unsigned long long)sv.f_blocks, (unsigned long long)sv.f_bfree,
		       (unsigned long long)sv.f_bavail, (unsigned long long)sv.f_files,
		       (unsigned long long)sv.f_ffree, sv.f_namemax);
		return 0;
	}
	if (!strcmp(op, "readdir")) {	/* names (no . ..), sorted */
		NEED(2);
		DIR *d = opendir(argv[1]);
		if (!d)
			return -1;
		struct dirent *de;
		size_t n = 0, cap = 1024;
		char **names = malloc(cap * sizeof(*names));
		errno = 0;
		while ((de = readdir(d))) {
			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			if (n == cap)
				names = realloc(names, (cap *= 2) * sizeof(*names));
			names[n++] = strdup(de->d_name);
		}
		closedir(d);
		qsort(names, n, sizeof(*names), cmpstr);
		for (size_t i = 0; i < n; i++)
			printf("%s\n", names[i]);
		return 0;
	}
	if (!strcmp(op, "count")) {	/* count entries of a directory (no . ..) */
		NEED(2);
		DIR *d = opendir(argv[1]);
		if (!d)
			return -1;
		struct dirent *de;
		unsigned long n = 0;
		while ((de = readdir(d)))
			if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
				n++;
		closedir(d);
		printf("%lu\n", n);
		return 0;
	}
	if (!strcmp(op, "mkfiles")) {	/* mkfiles DIR N: create N empty files f0..fN-1 */
		NEED(3);
		long n = atol(argv[2]);
		char p[4096];
		for (long i = 0; i < n; i++) {
			snprintf(p, sizeof(p), "%s/f%ld", argv[1], i);
			fd = open(p, O_CREAT | O_WRONLY | O_EXCL, 0644);
			if (fd < 0)
				return -1;
			close(fd);
		}
		return 0;
	}
	if (!strcmp(op, "lookups")) {	/* lookups DIR N: stat f0..fN-1 */
		NEED(3);
		long n = atol(argv[2]);
		char p[4096];
		for (long i = 0; i < n; i++) {
			snprintf(p, sizeof(p), "%s/f%ld", argv[1], i);
			if (stat(p, &st) < 0)
				return -1;
		}
		return 0;
	}
	if (!strcmp(op, "unlinkopen")) {	/* write, unlink while open, read back, close */
		NEED(2);
		fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0644);
		if (fd < 0)
			return -1;
		char buf[16] = "still-here";
		if (write(fd, buf, 10) != 10 || unlink(argv[1]) < 0)
			return -1;
		memset(buf, 0, sizeof(buf));
		if (fstat(fd, &st) < 0 || st.st_nlink != 0 || pread(fd, buf, 10, 0) != 10 ||
		    strcmp(buf, "still-here")) {
			errno = EUCLEAN;
			return -1;
		}
		return close(fd);
	}
	if (!strcmp(op, "pathex")) {	/* pathex SEED OFF LEN: the pattern bytes in hex */
		NEED(4);
		uint64_t sd = strtoull(argv[1], NULL, 0), off = strtoull(argv[2], NULL, 0);
		for (uint64_t i = 0; i < strtoull(argv[3], NULL, 0); i++)
			printf("%02x", pat(sd, off + i));
		printf("\n");
		return 0;
	}
	if (!strcmp(op, "imgfind")) {	/* imgfind IMG HEX: offsets where the bytes occur */
		NEED(3);
		size_t n = strlen(argv[2]) / 2;
		unsigned char needle[512];
		if (n == 0 || n > sizeof(needle)) {
			errno = EINVAL;
			return -1;
		}
		for (size_t i = 0; i < n; i++)
			sscanf(argv[2] + 2 * i, "%2hhx", &needle[i]);
		FILE *f = fopen(argv[1], "rb");
		if (!f)
			return -1;
		static unsigned char buf[(1 << 20) + 512];
		size_t keep = 0;
		uint64_t base = 0;
		for (;;) {
			size_t r = fread(buf + keep, 1, 1 << 20, f);
			if (r == 0)
				break;
			size_t tot = keep + r;
			for (size_t i = 0; i + n <= tot; i++)
				if (buf[i] == needle[0] && !memcmp(buf + i, needle, n))
					printf("%llu\n", (unsigned long long)(base + i));
			keep = tot < n - 1 ? tot : n - 1;
			memmove(buf, buf + tot - keep, keep);
			base += tot - keep;
		}
		fclose(f);
		return 0;
	}
	if (!strcmp(op, "flip")) {	/* flip IMG OFFSET: invert one bit */
		NEED(3);
		fd = open(argv[1], O_RDWR);
		if (fd < 0)
			return -1;
		unsigned char c;
		off_t o = strtoll(argv[2], NULL, 0);
		if (pread(fd, &c, 1, o) != 1)
			return -1;
		c ^= 0x10;
		if (pwrite(fd, &c, 1, o) != 1)
			return -1;
		return close(fd);
	}
	if (!strcmp(op, "byte")) {	/* byte IMG OFFSET: print one byte (decimal) */
		NEED(3);
		fd = open(argv[1], O_RDONLY);
		if (fd < 0)
			return -1;
		unsigned char c;
		if (pread(fd, &c, 1, strtoll(argv[2], NULL, 0)) != 1)
			return -1;
		printf("%u\n", c);
		return close(fd);
	}
	fprintf(stderr, "gfsop: unknown op %s\n", op);
	exit(2);
}

int main(int argc, char **argv)
{
	if (argc < 3)
		die_usage();
	const char *expect = argv[1];
	errno = 0;
	int r = run(argc - 2, argv + 2);
	const char *got = r == 0 ? "ok" : ename(errno);
	fflush(stdout);
	if (strcmp(got, expect) != 0) {
		fprintf(stderr, "gfsop %s %s: got %s, expected %s\n", argv[2], argc > 3 ? argv[3] : "",
			got, expect);
		return 1;
	}
	return 0;
}
