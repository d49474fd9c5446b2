// SPDX-License-Identifier: MIT
/*
 * fuse_subvol.c — the subvolume ioctls (fs/format/ioctl.h, numbers 10-19) on a
 * mounted glassfs: decode, check, call subvol.c, reply, and tell the
 * kernel that a name changed under it (a name made or removed by an ioctl
 * is not a request the kernel's dentry cache saw).
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs/fuse/fuse_ops.h"
#include "fs/format/ioctl.h"
#include "fs/items/subvol.h"

/*
 * Is some process's working directory (or root) at or below dir?  The
 * kernel does not tell a FUSE daemon about working directories, so look
 * at /proc the way fuser(1) does: a subvolume in use that way is busy.
 * readlink of /proc/PID/cwd never calls into this filesystem.
 */
static bool cwd_inside(const char *dir)
{
	size_t len = strlen(dir);
	DIR *p = opendir("/proc");
	struct dirent *de;
	bool found = false;

	if (!p)
		return false;
	while (!found && (de = readdir(p))) {
		static const char *const links[] = { "cwd", "root" };
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		for (int i = 0; i < 2 && !found; i++) {
			char path[300], target[PATH_MAX];
			ssize_t n;

			snprintf(path, sizeof(path), "/proc/%s/%s", de->d_name, links[i]);
			n = readlink(path, target, sizeof(target) - 1);
			if (n <= 0)
				continue;
			target[n] = 0;
			found = !strncmp(target, dir, len) && (target[len] == 0 || target[len] == '/');
		}
	}
	closedir(p);
	return found;
}

/* The subvolume named name in dir of fs: is it some process's cwd? */
static bool subvol_cwd_busy(struct glassfs_daemon *d, struct fsctx *fs, uint64_t dir,
			    const char *name)
{
	char rel[4096], full[PATH_MAX + 4096];

	if (!d->mountpoint || subvol_dir_path(fs, dir, rel, sizeof(rel)) < 0)
		return false;
	snprintf(full, sizeof(full), "%s%s/%s", strcmp(d->mountpoint, "/") ? d->mountpoint : "",
		 rel, name);
	return cwd_inside(full);
}

static void reply(fuse_req_t req, int ret, const void *out, size_t size)
{
	if (ret < 0)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_ioctl(req, 0, out, size);
}

int fuse_subvol_ioctl(fuse_req_t req, fuse_ino_t nodeid, unsigned int cmd, const void *in_buf,
			 size_t in_bufsz, size_t out_bufsz)
{
	struct glassfs_daemon *d = fuse_req_userdata(req);
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct fsops_cred cr = { .uid = ctx->uid, .gid = ctx->gid };
	struct fsctx *fs = subvol_fs(d->fs, subvol_of_nodeid(nodeid));
	uint64_t ino = nodeid == FUSE_ROOT_ID ? ROOT_DIR_INO : nodeid & SUBVOL_INO_MASK;
	int ret;

	if (cmd == GLASSFS_IOC_SUBVOL_INFO) {
		struct glassfs_ioc_subvol_info out;

		if (out_bufsz < sizeof(out))
			ret = -EINVAL;
		else
			ret = subvol_info(fs, ino, &out);
		reply(req, ret, &out, sizeof(out));
		return ret;
	}
	if (cmd == GLASSFS_IOC_SUBVOL_LIST) {
		static struct glassfs_ioc_subvol_list zero;
		struct glassfs_ioc_subvol_list *io = malloc(sizeof(*io));

		if (!io)
			ret = -ENOMEM;
		else if (in_bufsz < sizeof(io->start_id) || out_bufsz < sizeof(*io))
			ret = -EINVAL;
		else {
			*io = zero;
			memcpy(&io->start_id, in_buf, sizeof(io->start_id));
			ret = subvol_list(fs, io);
		}
		reply(req, ret, io, sizeof(*io));
		free(io);
		return ret;
	}
	if (cmd == GLASSFS_IOC_SUBVOL_CREATE || cmd == GLASSFS_IOC_SNAP_CREATE ||
	    cmd == GLASSFS_IOC_SUBVOL_DELETE) {
		struct glassfs_ioc_subvol_args a;

		if (in_bufsz < sizeof(a) || out_bufsz < sizeof(a)) {
			reply(req, -EINVAL, NULL, 0);
			return -EINVAL;
		}
		memcpy(&a, in_buf, sizeof(a));
		a.name[GLASSFS_SUBVOL_NAME_MAX] = 0;
		a.id = 0;
		if (cmd == GLASSFS_IOC_SUBVOL_CREATE) {
			ret = subvol_create(fs, ino, a.name, &cr, &a.id);
		} else if (cmd == GLASSFS_IOC_SUBVOL_DELETE) {
			ret = subvol_cwd_busy(d, fs, ino, a.name) ? -EBUSY :
			      subvol_delete(fs, ino, a.name, &cr, &a.id);
		} else if (a.src_id != FS_TREE_OBJECTID &&
			   (a.src_id < FIRST_SUBVOL_OBJECTID || a.src_id > SUBVOL_MAX_ID)) {
			ret = -EINVAL;
		} else {
			ret = subvol_snapshot(subvol_fs(d->fs, a.src_id), fs, ino, a.name,
					      (a.flags & GLASSFS_SUBVOL_RDONLY) != 0, &cr, &a.id);
		}
		/* the kernel may hold a negative entry for a new name, or the
		 * removed one: drop it before the caller learns it changed
		 * (an ioctl holds no lock of the parent's, so no deadlock) */
		if (ret == 0 && d->se) {
			fuse_lowlevel_notify_inval_entry(d->se, nodeid, a.name, strlen(a.name));
			fuse_lowlevel_notify_inval_inode(d->se, nodeid, -1, 0);	/* nlink, times */
		}
		reply(req, ret, &a, sizeof(a));
		return ret;
	}
	reply(req, -ENOTTY, NULL, 0);
	return -ENOTTY;
}
