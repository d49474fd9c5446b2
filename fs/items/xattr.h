/* SPDX-License-Identifier: MIT */
/*
 * xattr.h — extended attributes (XATTR_ITEM, items_format.h).  Names are
 * stored whole ("user.x", "security.x", "system.posix_acl_access", ...)
 * and values byte for byte.  POSIX ACLs (system.posix_acl_*) are stored
 * the same way (acl.h).  Callers hold the inode's lock (write for changes).
 */
#ifndef GLASSFS_XATTR_H
#define GLASSFS_XATTR_H

#include <stddef.h>
#include "fs/items/inode.h"

#define XATTR_NAME_MAX_LEN 255

/* Copy the value into buf (size 0: just measure).  Value size, -ENODATA,
 * -ERANGE when buf is too small, -errno. */
int xattr_get(struct fsctx *fs, uint64_t ino, const char *name, void *buf, size_t size);
/* flags: XATTR_CREATE (-EEXIST), XATTR_REPLACE (-ENODATA).  -E2BIG when
 * the value cannot fit in an item. */
int xattr_set(struct txn *t, struct fsctx *fs, uint64_t ino, const char *name,
	      const void *value, size_t size, int flags);
int xattr_remove(struct txn *t, struct fsctx *fs, uint64_t ino, const char *name);
/* NUL-separated names into buf (size 0: measure).  Total size, -ERANGE. */
int xattr_list(struct fsctx *fs, uint64_t ino, char *buf, size_t size);

#endif
