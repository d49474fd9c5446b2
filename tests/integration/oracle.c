// SPDX-License-Identifier: MIT
/*
 * oracle — the same seeded random system calls on glassfs and on a kernel
 * filesystem (the oracle: tmpfs, ext4, ...), compared after every step.
 *
 *   oracle [options] GLASSFS-DIR ORACLE-DIR
 *     -s SEED        the sequence (printed; default: random)
 *     -n OPS         operations in the sequence (default 2000)
 *     -u UID:GID:G2,G3...  run the operations as this user in a forked child
 *                    (setgroups, setresgid, setresuid); the tree is prepared
 *                    and compared as root.  UID+1 is "another user".
 *     -r CMD         at the middle of the sequence close every file, run CMD
 *                    (sh -c: it unmounts and mounts GLASSFS-DIR's volume
 *                    again), then compare the whole tree
 *     -o I,J,K...    run only these operations of the seed's sequence (a
 *                    reproducer, as printed after a shrink)
 *     -c N           compare the tree every N steps (default 1: every step;
 *                    results are compared at every step whatever N)
 *     -S             no shrinking on a divergence
 *     -v             print each operation and both results
 *     -k             keep the run directories
 *     -M             mmap operations in the sequence too (the fsx part: shared
 *                    mappings that outlive their file descriptor, loads,
 *                    stores with and without msync, munmap, and every other
 *                    operation, truncate included, while files are mapped)
 *     -W             GLASSFS-DIR is mounted with the kernel's writeback cache
 *                    (writeback_cache=on): its allowances below apply
 *
 * Each sequence runs in a fresh directory r<seed>.<n> under both dirs.  An
 * operation is drawn from the seed alone, never from the state, so any
 * subset of a sequence is a sequence too: on a divergence the failing
 * prefix is shrunk by delta debugging (drop chunks of operations while a
 * rerun on fresh directories still diverges) and printed as a command line
 * that replays it, and as a list of the calls.
 *
 * After every step: the return value and errno, what a call produced (read
 * data, link targets, xattr values and lists, directory listings), and the
 * tree: for every name, type, mode, nlink, size, uid, gid, rdev, hard-link
 * structure, file contents, symlink targets, user.* xattrs, and which of
 * mtime, ctime (and a directory's atime) moved since the last step and how
 * they are ordered.  A file's data and xattrs are read again when its
 * size, mtime or ctime moved, and all of them every 50 steps, at the end
 * and after the remount (so data changed without a time moving is caught
 * within 50 steps).  Exit 0: no divergence, 1: a divergence, 2: usage/setup.
 *
 * Divergences allowed, each because any filesystem behind FUSE or another
 * kernel filesystem differs the same way (the `ALLOWED:` comments below):
 *  - a directory's st_size, and st_blocks but for "an empty file holds no
 *    blocks": each filesystem's own accounting (ext4 and tmpfs differ too);
 *  - a regular file's atime: FUSE serves reads from the page cache without
 *    asking the filesystem (any FUSE filesystem; directories' atimes are
 *    compared);
 *  - a timestamp that moved on glassfs and not on the oracle, when the
 *    oracle's old value is within two ticks of the coarse clock: a kernel
 *    filesystem stamps with the coarse clock (multigrain only for a ctime
 *    someone looked at), glassfs with the fine one;
 *  - truncate(2) to the size the file has: tmpfs leaves mtime and ctime,
 *    ext4 moves them, glassfs does as ext4;
 *  - a fifo's times after reads and writes: the pipe's I/O never reaches a
 *    FUSE filesystem;
 *  - lseek on a directory: not run (tmpfs refuses SEEK_END, ext4 and FUSE
 *    take it);
 *  - FALLOC_FL_ZERO_RANGE: tmpfs has none (ext4 and xfs do): emulated on the
 *    oracle by punching the hole and allocating it again;
 *  - a directory being read while it changes: only the names the change did
 *    not touch are compared (POSIX leaves the others unspecified);
 *  - a regular file's mtime and ctime at a step that stores through a
 *    mapping or unmaps one (-M): the first store to a clean page moves
 *    them where the filesystem has write-notify (FUSE), never on tmpfs;
 *  - with the writeback cache (-W) only, a regular file's mtime and ctime
 *    are the kernel's: it stamps them itself at the coarse tick (FUSE has
 *    no multigrain timestamps) over the daemon's fine-grained ones from
 *    the file's creation.  So a time that stayed on glassfs and moved on
 *    the oracle is allowed when glassfs's old value is within two ticks,
 *    the order of mtime and ctime is not compared when they are within
 *    two ticks of each other on glassfs, and a regular file's data and
 *    xattrs are read again after every step that may change them
 *    (unmoved times say nothing).
 * Both sides are mounted nosuid,nodev (libfuse's default for glassfs).
 * Known glassfs bugs kept out of the sequences are marked `KNOWN BUG:`.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>
#include <linux/falloc.h>
#include <linux/fs.h>

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#define RENAME_EXCHANGE (1 << 1)
#endif

/* ---- the namespace: few names, so operations collide often ---------------- */

static const char *const prefixes[] = { "", "d0/", "d1/", "d0/d1/" };
static const char *const names[] = { "a", "b", "c", "d0", "d1" };
#define NPREFIX (int)(sizeof(prefixes) / sizeof(prefixes[0]))
#define NNAME (int)(sizeof(names) / sizeof(names[0]))
#define NPATH (NPREFIX * NNAME)
static const char *const targets[] = { "a", "../a", "d0", "d1/a", "nowhere", "b/..", "../d0/b" };
#define NTARGET (int)(sizeof(targets) / sizeof(targets[0]))
static const char *const xnames[] = { "user.a", "user.b", "user.long.name.c" };
#define NXNAME 3
static const mode_t modes[] = { 0644, 0600, 0755, 0444, 0777, 02755, 0, 04755, 01777,
				 02775, 0640, 0711, 0500, 0666, 02700, 0300 };
#define NMODE (int)(sizeof(modes) / sizeof(modes[0]))
#define NSLOT 4

static char pathbuf[NPATH][16];
static const char *P(int i)
{
	return pathbuf[i % NPATH];
}

/* ---- operations --------------------------------------------------------------- */

enum opk {
	K_OPEN, K_CLOSE, K_READ, K_WRITE, K_PWRITE, K_PREAD, K_LSEEK, K_FTRUNC, K_TRUNC,
	K_FALLOC, K_FSYNC, K_FSTAT, K_RENAME, K_LINK, K_SYMLINK, K_READLINK, K_UNLINK,
	K_MKDIR, K_RMDIR, K_MKNOD, K_MKFIFO, K_CHMOD, K_FCHMOD, K_CHOWN, K_UTIMENS,
	K_SETXATTR, K_GETXATTR, K_LISTXATTR, K_REMOVEXATTR, K_READDIR, K_READDIR_MOD,
	K_STAT, K_ACCESS, K_MMAP, K_MREAD, K_MWRITE, K_MUNMAP, K_NKIND,
	K_QUIT = 100, K_PREPARE,
};
static const char *const kname[] = {
	"open", "close", "read", "write", "pwrite", "pread", "lseek", "ftruncate", "truncate",
	"fallocate", "fsync", "fstat", "rename", "link", "symlink", "readlink", "unlink",
	"mkdir", "rmdir", "mknod", "mkfifo", "chmod", "fchmod", "chown", "utimensat",
	"setxattr", "getxattr", "listxattr", "removexattr", "readdir", "readdir-mod",
	"stat", "access", "mmap", "mread", "mwrite", "munmap",
};
/* How often each kind is drawn.  The mmap kinds only with -M (mmap_weights):
 * a kind of weight 0 draws nothing, so the sequences of the seeds without
 * -M stay what they were. */
static int weight[K_NKIND] = {
	[K_OPEN] = 14, [K_CLOSE] = 4, [K_READ] = 4, [K_WRITE] = 6, [K_PWRITE] = 6,
	[K_PREAD] = 3, [K_LSEEK] = 2, [K_FTRUNC] = 3, [K_TRUNC] = 3, [K_FALLOC] = 3,
	[K_FSYNC] = 2, [K_FSTAT] = 3, [K_RENAME] = 8, [K_LINK] = 4, [K_SYMLINK] = 4,
	[K_READLINK] = 2, [K_UNLINK] = 6, [K_MKDIR] = 6, [K_RMDIR] = 4, [K_MKNOD] = 2,
	[K_MKFIFO] = 2, [K_CHMOD] = 4, [K_FCHMOD] = 1, [K_CHOWN] = 3, [K_UTIMENS] = 3,
	[K_SETXATTR] = 4, [K_GETXATTR] = 2, [K_LISTXATTR] = 2, [K_REMOVEXATTR] = 2,
	[K_READDIR] = 2, [K_READDIR_MOD] = 2, [K_STAT] = 2, [K_ACCESS] = 2,
};
static void mmap_weights(void)
{
	weight[K_MMAP] = 5;
	weight[K_MREAD] = 5;
	weight[K_MWRITE] = 9;
	weight[K_MUNMAP] = 1;
}

/* One operation: drawn from the seed alone. */
struct op {
	int kind;
	int slot;		/* fd slot */
	int p1, p2;		/* path indices */
	int flags;		/* open/rename/xattr/fallocate/utimensat flags, whence */
	mode_t mode;
	int64_t off, len;
	uint32_t a, b;		/* data seed / uid,gid choice / target / name / sub-kind */
};

struct res {
	int64_t rv;
	int err;
	uint64_t hash;		/* of what the call produced */
	char txt[120];		/* the same, short, for the report */
};

static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}
static uint32_t R(uint64_t *s, uint32_t n)
{
	return (uint32_t)(rng_next(s) % n);
}

static int64_t draw_off(uint64_t *s)
{
	switch (R(s, 8)) {
	case 0: return 0;
	case 1: case 2: return R(s, 200);
	case 3: case 4: return R(s, 9000);
	case 5: return 4096 * (int64_t)R(s, 5);
	case 6: return 16384 + R(s, 70000);
	default: return R(s, 300000);
	}
}
static int64_t draw_len(uint64_t *s)
{
	switch (R(s, 6)) {
	case 0: return 1 + R(s, 10);
	case 1: case 2: return 1 + R(s, 300);
	case 3: return 1 + R(s, 5000);
	case 4: return 4096;
	default: return 1 + R(s, 40000);
	}
}

static int last_open_slot, last_map_slot;

static void gen_op(uint64_t *s, struct op *o)
{
	static int total;
	uint32_t w;
	int k;

	if (!total)
		for (k = 0; k < K_NKIND; k++)
			total += weight[k];
	memset(o, 0, sizeof(*o));
	w = R(s, (uint32_t)total);
	for (k = 0; k < K_NKIND - 1 && w >= (uint32_t)weight[k]; k++)
		w -= (uint32_t)weight[k];
	o->kind = k;
	o->slot = (int)R(s, NSLOT);
	/* an fd call mostly on the slot the last open filled: fewer EBADFs
	 * (still drawn from the sequence alone, not from the state) */
	if (k != K_OPEN && R(s, 4) != 0)
		o->slot = last_open_slot;
	if (k == K_OPEN)
		last_open_slot = o->slot;
	/* loads, stores and munmap mostly on the last mapping made */
	if (k == K_MREAD || k == K_MWRITE || k == K_MUNMAP)
		o->slot = R(s, 5) ? last_map_slot : (int)R(s, NSLOT);
	if (k == K_MMAP)
		last_map_slot = o->slot;
	o->p1 = (int)R(s, NPATH);
	o->p2 = (int)R(s, NPATH);
	o->mode = modes[R(s, NMODE)];
	o->off = draw_off(s);
	o->len = draw_len(s);
	o->a = (uint32_t)rng_next(s);
	o->b = (uint32_t)rng_next(s);
	switch (k) {
	case K_OPEN: {
		static const int acc[] = { O_RDONLY, O_WRONLY, O_RDWR };
		/* O_NONBLOCK always: a fifo opened without a partner would block */
		int f = acc[R(s, 3)] | O_NONBLOCK;
		if (R(s, 3)) f |= O_CREAT;
		if (R(s, 8) == 0) f |= O_EXCL;
		if (R(s, 5) == 0) f |= O_TRUNC;
		if (R(s, 6) == 0) f |= O_APPEND;
		if (R(s, 8) == 0) f |= O_NOFOLLOW;
		if (R(s, 16) == 0) f |= O_DIRECTORY;
		o->flags = f;
		break;
	}
	case K_LSEEK: o->flags = (int)R(s, 3); break;	/* SEEK_SET/CUR/END */
	case K_FALLOC: {
		static const int fm[] = { 0, FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
					  FALLOC_FL_PUNCH_HOLE, FALLOC_FL_ZERO_RANGE };
		o->flags = fm[R(s, 5)];
		break;
	}
	case K_RENAME: {
		static const int rf[] = { 0, 0, RENAME_NOREPLACE, RENAME_EXCHANGE };
		o->flags = rf[R(s, 4)];
		break;
	}
	case K_SETXATTR: {
		static const int xf[] = { 0, 0, XATTR_CREATE, XATTR_REPLACE };
		o->flags = xf[R(s, 4)];
		o->len = R(s, 4) ? R(s, 40) : R(s, 3000);
		break;
	}
	case K_GETXATTR: case K_LISTXATTR: {
		static const int64_t sz[] = { 0, 3, 64, 4096 };
		o->len = sz[R(s, 4)];
		break;
	}
	case K_UTIMENS: o->flags = R(s, 3) == 0 ? AT_SYMLINK_NOFOLLOW : 0; break;
	case K_CHOWN: o->flags = R(s, 3) == 0 ? AT_SYMLINK_NOFOLLOW : 0; break;
	case K_ACCESS: o->flags = (int)R(s, 8); break;	/* R_OK|W_OK|X_OK bits */
	case K_MKNOD: o->flags = (int)R(s, 3); break;	/* chr 1:3, sock, fifo */
	case K_FSYNC: o->flags = (int)R(s, 2); break;	/* fdatasync */
	case K_MMAP:
		o->flags = (int)R(s, 4);	/* 0: read-only mapping */
		o->p1 = (int)(R(s, NPREFIX) * NNAME + R(s, 3));	/* a, b or c: mostly files */
		break;
	case K_MWRITE: o->flags = (int)R(s, 3); break;	/* 0: msync(MS_SYNC) after */
	}
}

/* ---- deterministic data, hashing ------------------------------------------------- */

static unsigned char pat(uint64_t seed, uint64_t off)
{
	uint64_t x = (seed + 1) * 0x9e3779b97f4a7c15ULL ^ (off / 8) * 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 31;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 29;
	return (unsigned char)(x >> ((off % 8) * 8));
}
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *c = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ c[i]) * 0x100000001b3ULL;
	return h;
}
#define FNV0 0xcbf29ce484222325ULL

/* ---- the executor: one side (a directory) ----------------------------------------- */

struct side {
	const char *base;	/* the directory given */
	int root;		/* the run directory */
	int fd[NSLOT];
	/* a MAP_SHARED mapping per slot (K_MMAP), which outlives the slot's
	 * file: mapfd is a dup of the file, for its size */
	char *map[NSLOT];
	size_t maplen[NSLOT];
	off_t mapoff[NSLOT];
	int mapfd[NSLOT];
	bool mapw[NSLOT];
};
static struct side S[2];
static const char *const sname[2] = { "glassfs", "oracle" };
static uid_t U1, U2;
static gid_t G1, G2, G3;
static bool as_user;
static bool wb;		/* -W: glassfs has the writeback cache */
static bool with_mmap;	/* -M: mmap operations drawn too */

static void out_txt(struct res *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out_txt(struct res *r, const char *fmt, ...)
{
	va_list ap;
	size_t n = strlen(r->txt);
	va_start(ap, fmt);
	vsnprintf(r->txt + n, sizeof(r->txt) - n, fmt, ap);
	va_end(ap);
}

static int cmpstr(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A sorted listing of an open directory stream, into r. */
static void list_hash(char **v, int n, const char *skip1, const char *skip2, struct res *r)
{
	qsort(v, (size_t)n, sizeof(*v), cmpstr);
	r->hash = FNV0;
	for (int i = 0; i < n; i++) {
		if ((skip1 && !strcmp(v[i], skip1)) || (skip2 && !strcmp(v[i], skip2)))
			continue;
		r->hash = fnv(r->hash, v[i], strlen(v[i]) + 1);
		out_txt(r, "%s ", v[i]);
	}
}

static void stat_out(const struct stat *st, struct res *r)
{
	/* ALLOWED: a directory's size is the filesystem's own accounting */
	long long sz = S_ISDIR(st->st_mode) ? 0 : (long long)st->st_size;
	snprintf(r->txt, sizeof(r->txt), "mode=%o nlink=%lu uid=%u gid=%u size=%lld",
		 st->st_mode, (unsigned long)st->st_nlink, st->st_uid, st->st_gid, sz);
	r->hash = fnv(FNV0, r->txt, strlen(r->txt));
}

static uid_t pick_uid(uint32_t a)
{
	const uid_t u[] = { (uid_t)-1, 0, U1, U2 };
	return u[a % 4];
}
static gid_t pick_gid(uint32_t b)
{
	const gid_t g[] = { (gid_t)-1, 0, G1, G2, G3 };
	return g[b % 5];
}

static void map_drop(struct side *s, int slot)
{
	if (!s->map[slot])
		return;
	munmap(s->map[slot], s->maplen[slot]);
	close(s->mapfd[slot]);
	s->map[slot] = NULL;
}

/* A load or store through a mapping that faults (SIGBUS: past the end of
 * the file) is a result, not the end of the run. */
static sigjmp_buf map_fault;
static void on_sigbus(int sig)
{
	(void)sig;
	siglongjmp(map_fault, 1);
}

/*
 * The bytes of slot's mapping that K_MREAD/K_MWRITE touch: len of them
 * from off modulo the part of the mapping inside the file's current size
 * (a page past the end faults).  A store goes at off modulo the mapping
 * and first extends the file by ftruncate to its end when it is shorter
 * (as fsx's mapwrite does).  Returns the count, *at the start; -1 with
 * errno when the slot has no mapping.
 */
static int64_t map_window(struct side *s, const struct op *o, size_t *at)
{
	struct stat st;
	int64_t end, n;

	if (!s->map[o->slot]) {
		errno = ENXIO;
		return -1;
	}
	if (fstat(s->mapfd[o->slot], &st) < 0)
		return -1;
	if (o->kind == K_MWRITE && s->mapw[o->slot]) {
		int64_t need;
		*at = (size_t)o->off % s->maplen[o->slot];
		n = (int64_t)(s->maplen[o->slot] - *at);
		if (n > o->len)
			n = o->len;
		need = s->mapoff[o->slot] + (int64_t)*at + n;
		if (st.st_size < need && ftruncate(s->mapfd[o->slot], need) < 0)
			return -1;
		return n;
	}
	end = st.st_size - s->mapoff[o->slot];
	if (end > (int64_t)s->maplen[o->slot])
		end = (int64_t)s->maplen[o->slot];
	*at = end > 0 ? (size_t)o->off % (size_t)end : 0;
	n = end - (int64_t)*at;
	if (n > o->len)
		n = o->len;
	return n < 0 ? 0 : n;
}

static void do_op(struct side *s, const struct op *o, struct res *r)
{
	int fd = s->fd[o->slot], dfd = s->root;
	const char *p1 = P(o->p1), *p2 = P(o->p2);
	char buf[65536];
	int64_t rv = 0;

	memset(r, 0, sizeof(*r));
	errno = 0;
	switch (o->kind) {
	case K_OPEN:
		if (fd >= 0)
			close(fd);
		s->fd[o->slot] = -1;
		rv = openat(dfd, p1, o->flags, o->mode);
		if (rv >= 0) {
			s->fd[o->slot] = (int)rv;
			rv = 0;
		}
		break;
	case K_CLOSE:
		rv = close(fd);
		s->fd[o->slot] = -1;
		break;
	case K_READ: case K_PREAD: {
		size_t n = (size_t)(o->len > (int64_t)sizeof(buf) ? (int64_t)sizeof(buf) : o->len);
		rv = o->kind == K_READ ? read(fd, buf, n) : pread(fd, buf, n, o->off);
		if (rv > 0) {
			r->hash = fnv(FNV0, buf, (size_t)rv);
			out_txt(r, "data %02x%02x%02x..", (unsigned char)buf[0],
				(unsigned char)buf[rv > 1], (unsigned char)buf[rv > 2 ? 2 : 0]);
		}
		break;
	}
	case K_WRITE: case K_PWRITE: {
		size_t n = (size_t)(o->len > (int64_t)sizeof(buf) ? (int64_t)sizeof(buf) : o->len);
		for (size_t i = 0; i < n; i++)
			buf[i] = (char)pat(o->a, i);
		rv = o->kind == K_WRITE ? write(fd, buf, n) : pwrite(fd, buf, n, o->off);
		break;
	}
	case K_LSEEK: {
		/* ALLOWED: lseek on a directory is each filesystem's own
		 * (tmpfs refuses SEEK_END, ext4 and FUSE take it): not run */
		struct stat st;
		if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
			out_txt(r, "directory");
			break;
		}
	}
		rv = lseek(fd, o->flags == SEEK_SET ? o->off : o->off % 5000 - 2500, o->flags);
		break;
	case K_FTRUNC:	rv = ftruncate(fd, o->off); break;
	case K_TRUNC: {
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "/proc/self/fd/%d/%s", dfd, p1);
		rv = truncate(path, o->off);
		break;
	}
	case K_FALLOC:
		rv = fallocate(fd, o->flags, o->off, o->len);
		/* ALLOWED: tmpfs has no FALLOC_FL_ZERO_RANGE, ext4, xfs and
		 * glassfs have: on the oracle it is a punched hole allocated
		 * again, which leaves the same size, data and times */
		if (rv < 0 && errno == EOPNOTSUPP && s == &S[1] && o->flags == FALLOC_FL_ZERO_RANGE) {
			rv = fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, o->off, o->len);
			if (rv == 0)
				rv = fallocate(fd, 0, o->off, o->len);
		}
		break;
	case K_FSYNC:	rv = o->flags ? fdatasync(fd) : fsync(fd); break;
	case K_FSTAT: {
		struct stat st;
		rv = fstat(fd, &st);
		if (rv == 0)
			stat_out(&st, r);
		break;
	}
	case K_STAT: {
		struct stat st;
		rv = fstatat(dfd, p1, &st, 0);
		if (rv == 0)
			stat_out(&st, r);
		break;
	}
	case K_RENAME:	rv = syscall(SYS_renameat2, dfd, p1, dfd, p2, o->flags); break;
	case K_LINK:	rv = linkat(dfd, p1, dfd, p2, 0); break;
	case K_SYMLINK:	rv = symlinkat(targets[o->a % NTARGET], dfd, p2); break;
	case K_READLINK:
		rv = readlinkat(dfd, p1, buf, sizeof(buf));
		if (rv > 0) {
			r->hash = fnv(FNV0, buf, (size_t)rv);
			out_txt(r, "%.*s", (int)(rv > 60 ? 60 : rv), buf);
		}
		break;
	case K_UNLINK:	rv = unlinkat(dfd, p1, 0); break;
	case K_MKDIR:	rv = mkdirat(dfd, p1, o->mode); break;
	case K_RMDIR:	rv = unlinkat(dfd, p1, AT_REMOVEDIR); break;
	case K_MKNOD: {
		/* never a device anyone could use: 1:3 is /dev/null, and both
		 * sides are mounted nodev */
		static const mode_t t[] = { S_IFCHR, S_IFSOCK, S_IFIFO };
		rv = mknodat(dfd, p1, t[o->flags % 3] | (o->mode & 07777), makedev(1, 3));
		break;
	}
	case K_MKFIFO:	rv = mkfifoat(dfd, p1, o->mode); break;
	case K_CHMOD:	rv = fchmodat(dfd, p1, o->mode, 0); break;
	case K_FCHMOD:	rv = fchmod(fd, o->mode); break;
	case K_CHOWN:	rv = fchownat(dfd, p1, pick_uid(o->a), pick_gid(o->b), o->flags); break;
	case K_UTIMENS: {
		struct timespec ts[2];
		for (int i = 0; i < 2; i++) {
			uint32_t c = (i ? o->b : o->a) % 4;
			ts[i].tv_sec = 1500000000 + (o->a >> 8) % 100000000;
			ts[i].tv_nsec = c == 0 ? UTIME_NOW : c == 1 ? UTIME_OMIT : (long)(o->b % 1000) * 1000;
		}
		rv = utimensat(dfd, p1, ts, o->flags);
		break;
	}
	case K_SETXATTR: case K_GETXATTR: case K_LISTXATTR: case K_REMOVEXATTR: {
		/* xattr calls take a path: one relative to the run directory
		 * through /proc/self/fd would follow the fd, so build it */
		char path[PATH_MAX];
		const char *xn = xnames[o->a % NXNAME];
		bool l = o->b % 3 == 0;		/* the l* call: no symlink followed */
		bool f = o->b % 3 == 1;		/* the f* call on the slot */
		snprintf(path, sizeof(path), "/proc/self/fd/%d/%s", dfd, p1);
		if (o->kind == K_SETXATTR) {
			size_t n = (size_t)o->len;
			for (size_t i = 0; i < n; i++)
				buf[i] = (char)pat(o->b, i);
			rv = f ? fsetxattr(fd, xn, buf, n, o->flags) :
			     l ? lsetxattr(path, xn, buf, n, o->flags) : setxattr(path, xn, buf, n, o->flags);
		} else if (o->kind == K_GETXATTR) {
			size_t n = (size_t)o->len;
			rv = f ? fgetxattr(fd, xn, buf, n) : l ? lgetxattr(path, xn, buf, n) :
			     getxattr(path, xn, buf, n);
			if (rv > 0 && n)
				r->hash = fnv(FNV0, buf, (size_t)rv);
		} else if (o->kind == K_LISTXATTR) {
			size_t n = (size_t)o->len;
			rv = f ? flistxattr(fd, buf, n) : l ? llistxattr(path, buf, n) : listxattr(path, buf, n);
			if (rv > 0 && n) {
				char *v[64];
				int k = 0;
				for (char *q = buf; q < buf + rv && k < 64; q += strlen(q) + 1)
					if (!strncmp(q, "user.", 5))
						v[k++] = q;
				list_hash(v, k, NULL, NULL, r);
			}
		} else {
			rv = f ? fremovexattr(fd, xn) : l ? lremovexattr(path, xn) : removexattr(path, xn);
		}
		break;
	}
	case K_READDIR: case K_READDIR_MOD: {
		/* K_READDIR_MOD changes the directory between two reads of one
		 * stream: names it did not touch must show up exactly once */
		char *v[256];
		int n = 0, d = openat(dfd, o->kind == K_READDIR ? p1 : prefixes[o->p1 % NPREFIX][0] ?
				      prefixes[o->p1 % NPREFIX] : ".", O_RDONLY | O_DIRECTORY);
		const char *mn = names[o->a % NNAME];
		DIR *dir;
		struct dirent *de;
		if (d < 0) {
			rv = -1;
			break;
		}
		dir = fdopendir(d);
		while (n < 256) {
			if (o->kind == K_READDIR_MOD && n == (int)(o->b % 4)) {
				int e = 0;
				switch (o->b / 4 % 3) {
				case 0: e = mkdirat(d, mn, 0755); break;
				case 1: e = unlinkat(d, mn, 0); break;
				/* O_EXCL: no new name through a symlink */
				case 2: e = close(openat(d, mn, O_CREAT | O_EXCL | O_WRONLY, 0644)); break;
				}
				out_txt(r, "[mod %d/%d] ", e, e ? errno : 0);
			}
			errno = 0;
			if (!(de = readdir(dir)))
				break;
			v[n++] = strdup(de->d_name);
		}
		rv = errno ? -1 : n;
		if (o->kind == K_READDIR_MOD) {
			/* each name at most once */
			qsort(v, (size_t)n, sizeof(*v), cmpstr);
			for (int i = 1; i < n; i++)
				if (!strcmp(v[i], v[i - 1]))
					out_txt(r, "DUP:%s ", v[i]);
			rv = 0;
		}
		list_hash(v, n, o->kind == K_READDIR_MOD ? mn : NULL, NULL, r);
		for (int i = 0; i < n; i++)
			free(v[i]);
		closedir(dir);
		break;
	}
	case K_ACCESS:	rv = faccessat(dfd, p1, o->flags, 0); break;
	case K_MMAP: {
		/* a shared mapping of the slot's file, or of p1 when the
		 * slot is closed (opened again O_RDWR and mapped writable
		 * but for flags 0), at one of the first four pages; the
		 * mapping keeps that descriptor of its own, which other
		 * operations never see, and outlives the slot's (O_NONBLOCK:
		 * a fifo opened for reading would wait for a writer) */
		bool w = o->flags != 0;
		size_t len = ((size_t)o->len + 4095) & ~(size_t)4095;
		off_t at = (off_t)(o->off / 4096 % 4 * 4096);
		int mfd;
		char *m;

		if (fd >= 0) {
			char path[64];
			snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
			mfd = open(path, (w ? O_RDWR : O_RDONLY) | O_NONBLOCK);
		} else {
			mfd = openat(dfd, p1, (w ? O_RDWR : O_RDONLY) | O_NONBLOCK);
		}
		if (mfd < 0) {
			rv = -1;
			break;
		}
		m = mmap(NULL, len, PROT_READ | (w ? PROT_WRITE : 0), MAP_SHARED, mfd, at);
		if (m == MAP_FAILED) {
			int e = errno;
			close(mfd);
			errno = e;
			rv = -1;
			break;
		}
		map_drop(s, o->slot);	/* the slot's old mapping, if any */
		s->map[o->slot] = m;
		s->maplen[o->slot] = len;
		s->mapoff[o->slot] = at;
		s->mapfd[o->slot] = mfd;
		s->mapw[o->slot] = w;
		out_txt(r, "%s %zu at %lld", w ? "rw" : "ro", len, (long long)at);
		break;
	}
	case K_MREAD: case K_MWRITE: {
		/* loads and stores through the mapping, inside the file; a
		 * store is followed by msync(MS_SYNC) for flags 0 */
		size_t at = 0;
		int64_t n = map_window(s, o, &at);
		volatile int64_t done = 0;
		struct sigaction sa = { .sa_handler = on_sigbus }, old;

		if (n < 0) {
			rv = -1;
			break;
		}
		if (o->kind == K_MWRITE && !s->mapw[o->slot]) {
			errno = EACCES;
			rv = -1;
			break;
		}
		sigaction(SIGBUS, &sa, &old);
		if (sigsetjmp(map_fault, 1) == 0) {
			char *m = s->map[o->slot] + at;
			if (o->kind == K_MREAD) {
				memcpy(buf, m, (size_t)n);
				r->hash = fnv(FNV0, buf, (size_t)n);
			} else {
				for (int64_t i = 0; i < n; i++, done++)
					m[i] = (char)pat(o->a, (uint64_t)i);
			}
			done = n;
		} else {
			out_txt(r, "SIGBUS after %lld ", (long long)done);
		}
		sigaction(SIGBUS, &old, NULL);
		rv = done;
		if (o->kind == K_MWRITE && o->flags == 0 && n > 0 &&
		    msync(s->map[o->slot], s->maplen[o->slot], MS_SYNC) < 0)
			rv = -1;
		break;
	}
	case K_MUNMAP:
		if (!s->map[o->slot]) {
			errno = ENXIO;
			rv = -1;
		}
		map_drop(s, o->slot);
		break;
	}
	r->rv = rv < 0 ? -1 : rv;
	r->err = rv < 0 ? errno : 0;
}

/* ---- the tree, walked as root on each side ------------------------------------------- */

#define MAXENT 400
#define MAXDEPTH 8
struct ent {
	char path[96];
	struct stat st;
	uint64_t content;	/* regular file's data or symlink's target */
	int cerr;		/* errno reading it */
	uint64_t xh;		/* user.* xattrs: sorted names and values */
	int xerr;
	int nx;
	int link_of;		/* the first entry with the same inode */
};
struct tree {
	int n;
	bool overflow;
	struct ent e[MAXENT];
};
static struct tree cur[2], prev[2];
static bool have_prev;

static void ent_content(int dfd, const char *name, struct ent *e)
{
	char buf[65536];
	ssize_t n;

	e->content = FNV0;
	if (S_ISLNK(e->st.st_mode)) {
		n = readlinkat(dfd, name, buf, sizeof(buf));
		if (n < 0)
			e->cerr = errno;
		else
			e->content = fnv(FNV0, buf, (size_t)n);
	} else if (S_ISREG(e->st.st_mode)) {
		int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOATIME);
		off_t total = 0;
		if (fd < 0) {
			e->cerr = errno;
			return;
		}
		while ((n = read(fd, buf, sizeof(buf))) > 0 && total < (8 << 20)) {
			e->content = fnv(e->content, buf, (size_t)n);
			total += n;
		}
		if (n < 0)
			e->cerr = errno;
		close(fd);
	}
}

static void ent_xattrs(int dfd, const char *name, struct ent *e)
{
	char path[PATH_MAX], list[8192], val[8192], *v[64];
	ssize_t n, k;
	int c = 0;

	snprintf(path, sizeof(path), "/proc/self/fd/%d/%s", dfd, name);
	e->xh = FNV0;
	n = llistxattr(path, list, sizeof(list));
	if (n < 0) {
		e->xerr = errno;
		return;
	}
	for (char *q = list; q < list + n && c < 64; q += strlen(q) + 1)
		if (!strncmp(q, "user.", 5))
			v[c++] = q;
	qsort(v, (size_t)c, sizeof(*v), cmpstr);
	e->nx = c;
	for (int i = 0; i < c; i++) {
		e->xh = fnv(e->xh, v[i], strlen(v[i]) + 1);
		k = lgetxattr(path, v[i], val, sizeof(val));
		if (k < 0)
			e->xh = fnv(e->xh, &errno, sizeof(errno));
		else
			e->xh = fnv(e->xh, val, (size_t)k);
	}
}

static const struct tree *walk_prev;	/* the side's tree of the last step, or NULL */
static int step_kind = -1;	/* the kind of the step being compared */

/* Can a step of this kind change a file's data or xattrs? */
static bool changes_data(int k)
{
	switch (k) {
	case K_OPEN: case K_WRITE: case K_PWRITE: case K_FTRUNC: case K_TRUNC: case K_FALLOC:
	case K_SETXATTR: case K_REMOVEXATTR: case K_MWRITE: case K_READDIR_MOD:
		return true;
	}
	return false;
}
static int tscmp(const struct timespec *a, const struct timespec *b);
static const struct ent *find(const struct tree *t, const char *path);

static void walk(int dfd, const char *rel, struct tree *t, int depth)
{
	int d = openat(dfd, ".", O_RDONLY | O_DIRECTORY);
	char *v[256];
	int n = 0;
	DIR *dir;
	struct dirent *de;

	if (d < 0)
		return;
	dir = fdopendir(d);
	while (n < 256 && (de = readdir(dir)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			v[n++] = strdup(de->d_name);
	qsort(v, (size_t)n, sizeof(*v), cmpstr);
	for (int i = 0; i < n; i++) {
		struct ent *e;
		if (t->n >= MAXENT) {
			t->overflow = true;
			break;
		}
		e = &t->e[t->n++];
		memset(e, 0, sizeof(*e));
		snprintf(e->path, sizeof(e->path), "%s%s", rel, v[i]);
		if (fstatat(d, v[i], &e->st, AT_SYMLINK_NOFOLLOW) < 0) {
			e->cerr = errno;
			continue;
		}
		/* data and xattrs read again when the inode's times or size
		 * moved, all of them every full_every steps */
		const struct ent *pe = walk_prev ? find(walk_prev, e->path) : NULL;
		/* ALLOWED (-W): the kernel's coarse stamps need not move
		 * when a regular file changes: its data and xattrs are read
		 * after every step that may change them instead */
		if (wb && S_ISREG(e->st.st_mode) && changes_data(step_kind))
			pe = NULL;
		if (pe && pe->st.st_ino == e->st.st_ino && pe->st.st_size == e->st.st_size &&
		    pe->st.st_mode == e->st.st_mode && !tscmp(&pe->st.st_mtim, &e->st.st_mtim) &&
		    !tscmp(&pe->st.st_ctim, &e->st.st_ctim)) {
			e->content = pe->content;
			e->cerr = pe->cerr;
			e->xh = pe->xh;
			e->xerr = pe->xerr;
			e->nx = pe->nx;
		} else {
			ent_content(d, v[i], e);
			ent_xattrs(d, v[i], e);
		}
		if (S_ISDIR(e->st.st_mode) && depth < MAXDEPTH) {
			char sub[128];
			int sd = openat(d, v[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
			if (sd >= 0) {
				snprintf(sub, sizeof(sub), "%s/", e->path);
				walk(sd, sub, t, depth + 1);
				close(sd);
			}
		}
	}
	for (int i = 0; i < n; i++)
		free(v[i]);
	closedir(dir);
}

/* The whole run directory of one side into t; "." first. */
static void tree_read(int root, struct tree *t)
{
	t->n = 1;
	t->overflow = false;
	memset(&t->e[0], 0, sizeof(t->e[0]));
	strcpy(t->e[0].path, ".");
	/* the listing first, the attributes after: a readdir moves the
	 * directory's atime before the snapshot, on both sides alike */
	walk(root, "", t, 0);
	fstat(root, &t->e[0].st);
	ent_xattrs(root, ".", &t->e[0]);
	for (int i = 1; i < t->n; i++) {
		t->e[i].link_of = i;
		if (!S_ISDIR(t->e[i].st.st_mode))
			for (int j = 1; j < i; j++)
				if (t->e[j].st.st_ino == t->e[i].st.st_ino && !S_ISDIR(t->e[j].st.st_mode)) {
					t->e[i].link_of = j;
					break;
				}
	}
	/* re-stat: the walk's readdirs moved directory atimes after the first stats */
	for (int i = 1; i < t->n; i++)
		if (S_ISDIR(t->e[i].st.st_mode))
			fstatat(root, t->e[i].path, &t->e[i].st, AT_SYMLINK_NOFOLLOW);
}

static char why[1024];
static struct timespec tick_floor;	/* two coarse ticks before the step began */
#define DIVERGE(...) (snprintf(why, sizeof(why), __VA_ARGS__), false)

static int tscmp(const struct timespec *a, const struct timespec *b)
{
	if (a->tv_sec != b->tv_sec)
		return a->tv_sec < b->tv_sec ? -1 : 1;
	return a->tv_nsec < b->tv_nsec ? -1 : a->tv_nsec > b->tv_nsec;
}

static const struct ent *find(const struct tree *t, const char *path)
{
	for (int i = 0; i < t->n; i++)
		if (!strcmp(t->e[i].path, path))
			return &t->e[i];
	return NULL;
}

/* ALLOWED (-W): a regular file's mtime and ctime within two coarse ticks
 * of each other: one may be the daemon's fine stamp (from the file's
 * creation), the other the kernel's coarse one, so their order says
 * nothing about which change came last. */
static struct timespec tick;	/* the coarse clock's resolution */
static bool near_tick(const struct stat *st)
{
	int64_t d = ((int64_t)st->st_mtim.tv_sec - st->st_ctim.tv_sec) * 1000000000 +
		    st->st_mtim.tv_nsec - st->st_ctim.tv_nsec;

	return (d < 0 ? -d : d) < 2 * tick.tv_nsec;
}

/* Which of a, m, c moved since the last step, and how m and c are ordered. */
static bool times_agree(const struct ent *a, const struct ent *b)
{
	const struct ent *pa = have_prev ? find(&prev[0], a->path) : NULL;
	const struct ent *pb = have_prev ? find(&prev[1], b->path) : NULL;
	struct { const char *n; size_t off; bool dir_only; } f[] = {
		{ "mtime", offsetof(struct stat, st_mtim), false },
		{ "ctime", offsetof(struct stat, st_ctim), false },
		/* ALLOWED: a regular file's atime is not compared: FUSE serves
		 * reads from the page cache without asking the filesystem, so
		 * no FUSE filesystem sees every read */
		{ "atime", offsetof(struct stat, st_atim), true },
	};
	int oa = tscmp(&a->st.st_mtim, &a->st.st_ctim), ob = tscmp(&b->st.st_mtim, &b->st.st_ctim);

	bool moved = false;

	if (!pa || !pb || (pa->st.st_mode & S_IFMT) != (a->st.st_mode & S_IFMT) ||
	    pa->st.st_ino != a->st.st_ino || pb->st.st_ino != b->st.st_ino)
		return true;	/* another object now: nothing to say what moved */
	/* ALLOWED: reading and writing a fifo moves its times in the kernel's
	 * inode only: FUSE never hears of the pipe's I/O, so a fifo on any
	 * FUSE filesystem keeps the times it had */
	if (S_ISFIFO(a->st.st_mode) && (step_kind == K_READ || step_kind == K_WRITE ||
					step_kind == K_PREAD || step_kind == K_PWRITE))
		return true;
	/* ALLOWED: stores through a shared mapping move a file's mtime and
	 * ctime at the first store to a clean page where the filesystem has
	 * write-notify (FUSE), never on tmpfs (no page_mkwrite); POSIX marks
	 * them for update anywhere up to the next msync: not compared at the
	 * steps that store, msync or unmap */
	if (S_ISREG(a->st.st_mode) && (step_kind == K_MWRITE || step_kind == K_MUNMAP ||
				       step_kind == K_MMAP))	/* which unmaps the slot's last */
		return true;
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		const struct timespec *ta = (const void *)((const char *)&a->st + f[i].off);
		const struct timespec *tb = (const void *)((const char *)&b->st + f[i].off);
		const struct timespec *tpa = (const void *)((const char *)&pa->st + f[i].off);
		const struct timespec *tpb = (const void *)((const char *)&pb->st + f[i].off);
		bool ma = tscmp(ta, tpa) != 0, mb = tscmp(tb, tpb) != 0;
		if (f[i].dir_only && !S_ISDIR(a->st.st_mode))
			continue;
		/* ALLOWED: timestamp granularity.  A kernel filesystem stamps
		 * with the coarse clock (one tick: a few ms) unless the old
		 * value was looked at (multigrain, ctime and mtime only), so a
		 * second update in one tick can leave the value as it was;
		 * glassfs reads the fine clock.  Not an answer either way. */
		if (ma && !mb && tscmp(tpb, &tick_floor) >= 0)
			continue;
		/* ALLOWED (-W): the same the other way: with the writeback
		 * cache the kernel stamps a regular file's mtime and ctime
		 * at its coarse tick, and FUSE has no multigrain stamps */
		if (wb && !ma && mb && S_ISREG(a->st.st_mode) && tscmp(tpa, &tick_floor) >= 0)
			continue;
		/* ALLOWED: truncate(2) to the size a file has: tmpfs leaves
		 * mtime and ctime, ext4 moves them, glassfs does as ext4 */
		if (ma && !mb && step_kind == K_TRUNC && a->st.st_size == pa->st.st_size)
			continue;
		if (ma != mb)
			return DIVERGE("%s (mode %o): %s %s on glassfs (%lld.%09ld -> %lld.%09ld), "
				       "%s on the oracle (%lld.%09ld -> %lld.%09ld; floor %lld.%09ld)",
				       a->path, a->st.st_mode, f[i].n, ma ? "moved" : "stayed",
				       (long long)tpa->tv_sec, tpa->tv_nsec, (long long)ta->tv_sec,
				       ta->tv_nsec, mb ? "moved" : "stayed", (long long)tpb->tv_sec,
				       tpb->tv_nsec, (long long)tb->tv_sec, tb->tv_nsec,
				       (long long)tick_floor.tv_sec, tick_floor.tv_nsec);
		/* both set to one value (utimensat): the same value */
		if (ma && tscmp(ta, tb) != 0 && ta->tv_sec < 1700000000 && tb->tv_sec < 1700000000)
			return DIVERGE("%s: %s set to %lld.%09ld on glassfs, %lld.%09ld on the oracle",
				       a->path, f[i].n, (long long)ta->tv_sec, ta->tv_nsec,
				       (long long)tb->tv_sec, tb->tv_nsec);
		moved |= ma && !f[i].dir_only;
	}
	/* how mtime and ctime are ordered, once this step moved one of them
	 * (several changes in one clock tick make them equal on a kernel
	 * filesystem, so not across steps that did not look) */
	if (moved && oa != ob && !(wb && S_ISREG(a->st.st_mode) && near_tick(&a->st)))
		return DIVERGE("%s (mode %o): mtime %s ctime on glassfs (%lld.%09ld, %lld.%09ld), "
			       "%s on the oracle (%lld.%09ld, %lld.%09ld; tick %ld ns)", a->path,
			       a->st.st_mode, oa < 0 ? "<" : oa > 0 ? ">" : "=",
			       (long long)a->st.st_mtim.tv_sec, a->st.st_mtim.tv_nsec,
			       (long long)a->st.st_ctim.tv_sec, a->st.st_ctim.tv_nsec,
			       ob < 0 ? "<" : ob > 0 ? ">" : "=", (long long)b->st.st_mtim.tv_sec,
			       b->st.st_mtim.tv_nsec, (long long)b->st.st_ctim.tv_sec,
			       b->st.st_ctim.tv_nsec, tick.tv_nsec);
	return true;
}

static bool ent_agree(const struct ent *a, const struct ent *b)
{
	const struct stat *x = &a->st, *y = &b->st;

	if (strcmp(a->path, b->path))
		return DIVERGE("listing: '%s' on glassfs, '%s' on the oracle", a->path, b->path);
	if (x->st_mode != y->st_mode)
		return DIVERGE("%s: mode %o on glassfs, %o on the oracle", a->path, x->st_mode, y->st_mode);
	if (x->st_nlink != y->st_nlink)
		return DIVERGE("%s: nlink %lu on glassfs, %lu on the oracle", a->path,
			       (unsigned long)x->st_nlink, (unsigned long)y->st_nlink);
	if (x->st_uid != y->st_uid || x->st_gid != y->st_gid)
		return DIVERGE("%s: owner %u:%u on glassfs, %u:%u on the oracle", a->path,
			       x->st_uid, x->st_gid, y->st_uid, y->st_gid);
	/* ALLOWED: a directory's size is the filesystem's own accounting */
	if (!S_ISDIR(x->st_mode) && x->st_size != y->st_size)
		return DIVERGE("%s: size %lld on glassfs, %lld on the oracle", a->path,
			       (long long)x->st_size, (long long)y->st_size);
	if ((S_ISCHR(x->st_mode) || S_ISBLK(x->st_mode)) && x->st_rdev != y->st_rdev)
		return DIVERGE("%s: rdev differs", a->path);
	/* st_blocks: only "holds data or not" is common to all filesystems
	 * (ALLOWED: the count itself is each one's allocation policy) */
	if (S_ISREG(x->st_mode) && x->st_size == 0 && (x->st_blocks == 0) != (y->st_blocks == 0))
		return DIVERGE("%s: empty file with %lld blocks on glassfs, %lld on the oracle",
			       a->path, (long long)x->st_blocks, (long long)y->st_blocks);
	if (a->link_of != b->link_of)
		return DIVERGE("%s: hard links differ (same inode as %s on glassfs, as %s on the oracle)",
			       a->path, cur[0].e[a->link_of].path, cur[1].e[b->link_of].path);
	if (a->cerr != b->cerr)
		return DIVERGE("%s: reading it: %s on glassfs, %s on the oracle", a->path,
			       strerror(a->cerr), strerror(b->cerr));
	if (a->content != b->content)
		return DIVERGE("%s: %s differ", a->path, S_ISLNK(x->st_mode) ? "link targets" : "contents");
	if (a->xerr != b->xerr)
		return DIVERGE("%s: listxattr: %s on glassfs, %s on the oracle", a->path,
			       strerror(a->xerr), strerror(b->xerr));
	if (a->nx != b->nx || a->xh != b->xh)
		return DIVERGE("%s: user xattrs differ (%d names on glassfs, %d on the oracle)",
			       a->path, a->nx, b->nx);
	return times_agree(a, b);
}

/* Read both trees and compare them; the previous step's trees kept for times. */
static bool trees_agree(bool full)
{
	bool ok = true;

	memcpy(prev, cur, sizeof(cur));
	for (int i = 0; i < 2; i++) {
		walk_prev = have_prev && !full ? &prev[i] : NULL;
		tree_read(S[i].root, &cur[i]);
	}
	if (cur[0].overflow || cur[1].overflow)
		ok = DIVERGE("tree too large to compare");
	for (int i = 0; ok && i < cur[0].n && i < cur[1].n; i++)
		ok = ent_agree(&cur[0].e[i], &cur[1].e[i]);
	if (ok && cur[0].n != cur[1].n) {
		const struct tree *l = cur[0].n > cur[1].n ? &cur[0] : &cur[1];
		int m = cur[0].n < cur[1].n ? cur[0].n : cur[1].n;
		ok = DIVERGE("listing: '%s' only on %s", l->e[m].path, sname[l == &cur[1]]);
	}
	have_prev = true;
	return ok;
}

/* ---- the executor: in this process, or in a child with another user's ids ----------- */

static pid_t child = -1;
static int to_child = -1, from_child = -1;

static void slots_close(void)
{
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < NSLOT; j++) {
			map_drop(&S[i], j);
			if (S[i].fd[j] >= 0)
				close(S[i].fd[j]);
			S[i].fd[j] = -1;
		}
}

static bool xfer(int fd, void *p, size_t n, bool wr)
{
	while (n) {
		ssize_t k = wr ? write(fd, p, n) : read(fd, p, n);
		if (k <= 0) {
			if (k < 0 && errno == EINTR)
				continue;
			return false;
		}
		p = (char *)p + k;
		n -= (size_t)k;
	}
	return true;
}

static void child_loop(int in, int out)
{
	gid_t groups[] = { G1, G2 };
	struct op o;
	struct res r[2];

	if (setgroups(2, groups) || setresgid(G1, G1, G1) || setresuid(U1, U1, U1)) {
		perror("oracle: child: set ids");
		_exit(2);
	}
	while (xfer(in, &o, sizeof(o), false) && o.kind != K_QUIT) {
		do_op(&S[0], &o, &r[0]);
		do_op(&S[1], &o, &r[1]);
		if (!xfer(out, r, sizeof(r), true))
			break;
	}
	_exit(0);
}

static void ex_start(void)
{
	int a[2], b[2];

	if (!as_user)
		return;
	if (pipe(a) || pipe(b)) {
		perror("oracle: pipe");
		exit(2);
	}
	fflush(NULL);
	child = fork();
	if (child < 0) {
		perror("oracle: fork");
		exit(2);
	}
	if (child == 0) {
		close(a[1]);
		close(b[0]);
		child_loop(a[0], b[1]);
	}
	close(a[0]);
	close(b[1]);
	to_child = a[1];
	from_child = b[0];
}

static void ex_step(const struct op *o, struct res r[2])
{
	if (!as_user) {
		do_op(&S[0], o, &r[0]);
		do_op(&S[1], o, &r[1]);
		return;
	}
	if (!xfer(to_child, (void *)o, sizeof(*o), true) || !xfer(from_child, r, 2 * sizeof(*r), false)) {
		fprintf(stderr, "oracle: the child died\n");
		exit(2);
	}
}

/* Every file of the run closed (in the child too). */
static void ex_stop(void)
{
	slots_close();
	if (child > 0) {
		struct op q = { .kind = K_QUIT };
		int st;
		xfer(to_child, &q, sizeof(q), true);
		close(to_child);
		close(from_child);
		waitpid(child, &st, 0);
		child = -1;
	}
}

/* ---- a run: a sequence on fresh directories ------------------------------------------- */

static uint64_t seed;
static int run_no;
static const char *remount_cmd;
static bool verbose, keep;
static int check_every = 1;
static int full_every = 50;	/* every file's data read again */
static char run_name[64];

static void op_str(const struct op *o, char *b, size_t n)
{
	const char *p1 = P(o->p1), *p2 = P(o->p2);
	int k = o->kind;

	switch (k) {
	case K_OPEN:
		snprintf(b, n, "open %s %s%s%s%s%s%s%s 0%o -> slot %d", p1,
			 (o->flags & O_ACCMODE) == O_RDONLY ? "O_RDONLY" :
			 (o->flags & O_ACCMODE) == O_WRONLY ? "O_WRONLY" : "O_RDWR",
			 o->flags & O_CREAT ? "|O_CREAT" : "", o->flags & O_EXCL ? "|O_EXCL" : "",
			 o->flags & O_TRUNC ? "|O_TRUNC" : "", o->flags & O_APPEND ? "|O_APPEND" : "",
			 o->flags & O_NOFOLLOW ? "|O_NOFOLLOW" : "", o->flags & O_DIRECTORY ? "|O_DIRECTORY" : "",
			 o->mode, o->slot);
		break;
	case K_CLOSE: case K_FSTAT: snprintf(b, n, "%s slot %d", kname[k], o->slot); break;
	case K_FSYNC: snprintf(b, n, "%s slot %d", o->flags ? "fdatasync" : "fsync", o->slot); break;
	case K_READ: snprintf(b, n, "read slot %d len %lld", o->slot, (long long)o->len); break;
	case K_PREAD: snprintf(b, n, "pread slot %d off %lld len %lld", o->slot, (long long)o->off, (long long)o->len); break;
	case K_WRITE: snprintf(b, n, "write slot %d len %lld", o->slot, (long long)o->len); break;
	case K_PWRITE: snprintf(b, n, "pwrite slot %d off %lld len %lld", o->slot, (long long)o->off, (long long)o->len); break;
	case K_LSEEK: snprintf(b, n, "lseek slot %d %lld whence %d", o->slot,
			       (long long)(o->flags == SEEK_SET ? o->off : o->off % 5000 - 2500), o->flags); break;
	case K_FTRUNC: snprintf(b, n, "ftruncate slot %d %lld", o->slot, (long long)o->off); break;
	case K_TRUNC: snprintf(b, n, "truncate %s %lld", p1, (long long)o->off); break;
	case K_FALLOC: snprintf(b, n, "fallocate slot %d mode %#x off %lld len %lld", o->slot, o->flags,
				(long long)o->off, (long long)o->len); break;
	case K_RENAME: snprintf(b, n, "rename %s %s%s", p1, p2, o->flags == RENAME_NOREPLACE ? " NOREPLACE" :
				 o->flags == RENAME_EXCHANGE ? " EXCHANGE" : ""); break;
	case K_LINK: snprintf(b, n, "link %s %s", p1, p2); break;
	case K_SYMLINK: snprintf(b, n, "symlink %s %s", targets[o->a % NTARGET], p2); break;
	case K_MKDIR: case K_MKFIFO: case K_CHMOD: snprintf(b, n, "%s %s 0%o", kname[k], p1, o->mode); break;
	case K_FCHMOD: snprintf(b, n, "fchmod slot %d 0%o", o->slot, o->mode); break;
	case K_MKNOD: snprintf(b, n, "mknod %s %s 0%o", p1, o->flags % 3 == 0 ? "chr 1:3" :
				o->flags % 3 == 1 ? "sock" : "fifo", o->mode & 07777); break;
	case K_CHOWN: snprintf(b, n, "%s %s %d:%d", o->flags ? "lchown" : "chown", p1,
			       (int)pick_uid(o->a), (int)pick_gid(o->b)); break;
	case K_UTIMENS: snprintf(b, n, "utimensat %s atime %s mtime %s%s", p1,
				 o->a % 4 == 0 ? "now" : o->a % 4 == 1 ? "omit" : "set",
				 o->b % 4 == 0 ? "now" : o->b % 4 == 1 ? "omit" : "set",
				 o->flags ? " nofollow" : ""); break;
	case K_SETXATTR: case K_GETXATTR: case K_LISTXATTR: case K_REMOVEXATTR:
		snprintf(b, n, "%s%s %s %s len %lld flags %d", o->b % 3 == 0 ? "l" : o->b % 3 == 1 ? "f" : "",
			 kname[k], o->b % 3 == 1 ? "(slot)" : p1, xnames[o->a % NXNAME], (long long)o->len, o->flags);
		if (o->b % 3 == 1)
			snprintf(b + strlen(b), n - strlen(b), " slot %d", o->slot);
		break;
	case K_READDIR_MOD: snprintf(b, n, "readdir-mod %s %s %s after %u entries",
				     prefixes[o->p1 % NPREFIX][0] ? prefixes[o->p1 % NPREFIX] : ".",
				     o->b / 4 % 3 == 0 ? "mkdir" : o->b / 4 % 3 == 1 ? "unlink" : "create",
				     names[o->a % NNAME], o->b % 4); break;
	case K_ACCESS: snprintf(b, n, "access %s %d", p1, o->flags); break;
	case K_MMAP: snprintf(b, n, "mmap slot %d (or %s) %s off %lld len %lld", o->slot, p1,
			      o->flags ? "rw" : "ro", (long long)(o->off / 4096 % 4 * 4096),
			      (long long)o->len); break;
	case K_MREAD: snprintf(b, n, "mread slot %d at %lld len %lld", o->slot, (long long)o->off,
			       (long long)o->len); break;
	case K_MWRITE: snprintf(b, n, "mwrite slot %d at %lld len %lld%s", o->slot, (long long)o->off,
				(long long)o->len, o->flags == 0 ? " msync" : ""); break;
	case K_MUNMAP: snprintf(b, n, "munmap slot %d", o->slot); break;
	default: snprintf(b, n, "%s %s", kname[k], p1); break;
	}
}

static bool res_agree(const struct res r[2])
{
	if (r[0].rv != r[1].rv || r[0].err != r[1].err)
		return DIVERGE("returned %lld (%s) on glassfs, %lld (%s) on the oracle",
			       (long long)r[0].rv, r[0].err ? strerror(r[0].err) : "ok",
			       (long long)r[1].rv, r[1].err ? strerror(r[1].err) : "ok");
	if (r[0].hash != r[1].hash || strcmp(r[0].txt, r[1].txt))
		return DIVERGE("produced '%s' on glassfs, '%s' on the oracle", r[0].txt, r[1].txt);
	return true;
}

static int open_run_dir(int i, bool create)
{
	int b = open(S[i].base, O_RDONLY | O_DIRECTORY);

	if (b < 0) {
		fprintf(stderr, "oracle: %s: %s\n", S[i].base, strerror(errno));
		exit(2);
	}
	if (create && (mkdirat(b, run_name, 0777) || fchmodat(b, run_name, 0777, 0))) {
		fprintf(stderr, "oracle: %s/%s: %s\n", S[i].base, run_name, strerror(errno));
		exit(2);
	}
	S[i].root = openat(b, run_name, O_RDONLY | O_DIRECTORY);
	close(b);
	if (S[i].root < 0) {
		fprintf(stderr, "oracle: %s/%s: %s\n", S[i].base, run_name, strerror(errno));
		exit(2);
	}
	return S[i].root;
}

/* The starting tree, made by root on both sides: directories of other
 * owners, a sticky one, a setgid one, files of other owners and groups. */
static void prepare(int r)
{
	char data[100];
	int fd;

	for (int i = 0; i < (int)sizeof(data); i++)
		data[i] = (char)('a' + i % 26);
	if (mkdirat(r, "d0", 0755) || fchownat(r, "d0", U1, G1, 0) ||
	    mkdirat(r, "d1", 0777) || fchmodat(r, "d1", 01777, 0) || fchownat(r, "d1", U2, G2, 0) ||
	    mkdirat(r, "d0/d1", 0775) || fchownat(r, "d0/d1", 0, G2, 0) || fchmodat(r, "d0/d1", 02775, 0) ||
	    symlinkat("a", r, "c")) {
		perror("oracle: prepare");
		exit(2);
	}
	const struct { const char *p; mode_t m; uid_t u; gid_t g; } f[] = {
		{ "a", 0644, 0, 0 }, { "d1/a", 0666, U2, G2 }, { "d0/a", 0640, U1, G3 },
		{ "d0/d1/b", 0664, 0, G2 }, { "d1/b", 0644, U1, G1 },
		{ "d0/b", 02666, U2, G3 },	/* setgid, a group the user is not in */
	};
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		fd = openat(r, f[i].p, O_CREAT | O_EXCL | O_WRONLY, f[i].m);
		if (fd < 0 || write(fd, data, sizeof(data)) != (ssize_t)sizeof(data) ||
		    fchown(fd, f[i].u, f[i].g) || fchmod(fd, f[i].m) ||
		    fsetxattr(fd, "user.a", "x", 1, 0)) {
			perror("oracle: prepare a file");
			exit(2);
		}
		close(fd);
	}
}

static void rmtree(int dfd, const char *name)
{
	int d = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
	DIR *dir;
	struct dirent *de;

	if (d >= 0) {
		dir = fdopendir(d);
		while ((de = readdir(dir)))
			if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
				if (unlinkat(d, de->d_name, 0) && (errno == EISDIR || errno == EPERM))
					rmtree(d, de->d_name);
			}
		closedir(dir);
	}
	unlinkat(dfd, name, AT_REMOVEDIR);
}

static void run_cleanup(void)
{
	for (int i = 0; i < 2; i++) {
		int b = open(S[i].base, O_RDONLY | O_DIRECTORY);
		if (b >= 0) {
			rmtree(b, run_name);
			close(b);
		}
	}
}

/*
 * Run ops[idx[0..n)] on fresh directories; remount before step remount_at
 * (-1: never).  Returns the step that diverged (why[] says how), or -1.
 */
static int run_seq(const struct op *ops, const int *idx, int n, int remount_at, bool loud)
{
	struct res r[2];
	char s[200];
	int bad = -1;

	snprintf(run_name, sizeof(run_name), "r%" PRIu64 ".%d.%d", seed, (int)getpid(), ++run_no);
	for (int i = 0; i < 2; i++) {
		for (int j = 0; j < NSLOT; j++)
			S[i].fd[j] = -1;
		prepare(open_run_dir(i, true));
	}
	have_prev = false;
	step_kind = -1;
	if (!trees_agree(true)) {
		fprintf(stderr, "oracle: the prepared trees differ: %s\n", why);
		exit(2);
	}
	ex_start();
	for (int i = 0; i < n && bad < 0; i++) {
		const struct op *o = &ops[idx[i]];
		if (i == remount_at && remount_cmd) {
			int rc;
			ex_stop();
			close(S[0].root);
			close(S[1].root);
			fflush(NULL);
			rc = system(remount_cmd);
			if (rc != 0) {
				fprintf(stderr, "oracle: '%s' failed (%d)\n", remount_cmd, rc);
				exit(2);
			}
			open_run_dir(0, false);
			open_run_dir(1, false);
			if (loud)
				printf("remounted before step %d\n", i);
			if (!trees_agree(true)) {
				memmove(why + 20, why, sizeof(why) - 20);
				memcpy(why, "after the remount: ", 19);
				why[19] = ' ';
				why[sizeof(why) - 1] = 0;
				bad = i;
				break;
			}
			ex_start();
		}
		clock_gettime(CLOCK_REALTIME_COARSE, &tick_floor);
		tick_floor.tv_nsec -= 2 * tick.tv_nsec;
		if (tick_floor.tv_nsec < 0) {
			tick_floor.tv_nsec += 1000000000;
			tick_floor.tv_sec--;
		}
		ex_step(o, r);
		step_kind = o->kind;
		if (verbose) {
			op_str(o, s, sizeof(s));
			printf("%6d #%-6d %-60s %lld/%d %lld/%d %s\n", i, idx[i], s, (long long)r[0].rv,
			       r[0].err, (long long)r[1].rv, r[1].err, r[0].txt);
		}
		if (!res_agree(r) || ((i % check_every == 0 || i == n - 1) &&
					!trees_agree(i % full_every == 0 || i == n - 1 ||
						     o->kind == K_MWRITE)))
			bad = i;
	}
	ex_stop();
	close(S[0].root);
	close(S[1].root);
	if (bad < 0 || !keep)
		run_cleanup();
	return bad;
}

/* ---- shrinking ------------------------------------------------------------------------- */

static int shrink_runs;
static char shrink_why[1024];	/* the divergence of the last subset that failed */
static time_t shrink_deadline;

/* Does this subset still diverge?  On yes, cut it after the failing step. */
static bool still_fails(const struct op *ops, int *idx, int *n)
{
	int b;

	if (shrink_runs >= 2000 || time(NULL) > shrink_deadline)
		return false;
	shrink_runs++;
	b = run_seq(ops, idx, *n, -1, false);
	if (b < 0)
		return false;
	memcpy(shrink_why, why, sizeof(why));
	*n = b + 1;
	return true;
}

/* ddmin over the complements: drop chunks while the rest still diverges. */
static int shrink(const struct op *ops, int *idx, int n)
{
	int g = 2, *t = malloc(sizeof(int) * (size_t)n);

	while (n >= 2) {
		int chunk = (n + g - 1) / g;
		bool reduced = false;
		for (int start = 0; start < n; start += chunk) {
			int m = 0;
			for (int i = 0; i < n; i++)
				if (i < start || i >= start + chunk)
					t[m++] = idx[i];
			if (m && still_fails(ops, t, &m)) {
				memcpy(idx, t, sizeof(int) * (size_t)m);
				n = m;
				g = g > 2 ? g - 1 : 2;
				reduced = true;
				break;
			}
		}
		if (!reduced) {
			if (g >= n || shrink_runs >= 2000 || time(NULL) > shrink_deadline)
				break;
			g = g * 2 < n ? g * 2 : n;
		}
	}
	free(t);
	return n;
}

/* ---- main ------------------------------------------------------------------------------ */

static void usage(void)
{
	fprintf(stderr, "usage: oracle [-s SEED] [-n OPS] [-u UID:GID:G2,G3] [-r REMOUNT-CMD] "
		"[-o I,J,...] [-c N] [-S] [-v] [-k] [-W] [-M] GLASSFS-DIR ORACLE-DIR\n");
	exit(2);
}

int main(int argc, char **argv)
{
	int nops = 2000, c, n, bad, *idx;
	const char *only = NULL, *user = NULL;
	bool noshrink = false, have_seed = false;
	struct op *ops;
	char s[200];

	while ((c = getopt(argc, argv, "s:n:u:r:o:c:SvkWM")) != -1) {
		switch (c) {
		case 's': seed = strtoull(optarg, NULL, 0); have_seed = true; break;
		case 'n': nops = atoi(optarg); break;
		case 'u': user = optarg; break;
		case 'r': remount_cmd = optarg; break;
		case 'o': only = optarg; break;
		case 'c': check_every = atoi(optarg) > 0 ? atoi(optarg) : 1; break;
		case 'S': noshrink = true; break;
		case 'v': verbose = true; break;
		case 'k': keep = true; break;
		case 'W': wb = true; break;
		case 'M': with_mmap = true; break;
		default: usage();
		}
	}
	if (argc - optind != 2 || nops <= 0)
		usage();
	S[0].base = argv[optind];
	S[1].base = argv[optind + 1];
	if (!have_seed) {
		struct timeval tv;
		gettimeofday(&tv, NULL);
		seed = ((uint64_t)tv.tv_sec * 1000003u) ^ (uint64_t)tv.tv_usec ^ ((uint64_t)getpid() << 20);
	}
	U1 = 4001, U2 = 4002, G1 = 4001, G2 = 4002, G3 = 4003;
	if (user) {
		unsigned u, g, g2, g3;
		if (sscanf(user, "%u:%u:%u,%u", &u, &g, &g2, &g3) != 4)
			usage();
		U1 = u, U2 = u + 1, G1 = g, G2 = g2, G3 = g3;
		as_user = true;
	}
	for (int i = 0; i < NPATH; i++)
		snprintf(pathbuf[i], sizeof(pathbuf[i]), "%s%s", prefixes[i / NNAME], names[i % NNAME]);
	signal(SIGPIPE, SIG_IGN);
	clock_getres(CLOCK_REALTIME_COARSE, &tick);
	umask(022);
	printf("seed: %" PRIu64 "%s%s%s\n", seed, as_user ? " (as a user)" : "",
	       wb ? " (writeback cache)" : "", with_mmap ? " (mmap)" : "");
	if (with_mmap)
		mmap_weights();
	ops = calloc((size_t)nops, sizeof(*ops));
	idx = calloc((size_t)nops, sizeof(*idx));
	{
		uint64_t st = seed;
		for (int i = 0; i < nops; i++)
			gen_op(&st, &ops[i]);
	}
	n = 0;
	if (only) {
		for (const char *q = only; *q && n < nops;) {
			int v = atoi(q);
			if (v < 0 || v >= nops)
				usage();
			idx[n++] = v;
			q = strchr(q, ',');
			if (!q)
				break;
			q++;
		}
	} else {
		for (n = 0; n < nops; n++)
			idx[n] = n;
	}
	bad = run_seq(ops, idx, n, remount_cmd ? n / 2 : -1, true);
	if (bad < 0) {
		printf("ok: %d operations agree (seed %" PRIu64 ")\n", n, seed);
		return 0;
	}
	op_str(&ops[idx[bad]], s, sizeof(s));
	printf("DIVERGENCE: seed %" PRIu64 " step %d (#%d %s): %s\n", seed, bad, idx[bad], s, why);
	if (!noshrink) {
		int m = bad + 1;
		shrink_deadline = time(NULL) + 120;
		if (!still_fails(ops, idx, &m)) {
			printf("does not diverge again without the remount or on fresh directories: not shrunk\n");
			m = bad + 1;
		} else {
			m = shrink(ops, idx, m);
			bad = run_seq(ops, idx, m, -1, false);
			if (bad >= 0)
				printf("shrunk to %d operations in %d runs: %s\n", m, shrink_runs, why);
			else
				printf("shrunk to %d operations in %d runs, which diverged once (%s) and not on a rerun: timing\n",
				       m, shrink_runs, shrink_why);
		}
		n = m;
	} else {
		n = bad + 1;
	}
	printf("reproducer: %s -s %" PRIu64 " -n %d%s%s%s%s -S -v -o ", argv[0], seed, nops,
	       user ? " -u " : "", user ? user : "", wb ? " -W" : "", with_mmap ? " -M" : "");
	for (int i = 0; i < n; i++)
		printf("%d%s", idx[i], i + 1 < n ? "," : "");
	printf(" GLASSFS-DIR ORACLE-DIR\n");
	for (int i = 0; i < n && i < 60; i++) {
		op_str(&ops[idx[i]], s, sizeof(s));
		printf("  #%d %s\n", idx[i], s);
	}
	return 1;
}
