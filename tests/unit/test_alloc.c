// SPDX-License-Identifier: MIT
/*
 * test_alloc.c — the allocator through the core: data extents never
 * overlap and stay inside data block groups; chunks are added when a type
 * runs out; -ENOSPC when the device is full, and deletes still work then;
 * freed space stays pinned until the commit; the free-space tree restores
 * the same allocations after reopen; the metadata reserve lets
 * TXN_USE_RESERVE handles run when ordinary ones get -ENOSPC.
 * SEED=n replays.
 */
#include "core_test.h"
#include "fs/store/alloc.h"
#include "fs/store/chunk.h"
#include "fs/store/discard.h"

struct ext { uint64_t logical, len; };

static int cmp_ext(const void *a, const void *b)
{
	const struct ext *x = a, *y = b;
	return x->logical < y->logical ? -1 : x->logical > y->logical;
}

static bool inside_data_bg(struct core *c, uint64_t logical, uint64_t len)
{
	struct chunk_copy cp[CHUNK_MAX_STRIPES];
	uint64_t type = 0;
	return chunk_map_lookup(c, logical, len, cp, &type) > 0 && (type & BG_DATA);
}

static void run(uint32_t nodesize)
{
	char img[256], name[128];
	struct core *c = NULL;
	struct ext *v = NULL;
	size_t n = 0, cap = 0;
	struct core_space sp0, sp1, sp2;
	int ret = 0;

	img[0] = 0;
#define N(s) (snprintf(name, sizeof(name), "[%u] %s", nodesize, s), name)
	MUST(t_image(img, sizeof(img), 96ull << 20));
	MUST(t_format(img, nodesize));
	MUST(t_open(img, false, &c));
	mount_space(c, &sp0);
	CHECK(N("statfs: free <= total"), sp0.free_bytes > 0 && sp0.free_bytes < sp0.total_bytes &&
	      sp0.avail_bytes <= sp0.free_bytes);
	int chunks0 = c->chunks.n;

	/* fill the data space with random-sized extents */
	uint64_t allocated = 0;
	for (int round = 0; ret == 0; round++) {
		struct txn *t;
		MUST(txn_join(c, 8, 0, &t));
		for (int i = 0; i < 32; i++) {
			uint64_t len = (uint64_t)(1 + t_rand() % 64) * CORE_SECTORSIZE, l;
			ret = data_alloc(t, len, &l);
			if (ret)
				break;
			if (n == cap) {
				cap = cap ? cap * 2 : 256;
				v = realloc(v, cap * sizeof(*v));
			}
			v[n++] = (struct ext){ l, len };
			allocated += len;
		}
		txn_end(t);
		if (round % 8 == 7 && !ret)
			MUST(txn_commit(c, COMMIT_SYNC));
	}
	CHECK(N("fills up with ENOSPC"), ret == -ENOSPC && n > 10);
	CHECK(N("new data chunks were created"), c->chunks.n > chunks0);
	qsort(v, n, sizeof(*v), cmp_ext);
	int overlap = 0, outside = 0;
	for (size_t i = 0; i < n; i++) {
		if (i && v[i - 1].logical + v[i - 1].len > v[i].logical)
			overlap++;
		if (!inside_data_bg(c, v[i].logical, v[i].len))
			outside++;
	}
	CHECK(N("extents never overlap"), overlap == 0);
	CHECK(N("extents lie in data block groups"), outside == 0);
	mount_space(c, &sp1);
	CHECK(N("statfs: data space nearly used up"), sp1.avail_bytes < sp0.avail_bytes / 10);
	CHECK(N("allocations fit the device"), allocated <= sp0.total_bytes);
	MUST(txn_commit(c, COMMIT_SYNC));

	/* free half; the space is pinned until the commit */
	{
		struct txn *t;
		uint64_t freed = 0, l;
		int reused = 0;
		MUST(txn_join(c, 8, TXN_USE_RESERVE, &t));
		for (size_t i = 0; i < n; i += 2) {
			MUST(data_ref(t, v[i].logical, v[i].len, -1));
			freed += v[i].len;
		}
		/* refs run at commit; before it, nothing freed is reusable */
		ret = data_alloc(t, CORE_SECTORSIZE, &l);
		for (size_t i = 0; ret == 0 && i < n; i += 2)
			if (l >= v[i].logical && l < v[i].logical + v[i].len)
				reused++;
		if (ret == 0)
			MUST(data_ref(t, l, CORE_SECTORSIZE, -1));
		txn_end(t);
		CHECK(N("freed space not reused before commit"), reused == 0);
		MUST(txn_commit(c, COMMIT_SYNC));
		mount_space(c, &sp2);
		CHECK(N("freed space counted after commit"), sp2.free_bytes >= sp1.free_bytes + freed - (1 << 20));
		int still = 0;
		discard_wait_idle(c, 0);	/* GLASSFS_DISCARD=async holds them until discarded */
		for (size_t i = 0; i < n; i += 2)
			if (alloc_is_used(c, v[i].logical, CORE_SECTORSIZE))
				still++;
		CHECK(N("freed extents are free"), still == 0);
	}
	CHECK(N("close"), mount_close(c) == 0);
	c = NULL;
	CHECK_FSCK(N("fsck clean after frees"), img);

	/* the free-space tree brings back exactly the allocations */
	MUST(t_open(img, false, &c));
	{
		int bad_used = 0, bad_free = 0;
		for (size_t i = 0; i < n; i++) {
			bool used = alloc_is_used(c, v[i].logical, v[i].len);
			if ((i % 2 == 1) && !used)
				bad_used++;
			if ((i % 2 == 0) && alloc_is_used(c, v[i].logical, CORE_SECTORSIZE))
				bad_free++;
		}
		CHECK(N("reopen: kept extents still allocated"), bad_used == 0);
		CHECK(N("reopen: freed extents still free"), bad_free == 0);
		mount_space(c, &sp1);
		CHECK(N("reopen: same free space"), sp1.free_bytes == sp2.free_bytes);
	}

	/* metadata: fill it with items; ordinary handles get ENOSPC first,
	 * reserve handles can still delete */
	{
		uint8_t item[512];
		uint64_t i = 0;
		int jr = 0, ir = 0;
		memset(item, 0x5a, sizeof(item));
		while (jr == 0 && ir == 0 && i < 2000000) {
			struct txn *t;
			jr = txn_join(c, 64, 0, &t);
			if (jr)
				break;
			for (int k = 0; k < 64 && !ir; k++, i++) {
				struct key key = t_key(i);
				ir = btree_insert(t, subvol_root(c, FS_TREE_OBJECTID), &key, item,
						  sizeof(item));
			}
			txn_end(t);
			if (i % 4096 == 0)
				txn_commit(c, COMMIT_SYNC);
		}
		CHECK(N("metadata fills to ENOSPC"), jr == -ENOSPC || ir == -ENOSPC);
		CHECK(N("volume not aborted by ENOSPC"), !core_readonly(c));
		struct txn *t;
		int r = txn_join(c, 4, TXN_USE_RESERVE, &t);
		CHECK(N("reserve handle joins on full metadata"), r == 0);
		if (r == 0) {
			int dr = 0;
			for (uint64_t k = 0; k < 32 && k < i && !dr; k++) {
				struct key key = t_key(k);
				dr = btree_delete(t, subvol_root(c, FS_TREE_OBJECTID), &key);
			}
			txn_end(t);
			CHECK(N("deletes work on full metadata"), dr == 0);
		}
		CHECK(N("commit on full metadata"), txn_commit(c, COMMIT_SYNC) == 0);
	}
	CHECK(N("close full"), mount_close(c) == 0);
	c = NULL;
	CHECK_FSCK(N("fsck clean after filling data and metadata"), img);
	MUST(t_open(img, true, &c));
	{
		struct key key = t_key(5);
		uint8_t b[8];
		CHECK(N("deleted item stays deleted"),
		      btree_lookup(subvol_root(c, FS_TREE_OBJECTID), &key, b, sizeof(b)) == -ENOENT);
	}
out:
	if (c)
		mount_close(c);
	free(v);
	if (img[0])
		unlink(img);
#undef N
}

/* Two devices: chunks spread over both, data fills both, reopen in the
 * other order, fsck clean. */
static int count_dev_chunks(const struct chunk *ch, void *arg)
{
	int *per = arg;
	per[ch->stripes[0].devid == 1 ? 0 : 1]++;
	return 0;
}

static void two_devices(void)
{
	char a[256], b[256];
	const char *devs[2] = { a, b }, *rev[2] = { b, a };
	struct format_opts fo = { .label = "two", .nodesize = 4096, .force = true };
	struct core_opts o;
	struct core *c = NULL;
	uint64_t total = 0;
	int ret = 0, per[2] = { 0, 0 };

	a[0] = b[0] = 0;
	MUST(t_image(a, sizeof(a), 48ull << 20));
	MUST(t_image(b, sizeof(b), 48ull << 20));
	CHECK("two devices: format", mount_format(devs, 2, &fo) == 0);
	core_opts_default(&o);
	MUST(mount_open(devs, 2, &o, &c));
	while (ret == 0) {
		struct txn *t;
		uint8_t blk[16384];
		MUST(txn_join(c, 4, 0, &t));
		for (int i = 0; i < 16 && ret == 0; i++) {
			uint64_t l;
			ret = data_alloc(t, sizeof(blk), &l);
			if (!ret) {
				memset(blk, (int)l, sizeof(blk));
				ret = data_write(t, l, blk, sizeof(blk));
				total += sizeof(blk);
			}
		}
		txn_end(t);
	}
	CHECK("two devices: data fills to ENOSPC", ret == -ENOSPC && total > (56ull << 20));
	chunk_for_each(c, count_dev_chunks, per);
	CHECK("two devices: chunks on both", per[0] > 0 && per[1] > 0);
	CHECK("two devices: close", mount_close(c) == 0);
	c = NULL;
	CHECK("two devices: reopen in the other order", mount_open(rev, 2, &o, &c) == 0);
	if (c)
		mount_close(c);
	c = NULL;
	{
		/* fsck takes both devices */
		char cmd[1024];
		if (t_fsck_bin(cmd, sizeof(cmd)) == 0) {
			char run[1200];
			snprintf(run, sizeof(run), "%s -c %s %s > /dev/null", cmd, a, b);
			int st = system(run);
			CHECK("two devices: fsck clean", WIFEXITED(st) && WEXITSTATUS(st) == 0);
		}
	}
out:
	if (c)
		mount_close(c);
	if (a[0])
		unlink(a);
	if (b[0])
		unlink(b);
}

int main(void)
{
	const char *ns = getenv("NODESIZE");

	t_seed_init();
	if (ns) {
		run((uint32_t)strtoul(ns, NULL, 0));
	} else {
		run(4096);
		run(16384);
	}
	two_devices();
	return fails ? 1 : 0;
}
