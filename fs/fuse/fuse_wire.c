// SPDX-License-Identifier: MIT
/*
 * fuse_wire.c — the daemon's own reads and writes of /dev/fuse (libfuse's
 * custom I/O), for the one INIT flag libfuse 3.14 cannot ask for:
 * FUSE_HANDLE_KILLPRIV_V2.
 *
 * Why: without it, every buffered write(2) into a FUSE file first asks
 * the daemon for the file's security.capability xattr (the kernel's
 * file_remove_privs -> cap_inode_need_killpriv), a synchronous round trip
 * the writer waits for: with the writeback cache, 4 KiB random writes
 * spent 69% of fio's time waiting for that GETXATTR (glass-offcputime,
 * fio 12.9k IOPS; 38k without it).  KILLPRIV_V2 makes the kernel set
 * SB_NOSEC, so an inode found with neither setuid/setgid nor a
 * capability is marked S_NOSEC and its later writes skip the question
 * (the kernel clears the mark whenever it refreshes the attributes or a
 * security.* xattr changes).
 *
 * What it asks of the daemon, with the writeback cache (gl_init keeps it
 * to that mode): a write that must lose setuid/setgid comes from the
 * writer, uncached (the kernel writes through for it), instead of after
 * a SETATTR carrying the new mode: gl_write applies the write rule
 * (drop_privs) to every uncached WRITE, and cached WRITEs keep the mode
 * as before; a chown of a non-directory arrives without the mode the
 * kernel used to compute, so the daemon applies the chown rule
 * (fsops_cred.chown_kills_privs).  Truncates already apply the write
 * rule here when no mode comes with them (fsops_setattr_as).
 *
 * The INIT reply is the only message changed: the flag is added when the
 * kernel offered it and gl_init kept the writeback cache; d->killpriv_v2
 * says so to the handlers.  Everything else passes through untouched.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>
#include <unistd.h>

#include <linux/fuse.h>

#include "fs/fuse/fuse_ops.h"

/* The INIT request seen (its unique) and whether the kernel offered the
 * flag: set by the thread that read it, read by the one that replies
 * (the same worker, libfuse's loop) — atomics keep it simple. */
static uint64_t init_unique;
static int init_offers_v2;

static ssize_t wire_read(int fd, void *buf, size_t len, void *userdata)
{
	ssize_t n = read(fd, buf, len);
	const struct fuse_in_header *h = buf;

	(void)userdata;
	if (n >= (ssize_t)(sizeof(*h) + offsetof(struct fuse_init_in, flags) + sizeof(uint32_t)) &&
	    h->opcode == FUSE_INIT) {
		const struct fuse_init_in *in = (const void *)(h + 1);
		__atomic_store_n(&init_offers_v2, (in->flags & FUSE_HANDLE_KILLPRIV_V2) != 0,
				 __ATOMIC_SEQ_CST);
		__atomic_store_n(&init_unique, h->unique, __ATOMIC_SEQ_CST);
	}
	return n;	/* errno as read(2) left it: libfuse reads it */
}

static ssize_t wire_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	struct glassfs_daemon *d = userdata;

	if (count >= 2 && iov[0].iov_len >= sizeof(struct fuse_out_header)) {
		const struct fuse_out_header *oh = iov[0].iov_base;
		if (oh->error == 0 && oh->unique != 0 &&
		    oh->unique == __atomic_load_n(&init_unique, __ATOMIC_SEQ_CST) &&
		    __atomic_load_n(&init_offers_v2, __ATOMIC_SEQ_CST) && d->writeback &&
		    iov[1].iov_len >= offsetof(struct fuse_init_out, flags) + sizeof(uint32_t)) {
			struct fuse_init_out *out = iov[1].iov_base;
			out->flags |= FUSE_HANDLE_KILLPRIV_V2;
			out->flags &= ~(uint32_t)FUSE_HANDLE_KILLPRIV;
			/* INIT is answered once: no later reply is looked into */
			__atomic_store_n(&init_unique, 0, __ATOMIC_SEQ_CST);
			__atomic_store_n(&d->killpriv_v2, true, __ATOMIC_SEQ_CST);
		}
	}
	return writev(fd, iov, count);
}

/* Spliced replies (splice=on: fuse_reply_data with device ranges) pass
 * through untouched; libfuse offers FUSE_CAP_SPLICE_WRITE with custom
 * I/O only when this is set. */
static ssize_t wire_splice_send(int fdin, off_t *offin, int fdout, off_t *offout, size_t len,
				unsigned int flags, void *userdata)
{
	(void)userdata;
	return splice(fdin, offin, fdout, offout, len, flags);
}

int fuse_wire_tap(struct fuse_session *se)
{
	static const struct fuse_custom_io io = {
		.read = wire_read,
		.writev = wire_writev,
		.splice_send = wire_splice_send,
	};
	int fd = fuse_session_fd(se);

	/* after fuse_session_mount: the same fd, only the I/O calls change */
	return fd < 0 ? -EBADF : fuse_session_custom_io(se, &io, fd);
}
