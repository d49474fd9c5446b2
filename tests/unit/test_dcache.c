// SPDX-License-Identifier: MIT
/*
 * test_dcache.c — the positive lookup cache (fs/items/dcache.h) never answers
 * with a name that has left the tree.
 *
 * Single-threaded: a repeated lookup is a hit; unlink, rename (plain,
 * over a target, RENAME_EXCHANGE), rmdir and re-create each change what
 * the next lookup says, exactly as the tree does.  Threaded: lookups race
 * unlinks, re-creates (new inode numbers) and renames of the same names;
 * afterwards every name's cached answer must equal the tree's own (read
 * here from the DIR_ITEM runs, bypassing the cache) — a lookup that
 * filled its slot after a removal dropped it would leave a stale answer
 * behind for good.  SEED=n replays the random choices.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fs/btree/btree.h"
#include "fs/core/core.h"
#include "fs/items/dcache.h"
#include "fs/items/dir.h"
#include "fs/ops/fsops.h"
#include "fs/format/items_format.h"
#include "items_test.h"

#include "check.h"

#define NNAMES 16

static char img[256];
static const struct fsops_cred cr = { .uid = 0, .gid = 0, .umask = 022 };

static uint64_t ino_of(uint64_t dir, const char *name)
{
	struct stat st;

	return fsops_lookup(fs, dir, name, &st) == 0 ? st.st_ino : 0;
}

/* The tree's answer, read from the DIR_ITEM run without the cache. */
static uint64_t tree_ino(uint64_t dir, const char *name)
{
	size_t len = strlen(name);
	struct key k = mkkey(dir, KEY_DIR_ITEM, dir_name_hash(name, len));
	char buf[4096];
	int n = btree_lookup(fs->root, &k, buf, sizeof(buf));
	size_t off = 0;

	while (n > 0 && off + sizeof(struct dir_entry) <= (size_t)n) {
		const struct dir_entry *de = (const void *)(buf + off);
		if (de->name_len == len && memcmp(de->name, name, len) == 0)
			return de->ino;
		off += sizeof(*de) + de->name_len;
	}
	return 0;
}

static uint64_t hits(void)
{
	uint64_t h = 0, m = 0;

	if (fs->dcache)
		dcache_counts(fs->dcache, &h, &m);
	return h;
}

static void test_sequential(uint64_t root)
{
	struct stat st, d;
	uint64_t a, b, c, h0;

	CHECK("mkdir", fsops_mkdir(fs, root, "d", 0755, &cr, &d) == 0);
	CHECK("create a", fsops_mknod(fs, d.st_ino, "a", S_IFREG | 0644, 0, &cr, &st) == 0);
	a = st.st_ino;
	CHECK("create b", fsops_mknod(fs, d.st_ino, "b", S_IFREG | 0644, 0, &cr, &st) == 0);
	b = st.st_ino;
	CHECK("lookup a", ino_of(d.st_ino, "a") == a);
	h0 = hits();
	CHECK("lookup a again", ino_of(d.st_ino, "a") == a);
	CHECK("second lookup is a hit", hits() == h0 + 1);

	CHECK("unlink a", fsops_unlink(fs, d.st_ino, "a") == 0);
	CHECK("unlinked name is gone", ino_of(d.st_ino, "a") == 0);
	CHECK("re-create a", fsops_mknod(fs, d.st_ino, "a", S_IFREG | 0644, 0, &cr, &st) == 0);
	a = st.st_ino;
	CHECK("lookup re-created a", ino_of(d.st_ino, "a") == a);

	CHECK("cache b", ino_of(d.st_ino, "b") == b);
	CHECK("rename b c", fsops_rename(fs, d.st_ino, "b", d.st_ino, "c", 0) == 0);
	CHECK("renamed from: gone", ino_of(d.st_ino, "b") == 0);
	CHECK("renamed to: the inode", ino_of(d.st_ino, "c") == b);
	c = b;

	CHECK("cache a and c", ino_of(d.st_ino, "a") == a && ino_of(d.st_ino, "c") == c);
	CHECK("rename a over c", fsops_rename(fs, d.st_ino, "a", d.st_ino, "c", 0) == 0);
	CHECK("target now names a's inode", ino_of(d.st_ino, "c") == a);
	CHECK("source gone", ino_of(d.st_ino, "a") == 0);

	CHECK("create x, y", fsops_mknod(fs, d.st_ino, "x", S_IFREG | 0644, 0, &cr, &st) == 0 &&
	      fsops_mknod(fs, d.st_ino, "y", S_IFREG | 0644, 0, &cr, &d) == 0);
	uint64_t x = st.st_ino, y = d.st_ino;
	d.st_ino = ino_of(root, "d");
	CHECK("cache x, y", ino_of(d.st_ino, "x") == x && ino_of(d.st_ino, "y") == y);
	CHECK("exchange x y", fsops_rename(fs, d.st_ino, "x", d.st_ino, "y",
					   FSOPS_RENAME_EXCHANGE) == 0);
	CHECK("exchanged", ino_of(d.st_ino, "x") == y && ino_of(d.st_ino, "y") == x);

	CHECK("mkdir e", fsops_mkdir(fs, d.st_ino, "e", 0755, &cr, &st) == 0);
	CHECK("cache e", ino_of(d.st_ino, "e") == st.st_ino);
	CHECK("rmdir e", fsops_rmdir(fs, d.st_ino, "e") == 0);
	CHECK("removed dir is gone", ino_of(d.st_ino, "e") == 0);

	/* a name longer than the cache keeps: always the tree's answer */
	char lng[80];
	memset(lng, 'l', sizeof(lng) - 1);
	lng[sizeof(lng) - 1] = 0;
	CHECK("long name", fsops_mknod(fs, d.st_ino, lng, S_IFREG | 0644, 0, &cr, &st) == 0);
	CHECK("long name looked up", ino_of(d.st_ino, lng) == st.st_ino);
	CHECK("long name unlinked", fsops_unlink(fs, d.st_ino, lng) == 0 && ino_of(d.st_ino, lng) == 0);
}

/* The interleaving the sequence number closes, step by step: a lookup
 * reads the sequence and the tree, a removal drops the name, then the
 * lookup stores what it read.  The store must not take. */
static void test_protocol(void)
{
	struct dcache *dc = dcache_new(5);
	struct dir_hit hit = { 777, 3, 8 }, got;
	uint64_t seq;

	CHECK("protocol: cache", dc != NULL);
	if (!dc)
		return;
	seq = dcache_seq(dc);
	dcache_put(dc, seq, 300, "n", 1, &hit);
	CHECK("protocol: a store with the current sequence takes",
	      dcache_get(dc, 300, "n", 1, &got) && got.ino == 777 && got.index == 3 && got.type == 8);
	seq = dcache_seq(dc);			/* lookup: before its search */
	dcache_drop(dc, 300, "n", 1);		/* removal, after the tree change */
	dcache_put(dc, seq, 300, "n", 1, &hit);	/* lookup: stores a stale answer */
	CHECK("protocol: a store that raced a removal does not take", !dcache_get(dc, 300, "n", 1, &got));
	dcache_put(dc, dcache_seq(dc), 300, "n", 1, &hit);
	dcache_drop(dc, 300, "other", 5);
	CHECK("protocol: a drop of another name keeps this one", dcache_get(dc, 300, "n", 1, &got));
	dcache_put(dc, dcache_seq(dc), 301, "n", 1, &hit);
	CHECK("protocol: same name, other directory: both kept",
	      dcache_get(dc, 300, "n", 1, &got) || dcache_get(dc, 301, "n", 1, &got));
	char lng[DCACHE_NAME_MAX + 2];
	memset(lng, 'x', sizeof(lng));
	dcache_put(dc, dcache_seq(dc), 300, lng, sizeof(lng), &hit);
	CHECK("protocol: names over DCACHE_NAME_MAX are not kept", !dcache_get(dc, 300, lng, sizeof(lng), &got));
	dcache_free(dc);
}

/* ---- lookups racing removals ------------------------------------------- */

static uint64_t race_dir;
static volatile int stop;

static void name_of(char *buf, unsigned i)
{
	snprintf(buf, 8, "r%u", i % NNAMES);
}

static void *looker(void *arg)
{
	unsigned s = (unsigned)(uintptr_t)arg;
	char name[8];

	while (!stop) {
		struct dir_hit hit;
		name_of(name, (unsigned)rand_r(&s));
		(void)dir_lookup(fs, race_dir, name, strlen(name), &hit);
	}
	return NULL;
}

static int mutate(unsigned *s, int rounds)
{
	char a[8], b[8];
	struct stat st;

	for (int i = 0; i < rounds; i++) {
		name_of(a, (unsigned)rand_r(s));
		name_of(b, (unsigned)rand_r(s));
		switch (rand_r(s) % 3) {
		case 0:	/* a new inode under an old name */
			(void)fsops_unlink(fs, race_dir, a);
			if (fsops_mknod(fs, race_dir, a, S_IFREG | 0644, 0, &cr, &st) != 0)
				return -1;
			break;
		case 1:
			(void)fsops_rename(fs, race_dir, a, race_dir, b, 0);
			break;
		case 2:
			(void)fsops_unlink(fs, race_dir, a);
			break;
		}
	}
	return 0;
}

static void test_race(uint64_t root, unsigned seed)
{
	pthread_t th[3];
	struct stat st;
	unsigned s = seed;
	int bad = 0, cached = 0;
	char name[8];

	CHECK("race dir", fsops_mkdir(fs, root, "race", 0755, &cr, &st) == 0);
	race_dir = st.st_ino;
	for (unsigned i = 0; i < NNAMES; i++) {
		name_of(name, i);
		fsops_mknod(fs, race_dir, name, S_IFREG | 0644, 0, &cr, &st);
	}
	stop = 0;
	for (int i = 0; i < 3; i++)
		pthread_create(&th[i], NULL, looker, (void *)(uintptr_t)(seed + 1 + (unsigned)i));
	int mret = mutate(&s, 4000);
	stop = 1;
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	CHECK("race mutations ran", mret == 0);
	for (unsigned i = 0; i < NNAMES; i++) {
		struct dir_hit hit;
		uint64_t want;

		name_of(name, i);
		want = tree_ino(race_dir, name);
		int r = dir_lookup(fs, race_dir, name, strlen(name), &hit);
		if ((r == 0 ? hit.ino : 0) != want) {
			printf("  %s: lookup says %llu, the tree %llu\n", name,
			       (unsigned long long)(r == 0 ? hit.ino : 0), (unsigned long long)want);
			bad++;
		}
		cached += want != 0;
	}
	CHECK("after the race every lookup equals the tree", bad == 0);
	CHECK("the race left names to check", cached > 0);
}

int main(void)
{
	long seed = items_setup(img, sizeof(img), "dcache", 256ll << 20);
	uint64_t root = ROOT_DIR_INO;

	if (seed < 0 || !fs)
		return 1;
	test_protocol();
	test_sequential(root);
	test_race(root, (unsigned)seed);
	CHECK("unmount", items_unmount() == 0);
	unlink(img);
	return fails ? 1 : 0;
}
