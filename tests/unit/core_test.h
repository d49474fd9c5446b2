/* SPDX-License-Identifier: MIT */
/* core_test.h — helpers shared by the storage-core unit tests. */
#ifndef CORE_TEST_H
#define CORE_TEST_H

#include "fs/items/subvol.h"
#include "fs/ops/mount.h"
#include "fs/core/core_types.h"
#include "fs/txn/txn.h"
#include "fs/btree/btree.h"
#include "fs/btree/node.h"
#include "fs/trees/data.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "tmp_image.h"

static unsigned t_seed;

/* A step that must succeed for the rest of a case to mean anything. */
#define MUST(expr) do { long _r = (long)(expr); if (_r < 0) { \
	printf("FAIL: %s:%d: %s = %ld (%s)\n", __FILE__, __LINE__, #expr, _r, strerror((int)-_r)); \
	fails++; goto out; } } while (0)

static __attribute__((unused)) unsigned t_rand(void)
{
	t_seed = t_seed * 1103515245u + 12345u;
	return (t_seed >> 8) & 0xffffff;
}

static void t_seed_init(void)
{
	const char *e = getenv("SEED");
	t_seed = e ? (unsigned)strtoul(e, NULL, 0) : (unsigned)(time(NULL) ^ getpid());
	printf("seed: %u\n", t_seed);
}

static __attribute__((unused)) int t_format(const char *img, uint32_t nodesize)
{
	const char *devs[1] = { img };
	struct format_opts o = { .label = "unit", .nodesize = nodesize, .force = true };
	return mount_format(devs, 1, &o);
}

static __attribute__((unused)) int t_open(const char *img, bool ro, struct core **c)
{
	const char *devs[1] = { img };
	struct core_opts o;
	core_opts_default(&o);
	o.readonly = ro;
	o.commit_interval_s = 3600;	/* tests commit explicitly */
	return mount_open(devs, 1, &o, c);
}

/* A case's end: its volume closed (c may be NULL), its image (named in
 * img, or "") removed. */
static __attribute__((unused)) void t_done(struct core *c, const char *img)
{
	if (c)
		mount_close(c);
	if (img[0])
		unlink(img);
}

/* Patch bytes of a file (corruption tests). */
static __attribute__((unused)) int t_poke(const char *img, uint64_t off, uint8_t xor_mask)
{
	int fd = open(img, O_RDWR);
	uint8_t b;
	int ret = 0;

	if (fd < 0)
		return -errno;
	if (pread(fd, &b, 1, (off_t)off) != 1)
		ret = -EIO;
	b ^= xor_mask;
	if (!ret && pwrite(fd, &b, 1, (off_t)off) != 1)
		ret = -EIO;
	close(fd);
	return ret;
}

/* Rewrite the node copy at physical ph of img as generation gen, its
 * checksum made again: what a lost write leaves (the block's bytes from an
 * earlier life at the same address, sound on their own). */
static __attribute__((unused)) int t_forge_node_gen(const char *img, uint64_t ph,
						    uint32_t nodesize, uint64_t gen)
{
	uint8_t *b = malloc(nodesize);
	int fd = open(img, O_RDWR), ret = -EIO;

	if (b && fd >= 0 && pread(fd, b, nodesize, (off_t)ph) == (ssize_t)nodesize) {
		nb_set_generation(b, gen);
		put_le32(b + NH_CSUM, node_csum(b, nodesize));
		ret = pwrite(fd, b, nodesize, (off_t)ph) == (ssize_t)nodesize ? 0 : -EIO;
	}
	if (fd >= 0)
		close(fd);
	free(b);
	return ret;
}

/* The fsck.glassfs this build made ($OUT/bin, relative to GLASSFS_ROOT
 * unless absolute) into BIN; -1 when it is not built (callers skip). */
static __attribute__((unused)) int t_fsck_bin(char *bin, size_t n)
{
	const char *out = getenv("OUT") ? getenv("OUT") : "build";
	const char *root = getenv("GLASSFS_ROOT") ? getenv("GLASSFS_ROOT") : ".";

	if (out[0] == '/')
		snprintf(bin, n, "%s/bin/fsck.glassfs", out);
	else
		snprintf(bin, n, "%s/%s/bin/fsck.glassfs", root, out);
	return access(bin, X_OK) < 0 ? -1 : 0;
}

/*
 * Run fsck.glassfs on an image (t_fsck), or on a volume's devices given as
 * one space-separated list, its output in LOG.fsck (t_fsck_devs): the
 * exit code, or -1 when the binary is not built (then callers skip).
 * Output goes to stdout only on failure.
 */
static bool t_fsck_quiet;	/* an error is what the case expects */

static __attribute__((unused)) int t_fsck_devs(const char *devs, const char *log)
{
	char bin[512], cmd[2048];
	int st;

	if (t_fsck_bin(bin, sizeof(bin)))
		return -1;
	/* -c: these volumes hold raw test items, not files */
	snprintf(cmd, sizeof(cmd), "%s -n -c %s > %s.fsck 2>&1", bin, devs, log);
	st = system(cmd);
	st = WIFEXITED(st) ? WEXITSTATUS(st) : 99;
	if (st && !t_fsck_quiet) {
		snprintf(cmd, sizeof(cmd), "head -30 %s.fsck", log);
		if (system(cmd) < 0)
			st = 99;
	}
	snprintf(cmd, sizeof(cmd), "%s.fsck", log);
	unlink(cmd);
	return st;
}

static __attribute__((unused)) int t_fsck(const char *img)
{
	return t_fsck_devs(img, img);
}
#define CHECK_FSCK_DEVS(name, devs, log) do { \
	int _f = t_fsck_devs(devs, log); \
	if (_f < 0) printf("SKIP: %s: fsck.glassfs not built\n", name); \
	else CHECK(name, _f == 0); \
} while (0)
#define CHECK_FSCK(name, img) CHECK_FSCK_DEVS(name, img, img)

static __attribute__((unused)) struct key t_key(uint64_t i)
{
	struct key k = { 1000 + i, KEY_INODE_ITEM, 0 };
	return k;
}

/* Insert items [from, from+n) of size bytes into the fs tree, one
 * transaction; each item starts with its index and is filled with its low
 * byte, so t_count_items() can tell a right item from a stale one. */
static __attribute__((unused)) int t_insert_items(struct core *c, uint64_t from,
						  uint64_t n, uint32_t size)
{
	uint8_t buf[256];
	struct txn *t;
	int ret = txn_join(c, (unsigned)n, 0, &t);

	if (ret)
		return ret;
	for (uint64_t i = from; i < from + n && !ret; i++) {
		struct key k = t_key(i);
		memset(buf, (int)(i & 0xff), sizeof(buf));
		memcpy(buf, &i, 8);
		ret = btree_insert(t, subvol_root(c, FS_TREE_OBJECTID), &k, buf, size);
	}
	int e = txn_end(t);
	return ret ? ret : e;
}

/* A data extent of len bytes holding buf, allocated at goal or past it
 * (0: anywhere), in a transaction of its own, not committed: *l. */
static __attribute__((unused)) int t_write_extent(struct core *c, const void *buf, uint64_t len,
						  uint64_t goal, uint64_t *l)
{
	struct txn *t;
	int ret = txn_join(c, 4, 0, &t);

	if (ret)
		return ret;
	ret = data_alloc_goal(t, len, goal, l);
	if (!ret)
		ret = data_write(t, *l, buf, len);
	int e = txn_end(t);
	return ret ? ret : e;
}

/* Drop the reference to the extent at l of len bytes, in a transaction
 * that may use the reserve (a free must get through on a full volume),
 * not committed. */
static __attribute__((unused)) int t_free_extent(struct core *c, uint64_t l, uint64_t len)
{
	struct txn *t;
	int ret = txn_join(c, 4, TXN_USE_RESERVE, &t);

	if (ret)
		return ret;
	ret = data_ref(t, l, len, -1);
	int e = txn_end(t);
	return ret ? ret : e;
}

/* Count items [from, from+n) present with the right contents; *err gets
 * the last lookup error other than -ENOENT. */
static __attribute__((unused)) uint64_t t_count_items(struct core *c, uint64_t from,
						      uint64_t n, int *err)
{
	uint8_t buf[256];
	uint64_t ok = 0;

	*err = 0;
	for (uint64_t i = from; i < from + n; i++) {
		struct key k = t_key(i);
		int r = btree_lookup(subvol_root(c, FS_TREE_OBJECTID), &k, buf, sizeof(buf));
		uint64_t v;
		if (r < 0 && r != -ENOENT)
			*err = r;
		if (r < 8)
			continue;
		memcpy(&v, buf, 8);
		if (v == i)
			ok++;
	}
	return ok;
}

#endif
