/* SPDX-License-Identifier: MIT */
/*
 * fsops.h — the POSIX-level operations the FUSE glue calls.
 *
 * Each operation is one function returning 0 (or a byte count) or -errno;
 * it joins the running transaction for its changes (txn_join, with
 * TXN_USE_RESERVE for those that free space), locks the inodes it touches
 * in ino order, and writes items through dir.c, xattr.c and file.c.  The
 * state is reached through struct fsctx (inode.h); there are no globals.
 * Nothing here includes FUSE headers.
 *
 * Lookup counting (FUSE's forget protocol): every function that returns
 * an entry (lookup, create, mknod, mkdir, symlink, link) counts one kernel
 * lookup on the inode it returns; fsops_forget() gives them back.
 * Permission checks are the kernel's (default_permissions).
 */
#ifndef GLASSFS_FSOPS_H
#define GLASSFS_FSOPS_H

#include <stdint.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include "fs/items/inode.h"
#include "fs/trees/data_span.h"

/* Mount the default fs tree: create the root directory on first mount,
 * free orphans left by a crash, find the next inode number. */
int fsops_mount(struct core *c, const struct core_opts *o, struct fsctx **out);
/* One subvolume's fs tree: fsctx_mount_tree (fs/items/inode.h). */
void fsops_unmount(struct fsctx *fs);

/* struct fsops_cred: fs/items/inode.h */

int fsops_lookup(struct fsctx *fs, uint64_t parent, const char *name, struct stat *st);
void fsops_forget(struct fsctx *fs, uint64_t ino, uint64_t nlookup);
int fsops_getattr(struct fsctx *fs, uint64_t ino, struct stat *st);

enum {				/* fsops_setattr's valid mask */
	FSOPS_SET_MODE = 1 << 0,
	FSOPS_SET_UID = 1 << 1,
	FSOPS_SET_GID = 1 << 2,
	FSOPS_SET_SIZE = 1 << 3,
	FSOPS_SET_ATIME = 1 << 4,
	FSOPS_SET_MTIME = 1 << 5,
	FSOPS_SET_ATIME_NOW = 1 << 6,
	FSOPS_SET_MTIME_NOW = 1 << 7,
	FSOPS_SET_CTIME = 1 << 8,
	/* Move ctime and, on a regular file, drop setuid/setgid by the rule
	 * of a write by cr (drop_privs), and nothing else: what an empty
	 * SETATTR asks (fuse_ops.c gl_setattr): chown(-1, -1), or the
	 * kernel's file_remove_privs when a mode cannot say it. */
	FSOPS_KILL_PRIVS = 1 << 9,
};
int fsops_setattr(struct fsctx *fs, uint64_t ino, const struct stat *in, int valid,
		  struct stat *out);
/* The same, by a caller: a truncate (size without mode) drops setuid and
 * setgid by the rule of a write (fsops_write_as); fsops_setattr: cr NULL. */
int fsops_setattr_as(struct fsctx *fs, uint64_t ino, const struct stat *in, int valid,
		     struct stat *out, const struct fsops_cred *cr);

int fsops_mknod(struct fsctx *fs, uint64_t parent, const char *name, mode_t mode,
		dev_t rdev, const struct fsops_cred *cr, struct stat *st);
int fsops_mkdir(struct fsctx *fs, uint64_t parent, const char *name, mode_t mode,
		const struct fsops_cred *cr, struct stat *st);
int fsops_symlink(struct fsctx *fs, uint64_t parent, const char *name,
		  const char *target, const struct fsops_cred *cr, struct stat *st);
int fsops_link(struct fsctx *fs, uint64_t ino, uint64_t newparent, const char *newname,
	       struct stat *st);
int fsops_unlink(struct fsctx *fs, uint64_t parent, const char *name);
int fsops_rmdir(struct fsctx *fs, uint64_t parent, const char *name);
#define FSOPS_RENAME_NOREPLACE 1	/* = RENAME_NOREPLACE */
#define FSOPS_RENAME_EXCHANGE 2		/* = RENAME_EXCHANGE */
int fsops_rename(struct fsctx *fs, uint64_t parent, const char *name,
		 uint64_t newparent, const char *newname, unsigned flags);
/* Target into buf (NUL-terminated when it fits); length or -errno. */
ssize_t fsops_readlink(struct fsctx *fs, uint64_t ino, char *buf, size_t size);

/* Checks the open flags; O_TRUNC on a regular file truncates it to 0 and
 * moves mtime and ctime (FUSE's atomic O_TRUNC: no SETATTR follows); cr
 * is the caller's (only its uid counts: setuid survives root's O_TRUNC). */
int fsops_open(struct fsctx *fs, uint64_t ino, int flags, const struct fsops_cred *cr);
/* Handles open for writing on ino: delta +1 when one opens, -1 when it is
 * released, 0 to ask.  The count after the change, or -errno. */
int fsops_writers(struct fsctx *fs, uint64_t ino, int delta);
ssize_t fsops_read(struct fsctx *fs, uint64_t ino, void *buf, size_t size, uint64_t off);
/*
 * fsops_read whose reply is sent by reply(arg, sp, bytes) with the file's
 * data as spans (fs/trees/data_span.h): verified device ranges the caller
 * splices, and memory in buf (size bytes: holes, inline data; the whole
 * read when the zero-copy way cannot serve it).  reply runs while the
 * spans hold (inode read lock, c->reloc_lock shared), so it must send the
 * bytes before it returns, and do nothing else.  Returns reply's result
 * (the FUSE layer's is always 0: it replied), or -errno with no reply
 * sent.
 */
typedef int (*fsops_reply_fn)(void *arg, const struct data_spans *sp, size_t bytes);
ssize_t fsops_read_spans(struct fsctx *fs, uint64_t ino, void *buf, size_t size, uint64_t off,
			 struct data_spans *sp, fsops_reply_fn reply, void *arg);
ssize_t fsops_write(struct fsctx *fs, uint64_t ino, const void *buf, size_t size,
		    uint64_t off);
/* The same, by a caller: a write clears setuid (and setgid on a
 * group-executable file), as FUSE_CAP_HANDLE_KILLPRIV makes it the
 * daemon's to do, unless cr is root's — the kernel keeps them for a caller
 * with CAP_FSETID, which a daemon cannot see.  fsops_write: cr NULL. */
ssize_t fsops_write_as(struct fsctx *fs, uint64_t ino, const void *buf, size_t size,
		       uint64_t off, const struct fsops_cred *cr);
int fsops_fsync(struct fsctx *fs, uint64_t ino, int datasync);
int fsops_fallocate(struct fsctx *fs, uint64_t ino, int mode, uint64_t off, uint64_t len);
/* ... for the caller cr: cr->kernel_times leaves mtime and ctime alone */
int fsops_fallocate_as(struct fsctx *fs, uint64_t ino, int mode, uint64_t off, uint64_t len,
		       const struct fsops_cred *cr);
int64_t fsops_lseek(struct fsctx *fs, uint64_t ino, uint64_t off, int whence);

/*
 * readdir from offset off (0 = start; an entry's offset is where the next
 * call resumes).  emit() returns nonzero when the reply is full (that
 * entry was not taken).  With plus, st is filled and the entry counts one
 * lookup when emit() took it (fsops_readdir undoes it otherwise).
 */
typedef int (*fsops_emit_fn)(void *arg, const char *name, const struct stat *st,
			     uint64_t next_off);
int fsops_readdir(struct fsctx *fs, uint64_t ino, uint64_t off, int plus,
		  fsops_emit_fn emit, void *arg);
int fsops_opendir(struct fsctx *fs, uint64_t ino);

int fsops_statfs(struct fsctx *fs, struct statvfs *sv);

int fsops_setxattr(struct fsctx *fs, uint64_t ino, const char *name, const void *value,
		   size_t size, int flags);
int fsops_getxattr(struct fsctx *fs, uint64_t ino, const char *name, void *buf, size_t size);
int fsops_listxattr(struct fsctx *fs, uint64_t ino, char *buf, size_t size);
int fsops_removexattr(struct fsctx *fs, uint64_t ino, const char *name);

/* Commit and wait (sync, syncfs). */
int fsops_sync(struct fsctx *fs);

#endif
