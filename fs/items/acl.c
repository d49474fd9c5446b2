// SPDX-License-Identifier: MIT
/*
 * acl.c — POSIX ACLs (acl.h), stored as the xattrs system.posix_acl_*
 * through xattr.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "fs/items/acl.h"
#include "fs/items/xattr.h"

/*
 * The kernel enforces ACLs (FUSE_CAP_POSIX_ACL): it reads
 * system.posix_acl_access/default through getxattr and checks them.  What
 * stays ours, as libfuse documents: keep the mode in step with the access
 * ACL (setxattr and chmod) and give new inodes their parent's default ACL.
 * The value is the kernel's xattr form: a version word, then entries of
 * (tag, perm, id), little-endian.
 */
#define ACL_VERSION	2
enum { ACL_USER_OBJ = 1, ACL_USER = 2, ACL_GROUP_OBJ = 4, ACL_GROUP = 8,
       ACL_MASK = 0x10, ACL_OTHER = 0x20 };

struct acl_entry {
	uint16_t tag, perm;
	uint32_t id;
};

static const char acl_access[] = "system.posix_acl_access";
static const char acl_default[] = "system.posix_acl_default";

/* Entry count of a well-formed value, else -EINVAL. */
static int acl_count(const void *value, size_t size)
{
	uint32_t ver;

	if (size < 4 || (size - 4) % sizeof(struct acl_entry))
		return -EINVAL;
	memcpy(&ver, value, 4);
	if (ver != ACL_VERSION)
		return -EINVAL;
	return (int)((size - 4) / sizeof(struct acl_entry));
}

static struct acl_entry *acl_entries(void *value)
{
	return (struct acl_entry *)((char *)value + 4);
}

/* The permission bits an access ACL stands for; -EINVAL if malformed. */
static int acl_mode(void *value, size_t size, uint32_t *mode)
{
	int n = acl_count(value, size);
	int u = -1, g = -1, m = -1, o = -1;
	struct acl_entry *e = acl_entries(value);

	if (n < 0)
		return n;
	for (int i = 0; i < n; i++) {
		int p = e[i].perm & 7;
		switch (e[i].tag) {
		case ACL_USER_OBJ: u = p; break;
		case ACL_GROUP_OBJ: g = p; break;
		case ACL_MASK: m = p; break;
		case ACL_OTHER: o = p; break;
		case ACL_USER: case ACL_GROUP: break;
		default: return -EINVAL;
		}
	}
	if (u < 0 || g < 0 || o < 0)
		return -EINVAL;
	*mode = (uint32_t)(u << 6 | (m >= 0 ? m : g) << 3 | o);
	return 0;
}

/* Mask the ACL's owner, group-class and other perms by mode (as
 * posix_acl_create does); returns the resulting permission bits. */
static uint32_t acl_apply_mode(void *value, int n, uint32_t mode)
{
	struct acl_entry *e = acl_entries(value), *g = NULL, *m = NULL;
	uint32_t out = 0;

	for (int i = 0; i < n; i++) {
		if (e[i].tag == ACL_USER_OBJ) {
			e[i].perm &= (mode >> 6) & 7;
			out |= (uint32_t)e[i].perm << 6;
		} else if (e[i].tag == ACL_GROUP_OBJ) {
			g = &e[i];
		} else if (e[i].tag == ACL_MASK) {
			m = &e[i];
		} else if (e[i].tag == ACL_OTHER) {
			e[i].perm &= mode & 7;
			out |= e[i].perm;
		}
	}
	if (m)
		g = m;
	if (g) {
		g->perm &= (mode >> 3) & 7;
		out |= (uint32_t)g->perm << 3;
	}
	return out;
}

/* Set the ACL's owner, group-class and other perms to mode (chmod). */
static void acl_set_mode(void *value, int n, uint32_t mode)
{
	struct acl_entry *e = acl_entries(value);
	bool has_mask = false;

	for (int i = 0; i < n; i++)
		if (e[i].tag == ACL_MASK)
			has_mask = true;
	for (int i = 0; i < n; i++) {
		if (e[i].tag == ACL_USER_OBJ)
			e[i].perm = (mode >> 6) & 7;
		else if (e[i].tag == (has_mask ? ACL_MASK : ACL_GROUP_OBJ))
			e[i].perm = (mode >> 3) & 7;
		else if (e[i].tag == ACL_OTHER)
			e[i].perm = mode & 7;
	}
}

/* An ACL of only owner, group and other says nothing the mode does not. */
static bool acl_is_minimal(void *value, int n)
{
	struct acl_entry *e = acl_entries(value);

	for (int i = 0; i < n; i++)
		if (e[i].tag != ACL_USER_OBJ && e[i].tag != ACL_GROUP_OBJ && e[i].tag != ACL_OTHER)
			return false;
	return true;
}

static int acl_read(struct fsctx *fs, uint64_t ino, const char *name, char **out)
{
	int size = xattr_get(fs, ino, name, NULL, 0);
	char *buf;

	if (size < 0)
		return size;
	buf = malloc((size_t)size + 1);
	if (!buf)
		return -ENOMEM;
	size = xattr_get(fs, ino, name, buf, (size_t)size);
	if (size < 0) {
		free(buf);
		return size;
	}
	*out = buf;
	return size;
}

int acl_create(struct fsctx *fs, struct inode *dp, uint32_t *mode, uint32_t umask,
	       void **acl, size_t *acl_size)
{
	char *def;
	int size, n;

	*acl = NULL;
	*acl_size = 0;
	if (S_ISLNK(*mode))
		return 0;
	size = dp->def_acl == DEF_ACL_NONE ? -ENODATA
					    : acl_read(fs, dp->ino, acl_default, &def);
	if (size == -ENODATA) {
		dp->def_acl = DEF_ACL_NONE;
		*mode &= ~(umask & 0777);
		return 0;
	}
	if (size < 0)
		return size;
	dp->def_acl = DEF_ACL_PRESENT;
	n = acl_count(def, (size_t)size);
	if (n < 0) {		/* a bad stored default: behave as if absent */
		free(def);
		*mode &= ~(umask & 0777);
		return 0;
	}
	*mode = (*mode & ~0777u) | acl_apply_mode(def, n, *mode);
	*acl = def;
	*acl_size = (size_t)size;
	return 0;
}

int acl_create_finish(struct txn *t, struct fsctx *fs, struct inode *ip, void *acl,
		      size_t size)
{
	int n, ret = 0;

	if (!acl)
		return 0;
	if (S_ISDIR(ip->item.mode))
		ret = xattr_set(t, fs, ip->ino, acl_default, acl, size, 0);
	n = acl_count(acl, size);
	if (ret == 0 && n > 0) {
		acl_apply_mode(acl, n, ip->item.mode);
		if (!acl_is_minimal(acl, n))
			ret = xattr_set(t, fs, ip->ino, acl_access, acl, size, 0);
	}
	free(acl);
	return ret;
}

int acl_chmod(struct txn *t, struct fsctx *fs, struct inode *ip)
{
	char *acl;
	int size = acl_read(fs, ip->ino, acl_access, &acl), n, ret;

	if (size == -ENODATA)
		return 0;
	if (size < 0)
		return size;
	n = acl_count(acl, (size_t)size);
	if (n < 0) {
		free(acl);
		return 0;
	}
	acl_set_mode(acl, n, ip->item.mode);
	ret = xattr_set(t, fs, ip->ino, acl_access, acl, (size_t)size, XATTR_REPLACE);
	free(acl);
	return ret;
}

int acl_set_check(struct inode *ip, const char *name, const void *value, size_t size,
		  uint32_t *mode)
{
	char *copy;
	uint32_t perm;
	int ret;

	*mode = ip->item.mode;
	if (!strcmp(name, acl_default)) {
		ip->def_acl = DEF_ACL_UNKNOWN;
		if (!S_ISDIR(ip->item.mode))
			return size ? -EACCES : 0;
		return size ? (acl_count(value, size) < 0 ? -EINVAL : 0) : 0;
	}
	if (strcmp(name, acl_access) || !size)
		return 0;
	copy = malloc(size);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, value, size);
	ret = acl_mode(copy, size, &perm);
	free(copy);
	if (ret == 0)
		*mode = (ip->item.mode & ~0777u) | perm;
	return ret;
}
