// SPDX-License-Identifier: MIT
/*
 * fuse_ops.c — libfuse3 low-level operations: decode, call fsops, reply.
 *
 * Every request fires glassfs:fuse__op__start/end with FUSE's opcode
 * number.  Entries and attributes are replied with timeouts and ENOENT
 * lookups are cached too (the kernel's caches are the fast path of FUSE:
 * ARCHITECTURE.md section 7).
 *
 * Coherence: every change reaches the engine through this daemon, as a
 * request the kernel made, and the kernel updates or drops its own
 * entries for it (new entries and attributes from our replies, parent
 * attributes after a directory change, the target's after unlink/rename,
 * size/times after writes).  So no fuse_lowlevel_notify_inval_* call is
 * needed but these: a write or O_TRUNC open that cleared setuid/setgid
 * (gl_write, gl_open), since the kernel does not refresh the mode after
 * them, and SEEK_DATA/SEEK_HOLE beside a writer (gl_lseek), to have the
 * kernel's dirty pages written back first; one is owed wherever the
 * engine starts changing names or attributes on its own (a future
 * snapshot/receive/repair service).
 * Files are opened keep_cache (the page cache stays valid across opens)
 * and noflush (flush has no work here, close() saves a round trip).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/ops/mount.h"
#include "fs/fuse/fuse_ops.h"
#include "fs/items/dir.h"
#include "fs/format/ioctl.h"
#include "fs/services/volume.h"
#include "fs/base/probe.h"
#include "fs/services/scrub.h"
#include "fs/services/trim.h"
#include "fs/services/volinfo.h"
#include "fs/items/subvol.h"

#include <linux/fs.h>

/* FUSE opcodes (linux/fuse.h enum fuse_opcode), for the probes. */
enum {
	OP_LOOKUP = 1, OP_FORGET = 2, OP_GETATTR = 3, OP_SETATTR = 4,
	OP_READLINK = 5, OP_SYMLINK = 6, OP_MKNOD = 8, OP_MKDIR = 9,
	OP_UNLINK = 10, OP_RMDIR = 11, OP_RENAME = 12, OP_LINK = 13,
	OP_OPEN = 14, OP_READ = 15, OP_WRITE = 16, OP_STATFS = 17,
	OP_RELEASE = 18, OP_FSYNC = 20, OP_SETXATTR = 21, OP_GETXATTR = 22,
	OP_LISTXATTR = 23, OP_REMOVEXATTR = 24, OP_FLUSH = 25, OP_INIT = 26,
	OP_OPENDIR = 27, OP_READDIR = 28, OP_RELEASEDIR = 29, OP_FSYNCDIR = 30,
	OP_ACCESS = 34, OP_CREATE = 35, OP_DESTROY = 38, OP_IOCTL = 39,
	OP_BATCH_FORGET = 42, OP_FALLOCATE = 43, OP_READDIRPLUS = 44,
	OP_RENAME2 = 45, OP_LSEEK = 46,
};

#define SPLICE_PAGE 4096u	/* libfuse's pagesize in its pipe arithmetic */

static inline struct glassfs_daemon *D(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/*
 * Node ids (subvol.h): FUSE names the root 1, glassfs's root directory is
 * ROOT_DIR_INO of the default subvolume; other subvolumes' inodes carry
 * the subvolume id in the high bits.  I() is the inode number in its
 * tree, FS() the tree's context.
 */
static inline uint64_t I(fuse_ino_t ino)
{
	return ino == FUSE_ROOT_ID ? ROOT_DIR_INO : ino & SUBVOL_INO_MASK;
}

static inline struct fsctx *FS(fuse_req_t req, fuse_ino_t ino)
{
	struct fsctx *fs = fuse_req_userdata(req) ? ((struct glassfs_daemon *)fuse_req_userdata(req))->fs : NULL;
	uint64_t id = subvol_of_nodeid(ino);

	return id == FS_TREE_OBJECTID ? fs : subvol_fs(fs, id);
}

/* Open files and directories per subvolume: a subvolume with any is busy
 * for deletion (subvol_delete). */
/* A handle open for writing: counted on its inode (gl_lseek), before the
 * reply that lets the kernel release it, taken back with the release. */
static void writer_note(fuse_req_t req, fuse_ino_t ino, const struct fuse_file_info *fi,
			int delta)
{
	if ((fi->flags & O_ACCMODE) != O_RDONLY)
		fsops_writers(FS(req, ino), I(ino), delta);
}

static void opened(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fsctx *fs = FS(req, ino);

	__atomic_fetch_add(&fs->open_files, 1, __ATOMIC_SEQ_CST);
	writer_note(req, ino, fi, +1);
	if (fuse_reply_open(req, fi) != 0) {	/* interrupted: no release will come */
		__atomic_fetch_sub(&fs->open_files, 1, __ATOMIC_SEQ_CST);
		writer_note(req, ino, fi, -1);
	}
}

/* Give back a lookup counted for a reply that did not reach the kernel. */
static void forget_nodeid(fuse_req_t req, uint64_t nodeid, uint64_t n)
{
	fsops_forget(FS(req, nodeid), I(nodeid), n);
}

static inline uint64_t op_start(int op, uint64_t ino)
{
	GLASSFS_FUSE_OP_START(op, ino);
	return PROBE_ON(FUSE_OP_END) ? glock_now_ns() : 0;
}

static inline void op_end(int op, uint64_t ino, int ret, uint64_t t0)
{
	if (PROBE_ON(FUSE_OP_END))
		GLASSFS_FUSE_OP_END(op, ino, ret, t0 ? glock_now_ns() - t0 : 0);
}

/* Reply helpers that also end the probe. */
static void reply_err(fuse_req_t req, int op, uint64_t ino, uint64_t t0, int err)
{
	op_end(op, ino, err, t0);
	fuse_reply_err(req, -err);
}

/*
 * The common tail of an op: end its probe with ret and, when ret is an
 * error, reply it.  Returns true when it replied (the caller is done),
 * false when the caller still owes the success reply.
 */
static bool replied_err(fuse_req_t req, int op, uint64_t ino, uint64_t t0, int64_t ret)
{
	op_end(op, ino, ret < 0 ? (int)ret : 0, t0);
	if (ret >= 0)
		return false;
	fuse_reply_err(req, (int)-ret);
	return true;
}

static void fill_entry(struct glassfs_daemon *d, struct fuse_entry_param *e,
		       const struct stat *st)
{
	memset(e, 0, sizeof(*e));
	e->ino = st->st_ino;
	e->generation = 0;
	e->attr = *st;
	e->attr_timeout = d->attr_timeout;
	e->entry_timeout = d->entry_timeout;
}

static void reply_entry(fuse_req_t req, int op, uint64_t ino, uint64_t t0, int ret,
			const struct stat *st)
{
	struct glassfs_daemon *d = D(req);
	struct fuse_entry_param e;

	if (replied_err(req, op, ino, t0, ret))
		return;
	fill_entry(d, &e, st);
	if (fuse_reply_entry(req, &e) != 0)	/* request interrupted */
		forget_nodeid(req, st->st_ino, 1);
}

/*
 * The largest pipe a worker thread's splice can have: libfuse grows its
 * pipe to each reply's size plus a page per buffer and two (a 1 MiB READ:
 * 2 MiB after the kernel's rounding), which needs CAP_SYS_RESOURCE past
 * /proc/sys/fs/pipe-max-size (1 MiB by default); a reply that does not
 * fit is copied by libfuse into a fresh buffer: worse than no spans.
 */
static size_t pipe_max(void)
{
	int p[2];
	long n;

	if (pipe2(p, O_CLOEXEC) < 0)
		return 0;
	n = fcntl(p[0], F_SETPIPE_SZ, 2 << 20);
	if (n < 0) {
		FILE *f = fopen("/proc/sys/fs/pipe-max-size", "r");
		long max = 0;
		if (f && fscanf(f, "%ld", &max) == 1 && max > 0)
			n = fcntl(p[0], F_SETPIPE_SZ, (int)max);
		if (f)
			fclose(f);
	}
	close(p[0]);
	close(p[1]);
	return n > 0 ? (size_t)n : 0;
}

size_t fuse_ops_splice_max_read(void)
{
	size_t n = pipe_max(), head = SPLICE_PAGE * 3 + 16;	/* pipe_fits, one buffer */

	return n > head ? (n - head) / SPLICE_PAGE * SPLICE_PAGE : 0;
}

/* Does a reply of bytes in nbufs buffers fit libfuse's splice pipe? */
static bool pipe_fits(const struct glassfs_daemon *d, size_t bytes, int nbufs)
{
	return bytes + SPLICE_PAGE * (size_t)(2 + nbufs) + 16 <= d->pipe_max;
}

static void gl_init(void *userdata, struct fuse_conn_info *conn)
{
	struct glassfs_daemon *d = userdata;

	d->scrub = scrub_service_new(d->core);	/* NULL: scrub ioctls say ENOMEM */
	if (conn->capable & FUSE_CAP_IOCTL_DIR)
		conn->want |= FUSE_CAP_IOCTL_DIR;
	if (conn->capable & FUSE_CAP_READDIRPLUS)
		conn->want |= FUSE_CAP_READDIRPLUS;
	if (conn->capable & FUSE_CAP_PARALLEL_DIROPS)
		conn->want |= FUSE_CAP_PARALLEL_DIROPS;
	/*
	 * The kernel writeback cache (writeback_cache=on): buffered writes
	 * land in the page cache and reach us as large WRITEs from writeback,
	 * fsync, close and unmount.  What it asks of the filesystem
	 * (docs/datapath.md): the kernel owns size and mtime of a file while
	 * it has dirty pages (it sends them by SETATTR and ignores ours);
	 * O_APPEND offsets are the kernel's (fsops_write never appends on
	 * its own); a write-only open may be read through for partial pages
	 * (gl_read never checks the open mode); setuid/setgid: no
	 * HANDLE_KILLPRIV (a cached write arrives without credentials) but
	 * HANDLE_KILLPRIV_V2, added to the reply by fuse_wire.c (libfuse
	 * 3.14 has no flag for it): the writes that must clear them come
	 * uncached from the writer (gl_write), chowns leave it to us
	 * (gl_setattr); without it, a SETATTR from the writer before the
	 * write (the kernel's mode, or an empty one for setgid on a writer
	 * outside the group); snapshots flush first (glassctl syncfs before
	 * the ioctl).
	 */
	if (d->writeback && (conn->capable & FUSE_CAP_WRITEBACK_CACHE)) {
		conn->want |= FUSE_CAP_WRITEBACK_CACHE;
		conn->want &= ~(unsigned)FUSE_CAP_HANDLE_KILLPRIV;
	} else {
		d->writeback = false;
		conn->want &= ~(unsigned)FUSE_CAP_WRITEBACK_CACHE;
	}
	/* the mount's max_read (main.c), or libfuse refuses the INIT */
	conn->max_read = d->max_read;
	/* Reads replied as spliced device ranges (gl_read, reply_spans):
	 * SPLICE_WRITE is libfuse's name for replies through a pipe.  Not
	 * SPLICE_READ (requests read through a pipe: only for write_buf,
	 * which we have not) nor SPLICE_MOVE (would steal the device's page
	 * cache pages into the file's). */
	if (d->splice && (conn->capable & FUSE_CAP_SPLICE_WRITE) && (d->pipe_max = pipe_max()) > 0)
		conn->want |= FUSE_CAP_SPLICE_WRITE;
	else
		d->splice = false;
	/* The kernel enforces POSIX ACLs read through getxattr; we keep the
	 * mode in step and apply default ACLs and the umask at create
	 * (xattr.c), so the kernel must pass the mode unmasked. */
	if ((conn->capable & FUSE_CAP_POSIX_ACL) && (conn->capable & FUSE_CAP_DONT_MASK))
		conn->want |= FUSE_CAP_POSIX_ACL | FUSE_CAP_DONT_MASK;
}

static void gl_lookup(fuse_req_t req, fuse_ino_t parent_, const char *name)
{
	uint64_t parent = I(parent_);
	struct glassfs_daemon *d = D(req);
	uint64_t t0 = op_start(OP_LOOKUP, parent);
	struct stat st;
	int ret = fsops_lookup(FS(req, parent_), parent, name, &st);

	if (ret == -ENOENT && d->neg_timeout > 0) {
		struct fuse_entry_param e;
		memset(&e, 0, sizeof(e));
		e.entry_timeout = d->neg_timeout;
		op_end(OP_LOOKUP, parent, ret, t0);
		fuse_reply_entry(req, &e);
		return;
	}
	reply_entry(req, OP_LOOKUP, parent, t0, ret, &st);
}

static void gl_forget(fuse_req_t req, fuse_ino_t ino_, uint64_t nlookup)
{
	uint64_t ino = I(ino_);
	uint64_t t0 = op_start(OP_FORGET, ino);

	fsops_forget(FS(req, ino_), ino, nlookup);
	op_end(OP_FORGET, ino, 0, t0);
	fuse_reply_none(req);
}

static void gl_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *f)
{
	uint64_t t0 = op_start(OP_BATCH_FORGET, 0);

	for (size_t i = 0; i < count; i++)
		fsops_forget(FS(req, f[i].ino), I(f[i].ino), f[i].nlookup);
	op_end(OP_BATCH_FORGET, 0, 0, t0);
	fuse_reply_none(req);
}

static void gl_getattr(fuse_req_t req, fuse_ino_t ino_, struct fuse_file_info *fi)
{
	uint64_t ino = I(ino_);
	struct glassfs_daemon *d = D(req);
	uint64_t t0 = op_start(OP_GETATTR, ino);
	struct stat st;
	int ret = fsops_getattr(FS(req, ino_), ino, &st);

	(void)fi;
	if (!replied_err(req, OP_GETATTR, ino, t0, ret))
		fuse_reply_attr(req, &st, d->attr_timeout);
}

static struct fsops_cred cred_of(fuse_req_t req);

static void gl_setattr(fuse_req_t req, fuse_ino_t ino_, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	uint64_t ino = I(ino_);
	struct glassfs_daemon *d = D(req);
	uint64_t t0 = op_start(OP_SETATTR, ino);
	struct stat st;
	struct fsops_cred cr;
	int valid = 0, ret;

	(void)fi;
	if (to_set & FUSE_SET_ATTR_MODE)	valid |= FSOPS_SET_MODE;
	if (to_set & FUSE_SET_ATTR_UID)		valid |= FSOPS_SET_UID;
	if (to_set & FUSE_SET_ATTR_GID)		valid |= FSOPS_SET_GID;
	if (to_set & FUSE_SET_ATTR_SIZE)	valid |= FSOPS_SET_SIZE;
	if (to_set & FUSE_SET_ATTR_ATIME)	valid |= FSOPS_SET_ATIME;
	if (to_set & FUSE_SET_ATTR_MTIME)	valid |= FSOPS_SET_MTIME;
	if (to_set & FUSE_SET_ATTR_ATIME_NOW)	valid |= FSOPS_SET_ATIME_NOW;
	if (to_set & FUSE_SET_ATTR_MTIME_NOW)	valid |= FSOPS_SET_MTIME_NOW;
	if (to_set & FUSE_SET_ATTR_CTIME)	valid |= FSOPS_SET_CTIME;
	/*
	 * A SETATTR with nothing to set is chown(-1, -1) (ctime only) or
	 * the kernel's file_remove_privs for a writer it found should lose
	 * setuid/setgid (it judged CAP_FSETID and group membership):
	 * fuse_setattr recomputes the mode itself for setuid and for setgid
	 * on a group-executable file, but cannot express setgid without
	 * group-execute for a writer outside the file's group, so it sends
	 * the request empty, from the writer.  With the writeback cache this
	 * is the only moment that writer's credentials reach us (the cached
	 * data comes later without them).  Both want the write rule applied
	 * (chown's rule for a caller without CAP_CHOWN is the same).
	 */
	if (valid == 0)
		valid = FSOPS_KILL_PRIVS;
	cr = cred_of(req);
	cr.kernel_times = d->writeback;
	/* a chown's setuid/setgid: with KILLPRIV_V2 the kernel sends no mode
	 * for them; without it, a mode only when its partial rule (setuid,
	 * group-executable setgid) found one, so setgid of a caller outside
	 * the group is ours either way */
	cr.chown_kills_privs = true;
	ret = fsops_setattr_as(FS(req, ino_), ino, attr, valid, &st, &cr);
	if (!replied_err(req, OP_SETATTR, ino, t0, ret))
		fuse_reply_attr(req, &st, d->attr_timeout);
}

static void gl_readlink(fuse_req_t req, fuse_ino_t ino_)
{
	uint64_t ino = I(ino_);
	uint64_t t0 = op_start(OP_READLINK, ino);
	char buf[PATH_MAX + 1];
	ssize_t n = fsops_readlink(FS(req, ino_), ino, buf, sizeof(buf) - 1);

	if (n < 0) {
		reply_err(req, OP_READLINK, ino, t0, (int)n);
		return;
	}
	buf[n] = 0;
	op_end(OP_READLINK, ino, 0, t0);
	fuse_reply_readlink(req, buf);
}

/* The caller's supplementary groups, from /proc by libfuse: only asked
 * for a write or O_TRUNC on a setgid file (drop_privs in fsops.c). */
static bool req_in_group(const struct fsops_cred *cr, uint32_t gid)
{
	gid_t g[256];
	int n = fuse_req_getgroups(cr->ctx, 256, g);

	for (int i = 0; i < n && i < 256; i++)
		if (g[i] == gid)
			return true;
	return false;
}

static struct fsops_cred cred_of(fuse_req_t req)
{
	const struct fuse_ctx *c = fuse_req_ctx(req);
	struct fsops_cred cr = { .uid = c->uid, .gid = c->gid, .umask = c->umask,
				 .in_group = req_in_group, .ctx = req };
	return cr;
}

static void gl_mknod(fuse_req_t req, fuse_ino_t parent_, const char *name, mode_t mode,
		     dev_t rdev)
{
	uint64_t parent = I(parent_);
	uint64_t t0 = op_start(OP_MKNOD, parent);
	struct fsops_cred cr = cred_of(req);
	struct stat st;
	int ret = fsops_mknod(FS(req, parent_), parent, name, mode, rdev, &cr, &st);

	reply_entry(req, OP_MKNOD, parent, t0, ret, &st);
}

static void gl_mkdir(fuse_req_t req, fuse_ino_t parent_, const char *name, mode_t mode)
{
	uint64_t parent = I(parent_);
	uint64_t t0 = op_start(OP_MKDIR, parent);
	struct fsops_cred cr = cred_of(req);
	struct stat st;
	int ret = fsops_mkdir(FS(req, parent_), parent, name, mode, &cr, &st);

	reply_entry(req, OP_MKDIR, parent, t0, ret, &st);
}

static void gl_symlink(fuse_req_t req, const char *link, fuse_ino_t parent_, const char *name)
{
	uint64_t parent = I(parent_);
	uint64_t t0 = op_start(OP_SYMLINK, parent);
	struct fsops_cred cr = cred_of(req);
	struct stat st;
	int ret = fsops_symlink(FS(req, parent_), parent, name, link, &cr, &st);

	reply_entry(req, OP_SYMLINK, parent, t0, ret, &st);
}

static void gl_link(fuse_req_t req, fuse_ino_t ino_, fuse_ino_t newparent_, const char *newname)
{
	uint64_t ino = I(ino_);
	uint64_t newparent = I(newparent_);
	uint64_t t0 = op_start(OP_LINK, ino);
	struct stat st;
	int ret = FS(req, ino_) != FS(req, newparent_) ? -EXDEV :	/* across subvolumes */
		  fsops_link(FS(req, ino_), ino, newparent, newname, &st);

	reply_entry(req, OP_LINK, ino, t0, ret, &st);
}

static void gl_unlink(fuse_req_t req, fuse_ino_t parent_, const char *name)
{
	uint64_t parent = I(parent_);
	uint64_t t0 = op_start(OP_UNLINK, parent);

	reply_err(req, OP_UNLINK, parent, t0, fsops_unlink(FS(req, parent_), parent, name));
}

static void gl_rmdir(fuse_req_t req, fuse_ino_t parent_, const char *name)
{
	uint64_t parent = I(parent_);
	uint64_t t0 = op_start(OP_RMDIR, parent);

	reply_err(req, OP_RMDIR, parent, t0, fsops_rmdir(FS(req, parent_), parent, name));
}

static void gl_rename(fuse_req_t req, fuse_ino_t parent_, const char *name,
		      fuse_ino_t newparent_, const char *newname, unsigned int flags)
{
	uint64_t parent = I(parent_);
	uint64_t newparent = I(newparent_);
	uint64_t t0 = op_start(OP_RENAME2, parent);

	reply_err(req, OP_RENAME2, parent, t0,
		  FS(req, parent_) != FS(req, newparent_) ? -EXDEV :	/* across subvolumes */
		  fsops_rename(FS(req, parent_), parent, name, newparent, newname, flags));
}

static void gl_open(fuse_req_t req, fuse_ino_t ino_, struct fuse_file_info *fi)
{
	uint64_t ino = I(ino_);
	uint64_t t0 = op_start(OP_OPEN, ino);
	struct fsops_cred cr = cred_of(req);
	bool dropped = false;
	int ret;

	cr.dropped_privs = &dropped;
	ret = fsops_open(FS(req, ino_), ino, fi->flags, &cr);
	/* an O_TRUNC that cleared setuid/setgid: with KILLPRIV_V2 the kernel
	 * no longer reads the attributes back around it (fuse_setattr), and
	 * its open refreshes size and times only */
	if (dropped)
		fuse_lowlevel_notify_inval_inode(D(req)->se, ino_, -1, 0);
	if (replied_err(req, OP_OPEN, ino, t0, ret))
		return;
	fi->keep_cache = 1;	/* every change passes through us: the page cache stays valid */
	fi->noflush = 1;	/* flush has nothing to do here: spare close() a round trip */
	/* before the reply: the kernel sizes this file's read-ahead after it */
	fuse_readahead_apply(&D(req)->ra);
	opened(req, ino_, fi);
}

static void gl_create(fuse_req_t req, fuse_ino_t parent_, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	uint64_t parent = I(parent_);
	struct glassfs_daemon *d = D(req);
	uint64_t t0 = op_start(OP_CREATE, parent);
	struct fsops_cred cr = cred_of(req);
	struct fuse_entry_param e;
	struct stat st;
	int ret = fsops_mknod(FS(req, parent_), parent, name, S_IFREG | (mode & 07777), 0, &cr, &st);

	if (ret == -EEXIST && !(fi->flags & O_EXCL)) {
		/* lost a race with another creator: open what is there */
		ret = fsops_lookup(FS(req, parent_), parent, name, &st);
		if (ret == 0 && S_ISDIR(st.st_mode)) {
			forget_nodeid(req, st.st_ino, 1);
			ret = -EISDIR;
		} else if (ret == 0 && (fi->flags & O_TRUNC)) {
			/* the kernel takes the file for new and will not truncate it */
			ret = fsops_open(FS(req, parent_), I(st.st_ino), fi->flags, &cr);
			if (ret == 0)
				ret = fsops_getattr(FS(req, parent_), I(st.st_ino), &st);
			if (ret < 0)
				forget_nodeid(req, st.st_ino, 1);
		}
	}
	if (replied_err(req, OP_CREATE, parent, t0, ret))
		return;
	fill_entry(d, &e, &st);
	fi->keep_cache = 1;
	fi->noflush = 1;
	fuse_readahead_apply(&d->ra);	/* as gl_open */
	__atomic_fetch_add(&FS(req, parent_)->open_files, 1, __ATOMIC_SEQ_CST);
	writer_note(req, st.st_ino, fi, +1);
	if (fuse_reply_create(req, &e, fi) != 0) {
		__atomic_fetch_sub(&FS(req, parent_)->open_files, 1, __ATOMIC_SEQ_CST);
		writer_note(req, st.st_ino, fi, -1);
		forget_nodeid(req, st.st_ino, 1);
	}
}

/* What gl_read's spans reply needs besides the spans. */
struct read_reply {
	fuse_req_t req;
	uint64_t ino, t0;
	char *buf;		/* the memory spans point into it, in reply order */
};

/*
 * The reply of a read as spans (fsops_read_spans): memory as it is,
 * verified device ranges as FUSE_BUF_IS_FD buffers, which libfuse
 * splices from the device's page cache into a pipe and on to /dev/fuse
 * (FUSE_CAP_SPLICE_WRITE, gl_init): the kernel copies each byte once,
 * into the reader's page, where the ordinary reply copies it twice
 * (pread into our buffer, writev out of it).  libfuse copies instead
 * when the device bytes are under two pages or the pipe cannot grow.
 * Sent before returning: the spans hold only until then.
 */
static int reply_spans(void *arg, const struct data_spans *sp, size_t bytes)
{
	struct read_reply *r = arg;
	struct {
		struct fuse_bufvec bv;
		struct fuse_buf more[DATA_SPANS_MAX];
	} b;
	bool fds = false;

	op_end(OP_READ, r->ino, 0, r->t0);
	for (int i = 0; i < sp->n && !fds; i++)
		fds = sp->v[i].fd >= 0;
	/* memory only (holes, inline data, a read that went the ordinary
	 * way): it lies in buf in reply order, and writev copies it once,
	 * where libfuse's pipe would copy it in and out again */
	if (!fds) {
		fuse_reply_buf(r->req, bytes ? r->buf : NULL, bytes);
		return 0;
	}
	if (!pipe_fits(D(r->req), bytes, sp->n)) {
		/* many pieces: copy the device ranges in beside the memory
		 * ones (still verified: the spans hold) and reply the buffer */
		size_t at = 0;
		for (int i = 0; i < sp->n; at += sp->v[i].len, i++)
			if (sp->v[i].fd >= 0 &&
			    pread(sp->v[i].fd, r->buf + at, sp->v[i].len, (off_t)sp->v[i].pos) !=
				    (ssize_t)sp->v[i].len) {
				fuse_reply_err(r->req, EIO);
				return 0;
			}
		fuse_reply_buf(r->req, r->buf, bytes);
		return 0;
	}
	memset(&b.bv, 0, sizeof(b.bv));
	b.bv.count = (size_t)sp->n;
	for (int i = 0; i < sp->n; i++) {
		struct fuse_buf *f = &b.bv.buf[i];
		memset(f, 0, sizeof(*f));
		f->size = sp->v[i].len;
		if (sp->v[i].fd >= 0) {
			f->flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
			f->fd = sp->v[i].fd;
			f->pos = (off_t)sp->v[i].pos;
		} else {
			f->mem = (void *)sp->v[i].mem;
		}
	}
	fuse_reply_data(r->req, &b.bv, 0);
	return 0;
}

/* Reads smaller than this are replied the ordinary way: libfuse copies
 * device bytes under two pages anyway, and the spans' fixed costs
 * (mapping lookups, the pipe) outweigh one small copy. */
#define SPLICE_MIN (16 * 1024)

static void gl_read(fuse_req_t req, fuse_ino_t ino_, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	uint64_t ino = I(ino_);
	uint64_t t0 = op_start(OP_READ, ino);
	char *buf = malloc(size ? size : 1);
	ssize_t n;

	(void)fi;
	if (!buf) {
		reply_err(req, OP_READ, ino, t0, -ENOMEM);
		return;
	}
	if (D(req)->splice && size >= SPLICE_MIN && size <= DATA_SPANS_BYTES &&
	    pipe_fits(D(req), size, 1)) {
		struct read_reply r = { req, ino, t0, buf };
		struct data_spans *sp = malloc(sizeof(*sp));
		n = sp ? fsops_read_spans(FS(req, ino_), ino, buf, size, (uint64_t)off, sp,
					 reply_spans, &r) : -ENOMEM;
		free(sp);
		if (n < 0)
			reply_err(req, OP_READ, ino, t0, (int)n);
		free(buf);
		return;
	}
	n = fsops_read(FS(req, ino_), ino, buf, size, (uint64_t)off);
	if (!replied_err(req, OP_READ, ino, t0, n))
		fuse_reply_buf(req, buf, (size_t)n);
	free(buf);
}

static void gl_write(fuse_req_t req, fuse_ino_t ino_, const char *buf, size_t size,
		     off_t off, struct fuse_file_info *fi)
{
	uint64_t ino = I(ino_);
	uint64_t t0 = op_start(OP_WRITE, ino);
	struct fsops_cred cr = cred_of(req);
	bool dropped = false;
	ssize_t n;

	cr.dropped_privs = &dropped;
	/* with the writeback cache the kernel clears setuid/setgid itself
	 * (a SETATTR before the write), or, with KILLPRIV_V2, sends the
	 * writes that must clear them uncached, from the writer: those get
	 * the write rule here; cached WRITEs (writepage) keep the mode */
	cr.kernel_kills_privs = D(req)->writeback &&
				(!D(req)->killpriv_v2 || fi->writepage);
	cr.kernel_times = D(req)->writeback;
	n = fsops_write_as(FS(req, ino_), ino, buf, size, (uint64_t)off, &cr);
	/* the kernel refreshes size and times after a write, not the mode:
	 * a setuid/setgid bit the write cleared would stay in its cache for
	 * attr_timeout (attributes only, no pages: safe inside the write) */
	if (dropped)
		fuse_lowlevel_notify_inval_inode(D(req)->se, ino_, -1, 0);
	if (!replied_err(req, OP_WRITE, ino, t0, n))
		fuse_reply_write(req, (size_t)n);
}

static void gl_flush(fuse_req_t req, fuse_ino_t ino_, struct fuse_file_info *fi)
{
	uint64_t ino = I(ino_);
	uint64_t t0 = op_start(OP_FLUSH, ino);

	(void)fi;
	reply_err(req, OP_FLUSH, ino, t0, 0);
}

static void gl_release(fuse_req_t req, fuse_ino_t ino_, struct fuse_file_info *fi)
{
	uint64_t ino = I(ino_);
	uint64_t t0 = op_start(OP_RELEASE, ino);

	__atomic_fetch_sub(&FS(req, ino_)->open_files, 1, __ATOMIC_SEQ_CST);
	writer_note(req, ino_, fi, -1);
	reply_err(req, OP_RELEASE, ino, t0, 0);
}

static void gl_fsync(fuse_req_t req, fuse_ino_t ino_, int datasync, struct fuse_file_info *fi)
{
	uint64_t ino = I(ino_);
	uint64_t t0 = op_start(OP_FSYNC, ino);

	(void)fi;
	reply_err(req, OP_FSYNC, ino, t0, fsops_fsync(FS(req, ino_), ino, datasync));
}

static void gl_opendir(fuse_req_t req, fuse_ino_t ino_, struct fuse_file_info *fi)
{
	uint64_t ino = I(ino_);
	uint64_t t0 = op_start(OP_OPENDIR, ino);
	int ret = fsops_opendir(FS(req, ino_), ino);

	if (!replied_err(req, OP_OPENDIR, ino, t0, ret))
		opened(req, ino_, fi);
}

struct rd_buf {
	fuse_req_t req;
	struct glassfs_daemon *d;
	char *buf;
	size_t size, pos;
	int plus;
};

static int rd_emit(void *arg, const char *name, const struct stat *st, uint64_t next_off)
{
	struct rd_buf *b = arg;
	size_t need;

	if (b->plus) {
		struct fuse_entry_param e;
		fill_entry(b->d, &e, st);
		if (name[0] == '.' && (!name[1] || (name[1] == '.' && !name[2])))
			e.ino = 0;	/* "." and "..": no lookup is counted */
		need = fuse_add_direntry_plus(b->req, b->buf + b->pos, b->size - b->pos,
					      name, &e, (off_t)next_off);
	} else {
		need = fuse_add_direntry(b->req, b->buf + b->pos, b->size - b->pos,
					 name, st, (off_t)next_off);
	}
	if (need > b->size - b->pos)
		return 1;
	b->pos += need;
	return 0;
}

static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, int plus)
{
	int op = plus ? OP_READDIRPLUS : OP_READDIR;
	uint64_t t0 = op_start(op, ino);
	struct rd_buf b = { req, D(req), malloc(size), size, 0, plus };
	int ret;

	if (!b.buf) {
		reply_err(req, op, ino, t0, -ENOMEM);
		return;
	}
	ret = fsops_readdir(FS(req, ino), I(ino), (uint64_t)off, plus, rd_emit, &b);
	op_end(op, ino, ret, t0);
	if (ret < 0 && b.pos == 0)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_buf(req, b.buf, b.pos);
	free(b.buf);
}

static void gl_readdir(fuse_req_t req, fuse_ino_t ino_, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	(void)fi;
	do_readdir(req, ino_, size, off, 0);
}

static void gl_readdirplus(fuse_req_t req, fuse_ino_t ino_, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	(void)fi;
	do_readdir(req, ino_, size, off, 1);
}

static void gl_releasedir(fuse_req_t req, fuse_ino_t ino_, struct fuse_file_info *fi)
{
	uint64_t ino = I(ino_);
	uint64_t t0 = op_start(OP_RELEASEDIR, ino);

	(void)fi;
	__atomic_fetch_sub(&FS(req, ino_)->open_files, 1, __ATOMIC_SEQ_CST);
	reply_err(req, OP_RELEASEDIR, ino, t0, 0);
}

static void gl_fsyncdir(fuse_req_t req, fuse_ino_t ino_, int datasync,
			struct fuse_file_info *fi)
{
	uint64_t ino = I(ino_);
	uint64_t t0 = op_start(OP_FSYNCDIR, ino);

	(void)fi;
	reply_err(req, OP_FSYNCDIR, ino, t0, fsops_fsync(FS(req, ino_), ino, datasync));
}

static void gl_statfs(fuse_req_t req, fuse_ino_t ino_)
{
	uint64_t ino = I(ino_);
	uint64_t t0 = op_start(OP_STATFS, ino);
	struct statvfs sv;
	int ret = fsops_statfs(FS(req, ino_), &sv);

	if (!replied_err(req, OP_STATFS, ino, t0, ret))
		fuse_reply_statfs(req, &sv);
}

static void gl_setxattr(fuse_req_t req, fuse_ino_t ino_, const char *name,
			const char *value, size_t size, int flags)
{
	uint64_t ino = I(ino_);
	uint64_t t0 = op_start(OP_SETXATTR, ino);

	reply_err(req, OP_SETXATTR, ino, t0,
		  fsops_setxattr(FS(req, ino_), ino, name, value, size, flags));
}

static void gl_getxattr(fuse_req_t req, fuse_ino_t ino_, const char *name, size_t size)
{
	uint64_t ino = I(ino_);
	uint64_t t0 = op_start(OP_GETXATTR, ino);
	char *buf = size ? malloc(size) : NULL;
	int ret;

	if (size && !buf) {
		reply_err(req, OP_GETXATTR, ino, t0, -ENOMEM);
		return;
	}
	ret = fsops_getxattr(FS(req, ino_), ino, name, buf, size);
	if (!replied_err(req, OP_GETXATTR, ino, t0, ret)) {
		if (size == 0)
			fuse_reply_xattr(req, (size_t)ret);
		else
			fuse_reply_buf(req, buf, (size_t)ret);
	}
	free(buf);
}

static void gl_listxattr(fuse_req_t req, fuse_ino_t ino_, size_t size)
{
	uint64_t ino = I(ino_);
	uint64_t t0 = op_start(OP_LISTXATTR, ino);
	char *buf = size ? malloc(size) : NULL;
	int ret;

	if (size && !buf) {
		reply_err(req, OP_LISTXATTR, ino, t0, -ENOMEM);
		return;
	}
	ret = fsops_listxattr(FS(req, ino_), ino, buf, size);
	if (!replied_err(req, OP_LISTXATTR, ino, t0, ret)) {
		if (size == 0)
			fuse_reply_xattr(req, (size_t)ret);
		else
			fuse_reply_buf(req, buf, (size_t)ret);
	}
	free(buf);
}

static void gl_removexattr(fuse_req_t req, fuse_ino_t ino_, const char *name)
{
	uint64_t ino = I(ino_);
	uint64_t t0 = op_start(OP_REMOVEXATTR, ino);

	reply_err(req, OP_REMOVEXATTR, ino, t0, fsops_removexattr(FS(req, ino_), ino, name));
}

static void gl_access(fuse_req_t req, fuse_ino_t ino_, int mask)
{
	uint64_t ino = I(ino_);
	uint64_t t0 = op_start(OP_ACCESS, ino);
	struct stat st;

	(void)mask;	/* default_permissions: the kernel checks modes */
	reply_err(req, OP_ACCESS, ino, t0, fsops_getattr(FS(req, ino_), ino, &st));
}

static void gl_fallocate(fuse_req_t req, fuse_ino_t ino_, int mode, off_t offset,
			 off_t length, struct fuse_file_info *fi)
{
	uint64_t ino = I(ino_);
	uint64_t t0 = op_start(OP_FALLOCATE, ino);

	(void)fi;
	if (offset < 0 || length <= 0) {
		reply_err(req, OP_FALLOCATE, ino, t0, -EINVAL);
		return;
	}
	struct fsops_cred cr = cred_of(req);
	cr.kernel_times = D(req)->writeback;
	reply_err(req, OP_FALLOCATE, ino, t0,
		  fsops_fallocate_as(FS(req, ino_), ino, mode, (uint64_t)offset, (uint64_t)length,
				     &cr));
}

static void gl_lseek(fuse_req_t req, fuse_ino_t ino_, off_t off, int whence,
		     struct fuse_file_info *fi)
{
	uint64_t ino = I(ino_);
	uint64_t t0 = op_start(OP_LSEEK, ino);
	int64_t r;

	(void)fi;
	if (off < 0) {
		reply_err(req, OP_LSEEK, ino, t0, -EINVAL);
		return;
	}
	/*
	 * The kernel sends SEEK_DATA and SEEK_HOLE without writing its dirty
	 * pages back first (fuse_lseek), so with the writeback cache a file
	 * open for writing may hold data, and a size, we have not seen: the
	 * answer would be a hole (or ENXIO) where the writer's bytes are, and
	 * a sparse-aware copy (cp, tar -S) would skip them.  Invalidating
	 * the file's pages from off on makes the kernel write the dirty ones
	 * back first (launder: WRITEs other workers answer, so not with one
	 * worker thread) and wait for them.  Files nobody writes to have no
	 * dirty pages (a close writes them back): their cache stays.
	 */
	if (D(req)->writeback && (whence == SEEK_DATA || whence == SEEK_HOLE) &&
	    fsops_writers(FS(req, ino_), ino, 0) > 0) {
		if (D(req)->threads < 2) {
			/* no worker to answer the WRITEs: the kernel's own
			 * answer instead (data up to its size), for good */
			reply_err(req, OP_LSEEK, ino, t0, -ENOSYS);
			return;
		}
		fuse_lowlevel_notify_inval_inode(D(req)->se, ino_, off, 0);
	}
	r = fsops_lseek(FS(req, ino_), ino, (uint64_t)off, whence);
	if (!replied_err(req, OP_LSEEK, ino, t0, r))
		fuse_reply_lseek(req, (off_t)r);
}

/* Unmount: a running scrub is cancelled and joined before the core closes. */
static void gl_destroy(void *userdata)
{
	struct glassfs_daemon *d = userdata;

	scrub_service_free(d->scrub);
	d->scrub = NULL;
}

static void gl_ioctl(fuse_req_t req, fuse_ino_t ino_, unsigned int cmd, void *arg,
		     struct fuse_file_info *fi, unsigned flags, const void *in_buf,
		     size_t in_bufsz, size_t out_bufsz)
{
	uint64_t ino = I(ino_);
	struct glassfs_daemon *d = D(req);
	uint64_t t0 = op_start(OP_IOCTL, ino);

	(void)arg; (void)fi;
	if (flags & FUSE_IOCTL_COMPAT) {
		reply_err(req, OP_IOCTL, ino, t0, -ENOSYS);
		return;
	}
	if (_IOC_TYPE(cmd) == GLASSFS_IOC_MAGIC && _IOC_NR(cmd) >= 10 && _IOC_NR(cmd) <= 19) {
		int ret = fuse_subvol_ioctl(req, ino_, cmd, in_buf, in_bufsz, out_bufsz);
		op_end(OP_IOCTL, ino, ret, t0);
		return;
	}
	if (_IOC_TYPE(cmd) == GLASSFS_IOC_MAGIC && _IOC_NR(cmd) >= 20 && _IOC_NR(cmd) <= 29) {
		/* devices and balance: fs/services/volume_*.c (which may take a while) */
		char out[2048];
		size_t outsz = out_bufsz < sizeof(out) ? out_bufsz : sizeof(out);
		int ret = fuse_volume_ioctl(d->core, cmd, in_buf, in_bufsz, out, &outsz);

		if (!replied_err(req, OP_IOCTL, ino, t0, ret))
			fuse_reply_ioctl(req, 0, out, outsz);
		return;
	}
	if (cmd == GLASSFS_IOC_FS_INFO) {	/* fs/services/volinfo.c */
		struct glassfs_ioc_fs_info *o = malloc(sizeof(*o));
		bool reset = in_bufsz >= sizeof(*o) && ((const struct glassfs_ioc_fs_info *)in_buf)->reset;
		int ret = !o ? -ENOMEM : out_bufsz < sizeof(*o) ? -EINVAL : volinfo_get(d->core, o, reset);

		if (!replied_err(req, OP_IOCTL, ino, t0, ret))
			fuse_reply_ioctl(req, 0, o, sizeof(*o));
		free(o);
		return;
	}
	if (cmd == GLASSFS_IOC_STATS) {
		struct glassfs_ioc_stats out;
		struct core_stats s;
		uint32_t i = 0;

		if (out_bufsz < sizeof(out)) {
			reply_err(req, OP_IOCTL, ino, t0, -EINVAL);
			return;
		}
		mount_stats(d->core, &s);
		dir_cache_counts(FS(req, ino_), &s.name_cache_hits, &s.name_cache_misses);
		memset(&out, 0, sizeof(out));
		out.version = 1;
#define X(f) out.values[i++] = s.f;
		GLASSFS_STATS_FIELDS(X)
#undef X
		out.count = i;
		op_end(OP_IOCTL, ino, 0, t0);
		fuse_reply_ioctl(req, 0, &out, sizeof(out));
		return;
	}
	if (cmd == GLASSFS_IOC_COMMIT) {
		int ret = fsops_sync(FS(req, ino_));
		if (!replied_err(req, OP_IOCTL, ino, t0, ret))
			fuse_reply_ioctl(req, 0, NULL, 0);
		return;
	}
	if (cmd == GLASSFS_IOC_SCRUB_START) {
		struct glassfs_ioc_scrub in;
		int ret;

		if (in_bufsz < sizeof(in)) {
			reply_err(req, OP_IOCTL, ino, t0, -EINVAL);
			return;
		}
		memcpy(&in, in_buf, sizeof(in));
		ret = scrub_service_start(d->scrub, in.rate_bytes_per_s);
		if (!replied_err(req, OP_IOCTL, ino, t0, ret))
			fuse_reply_ioctl(req, 0, NULL, 0);
		return;
	}
	if (cmd == GLASSFS_IOC_SCRUB_STATUS) {
		struct glassfs_ioc_scrub out;

		if (out_bufsz < sizeof(out)) {
			reply_err(req, OP_IOCTL, ino, t0, -EINVAL);
			return;
		}
		scrub_service_status(d->scrub, &out);
		op_end(OP_IOCTL, ino, 0, t0);
		fuse_reply_ioctl(req, 0, &out, sizeof(out));
		return;
	}
	if (cmd == GLASSFS_IOC_SCRUB_CANCEL) {
		int ret = scrub_service_cancel(d->scrub);
		if (!replied_err(req, OP_IOCTL, ino, t0, ret))
			fuse_reply_ioctl(req, 0, NULL, 0);
		return;
	}
	if (cmd == FITRIM) {	/* fstrim(8): the whole volume; range.len gets the bytes trimmed */
		struct fstrim_range r;
		uint64_t trimmed = 0;
		int ret;

		if (in_bufsz < sizeof(r) || out_bufsz < sizeof(r)) {
			reply_err(req, OP_IOCTL, ino, t0, -EINVAL);
			return;
		}
		memcpy(&r, in_buf, sizeof(r));
		ret = trim_batch(d->core, r.minlen, &trimmed);
		op_end(OP_IOCTL, ino, ret, t0);
		r.len = trimmed;
		if (ret < 0)
			fuse_reply_err(req, -ret);
		else
			fuse_reply_ioctl(req, 0, &r, sizeof(r));
		return;
	}
	if (cmd == GLASSFS_IOC_TRIM) {
		struct glassfs_ioc_trim io;
		int ret;

		if (in_bufsz < sizeof(io) || out_bufsz < sizeof(io)) {
			reply_err(req, OP_IOCTL, ino, t0, -EINVAL);
			return;
		}
		memcpy(&io, in_buf, sizeof(io));
		io.trimmed = 0;
		ret = trim_batch(d->core, io.minlen, &io.trimmed);
		if (!replied_err(req, OP_IOCTL, ino, t0, ret))
			fuse_reply_ioctl(req, 0, &io, sizeof(io));
		return;
	}
	reply_err(req, OP_IOCTL, ino, t0, -ENOTTY);
}

const struct fuse_lowlevel_ops fuse_ll_ops = {
	.init		= gl_init,
	.destroy	= gl_destroy,
	.lookup		= gl_lookup,
	.forget		= gl_forget,
	.forget_multi	= gl_forget_multi,
	.getattr	= gl_getattr,
	.setattr	= gl_setattr,
	.readlink	= gl_readlink,
	.mknod		= gl_mknod,
	.mkdir		= gl_mkdir,
	.unlink		= gl_unlink,
	.rmdir		= gl_rmdir,
	.symlink	= gl_symlink,
	.rename		= gl_rename,
	.link		= gl_link,
	.open		= gl_open,
	.read		= gl_read,
	.write		= gl_write,
	.flush		= gl_flush,
	.release	= gl_release,
	.fsync		= gl_fsync,
	.opendir	= gl_opendir,
	.readdir	= gl_readdir,
	.readdirplus	= gl_readdirplus,
	.releasedir	= gl_releasedir,
	.fsyncdir	= gl_fsyncdir,
	.statfs		= gl_statfs,
	.setxattr	= gl_setxattr,
	.getxattr	= gl_getxattr,
	.listxattr	= gl_listxattr,
	.removexattr	= gl_removexattr,
	.access		= gl_access,
	.create		= gl_create,
	.fallocate	= gl_fallocate,
	.lseek		= gl_lseek,
	.ioctl		= gl_ioctl,
};
