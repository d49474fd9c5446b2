/* SPDX-License-Identifier: MIT */
/*
 * fuse_ops.h — the libfuse3 low-level glue: one thin function per FUSE
 * request that calls fsops.h and replies.  The daemon state is reached
 * through fuse_req_userdata(), never a global.
 */
#ifndef GLASSFS_FUSE_OPS_H
#define GLASSFS_FUSE_OPS_H

#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 312
#endif
#include <fuse_lowlevel.h>
#include "fs/ops/fsops.h"
#include "fs/fuse/fuse_readahead.h"

struct glassfs_daemon {
	struct core *core;		/* fixed while mounted */
	struct fsctx *fs;		/* fixed while mounted */
	double entry_timeout;		/* seconds the kernel may cache names */
	double attr_timeout;		/* ... and attributes */
	double neg_timeout;		/* ... and ENOENT lookups */
	bool writeback;			/* writeback_cache=on asked for; gl_init keeps it
					 * only when the kernel offers it.  Fixed after init */
	/* The kernel took FUSE_HANDLE_KILLPRIV_V2 (fuse_wire.c; only with
	 * the writeback cache): uncached WRITEs and chowns drop setuid and
	 * setgid here.  Set while INIT is answered, before any other request */
	bool killpriv_v2;
	bool splice;			/* splice=on asked for: reads replied as spliced
					 * device ranges; gl_init keeps it only when the
					 * kernel offers splice.  Fixed after init */
	size_t pipe_max;		/* the largest splice pipe (gl_init): bigger
					 * replies go the ordinary way */
	unsigned max_read;		/* the max_read mount option (0: none); gl_init
					 * gives libfuse the same (it refuses INIT else) */
	unsigned threads;		/* threads= (the most FUSE workers): gl_lseek */
	/* readahead_kb=: the mount's read-ahead window, set at the first
	 * OPEN or CREATE (fuse_readahead.h) */
	struct fuse_readahead ra;
	struct fuse_session *se;
	const char *mountpoint;		/* absolute, or NULL (subvolume delete: busy cwd check) */
	struct scrub_service *scrub;	/* fs/services/scrub.h: made at init, freed at destroy */
};

extern const struct fuse_lowlevel_ops fuse_ll_ops;

/* The largest READ (a page multiple) whose reply, one device range,
 * fits the splice pipe this process can have; 0: no pipe.  Below 1 MiB
 * without CAP_SYS_RESOURCE (pipe-max-size): main.c then caps READs
 * there with max_read, so O_DIRECT readers' 1 MiB READs come spliced in
 * two instead of copied whole. */
size_t fuse_ops_splice_max_read(void);

/* fuse_wire.c: route the session's /dev/fuse reads and writes through
 * the daemon, to answer INIT with FUSE_HANDLE_KILLPRIV_V2 (libfuse 3.14
 * has no flag for it).  After fuse_session_mount; 0 or -errno. */
int fuse_wire_tap(struct fuse_session *se);

/* fuse_subvol.c: the subvolume ioctls (numbers 10-19); replies, returns
 * 0 or -errno for the probe. */
int fuse_subvol_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd, const void *in_buf,
			 size_t in_bufsz, size_t out_bufsz);
/* fuse_volume.c: the device and balance ioctls (numbers 20-29): in/out as
 * the request carries them; -ENOTTY for other commands. */
int fuse_volume_ioctl(struct core *c, unsigned cmd, const void *in, size_t insz,
			 void *out, size_t *outsz);

#endif
