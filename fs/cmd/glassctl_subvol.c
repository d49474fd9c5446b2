// SPDX-License-Identifier: MIT
/*
 * glassctl_subvol.c — `glassctl subvolume ...` (fs/format/ioctl.h, 10-19):
 *
 *   glassctl subvolume create PATH          a new, empty subvolume at PATH
 *   glassctl subvolume delete PATH          delete the subvolume at PATH (its
 *                                           space comes back in the background)
 *   glassctl subvolume list PATH            every subvolume of the volume
 *   glassctl subvolume snapshot [-r] SRC DST  snapshot subvolume SRC as DST
 *                                           (DST an existing directory: DST/basename(SRC))
 *
 * As btrfs-progs: ioctls on the parent directory of the name made or
 * removed; the daemon checks the caller's permissions the way the kernel
 * would (write+exec on the parent, owner or root for delete and snapshot).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fs/cmd/glassctl.h"
#include "fs/format/ioctl.h"

static void sv_usage(FILE *f)
{
	fprintf(f, "usage: glassctl subvolume create PATH\n"
		   "       glassctl subvolume delete PATH\n"
		   "       glassctl subvolume list PATH\n"
		   "       glassctl subvolume snapshot [-r] SRC DST\n");
}

static const char *why(int e)
{
	switch (e) {
	case ENOTTY:	return "not on a glassfs mount";
	case EEXIST:	return "the name exists already";
	case EBUSY:	return "the subvolume is in use (open files or directories)";
	case EPERM:	return "operation not permitted (the default subvolume, or not its owner)";
	case EACCES:	return "permission denied (need write and search permission on the parent directory)";
	case ENOTEMPTY:	return "the subvolume holds other subvolumes: delete those first";
	case EROFS:	return "read-only (a read-only snapshot or a read-only mount)";
	case EINVAL:	return "not a subvolume";
	case ENOSPC:	return "no space (or no subvolume ids) left";
	default:	return strerror(e);
	}
}

/* Split path into its parent directory and last name (trailing slashes
 * dropped).  Returns 0, or -1 with a message. */
static int split(const char *path, char *parent, size_t psz, char *name, size_t nsz)
{
	size_t n = strlen(path);
	const char *slash;

	while (n > 1 && path[n - 1] == '/')
		n--;
	if (n == 0 || n >= psz) {
		fprintf(stderr, "glassctl: bad path '%s'\n", path);
		return -1;
	}
	memcpy(parent, path, n);
	parent[n] = 0;
	slash = strrchr(parent, '/');
	if (!slash) {
		snprintf(name, nsz, "%s", parent);
		snprintf(parent, psz, ".");
	} else {
		snprintf(name, nsz, "%s", slash + 1);
		if (slash == parent)
			parent[1] = 0;
		else
			parent[slash - parent] = 0;
	}
	if (!name[0] || !strcmp(name, ".") || !strcmp(name, "..") ||
	    strlen(name) > GLASSFS_SUBVOL_NAME_MAX) {
		fprintf(stderr, "glassctl: '%s': needs a final name of 1-%d bytes (not . or ..)\n",
			path, GLASSFS_SUBVOL_NAME_MAX);
		return -1;
	}
	return 0;
}

static int subvol_info(const char *path, struct glassfs_ioc_subvol_info *info)
{
	int fd = glassctl_open_dir(path);

	if (fd < 0)
		return -1;
	memset(info, 0, sizeof(*info));
	if (ioctl(fd, GLASSFS_IOC_SUBVOL_INFO, info) < 0) {
		fprintf(stderr, "glassctl: %s: %s\n", path, why(errno));
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/* One ioctl on PATH's parent naming PATH's last component. */
static int on_parent(const char *path, unsigned long cmd, struct glassfs_ioc_subvol_args *a,
		     const char *what)
{
	char parent[4096];
	int fd;

	if (split(path, parent, sizeof(parent), a->name, sizeof(a->name)) < 0)
		return -1;
	fd = glassctl_open_dir(parent);
	if (fd < 0)
		return -1;
	if (ioctl(fd, cmd, a) < 0) {
		int e = errno;
		fprintf(stderr, "glassctl: %s '%s': %s\n", what, path, why(e));
		close(fd);
		errno = e;
		return -1;
	}
	close(fd);
	return 0;
}

static int sv_create(const char *path)
{
	struct glassfs_ioc_subvol_args a;

	memset(&a, 0, sizeof(a));
	if (on_parent(path, GLASSFS_IOC_SUBVOL_CREATE, &a, "cannot create subvolume") < 0)
		return 1;
	printf("Create subvolume '%s' (id %llu)\n", path, (unsigned long long)a.id);
	return 0;
}

static int sv_delete(const char *path)
{
	struct glassfs_ioc_subvol_info info;
	struct glassfs_ioc_subvol_args a;

	struct stat st;

	if (stat(path, &st) == 0 && !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "glassctl: cannot delete '%s': not a subvolume (not a directory)\n", path);
		return 1;
	}
	if (subvol_info(path, &info) < 0)
		return 1;
	if (!info.is_root) {
		fprintf(stderr, "glassctl: cannot delete '%s': not a subvolume (it is a directory inside subvolume %llu)\n",
			path, (unsigned long long)info.id);
		return 1;
	}
	if (info.id < 256) {
		fprintf(stderr, "glassctl: cannot delete '%s': it is the default subvolume (id %llu)\n",
			path, (unsigned long long)info.id);
		return 1;
	}
	memset(&a, 0, sizeof(a));
	if (on_parent(path, GLASSFS_IOC_SUBVOL_DELETE, &a, "cannot delete subvolume") < 0)
		return 1;
	printf("Delete subvolume (id %llu): '%s'\n", (unsigned long long)a.id, path);
	return 0;
}

/* syncfs(2) the mount that holds path: 0, or -1 after saying why. */
static int sync_source(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0 || syncfs(fd) < 0) {
		fprintf(stderr, "glassctl: cannot snapshot '%s': cannot write back its cached data "
			"(syncfs): %s\n", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

static int sv_snapshot(int rdonly, const char *src, const char *dst)
{
	struct glassfs_ioc_subvol_info info;
	struct glassfs_ioc_subvol_args a;
	char target[4096];
	struct stat st;

	if (stat(src, &st) == 0 && !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "glassctl: cannot snapshot '%s': not a subvolume (a snapshot's source "
			"must be the root directory of a subvolume; this is not a directory)\n", src);
		return 1;
	}
	if (subvol_info(src, &info) < 0)
		return 1;
	if (!info.is_root) {
		fprintf(stderr, "glassctl: cannot snapshot '%s': not a subvolume (a snapshot's source "
			"must be the root directory of a subvolume; this is inode %llu inside subvolume %llu)\n",
			src, (unsigned long long)info.ino, (unsigned long long)info.id);
		return 1;
	}
	/* an existing directory as DST: the snapshot goes inside it */
	if (stat(dst, &st) == 0 && S_ISDIR(st.st_mode)) {
		char sp[4096], sn[GLASSFS_SUBVOL_NAME_MAX + 1];
		if (split(src, sp, sizeof(sp), sn, sizeof(sn)) < 0)
			return 1;
		if (snprintf(target, sizeof(target), "%s/%s", dst, sn) >= (int)sizeof(target)) {
			fprintf(stderr, "glassctl: '%s': path too long\n", dst);
			return 1;
		}
	} else {
		snprintf(target, sizeof(target), "%s", dst);
	}
	/* The kernel's writeback cache may hold data written to SRC that the
	 * daemon has not seen (dirty pages, mmap writes included): write it
	 * back first, or the snapshot would miss what was written before it
	 * was asked for.  syncfs on the mount, from here, because the kernel
	 * flushes nothing before an ioctl and libfuse 3.14 has no syncfs
	 * request a daemon could act on. */
	if (sync_source(src) < 0)
		return 1;
	memset(&a, 0, sizeof(a));
	a.src_id = info.id;
	a.flags = rdonly ? GLASSFS_SUBVOL_RDONLY : 0;
	if (on_parent(target, GLASSFS_IOC_SNAP_CREATE, &a, "cannot snapshot to") < 0)
		return 1;
	printf("Create a%s snapshot of '%s' in '%s' (id %llu)\n", rdonly ? " readonly" : "",
	       src, target, (unsigned long long)a.id);
	return 0;
}

static int sv_list(const char *path)
{
	struct glassfs_ioc_subvol_list *io = calloc(1, sizeof(*io));
	int fd = glassctl_open_dir(path), ret = 0;

	if (!io || fd < 0) {
		free(io);
		if (fd >= 0)
			close(fd);
		return 1;
	}
	io->start_id = 256;
	for (;;) {
		if (ioctl(fd, GLASSFS_IOC_SUBVOL_LIST, io) < 0) {
			fprintf(stderr, "glassctl: %s: list: %s\n", path, why(errno));
			ret = 1;
			break;
		}
		for (uint32_t i = 0; i < io->count && i < GLASSFS_SUBVOL_LIST_MAX; i++) {
			struct glassfs_subvol_entry *e = &io->e[i];
			if (e->flags & GLASSFS_SUBVOL_DELETED) {
				printf("ID %llu gen %llu deleted (space being freed)\n",
				       (unsigned long long)e->id, (unsigned long long)e->generation);
				continue;
			}
			printf("ID %llu gen %llu top level %llu path %s%s\n",
			       (unsigned long long)e->id, (unsigned long long)e->generation,
			       (unsigned long long)e->parent, e->path,
			       (e->flags & GLASSFS_SUBVOL_RDONLY) ? " (readonly)" : "");
		}
		if (!io->more || !io->count)
			break;
		io->start_id = io->e[io->count - 1].id + 1;
	}
	close(fd);
	free(io);
	return ret;
}

/* argv[0] is "subvolume". */
int glassctl_subvolume(int argc, char **argv)
{
	const char *sub = argc > 1 ? argv[1] : "";

	if (!strcmp(sub, "create") && argc == 3)
		return sv_create(argv[2]);
	if (!strcmp(sub, "delete") && argc == 3)
		return sv_delete(argv[2]);
	if (!strcmp(sub, "list") && argc == 3)
		return sv_list(argv[2]);
	if (!strcmp(sub, "snapshot") && argc == 4)
		return sv_snapshot(0, argv[2], argv[3]);
	if (!strcmp(sub, "snapshot") && argc == 5 && !strcmp(argv[2], "-r"))
		return sv_snapshot(1, argv[3], argv[4]);
	sv_usage(stderr);
	return 2;
}
