/* SPDX-License-Identifier: MIT */
/*
 * acl.h — POSIX ACLs.  Stored as the xattrs system.posix_acl_access and
 * system.posix_acl_default (xattr.h) and enforced by the kernel
 * (FUSE_CAP_POSIX_ACL); these functions keep the mode in step with them
 * and give new inodes their parent's default ACL.  Callers hold the
 * inode's lock (write for changes).
 */
#ifndef GLASSFS_ACL_H
#define GLASSFS_ACL_H

#include <stddef.h>
#include <stdint.h>
#include "fs/items/inode.h"

/*
 * Creating an inode of *mode in directory dp (locked): with a default ACL
 * on dp, *mode is masked by it (as posix_acl_create does) and *acl gets a
 * copy of it for acl_create_finish; without one the umask applies and
 * *acl is NULL.  Cheap when dp is known to have no default ACL.
 */
int acl_create(struct fsctx *fs, struct inode *dp, uint32_t *mode, uint32_t umask,
	       void **acl, size_t *acl_size);
/* The new inode ip takes acl (from acl_create; NULL: nothing) as its
 * access ACL, and as its default ACL if it is a directory.  Frees acl. */
int acl_create_finish(struct txn *t, struct fsctx *fs, struct inode *ip, void *acl,
		      size_t size);
/* After a chmod: the access ACL's owner, group-class (mask) and other
 * perms follow ip->item.mode. */
int acl_chmod(struct txn *t, struct fsctx *fs, struct inode *ip);
/*
 * Before setting xattr name on ip: *mode gets the mode the inode must
 * take (an access ACL sets its permission bits).  -EINVAL for a malformed
 * ACL, -EACCES for a default ACL on a non-directory.
 */
int acl_set_check(struct inode *ip, const char *name, const void *value, size_t size,
		  uint32_t *mode);

#endif
