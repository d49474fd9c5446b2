// SPDX-License-Identifier: MIT
/*
 * test_core.c — the storage core end to end on image files: format, open,
 * B-tree inserts through transactions, commit, reopen; data round trip;
 * checksum failures on data and metadata; a crash before commit; a
 * damaged primary superblock; pipelined commits (N+1 runs while N is
 * written, and a crash in that window); read-ahead of sequential data
 * reads.  Runs at two node sizes.
 * SEED=n replays.
 */
#include "core_test.h"
#include "fs/btree/meta.h"
#include "fs/store/alloc.h"
#include "fs/store/chunk.h"
#include "fs/store/discard.h"
#include "fs/trees/extent.h"

#include "fs/store/dev_readahead.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

/* A 160 MiB image of nodesize-byte nodes (name in img), formatted (the
 * case's check fmt_check) and opened: 0, or -errno. */
static int fresh_volume(char *img, size_t n, uint32_t nodesize, const char *fmt_check,
			struct core **c)
{
	int ret = t_image(img, n, 160ull << 20);

	if (ret)
		return ret;
	CHECK(fmt_check, t_format(img, nodesize) == 0);
	return t_open(img, false, c);
}

static uint64_t node_physical(struct core *c, uint64_t bytenr)
{
	struct chunk_copy cp[CHUNK_MAX_STRIPES];
	return chunk_map_lookup(c, bytenr, c->nodesize, cp, NULL) > 0 ? cp[0].physical : 0;
}

static void run(uint32_t nodesize)
{
	char img[256], name[128];
	struct core *c = NULL;
	struct core_stats st;
	uint64_t nitems = 200 + t_rand() % 300, logical = 0, dlen, data_phys = 0;
	uint8_t *wbuf = NULL, *rbuf = NULL;
	int err;

	img[0] = 0;
#define N(s) (snprintf(name, sizeof(name), "[%u] %s", nodesize, s), name)
	MUST(fresh_volume(img, sizeof(img), nodesize, N("format"), &c));
	CHECK(N("fresh volume: generation 1"), core_generation(c) == 1 &&
	      core_nodesize(c) == nodesize && strcmp(core_label(c), "unit") == 0);
	CHECK(N("fs tree present"), subvol_root(c, FS_TREE_OBJECTID) != NULL);

	/* items through a transaction, commit, reopen */
	MUST(t_insert_items(c, 0, nitems, 100));
	CHECK(N("items visible before commit"), t_count_items(c, 0, nitems, &err) == nitems);
	CHECK(N("commit"), txn_commit(c, COMMIT_SYNC) == 0);
	mount_stats(c, &st);
	CHECK(N("commit advanced the generation"), st.transid == 2 && st.commits == 1 &&
	      st.nodes_written > 0 && st.dev_flushes >= 2);

	/* data: allocate, write, commit */
	dlen = (uint64_t)(1 + t_rand() % 64) * CORE_SECTORSIZE;
	wbuf = malloc(dlen);
	rbuf = malloc(dlen);
	MUST(wbuf && rbuf ? 0 : -ENOMEM);
	for (uint64_t i = 0; i < dlen; i++)
		wbuf[i] = (uint8_t)t_rand();
	{
		struct txn *t;
		MUST(txn_join(c, 4, 0, &t));
		int r1 = data_alloc(t, dlen, &logical);
		int r2 = r1 ? r1 : data_write(t, logical, wbuf, dlen);
		txn_end(t);
		CHECK(N("data alloc+write"), r1 == 0 && r2 == 0);
	}
	CHECK(N("data read before commit"), data_read(c, logical, rbuf, dlen) == 0 &&
	      memcmp(rbuf, wbuf, dlen) == 0);
	CHECK(N("close"), mount_close(c) == 0);
	c = NULL;

	MUST(t_open(img, false, &c));
	CHECK(N("items survive reopen"), t_count_items(c, 0, nitems, &err) == nitems && !err);
	mount_stats(c, &st);
	/* hits need a tree deeper than its root (the root node is held) */
	CHECK(N("node cache counts misses"), st.cache_misses > 0 && st.dev_read_ios > 0);
	memset(rbuf, 0, dlen);
	CHECK(N("data survives reopen"), data_read(c, logical, rbuf, dlen) == 0 &&
	      memcmp(rbuf, wbuf, dlen) == 0);
	CHECK(N("unaligned data read"), dlen < 100 ||
	      (data_read(c, logical + 37, rbuf, dlen - 50) == 0 &&
	       memcmp(rbuf, wbuf + 37, dlen - 50) == 0));
	{
		/* data_read verifies whole sectors in the caller's buffer and
		 * only the partial ends beside it: every shape of range, each
		 * compared byte for byte, with bytes either side untouched */
		const uint64_t S = CORE_SECTORSIZE;
		const struct { uint64_t off, len; } rg[] = {
			{ 1, 2 }, { 0, 5 }, { S - 3, 3 }, { 0, S + 5 }, { S - 3, 4 },
			{ 5, S - 5 }, { S - 1, S + 2 }, { 7, 3 * S }, { S, 2 * S - 9 },
		};
		uint8_t *guard = malloc(dlen + 2);
		MUST(guard ? 0 : -ENOMEM);
		for (size_t i = 0; i < sizeof(rg) / sizeof(rg[0]); i++) {
			if (rg[i].off + rg[i].len > dlen)
				continue;
			memset(guard, 0xa5, dlen + 2);
			CHECK(N("data read of a partial range"),
			      data_read(c, logical + rg[i].off, guard + 1, rg[i].len) == 0 &&
			      memcmp(guard + 1, wbuf + rg[i].off, rg[i].len) == 0 &&
			      guard[0] == 0xa5 && guard[rg[i].len + 1] == 0xa5);
		}
		free(guard);
	}
	{
		struct extent_item ei;
		uint64_t len = 0;
		CHECK(N("extent item refcount 1"), extent_lookup(c, logical, true, &ei, &len) == 0 &&
		      ei.refs == 1 && len == dlen);
	}
	{
		struct chunk_copy cp[CHUNK_MAX_STRIPES];
		MUST(chunk_map_lookup(c, logical, dlen, cp, NULL));
		data_phys = cp[0].physical;
	}
	uint64_t fs_root_phys = node_physical(c, subvol_root(c, FS_TREE_OBJECTID)->bytenr);
	CHECK(N("close after reopen"), mount_close(c) == 0);
	c = NULL;

	/* simulated crash: a child commits some items, adds more, dies */
	{
		pid_t pid = fork();
		if (pid == 0) {
			struct core *cc;
			if (t_open(img, false, &cc))
				_exit(2);
			if (t_insert_items(cc, 100000, 50, 64) || txn_commit(cc, COMMIT_SYNC))
				_exit(3);
			if (t_insert_items(cc, 200000, 50, 64))
				_exit(4);
			_exit(0);	/* no commit: as if the power went out */
		}
		int status = 0;
		waitpid(pid, &status, 0);
		CHECK(N("crash child ran"), WIFEXITED(status) && WEXITSTATUS(status) == 0);
		MUST(t_open(img, false, &c));
		CHECK(N("crash: committed items present"), t_count_items(c, 100000, 50, &err) == 50);
		CHECK(N("crash: uncommitted items absent"), t_count_items(c, 200000, 50, &err) == 0 && !err);
		CHECK(N("crash: older items intact"), t_count_items(c, 0, nitems, &err) == nitems);
		/* fs tree root may have moved: remember where it is now */
		fs_root_phys = node_physical(c, subvol_root(c, FS_TREE_OBJECTID)->bytenr);
		CHECK(N("close after crash"), mount_close(c) == 0);
		c = NULL;
		CHECK_FSCK(N("fsck clean after crash and reopen"), img);
	}

	/* data checksum corruption: -EIO, never the bytes */
	MUST(t_poke(img, data_phys + dlen / 2, 0x40));
	MUST(t_open(img, true, &c));
	memset(rbuf, 0xAA, dlen);
	CHECK(N("corrupt data -> EIO"), data_read(c, logical, rbuf, dlen) == -EIO);
	mount_stats(c, &st);
	CHECK(N("csum error counted, no bad bytes"), st.csum_errors >= 1 && rbuf[dlen / 2] == 0);
	mount_close(c);
	c = NULL;
	{
		t_fsck_quiet = true;
		int fr = t_fsck(img);
		t_fsck_quiet = false;
		if (fr >= 0)
			CHECK(N("fsck reports the damaged data block (exit 4)"), fr == 4);
	}
	MUST(t_poke(img, data_phys + dlen / 2, 0x40));	/* repair */

	/* written data whose checksums are missing: -EIO, never zeros (only
	 * preallocated ranges have none, and they are not read from disk) */
	MUST(t_open(img, false, &c));
	{
		struct txn *t;
		MUST(txn_join(c, 4, 0, &t));
		int r = data_csum_delete(t, logical, dlen);
		memset(rbuf, 0xAA, dlen);
		int rr = r ? r : data_read(c, logical, rbuf, dlen);
		CHECK(N("missing checksums -> EIO, not zeros"), rr == -EIO && rbuf[0] == 0);
		/* and back: the bytes rewritten with their checksums */
		CHECK(N("checksums written again"), data_write(t, logical, wbuf, dlen) == 0 &&
		      data_read(c, logical, rbuf, dlen) == 0 && !memcmp(rbuf, wbuf, dlen));
		txn_end(t);
	}
	CHECK(N("close after missing checksums"), mount_close(c) == 0);
	c = NULL;

	/* metadata corruption: the fs tree's root node */
	MUST(fs_root_phys ? 0 : -ENOENT);
	MUST(t_poke(img, fs_root_phys + 200, 0x01));
	MUST(t_open(img, true, &c));
	{
		uint8_t b[256];
		struct key k = t_key(1);
		CHECK(N("corrupt node -> EIO"), btree_lookup(subvol_root(c, FS_TREE_OBJECTID), &k, b,
							     sizeof(b)) == -EIO);
	}
	mount_close(c);
	c = NULL;
	/* read-write: a read that meets the corrupt node fails alone, as in
	 * btrfs (docs/engine.md): the volume stays writable, and a
	 * transaction that never needed the node commits */
	MUST(t_open(img, false, &c));
	{
		uint8_t b[256];
		struct key k = t_key(1);
		struct txn *t;
		uint64_t l2 = 0;
		int r = btree_lookup(subvol_root(c, FS_TREE_OBJECTID), &k, b, sizeof(b));
		CHECK(N("corrupt node read-write -> EIO, volume still writable"),
		      r == -EIO && !core_readonly(c));
		MUST(txn_join(c, 4, TXN_USE_RESERVE, &t));
		r = data_alloc(t, CORE_SECTORSIZE, &l2);
		if (!r)
			r = data_write(t, l2, wbuf, CORE_SECTORSIZE);
		if (!r)
			r = data_ref(t, l2, CORE_SECTORSIZE, -1);
		txn_end(t);
		CHECK(N("a transaction elsewhere commits"), r == 0 &&
		      txn_commit(c, COMMIT_SYNC) == 0 && !core_readonly(c));
	}
	CHECK(N("close with a corrupt node left"), mount_close(c) == 0);
	c = NULL;
	MUST(t_poke(img, fs_root_phys + 200, 0x01));

	/* damaged primary superblock: the mirror at 64 MiB takes over */
	MUST(t_poke(img, SUPER_OFFSET + 100, 0xff));
	MUST(t_open(img, false, &c));
	CHECK(N("mirror superblock used"), t_count_items(c, 0, nitems, &err) == nitems);
	MUST(t_insert_items(c, 300000, 5, 32));
	CHECK(N("commit rewrites every copy"), mount_close(c) == 0);
	c = NULL;
	{
		struct super_block sb;
		int fd = open(img, O_RDONLY);
		ssize_t n = fd >= 0 ? pread(fd, &sb, sizeof(sb), SUPER_OFFSET) : -1;
		if (fd >= 0)
			close(fd);
		CHECK(N("primary superblock repaired"), n == (ssize_t)sizeof(sb) &&
		      sb.magic == GLASSFS_MAGIC && sb.generation >= 4);
	}

	/* an aborted transaction: read-only at once, nothing of it on disk */
	MUST(t_open(img, false, &c));
	{
		struct txn *t;
		MUST(t_insert_items(c, 400000, 20, 16));	/* joins the same transaction */
		MUST(txn_join(c, 2, 0, &t));
		txn_abort(t, -EIO, "test_core: injected");
		CHECK(N("abort: txn_end reports it"), txn_end(t) == -EIO);
		CHECK(N("abort: volume read-only"), core_readonly(c));
		CHECK(N("abort: new handles refused"), txn_join(c, 1, 0, &t) == -EROFS);
		CHECK(N("abort: commit refused"), txn_commit(c, COMMIT_SYNC) == -EIO);
		CHECK(N("abort: close reports it"), mount_close(c) == -EIO);
		c = NULL;
		MUST(t_open(img, true, &c));
		CHECK(N("abort: its changes never reached the disk"),
		      t_count_items(c, 400000, 20, &err) == 0 && !err);
		CHECK(N("abort: earlier state intact"), t_count_items(c, 0, nitems, &err) == nitems);
		mount_close(c);
		c = NULL;
	}

	/* data_ref to zero frees the extent after commit */
	MUST(t_open(img, false, &c));
	{
		struct txn *t;
		struct extent_item ei;
		MUST(txn_join(c, 2, TXN_USE_RESERVE, &t));
		int r = data_ref(t, logical, dlen, -1);
		txn_end(t);
		CHECK(N("data_ref -1"), r == 0 && txn_commit(c, COMMIT_SYNC) == 0);
		CHECK(N("extent item gone"), extent_lookup(c, logical, true, &ei, NULL) == -ENOENT);
		discard_wait_idle(c, 0);	/* GLASSFS_DISCARD=async */
		CHECK(N("space free again"), !alloc_is_used(c, logical, dlen));
	}
	CHECK(N("final close"), mount_close(c) == 0);
	c = NULL;
	CHECK_FSCK(N("fsck clean at the end"), img);

	/* fsck must notice reference-count damage: drop the extent item of
	 * the fs tree's root node behind the allocator's back */
	if (t_fsck(img) >= 0) {
		struct txn *t;
		MUST(t_open(img, false, &c));
		uint64_t b = subvol_root(c, FS_TREE_OBJECTID)->bytenr;
		MUST(txn_join(c, 2, 0, &t));
		struct key k = { b, KEY_METADATA_ITEM, (uint64_t)subvol_root(c, FS_TREE_OBJECTID)->level };
		/* the fs root may be copied by this very transaction: only the
		 * extent tree is touched, so b stays the fs root */
		int r = btree_delete(t, subvol_root(c, EXTENT_TREE_OBJECTID), &k);
		txn_end(t);
		CHECK(N("damage injected"), r == 0 && mount_close(c) == 0);
		c = NULL;
		t_fsck_quiet = true;
		CHECK(N("fsck reports a missing reference item (exit 4)"), t_fsck(img) == 4);
		t_fsck_quiet = false;
	}
out:
	if (c)
		mount_close(c);
	free(wbuf);
	free(rbuf);
	if (img[0])
		unlink(img);
#undef N
}

/*
 * Concurrency: threads insert items and write data through their own
 * handles while commits run from txn_commit(), the commit thread (1 s)
 * and the dirty threshold.  Everything must be there after reopen.
 */
struct worker {
	struct core *c;
	int id, n;
	int err;
	uint64_t logical[8];
	uint8_t pattern;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	uint8_t buf[64], *d = malloc(4 * CORE_SECTORSIZE);

	if (!d) {
		w->err = -ENOMEM;
		return NULL;
	}
	for (int i = 0; i < w->n && !w->err; i++) {
		struct txn *t;
		uint64_t id = (uint64_t)w->id * 1000000 + (uint64_t)i;
		struct key k = t_key(id);
		int r = txn_join(w->c, 2, 0, &t);
		if (r) {
			w->err = r;
			break;
		}
		memcpy(buf, &id, 8);
		memset(buf + 8, w->id, sizeof(buf) - 8);
		r = btree_insert(t, subvol_root(w->c, FS_TREE_OBJECTID), &k, buf, sizeof(buf));
		if (!r && i >= 5 && i % 3 == 0) {	/* deletes merge nodes meanwhile */
			struct key dk = t_key(id - 5);
			r = btree_delete(t, subvol_root(w->c, FS_TREE_OBJECTID), &dk);
		}
		if (!r && i >= 8 && i < 16) {	/* extents freed while others commit */
			uint64_t l;
			r = data_alloc(t, 2 * CORE_SECTORSIZE, &l);
			if (!r)
				r = data_write(t, l, d, 2 * CORE_SECTORSIZE);
			if (!r)
				r = data_ref(t, l, 2 * CORE_SECTORSIZE, -1);
		}
		if (!r && i < 8) {
			memset(d, w->pattern + i, 4 * CORE_SECTORSIZE);
			r = data_alloc(t, 4 * CORE_SECTORSIZE, &w->logical[i]);
			if (!r)
				r = data_write(t, w->logical[i], d, 4 * CORE_SECTORSIZE);
		}
		int e = txn_end(t);
		w->err = r ? r : e;
		if (i % 97 == 0 && !w->err)
			w->err = txn_commit(w->c, COMMIT_FSYNC);
	}
	free(d);
	return NULL;
}

static void threaded(uint32_t nodesize)
{
	char img[256], name[128];
	const char *devs[1] = { img };
	struct core_opts o;
	struct core *c = NULL;
	struct worker w[6];
	pthread_t th[6];
	int nth = 2 + (int)(t_rand() % 5), per = 300 + (int)(t_rand() % 300);
	struct core_stats st;

	img[0] = 0;
#define N(s) (snprintf(name, sizeof(name), "[%u] %s", nodesize, s), name)
	MUST(t_image(img, sizeof(img), 128ull << 20));
	MUST(t_format(img, nodesize));
	core_opts_default(&o);
	o.commit_interval_s = 1;
	o.dirty_thresh_bytes = 256 << 10;
	/* every lock scheme the mount options offer, chosen by the seed */
	o.locktype = (enum glock_type)(t_rand() % 3);
	o.lock_groups = (t_rand() & 1) ? 0 : 1u + t_rand() % 4;
	printf("threads: %d, locktype %s, lock groups %u\n", nth, glock_type_name(o.locktype),
	       o.lock_groups);
	MUST(mount_open(devs, 1, &o, &c));
	for (int i = 0; i < nth; i++) {
		w[i] = (struct worker){ .c = c, .id = i + 1, .n = per, .pattern = (uint8_t)(i * 16) };
		pthread_create(&th[i], NULL, worker_main, &w[i]);
	}
	int errs = 0;
	for (int i = 0; i < nth; i++) {
		pthread_join(th[i], NULL);
		if (w[i].err) {
			printf("worker %d: %s\n", i, strerror(-w[i].err));
			errs++;
		}
	}
	CHECK(N("threads: no errors"), errs == 0);
	/* the dirty threshold wakes the commit thread without any sync */
	{
		struct core_stats st0;
		struct txn *t;
		struct key k = t_key(999999999);
		c->opts.dirty_thresh_bytes = 1;
		mount_stats(c, &st0);
		MUST(txn_join(c, 1, 0, &t));
		int r = btree_insert(t, subvol_root(c, FS_TREE_OBJECTID), &k, "x", 1);
		txn_end(t);
		for (int i = 0; i < 300; i++) {
			mount_stats(c, &st);
			if (st.commits > st0.commits)
				break;
			usleep(10000);
		}
		CHECK(N("threads: dirty threshold commits"), r == 0 && st.commits > st0.commits);
	}
	CHECK(N("threads: close"), mount_close(c) == 0);
	c = NULL;
	CHECK_FSCK(N("threads: fsck clean"), img);
	MUST(t_open(img, true, &c));
	uint64_t found = 0;
	int data_ok = 1;
	uint8_t *d = malloc(4 * CORE_SECTORSIZE);
	uint64_t expect = 0;
	for (int i = 0; i < nth; i++) {
		for (int k = 0; k < per; k++) {
			struct key key = t_key((uint64_t)w[i].id * 1000000 + (uint64_t)k);
			uint8_t b[64];
			bool deleted = k + 5 < per && (k + 5) % 3 == 0;
			int r = btree_lookup(subvol_root(c, FS_TREE_OBJECTID), &key, b, sizeof(b));
			expect++;
			if ((deleted && r == -ENOENT) || (!deleted && r == (int)sizeof(b)))
				found++;
		}
		for (int k = 0; k < 8 && d; k++) {
			if (data_read(c, w[i].logical[k], d, 4 * CORE_SECTORSIZE) ||
			    d[0] != (uint8_t)(w[i].pattern + k) ||
			    d[4 * CORE_SECTORSIZE - 1] != (uint8_t)(w[i].pattern + k))
				data_ok = 0;
		}
	}
	free(d);
	CHECK(N("threads: every item (and no deleted one) after reopen"), found == expect);
	CHECK(N("threads: every data block after reopen"), data_ok);
out:
	t_done(c, img);
#undef N
}

/* ---- pipelined commits ---------------------------------------------------- */

static void *commit_main(void *arg)
{
	struct core *c = arg;
	intptr_t r = txn_commit(c, COMMIT_SYNC);
	return (void *)r;
}

/* Wait (up to 5 s) until a commit is in its write phase: its transid. */
static uint64_t wait_writing(struct core *c)
{
	for (int i = 0; i < 5000; i++) {
		glock_write(&c->ts.lock);
		uint64_t w = c->ts.writing;
		glock_write_unlock(&c->ts.lock);
		if (w)
			return w;
		usleep(1000);
	}
	return 0;
}

static int open_slow_flush(const char *img, struct core **c)
{
	const char *devs[1] = { img };
	struct core_opts o;

	core_opts_default(&o);
	o.commit_interval_s = 3600;
	o.dev_lat_us[2] = 300000;	/* every flush 300 ms: a long write phase */
	return mount_open(devs, 1, &o, c);
}

/*
 * While commit N writes its nodes (slow flushes), handles join N+1 at
 * once, change the trees (copying and freeing N's nodes) and end before N
 * is durable; both end up on disk in order.  A crash in N's write phase
 * leaves N-1 (or N) intact and fsck clean.
 */
static void pipelined(uint32_t nodesize)
{
	char img[256], name[128];
	struct core *c = NULL;
	pthread_t th;
	bool th_started = false;
	void *tr = NULL;
	int err;

	img[0] = 0;
#define N(s) (snprintf(name, sizeof(name), "[%u] pipeline: %s", nodesize, s), name)
	MUST(t_image(img, sizeof(img), 128ull << 20));
	MUST(t_format(img, nodesize));
	MUST(open_slow_flush(img, &c));
	MUST(t_insert_items(c, 0, 2000, 100));
	MUST(pthread_create(&th, NULL, commit_main, c));
	th_started = true;
	uint64_t n = wait_writing(c);
	CHECK(N("commit reaches its write phase"), n != 0);
	uint64_t t0 = glock_now_ns();
	struct txn *t;
	MUST(txn_join(c, 4, 0, &t));
	uint64_t joined = txn_transid(t);
	txn_end(t);
	/* N+1 copies and frees N's nodes: deletes all over N's leaves */
	MUST(t_insert_items(c, 2000, 1000, 100));
	MUST(txn_join(c, 1000, TXN_USE_RESERVE, &t));
	int r = 0;
	for (uint64_t i = 0; i < 1000 && !r; i++) {
		struct key k = t_key(i * 2);
		r = btree_delete(t, subvol_root(c, FS_TREE_OBJECTID), &k);
	}
	txn_end(t);
	uint64_t took = glock_now_ns() - t0;
	glock_write(&c->ts.lock);
	uint64_t still = c->ts.writing;
	glock_write_unlock(&c->ts.lock);
	printf("# N=%llu, joined %llu, N+1's changes took %.1f ms, still writing: %llu\n",
	       (unsigned long long)n, (unsigned long long)joined, took / 1e6,
	       (unsigned long long)still);
	CHECK(N("deletes in N+1"), r == 0);
	CHECK(N("a handle joins N+1 while N is written"), joined == n + 1);
	CHECK(N("N+1 changes before N is durable"), still == n);
	pthread_join(th, &tr);
	th_started = false;
	CHECK(N("commit N"), tr == NULL);
	CHECK(N("N is durable"), core_generation(c) == n);
	CHECK(N("commit N+1"), txn_commit(c, COMMIT_SYNC) == 0 && core_generation(c) == n + 1);
	CHECK(N("close"), mount_close(c) == 0);
	c = NULL;
	CHECK_FSCK(N("fsck clean"), img);
	MUST(t_open(img, true, &c));
	uint64_t odd = 0;
	for (uint64_t i = 1; i < 2000; i += 2)
		odd += t_count_items(c, i, 1, &err);
	CHECK(N("N's items that N+1 kept"), odd == 1000 && err == 0);
	CHECK(N("N's items that N+1 deleted are gone"), t_count_items(c, 0, 1, &err) == 0 &&
	      t_count_items(c, 1998, 1, &err) == 0);
	CHECK(N("N+1's items"), t_count_items(c, 2000, 1000, &err) == 1000 && err == 0);
	mount_close(c);
	c = NULL;

	/* crashes (process exit, nothing more written) while N+1 runs: in N's
	 * write phase (N all or nothing), and just after N is durable (N
	 * whole, with the nodes N+1 copied and freed meanwhile) */
	for (int after = 0; after < 2; after++) {
		uint64_t base = 5000 + (uint64_t)after * 2000;
		fflush(stdout);
		pid_t pid = fork();
		if (pid == 0) {
			struct core *cc;
			pthread_t ct;
			if (open_slow_flush(img, &cc) || t_insert_items(cc, base, 500, 100))
				_exit(2);
			pthread_create(&ct, NULL, commit_main, cc);
			if (!wait_writing(cc))
				_exit(3);
			struct txn *tt;
			if (t_insert_items(cc, base + 1000, 500, 100) ||
			    txn_join(cc, 500, TXN_USE_RESERVE, &tt))
				_exit(4);
			for (uint64_t i = base; i < base + 500; i += 2) {
				struct key k = t_key(i);
				btree_delete(tt, subvol_root(cc, FS_TREE_OBJECTID), &k);
			}
			txn_end(tt);
			if (after)
				pthread_join(ct, NULL);
			_exit(0);
		}
		int st = 0;
		waitpid(pid, &st, 0);
		CHECK(N("crash child ran"), WIFEXITED(st) && WEXITSTATUS(st) == 0);
		CHECK_FSCK(N("fsck clean after a crash"), img);
		MUST(t_open(img, true, &c));
		uint64_t nn = t_count_items(c, base, 500, &err);
		if (after)
			CHECK(N("crash after N: N whole"), nn == 500 && err == 0);
		else
			CHECK(N("crash in N's write phase: N all or nothing"), (nn == 0 || nn == 500) && err == 0);
		CHECK(N("crash: nothing of N+1"), t_count_items(c, base + 1000, 500, &err) == 0 &&
		      t_count_items(c, 1, 1, &err) == 1 && t_count_items(c, 2000, 1000, &err) == 1000);
		mount_close(c);
		c = NULL;
	}
out:
	if (th_started)
		pthread_join(th, NULL);
	t_done(c, img);
#undef N
}

/*
 * Who asks the OS for read-ahead: this test's posix_fadvise stands in for
 * libc's (the engine is linked statically into the test, so its calls
 * come here) and counts the WILLNEED hints asked from the thread that
 * reads — which must be none: the volume's read-ahead thread asks
 * (dev_readahead.h), so a READ does not wait for the call.
 */
static pthread_t ra_reader;
static bool ra_watching;
static uint64_t ra_hints, ra_hints_by_reader;	/* atomic */
/*
 * ra_queue_full's gate: while closed, a WILLNEED hint asked by any
 * thread but the test's waits in here, so the read-ahead thread holds one
 * hint and the queue fills behind it.  ra_gated: hints waiting.
 */
static pthread_mutex_t ra_gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ra_gate_cond = PTHREAD_COND_INITIALIZER;
static bool ra_gate_closed;
static int ra_gated;

/* Caller holds ra_gate_lock: counted in ra_gated until the gate opens. */
static void gate_wait_locked(void)
{
	ra_gated++;
	pthread_cond_broadcast(&ra_gate_cond);
	while (ra_gate_closed)
		pthread_cond_wait(&ra_gate_cond, &ra_gate_lock);
	ra_gated--;
}

int posix_fadvise(int fd, off_t off, off_t len, int advice)
{
	if (advice == POSIX_FADV_WILLNEED && __atomic_load_n(&ra_watching, __ATOMIC_ACQUIRE)) {
		__atomic_fetch_add(&ra_hints, 1, __ATOMIC_RELAXED);
		if (pthread_equal(pthread_self(), ra_reader))
			__atomic_fetch_add(&ra_hints_by_reader, 1, __ATOMIC_RELAXED);
	}
	if (advice == POSIX_FADV_WILLNEED && !pthread_equal(pthread_self(), ra_reader)) {
		pthread_mutex_lock(&ra_gate_lock);
		gate_wait_locked();
		pthread_mutex_unlock(&ra_gate_lock);
	}
	return syscall(SYS_fadvise64, fd, (long)off, (long)len, advice) < 0 ? errno : 0;
}

/*
 * Read-ahead (fs/store/dev_readahead.c): a sequential data reader gets the
 * bytes ahead asked of the OS, in a few large steps, not one per read; a
 * single read and reads far apart ask for nothing.  Data of 24 MiB written
 * in 1 MiB extents, read back in 128 KiB pieces (a FUSE READ's size).
 */
static void seq_readahead(uint32_t nodesize)
{
	char img[256], name[128];
	struct core *c = NULL;
	struct core_stats a, b;
	const uint64_t MiB = 1ull << 20, n = 24, piece = 128 << 10;
	uint64_t logical[24];
	uint8_t *buf = malloc(MiB);
	bool ok = true;

	img[0] = 0;
#define N(s) (snprintf(name, sizeof(name), "[%u] readahead: %s", nodesize, s), name)
	MUST(buf ? 0 : -ENOMEM);
	MUST(fresh_volume(img, sizeof(img), nodesize, N("format"), &c));
	memset(buf, 0x5a, MiB);
	for (uint64_t i = 0; i < n && ok; i++)
		ok = t_write_extent(c, buf, MiB, 0, &logical[i]) == 0;
	CHECK(N("24 MiB written"), ok && txn_commit(c, COMMIT_SYNC) == 0);
	CHECK(N("written in order"), logical[n - 1] == logical[0] + (n - 1) * MiB);

	mount_stats(c, &a);
	CHECK(N("one read asks for nothing"), data_read(c, logical[20], buf, piece) == 0);
	for (uint64_t i = 0; i < 20; i += 4)	/* 4 MiB apart: never a stream */
		CHECK(N("read far apart"), data_read(c, logical[i] + MiB - piece, buf, piece) == 0);
	mount_stats(c, &b);
	CHECK(N("reads far apart ask for nothing"),
	      b.dev_readahead_ios == a.dev_readahead_ios && b.dev_readahead_bytes == a.dev_readahead_bytes);

	ra_reader = pthread_self();
	__atomic_store_n(&ra_watching, true, __ATOMIC_RELEASE);
	for (uint64_t off = 0; off < n * MiB && ok; off += piece)
		ok = data_read(c, logical[0] + off, buf, piece) == 0;
	dev_readahead_wait(c);
	__atomic_store_n(&ra_watching, false, __ATOMIC_RELEASE);
	mount_stats(c, &a);
	CHECK(N("the read-ahead thread asks the OS, not the reader"),
	      ra_hints >= 2 && ra_hints == a.dev_readahead_ios - b.dev_readahead_ios &&
	      ra_hints_by_reader == 0);
	if (fails)
		printf("readahead: %llu hints asked, %llu by the reading thread\n",
		       (unsigned long long)ra_hints, (unsigned long long)ra_hints_by_reader);
	CHECK(N("no hint dropped"), a.readahead_dropped == 0);
	/* 192 reads: the window ahead (8 MiB) asked for in half-window steps */
	CHECK(N("a sequential reader gets the bytes ahead asked for"),
	      ok && a.dev_readahead_bytes - b.dev_readahead_bytes >= (n - 1) * MiB);
	CHECK(N("in a few large steps"),
	      a.dev_readahead_ios - b.dev_readahead_ios >= 2 &&
	      a.dev_readahead_ios - b.dev_readahead_ios <= n / 4 + 2);
	if (fails)
		printf("readahead: %llu asks, %llu bytes for a %llu-byte read\n",
		       (unsigned long long)(a.dev_readahead_ios - b.dev_readahead_ios),
		       (unsigned long long)(a.dev_readahead_bytes - b.dev_readahead_bytes),
		       (unsigned long long)(n * MiB));

	/* two readers at once, each its own stream: both get read-ahead */
	mount_stats(c, &b);
	for (uint64_t off = 0; off < 8 * MiB && ok; off += piece)
		ok = data_read(c, logical[0] + off, buf, piece) == 0 &&
		     data_read(c, logical[12] + off, buf, piece) == 0;
	mount_stats(c, &a);
	CHECK(N("two interleaved streams both read ahead"),
	      ok && a.dev_readahead_bytes - b.dev_readahead_bytes >= 2 * 8 * MiB);
out:
	t_done(c, img);
	free(buf);
#undef N
}

/*
 * The read-ahead queue full (dev_readahead.c, ra_queue): with the
 * read-ahead thread held inside one hint's posix_fadvise (the gate
 * above), DEV_RA_QUEUE more hints queue and the ones after are dropped —
 * counted in readahead_dropped, not in dev_readahead_ios, the reader not
 * asking them itself.  Once the thread goes on it asks exactly the hints
 * it took, and hints after that queue and are asked again.  Each hint is
 * a new stream (a note, then one that continues it) 3 MiB from the last:
 * farther than DEV_RA_SLACK, so none continues another; notes only, no
 * data read (the hints are what is checked, not the bytes).
 */
static void ra_queue_full(uint32_t nodesize)
{
	char img[256], name[128];
	struct core *c = NULL;
	struct core_stats a, b;
	const uint64_t MiB = 1ull << 20, piece = 128 << 10;
	const int extra = 5, total = 1 + DEV_RA_QUEUE + extra;
	uint64_t at = 0;

	img[0] = 0;
#define N(s) (snprintf(name, sizeof(name), "[%u] readahead queue full: %s", nodesize, s), name)
	MUST(fresh_volume(img, sizeof(img), nodesize, N("format"), &c));
	struct dev *d = c->devs[0];
	MUST(c->ra.thread.started && d->size >= (uint64_t)(total + 2) * 3 * MiB ? 0 : -EINVAL);

	ra_reader = pthread_self();
	ra_hints = ra_hints_by_reader = 0;
	pthread_mutex_lock(&ra_gate_lock);
	ra_gate_closed = true;
	pthread_mutex_unlock(&ra_gate_lock);
	__atomic_store_n(&ra_watching, true, __ATOMIC_RELEASE);
	mount_stats(c, &b);
	for (int i = 0; i < total; i++) {
		at += 3 * MiB;
		dev_readahead_note(c, d, at, piece);		/* starts a stream */
		dev_readahead_note(c, d, at + piece, piece);	/* continues it: a hint */
		if (i)
			continue;
		/* the thread took the first hint and waits at the gate */
		pthread_mutex_lock(&ra_gate_lock);
		while (ra_gated < 1)
			pthread_cond_wait(&ra_gate_cond, &ra_gate_lock);
		pthread_mutex_unlock(&ra_gate_lock);
	}
	mount_stats(c, &a);
	CHECK(N("the hints past the queue are dropped and counted"),
	      a.readahead_dropped - b.readahead_dropped == (uint64_t)extra);
	CHECK(N("a dropped hint is not counted as asked"),
	      a.dev_readahead_ios - b.dev_readahead_ios == (uint64_t)(1 + DEV_RA_QUEUE));
	CHECK(N("the reader asks none itself"), ra_hints_by_reader == 0);
	if (fails)
		printf("readahead queue full: dropped %llu, handed on %llu, asked by the reader %llu\n",
		       (unsigned long long)(a.readahead_dropped - b.readahead_dropped),
		       (unsigned long long)(a.dev_readahead_ios - b.dev_readahead_ios),
		       (unsigned long long)ra_hints_by_reader);

	pthread_mutex_lock(&ra_gate_lock);
	ra_gate_closed = false;
	pthread_cond_broadcast(&ra_gate_cond);
	pthread_mutex_unlock(&ra_gate_lock);
	dev_readahead_wait(c);
	CHECK(N("the thread asks every hint it took, once"),
	      __atomic_load_n(&ra_hints, __ATOMIC_RELAXED) == (uint64_t)(1 + DEV_RA_QUEUE));

	/* drained: hints queue and are asked again, nothing more dropped */
	uint64_t dropped_at = at;	/* the last stream: its hint was dropped */
	mount_stats(c, &b);
	for (int i = 0; i < 2; i++) {
		at += 3 * MiB;
		dev_readahead_note(c, d, at, piece);
		dev_readahead_note(c, d, at + piece, piece);
	}
	dev_readahead_wait(c);
	mount_stats(c, &a);
	CHECK(N("after the drain hints are asked again"),
	      a.dev_readahead_ios - b.dev_readahead_ios == 2 &&
	      __atomic_load_n(&ra_hints, __ATOMIC_RELAXED) == (uint64_t)(3 + DEV_RA_QUEUE) &&
	      a.readahead_dropped == b.readahead_dropped);
	/* a stream whose hint was dropped asks at its next read: else the
	 * bytes of the dropped hint are never asked for, each READ of them
	 * waits for the device */
	mount_stats(c, &b);
	dev_readahead_note(c, d, dropped_at + 2 * piece, piece);
	dev_readahead_wait(c);
	mount_stats(c, &a);
	CHECK(N("a stream whose hint was dropped asks again at its next read"),
	      a.dev_readahead_ios - b.dev_readahead_ios == 1 &&
	      a.dev_readahead_bytes - b.dev_readahead_bytes >= 8 * MiB - 2 * piece);
	__atomic_store_n(&ra_watching, false, __ATOMIC_RELEASE);
out:
	pthread_mutex_lock(&ra_gate_lock);
	ra_gate_closed = false;
	pthread_cond_broadcast(&ra_gate_cond);
	pthread_mutex_unlock(&ra_gate_lock);
	__atomic_store_n(&ra_watching, false, __ATOMIC_RELEASE);
	t_done(c, img);
#undef N
}

/*
 * Write-behind (dev_readahead_written): this test's sync_file_range
 * stands in for libc's and counts the calls, and those made from the
 * writing thread — which must be none (the writer holds its inode's
 * lock in the engine; the read-ahead thread asks).
 */
static pthread_t wb_writer;
static uint64_t wb_calls, wb_calls_by_writer, wb_bytes;	/* atomic */

/* wb_queue_full: the ranges asked (wb_ranges_on), in order */
static struct { uint64_t off, len; } wb_ranges[64];
static int wb_nranges;
static bool wb_ranges_on;

int sync_file_range(int fd, off_t off, off_t len, unsigned int flags)
{
	__atomic_fetch_add(&wb_calls, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&wb_bytes, (uint64_t)len, __ATOMIC_RELAXED);
	if (pthread_equal(pthread_self(), wb_writer))
		__atomic_fetch_add(&wb_calls_by_writer, 1, __ATOMIC_RELAXED);
	/* the read-ahead thread holds this one while the gate is closed
	 * (wb_queue_full), as posix_fadvise's does */
	if (!pthread_equal(pthread_self(), wb_writer)) {
		pthread_mutex_lock(&ra_gate_lock);
		if (wb_ranges_on && wb_nranges < (int)(sizeof(wb_ranges) / sizeof(wb_ranges[0]))) {
			wb_ranges[wb_nranges].off = (uint64_t)off;
			wb_ranges[wb_nranges++].len = (uint64_t)len;
		}
		gate_wait_locked();
		pthread_mutex_unlock(&ra_gate_lock);
	}
	return syscall(SYS_sync_file_range, fd, (long)off, (long)len, flags) < 0 ? -1 : 0;
}

/*
 * A sequential writer's data starts out to the device while it writes
 * (issue 22: fio's end_fsync waited for all 512 MiB at once), in steps of
 * a few MiB from the read-ahead thread; small scattered writes ask for
 * nothing.  32 MiB written as 1 MiB extents, then 64 scattered 4 KiB ones.
 */
static void seq_writebehind(uint32_t nodesize)
{
	char img[256], name[128];
	struct core *c = NULL;
	struct core_stats a, b;
	const uint64_t MiB = 1ull << 20, n = 32;
	uint64_t logical;
	uint8_t *buf = malloc(MiB);
	bool ok = true;

	img[0] = 0;
#define N(s) (snprintf(name, sizeof(name), "[%u] writebehind: %s", nodesize, s), name)
	MUST(buf ? 0 : -ENOMEM);
	MUST(fresh_volume(img, sizeof(img), nodesize, N("format"), &c));
	memset(buf, 0x6b, MiB);
	wb_writer = pthread_self();
	mount_stats(c, &b);
	__atomic_store_n(&wb_calls, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&wb_bytes, 0, __ATOMIC_RELAXED);
	for (uint64_t i = 0; i < n && ok; i++)
		ok = t_write_extent(c, buf, MiB, 0, &logical) == 0;
	dev_readahead_wait(c);
	mount_stats(c, &a);
	CHECK(N("32 MiB written"), ok);
	CHECK(N("a sequential writer's bytes start out while it writes"),
	      a.dev_writebehind_bytes - b.dev_writebehind_bytes >= 16 * MiB &&
	      wb_bytes == a.dev_writebehind_bytes - b.dev_writebehind_bytes);
	CHECK(N("in a few large steps"),
	      a.dev_writebehind_ios - b.dev_writebehind_ios >= 2 &&
	      a.dev_writebehind_ios - b.dev_writebehind_ios <= n / 4 &&
	      wb_calls == a.dev_writebehind_ios - b.dev_writebehind_ios);
	CHECK(N("asked by the read-ahead thread, not the writer"), wb_calls_by_writer == 0);
	if (fails)
		printf("writebehind: %llu asks (%llu by the writer), %llu bytes\n",
		       (unsigned long long)wb_calls, (unsigned long long)wb_calls_by_writer,
		       (unsigned long long)wb_bytes);
	CHECK(N("commit"), txn_commit(c, COMMIT_SYNC) == 0);

	mount_stats(c, &b);
	for (int i = 0; i < 64 && ok; i++)
		ok = t_write_extent(c, buf, 4096, 0, &logical) == 0;
	dev_readahead_wait(c);
	mount_stats(c, &a);
	CHECK(N("small writes ask for nothing"),
	      ok && a.dev_writebehind_ios == b.dev_writebehind_ios);
out:
	t_done(c, img);
	free(buf);
#undef N
}

/*
 * The write-behind queue full (dev_readahead.c): the read-ahead thread
 * held inside a write-behind's sync_file_range (the gate), its queue
 * filled with read hints, the next write-behind step of a sequential
 * writer is dropped — counted in readahead_dropped, not in
 * dev_writebehind_ios.  Once the thread goes on, the stream's next step
 * asks again from where the dropped one started: the bytes asked cover
 * the stream with no gap (a dropped range was never asked before, left
 * to the flush).  The data reads back after the commit and a remount.
 */
static void wb_queue_full(uint32_t nodesize)
{
	char img[256], name[128];
	struct core *c = NULL;
	struct core_stats a, b;
	const uint64_t MiB = 1ull << 20;
	uint64_t logical[40], nw = 0;
	uint8_t *buf = malloc(MiB), *got = malloc(MiB);
	bool ok = true;

	img[0] = 0;
#define N(s) (snprintf(name, sizeof(name), "[%u] writebehind queue full: %s", nodesize, s), name)
	MUST(buf && got ? 0 : -ENOMEM);
	MUST(fresh_volume(img, sizeof(img), nodesize, N("format"), &c));
	struct dev *d = c->devs[0];
	MUST(c->ra.thread.started ? 0 : -EINVAL);
	wb_writer = ra_reader = pthread_self();
	pthread_mutex_lock(&ra_gate_lock);
	ra_gate_closed = true;
	wb_nranges = 0;
	wb_ranges_on = true;
	pthread_mutex_unlock(&ra_gate_lock);
	mount_stats(c, &b);

	/* 1 MiB pieces until the first write-behind step (16 MiB in): the
	 * thread takes it and waits at the gate.  A piece i is fill(i). */
#define PIECE(i) (memset(buf, 0x30 + (int)(i), MiB), buf)
#define WRITE_UNTIL(cond) \
	while (ok && nw < 40 && !(cond)) { \
		ok = t_write_extent(c, PIECE(nw), MiB, 0, &logical[nw]) == 0; \
		nw++; \
		mount_stats(c, &a); \
	}
	mount_stats(c, &a);
	WRITE_UNTIL(a.dev_writebehind_ios - b.dev_writebehind_ios == 1);
	pthread_mutex_lock(&ra_gate_lock);
	while (ok && ra_gated < 1)
		pthread_cond_wait(&ra_gate_cond, &ra_gate_lock);
	pthread_mutex_unlock(&ra_gate_lock);
	/* the queue filled behind it: read hints of streams 3 MiB apart */
	for (int i = 0; i < DEV_RA_QUEUE; i++) {
		uint64_t at = (uint64_t)(i + 1) * 3 * MiB;
		dev_readahead_note(c, d, at, 128 << 10);
		dev_readahead_note(c, d, at + (128 << 10), 128 << 10);
	}
	mount_stats(c, &a);
	CHECK(N("the queue is full"), a.readahead_dropped == b.readahead_dropped &&
	      a.dev_readahead_ios - b.dev_readahead_ios == DEV_RA_QUEUE);
	/* the next step: dropped */
	uint64_t nw0 = nw;
	WRITE_UNTIL(a.readahead_dropped != b.readahead_dropped);
	CHECK(N("a write-behind step past the full queue is dropped and counted"),
	      ok && a.readahead_dropped - b.readahead_dropped == 1 && nw - nw0 <= 8);
	CHECK(N("a dropped step is not counted as asked"),
	      a.dev_writebehind_ios - b.dev_writebehind_ios == 1);

	pthread_mutex_lock(&ra_gate_lock);
	ra_gate_closed = false;
	pthread_cond_broadcast(&ra_gate_cond);
	pthread_mutex_unlock(&ra_gate_lock);
	dev_readahead_wait(c);
	/* drained: the writer goes on 8 MiB */
	nw0 = nw;
	WRITE_UNTIL(nw - nw0 == 8);
	dev_readahead_wait(c);
	pthread_mutex_lock(&ra_gate_lock);
	wb_ranges_on = false;
	int nr = wb_nranges;
	pthread_mutex_unlock(&ra_gate_lock);
	mount_stats(c, &a);
	/* the stream from its first step: [first, first + 16 MiB) asked */
	uint64_t from = nr ? wb_ranges[0].off : 0, upto = from;
	for (bool grew = true; grew;) {
		grew = false;
		for (int i = 0; i < nr; i++)
			if (wb_ranges[i].off <= upto && wb_ranges[i].off + wb_ranges[i].len > upto) {
				upto = wb_ranges[i].off + wb_ranges[i].len;
				grew = true;
			}
	}
	if (fails || upto < from + 16 * MiB)
		for (int i = 0; i < nr; i++)
			printf("writebehind queue full: asked %llu+%llu MiB\n",
			       (unsigned long long)((wb_ranges[i].off - from) / MiB),
			       (unsigned long long)(wb_ranges[i].len / MiB));
	CHECK(N("after the drain the dropped step is asked again: no gap in the stream"),
	      ok && nr >= 2 && upto >= from + 16 * MiB);
	CHECK(N("every step asked is counted"),
	      a.dev_writebehind_ios - b.dev_writebehind_ios == (uint64_t)nr);

	/* durable at the commit: read back after a remount */
	CHECK(N("commit"), ok && txn_commit(c, COMMIT_SYNC) == 0);
	mount_close(c);
	c = NULL;
	MUST(t_open(img, true, &c));
	for (uint64_t i = 0; i < nw && ok; i++)
		ok = data_read(c, logical[i], got, MiB) == 0 && memcmp(got, PIECE(i), MiB) == 0;
	CHECK(N("every piece reads back after the commit and a remount"), ok);
#undef WRITE_UNTIL
#undef PIECE
out:
	pthread_mutex_lock(&ra_gate_lock);
	ra_gate_closed = false;
	wb_ranges_on = false;
	pthread_cond_broadcast(&ra_gate_cond);
	pthread_mutex_unlock(&ra_gate_lock);
	t_done(c, img);
	free(buf);
	free(got);
#undef N
}

int main(void)
{
	const char *ns = getenv("NODESIZE");	/* one node size only */

	t_seed_init();
	if (ns) {
		run((uint32_t)strtoul(ns, NULL, 0));
		threaded((uint32_t)strtoul(ns, NULL, 0));
		pipelined((uint32_t)strtoul(ns, NULL, 0));
		seq_readahead((uint32_t)strtoul(ns, NULL, 0));
		ra_queue_full((uint32_t)strtoul(ns, NULL, 0));
		seq_writebehind((uint32_t)strtoul(ns, NULL, 0));
		wb_queue_full((uint32_t)strtoul(ns, NULL, 0));
	} else {
		run(4096);
		run(16384);
		threaded(4096);
		threaded(16384);
		pipelined(4096);
		pipelined(16384);
		seq_readahead(4096);
		ra_queue_full(4096);
		seq_writebehind(4096);
		wb_queue_full(4096);
	}
	return fails ? 1 : 0;
}
