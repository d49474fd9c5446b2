// SPDX-License-Identifier: MIT
/*
 * test_btree.c — the B-tree through the real storage core: mount_format on
 * a temporary image file, mount_open, items changed in transactions
 * (txn_join / txn_end / txn_commit) against a reference model, reopen and
 * compare, btree_walk over every tree with no bad node, a corrupted leaf
 * read back as -EIO after reopen, and threads inserting concurrently under
 * each lock scheme.  Node sizes 4096 and 16384.
 *
 * SEED=n replays a run.
 */
#include "fs/items/subvol.h"
#include "fs/ops/mount.h"
#include "fs/btree/btree.h"
#include "fs/core/core.h"
#include "fs/btree/meta.h"
#include "fs/txn/txn.h"
#include "fs/btree/node.h"
#include "fs/btree/cache.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int fails;
static unsigned long long seed;
static char img[64];

#define FAILF(name, ...) do { \
	printf("FAIL: %s: %s:%d: ", name, __FILE__, __LINE__); \
	printf(__VA_ARGS__); printf("\n"); fails++; \
} while (0)

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

static void fill(uint8_t *buf, uint64_t id, uint32_t size, uint32_t ver)
{
	uint64_t s = id * 2654435761u + ver * 1000003ull + 1;

	for (uint32_t i = 0; i < size; i++)
		buf[i] = (uint8_t)(rnd(&s) >> 56);
}

/* model: per id in [0, NKEYS): size (0 = absent, else size-1 bytes) and version */
#define NKEYS 20000u
static uint32_t msize[NKEYS], mver[NKEYS];

static struct key key_of(uint64_t id)
{
	/* keys of the items layer's shape, far from the root directory's */
	return (struct key){ 1000000 + id / 4, KEY_XATTR_ITEM, id % 4 };
}

static int make_image(uint32_t nodesize)
{
	struct format_opts fo = { .label = "btree-test", .nodesize = nodesize, .force = true };
	const char *devs[1] = { img };
	int fd = open(img, O_RDWR | O_CREAT | O_TRUNC, 0600);

	if (fd < 0 || ftruncate(fd, 512ull << 20)) {
		perror(img);
		return -1;
	}
	close(fd);
	return mount_format(devs, 1, &fo);
}

static int open_core(struct core **c, enum glock_type type, unsigned groups)
{
	struct core_opts o;
	const char *devs[1] = { img };

	core_opts_default(&o);
	o.locktype = type;
	o.lock_groups = groups;
	return mount_open(devs, 1, &o, c);
}

static int compare(struct core *c, const char *name)
{
	struct root *r = subvol_root(c, FS_TREE_OBJECTID);
	uint8_t buf[4096], want[4096];

	for (uint32_t id = 0; id < NKEYS; id++) {
		struct key k = key_of(id);
		int ret = btree_lookup(r, &k, buf, sizeof(buf));

		if (!msize[id]) {
			if (ret != -ENOENT) {
				FAILF(name, "id %u: absent in model, lookup %d", id, ret);
				return -1;
			}
			continue;
		}
		if (ret != (int)msize[id] - 1) {
			FAILF(name, "id %u: size %d, model %u", id, ret, msize[id] - 1);
			return -1;
		}
		fill(want, id, (uint32_t)ret, mver[id]);
		if (memcmp(buf, want, (size_t)ret)) {
			FAILF(name, "id %u: content differs", id);
			return -1;
		}
	}
	return 0;
}

struct walkstat {
	int bad, nodes;
};

static int visit(const struct node_info *ni, void *arg)
{
	(void)ni;
	((struct walkstat *)arg)->nodes++;
	return 0;
}

static void bad(uint64_t bytenr, int level, int err, void *arg)
{
	(void)bytenr;
	(void)level;
	(void)err;
	((struct walkstat *)arg)->bad++;
}

static int walk_all(struct core *c, const char *name, int *depth)
{
	static const uint64_t ids[] = { ROOT_TREE_OBJECTID, EXTENT_TREE_OBJECTID, CHUNK_TREE_OBJECTID,
		DEV_TREE_OBJECTID, FS_TREE_OBJECTID, CSUM_TREE_OBJECTID, FREE_SPACE_TREE_OBJECTID };
	for (unsigned i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		struct root *r = subvol_root(c, ids[i]);
		struct walkstat ws = { 0, 0 };
		int ret;

		if (!r)
			continue;
		ret = btree_walk(r, visit, bad, &ws);
		if (ret || ws.bad || !ws.nodes) {
			FAILF(name, "walk of tree %" PRIu64 ": ret %d, %d bad, %d nodes", ids[i], ret,
			      ws.bad, ws.nodes);
			return -1;
		}
		if (ids[i] == FS_TREE_OBJECTID && depth)
			*depth = r->level + 1;
	}
	return 0;
}

static int random_ops(struct core *c, uint64_t *rs, int nops, uint32_t maxsz, int bias,
		      const char *name)
{
	struct root *r = subvol_root(c, FS_TREE_OBJECTID);
	uint8_t buf[4096];
	static uint32_t ver;
	struct txn *t;
	int ret;

	for (int i = 0; i < nops; i++) {
		uint32_t id = (uint32_t)(rnd(rs) % NKEYS), size;
		struct key k = key_of(id);
		int what = (int)(rnd(rs) % 100);

		ret = txn_join(c, 2, 0, &t);
		if (ret) {
			FAILF(name, "txn_join: %d", ret);
			return -1;
		}
		if (what < bias) {
			size = (uint32_t)(rnd(rs) % (maxsz + 1));
			fill(buf, id, size, ++ver);
			ret = btree_update(t, r, &k, buf, size);
			if (ret) {
				FAILF(name, "update: %d", ret);
				txn_end(t);
				return -1;
			}
			msize[id] = size + 1;
			mver[id] = ver;
		} else {
			ret = btree_delete(t, r, &k);
			if (msize[id] ? ret != 0 : ret != -ENOENT) {
				FAILF(name, "delete id %u (present %d): %d", id, msize[id] != 0, ret);
				txn_end(t);
				return -1;
			}
			msize[id] = 0;
		}
		ret = txn_end(t);
		if (ret) {
			FAILF(name, "txn_end: %d", ret);
			return -1;
		}
		if (i % 2000 == 1999 && (ret = txn_commit(c, COMMIT_SYNC))) {
			FAILF(name, "commit: %d", ret);
			return -1;
		}
	}
	return 0;
}

static void test_core(uint32_t nodesize)
{
	char name[64];
	struct core *c = NULL;
	uint64_t rs = seed ^ nodesize;
	uint32_t maxsz = nodesize == 4096 ? 200 : 2000;
	int depth = 0, ret;

	snprintf(name, sizeof(name), "core-%u", nodesize);
	memset(msize, 0, sizeof(msize));
	if ((ret = make_image(nodesize))) {
		FAILF(name, "mount_format: %d", ret);
		return;
	}
	if ((ret = open_core(&c, GLOCK_RWLOCK, 0))) {
		FAILF(name, "mount_open: %d", ret);
		return;
	}
	if (random_ops(c, &rs, 12000, maxsz, 85, name) || compare(c, name))
		goto out;
	ret = mount_close(c);
	c = NULL;
	if (ret) {
		FAILF(name, "mount_close: %d", ret);
		goto out;
	}
	if ((ret = open_core(&c, GLOCK_RWLOCK, 0))) {
		FAILF(name, "reopen: %d", ret);
		goto out;
	}
	if (compare(c, name) || walk_all(c, name, &depth))
		goto out;
	if (depth < 3) {
		FAILF(name, "fs tree depth %d, want >= 3", depth);
		goto out;
	}
	printf("PASS: %s-grow-reopen (fs tree depth %d)\n", name, depth);
	if (random_ops(c, &rs, 20000, maxsz, 20, name) || compare(c, name))
		goto out;
	ret = mount_close(c);
	c = NULL;
	if (ret || (ret = open_core(&c, GLOCK_MUTEX, 4))) {
		FAILF(name, "close/reopen: %d", ret);
		goto out;
	}
	if (compare(c, name) || walk_all(c, name, &depth))
		goto out;
	printf("PASS: %s-shrink-reopen (fs tree depth %d)\n", name, depth);
out:
	if (c)
		mount_close(c);
}

/* ---- corruption through the real core -------------------------------- */

static void test_core_csum(void)
{
	const char *name = "core-checksum";
	struct core *c = NULL;
	struct root *r;
	struct path p;
	struct txn *t;
	uint8_t buf[256];
	uint64_t leaf;
	int ret, fd;
	struct key k = key_of(500);

	if (make_image(4096) || open_core(&c, GLOCK_RWLOCK, 0)) {
		FAILF(name, "format/open");
		return;
	}
	r = subvol_root(c, FS_TREE_OBJECTID);
	for (uint32_t id = 0; id < 3000; id++) {
		struct key ki = key_of(id);

		if ((ret = txn_join(c, 1, 0, &t))) {
			FAILF(name, "txn_join: %d", ret);
			mount_close(c);
			return;
		}
		fill(buf, id, 100, 1);
		ret = btree_insert(t, r, &ki, buf, 100);
		txn_end(t);
		if (ret) {
			FAILF(name, "insert: %d", ret);
			mount_close(c);
			return;
		}
	}
	btree_path_init(&p);
	btree_search(NULL, r, &k, &p, 0, 0);
	leaf = p.nodes[0]->bytenr;
	btree_path_release(&p);
	mount_close(c);
	c = NULL;
	/* single device, single profile in a fresh image: find the block by its
	 * header (bytenr at offset 48) */
	fd = open(img, O_RDWR);
	{
		uint8_t *nb = malloc(4096);
		off_t off, found = -1;
		struct stat;

		for (off = 1 << 20; pread(fd, nb, 4096, off) == 4096; off += 4096) {
			if (nb_bytenr(nb) == leaf && nb_owner(nb) == FS_TREE_OBJECTID &&
			    nb_level(nb) == 0) {
				found = off;
				break;
			}
		}
		if (found >= 0) {
			nb[3000] ^= 1;
			if (pwrite(fd, nb, 4096, found) != 4096)
				found = -1;
		}
		free(nb);
		close(fd);
		if (found < 0) {
			FAILF(name, "leaf %" PRIu64 " not found in the image", leaf);
			return;
		}
	}
	if (open_core(&c, GLOCK_RWLOCK, 0)) {
		FAILF(name, "reopen");
		return;
	}
	r = subvol_root(c, FS_TREE_OBJECTID);
	ret = btree_lookup(r, &k, buf, sizeof(buf));
	if (ret != -EIO) {
		FAILF(name, "lookup in corrupt leaf: %d, want -EIO", ret);
		goto out;
	}
	k = key_of(2900);
	ret = btree_lookup(r, &k, buf, sizeof(buf));
	if (ret != 100) {
		FAILF(name, "lookup in a healthy leaf: %d", ret);
		goto out;
	}
	printf("PASS: %s\n", name);
out:
	mount_close(c);
}

/*
 * A node the B-tree reads that contradicts the tree (here the root's level
 * beyond BTREE_MAX_LEVEL, set in the cached copy after the read check
 * passed) is corruption: the search gives -EUCLEAN and the volume goes
 * read-only through core_corrupt, as every other corruption does — no
 * further transaction may start.
 */
static void test_core_corrupt_readonly(void)
{
	const char *name = "core-corrupt-node-forces-readonly";
	struct core *c = NULL;
	struct root *r;
	struct txn *t;
	uint8_t buf[64];
	struct key k = key_of(7);
	int ret, level;

	if (make_image(4096) || open_core(&c, GLOCK_RWLOCK, 0)) {
		FAILF(name, "format/open");
		return;
	}
	r = subvol_root(c, FS_TREE_OBJECTID);
	if ((ret = txn_join(c, 1, 0, &t))) {
		FAILF(name, "txn_join: %d", ret);
		mount_close(c);
		return;
	}
	fill(buf, 7, 40, 1);
	ret = btree_insert(t, r, &k, buf, 40);
	txn_end(t);
	if (ret || (ret = txn_commit(c, COMMIT_SYNC)) ||
	    (ret = btree_lookup(r, &k, buf, sizeof(buf))) != 40 || !r->node) {
		FAILF(name, "insert/commit/lookup: %d", ret);
		mount_close(c);
		return;
	}
	if (core_readonly(c)) {
		FAILF(name, "read-only before any corruption");
		mount_close(c);
		return;
	}
	level = nb_level(r->node->data);
	nb_set_level(r->node->data, BTREE_MAX_LEVEL);
	ret = btree_lookup(r, &k, buf, sizeof(buf));
	nb_set_level(r->node->data, level);
	if (ret != -EUCLEAN)
		FAILF(name, "lookup through a root of level %d: %d, want -EUCLEAN",
		      BTREE_MAX_LEVEL, ret);
	else if (!core_readonly(c))
		FAILF(name, "corruption found but the volume stays writable");
	else if ((ret = txn_join(c, 1, 0, &t)) != -EROFS) {
		FAILF(name, "txn_join after corruption: %d, want -EROFS", ret);
		if (!ret)
			txn_end(t);
	} else
		printf("PASS: %s\n", name);
	mount_close(c);
}

/* ---- threads through the core --------------------------------------- */

struct th {
	struct core *c;
	int tid, n, err;
	uint32_t count;
};

static void *worker(void *arg)
{
	struct th *w = arg;
	struct root *r = subvol_root(w->c, FS_TREE_OBJECTID);
	uint8_t buf[64];

	for (uint32_t i = 0; i < w->count && !w->err; i++) {
		uint64_t id = (uint64_t)i * (uint64_t)w->n + (uint64_t)w->tid;
		struct key k = key_of(id);
		struct txn *t;
		int ret = txn_join(w->c, 1, 0, &t);

		if (ret) {
			w->err = ret;
			break;
		}
		fill(buf, id, 40, 1);
		ret = btree_insert(t, r, &k, buf, 40);
		if (ret)
			w->err = ret;
		txn_end(t);
		if (i % 500 == 499)
			txn_commit(w->c, COMMIT_SYNC);
	}
	return NULL;
}

static void test_core_threads(enum glock_type type, unsigned groups)
{
	char name[64];
	struct core *c = NULL;
	pthread_t th[4];
	struct th w[4];
	int n = 3, err = 0, ret;
	uint32_t count = 1500;
	double t0;
	struct timespec ts;

	snprintf(name, sizeof(name), "core-threads-%s-%s%u", glock_type_name(type),
		 groups ? "groups:" : "node", groups);
	if (make_image(4096) || open_core(&c, type, groups)) {
		FAILF(name, "format/open");
		return;
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	t0 = ts.tv_sec + ts.tv_nsec / 1e9;
	for (int i = 0; i < n; i++) {
		w[i] = (struct th){ c, i, n, 0, count };
		pthread_create(&th[i], NULL, worker, &w[i]);
	}
	for (int i = 0; i < n; i++) {
		pthread_join(th[i], NULL);
		if (w[i].err) {
			FAILF(name, "thread %d: %d", i, w[i].err);
			err = 1;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ret = mount_close(c);
	c = NULL;
	if (err)
		return;
	if (ret || open_core(&c, type, groups)) {
		FAILF(name, "close/reopen: %d", ret);
		return;
	}
	memset(msize, 0, sizeof(msize));
	for (uint32_t id = 0; id < count * (uint32_t)n; id++) {
		msize[id] = 41;
		mver[id] = 1;
	}
	if (!compare(c, name) && !walk_all(c, name, NULL))
		printf("PASS: %s (%.0f inserts/s incl. commits)\n", name,
		       count * n / (ts.tv_sec + ts.tv_nsec / 1e9 - t0));
	mount_close(c);
}

int main(void)
{
	const char *s = getenv("SEED");

	seed = s ? strtoull(s, NULL, 0) : (unsigned long long)time(NULL) ^ ((unsigned long long)getpid() << 16);
	printf("seed: %llu (SEED=%llu to replay)\n", seed, seed);
	setvbuf(stdout, NULL, _IOLBF, 0);
	snprintf(img, sizeof(img), "/tmp/glassfs-btree-%d.img", (int)getpid());

	test_core(4096);
	test_core(16384);
	test_core_csum();
	test_core_corrupt_readonly();
	test_core_threads(GLOCK_RWLOCK, 0);
	test_core_threads(GLOCK_MUTEX, 4);
	test_core_threads(GLOCK_SPIN, 0);
	test_core_threads(GLOCK_RWLOCK, 16);
	test_core_threads(GLOCK_SPIN, 64);
	unlink(img);
	printf("# %d failures (seed %llu)\n", fails, seed);
	return fails ? 1 : 0;
}
