// SPDX-License-Identifier: MIT
/*
 * meta_io.c — metadata I/O: read a node block from the first good copy,
 * write a block to every copy of its chunk.  raid5/6 chunks go through
 * parity.c: a node there owns whole rows (the allocator rounds its run
 * up), so writing it writes fresh rows only, and reading it rebuilds
 * what its checksum says is wrong.
 */
#include "fs/core/core_types.h"
#include "fs/store/chunk.h"
#include "fs/store/copy_fence.h"
#include "fs/store/dev.h"
#include "fs/store/dev_readahead.h"
#include "fs/store/parity.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* meta_read's verify, optional (NULL passes every block). */
struct verify_fn {
	int (*fn)(const void *buf, uint64_t bytenr, void *arg);
	void *arg;
};

static int verify_any(const void *buf, uint64_t bytenr, void *arg)
{
	const struct verify_fn *v = arg;

	return v->fn ? v->fn(buf, bytenr, v->arg) : 0;
}

int meta_read(struct core *c, uint64_t bytenr, void *buf,
	      int (*verify)(const void *buf, uint64_t bytenr, void *arg), void *arg)
{
	struct chunk_copy cp[CHUNK_MAX_STRIPES];
	int n, last = -EIO;

	if (chunk_map_is_parity(c, bytenr)) {	/* raid5/6: rebuilt and checked by parity.c */
		int ret = parity_read_verified(c, bytenr, c->nodesize, buf, verify_any,
					       &(struct verify_fn){ verify, arg });
		if (ret)
			core_log(c, "metadata block %llu (raid5/6): no set of columns parity can "
				 "rebuild makes it verify", (unsigned long long)bytenr);
		return ret;
	}
	n = chunk_map_lookup(c, bytenr, c->nodesize, cp, NULL);
	if (n < 0) {
		core_log(c, "metadata block %llu is not inside any chunk",
			 (unsigned long long)bytenr);
		return -EIO;
	}
	for (int i = 0; i < n; i++) {
		int ret = dev_read(cp[i].dev, cp[i].physical, buf, c->nodesize);
		if (ret) {
			core_log(c, "metadata block %llu: read error on %s at %llu: %s%s",
				 (unsigned long long)bytenr, cp[i].dev->path,
				 (unsigned long long)cp[i].physical, strerror(-ret),
				 i + 1 < n ? ", trying the next copy" : "");
			last = -EIO;
			continue;
		}
		ret = verify ? verify(buf, bytenr, arg) : 0;
		if (!ret) {
			if (i > 0) {
				__atomic_fetch_add(&c->degraded, 1, __ATOMIC_RELAXED);
				core_log(c, "metadata block %llu: degraded, served from copy %d on %s",
					 (unsigned long long)bytenr, i + 1, cp[i].dev->path);
			}
			return 0;
		}
		__atomic_fetch_add(&c->csum_errors, 1, __ATOMIC_RELAXED);
		dev_note_error(cp[i].dev, DEV_ERR_CORRUPTION);
		core_log(c, "metadata block %llu: copy on %s at %llu fails verification%s",
			 (unsigned long long)bytenr, cp[i].dev->path,
			 (unsigned long long)cp[i].physical,
			 i + 1 < n ? ", trying the next copy" : "");
		last = -EIO;
	}
	memset(buf, 0, c->nodesize);	/* never hand out the bad bytes */
	return last;
}

/*
 * Write buf to every copy of [logical, +len), which lies inside one
 * chunk element (chunk_map_piece).  With several copies a failing one
 * degrades (counted, logged) instead of failing the write; the write
 * fails only when no copy took it.
 */
static int write_piece(struct core *c, uint64_t logical, const void *buf, uint64_t len,
		       const char *what)
{
	struct chunk_copy cp[2 * CHUNK_MAX_STRIPES];
	int n, ok = 0, last = 0;

	glock_read(&c->reloc_lock);
	int ticket = copy_fence_enter(c, logical, len);
	n = chunk_map_lookup_write(c, logical, len, cp);
	if (n < 0) {
		copy_fence_exit(c, ticket);
		glock_read_unlock(&c->reloc_lock);
		core_log(c, "%s %llu is not inside any chunk", what, (unsigned long long)logical);
		return -EIO;
	}
	for (int i = 0; i < n; i++) {
		int ret = dev_write(cp[i].dev, cp[i].physical, buf, len);
		if (!ret) {
			/* a large data write's bytes start out now (node
			 * writes are far under its minimum) */
			dev_readahead_written(c, cp[i].dev, cp[i].physical, len);
			ok++;
			continue;
		}
		last = ret;
		if (n > 1) {
			__atomic_fetch_add(&c->degraded, 1, __ATOMIC_RELAXED);
			core_log(c, "%s %llu+%llu: write error on %s at %llu: %s; degraded (%d copies left)",
				 what, (unsigned long long)logical, (unsigned long long)len,
				 cp[i].dev->path, (unsigned long long)cp[i].physical,
				 strerror(-ret), n - 1);
		}
	}
	copy_fence_exit(c, ticket);
	glock_read_unlock(&c->reloc_lock);
	return ok ? 0 : last;
}

int meta_write_copies(struct core *c, uint64_t logical, const void *buf, uint64_t len,
		      const char *what)
{
	if (chunk_map_is_parity(c, logical)) {	/* raid5/6: whole rows */
		int ret;
		glock_read(&c->reloc_lock);
		int ticket = copy_fence_enter(c, logical, len);
		ret = parity_write(c, logical, buf, len);
		copy_fence_exit(c, ticket);
		glock_read_unlock(&c->reloc_lock);
		if (ret)
			core_log(c, "%s %llu+%llu: %s", what, (unsigned long long)logical,
				 (unsigned long long)len, strerror(-ret));
		return ret;
	}
	for (uint64_t off = 0; off < len;) {
		uint64_t n = chunk_map_piece(c, logical + off, len - off);
		int ret = write_piece(c, logical + off, (const uint8_t *)buf + off, n, what);
		if (ret)
			return ret;
		off += n;
	}
	return 0;
}

bool meta_allocated(struct core *c, uint64_t logical, uint64_t len)
{
	struct chunk_copy cp[2 * CHUNK_MAX_STRIPES];
	bool all = true;

	glock_read(&c->reloc_lock);	/* the stripes a relocation fills too */
	for (uint64_t off = 0; off < len && all;) {
		uint64_t n = chunk_map_piece(c, logical + off, len - off);
		int ncp = chunk_map_lookup_write(c, logical + off, n, cp);
		all = ncp > 0;
		for (int i = 0; i < ncp && all; i++)
			all = dev_allocated(cp[i].dev, cp[i].physical, n);
		off += n;
	}
	glock_read_unlock(&c->reloc_lock);
	return all;
}

int meta_write(struct core *c, uint64_t bytenr, const void *buf)
{
	return meta_write_copies(c, bytenr, buf, c->nodesize, "metadata block");
}
