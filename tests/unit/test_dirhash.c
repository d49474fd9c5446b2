// SPDX-License-Identifier: MIT
/*
 * test_dirhash.c — directory entries whose names share a hash.
 *
 * A 64-bit name hash never collides by chance, so this test overrides
 * the directory layer's hash (dir_set_name_hash() in dir.h) with one of
 * 2 bits: every name shares its DIR_ITEM with a quarter of
 * the others.  Lookup, readdir (resumed at every offset), unlink, rename
 * and link must each find exactly the right entry of a shared item, an
 * item that cannot take one more name must refuse it cleanly (EOVERFLOW,
 * the volume stays writable), and all of it must survive a remount.
 * fsck is not run: it checks entries against the real hash.  SEED=n.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fs/core/core.h"
#include "fs/items/dir.h"
#include "fs/ops/fsops.h"
#include "items_test.h"

#include "check.h"

#define HASH_MASK 3u
#define NNAMES 120

static uint64_t narrow_hash(const char *name, size_t len)
{
	return name_hash(name, len) & HASH_MASK;
}

static char img[256];
static const struct fsops_cred cr = { .uid = 0, .gid = 0, .umask = 022 };

/* readdir that takes at most `room` entries per call, like a small reply. */
struct rd {
	int room, taken, bad;
	uint64_t next;
	int seen[NNAMES];
};

static int emit(void *arg, const char *name, const struct stat *st, uint64_t next_off)
{
	struct rd *r = arg;
	int i;

	(void)st;
	if (r->taken == r->room)
		return 1;
	r->taken++;
	r->next = next_off;
	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return 0;
	if (sscanf(name, "n%d", &i) != 1 || i < 0 || i >= NNAMES)
		r->bad++;
	else
		r->seen[i]++;
	return 0;
}

/* Every name over readdir calls of `room` entries each, resuming at the
 * offset the engine gave for the last entry taken. */
static int list(uint64_t dir, int room, struct rd *r)
{
	uint64_t off = 0;

	memset(r, 0, sizeof(*r));
	r->room = room;
	for (int calls = 0; calls < 10 * NNAMES; calls++) {
		r->taken = 0;
		int ret = fsops_readdir(fs, dir, off, 0, emit, r);
		if (ret < 0)
			return ret;
		if (r->taken == 0)
			return 0;
		off = r->next;
	}
	return -ELOOP;
}

/* Names present: each listed exactly once iff want[i], nothing else. */
static int list_matches(uint64_t dir, const int *want, int room)
{
	struct rd r;
	int ret = list(dir, room, &r);

	if (ret < 0 || r.bad) {
		printf("# readdir: %d, %d unknown names\n", ret, r.bad);
		return 0;
	}
	for (int i = 0; i < NNAMES; i++)
		if (r.seen[i] != (want[i] ? 1 : 0)) {
			printf("# n%d listed %d times, want %d\n", i, r.seen[i], want[i] ? 1 : 0);
			return 0;
		}
	return 1;
}

/* Every name resolves to its own inode, removed ones to ENOENT. */
static int lookups_match(uint64_t dir, const int *want, const uint64_t *inos)
{
	char name[32];
	struct stat st;

	for (int i = 0; i < NNAMES; i++) {
		snprintf(name, sizeof(name), "n%d", i);
		int ret = fsops_lookup(fs, dir, name, &st);
		if (want[i] ? (ret != 0 || st.st_ino != inos[i]) : ret != -ENOENT) {
			printf("# lookup %s: %d ino %llu, want %s %llu\n", name, ret,
			       (unsigned long long)(ret ? 0 : st.st_ino), want[i] ? "ino" : "ENOENT",
			       (unsigned long long)inos[i]);
			return 0;
		}
		if (ret == 0)
			fsops_forget(fs, st.st_ino, 1);
	}
	return 1;
}

static void collisions(unsigned seed)
{
	int want[NNAMES] = { 0 };
	uint64_t inos[NNAMES];
	char name[300], name2[32];
	struct stat d, st;
	int ok = 1;

	srand(seed);
	CHECK("mkdir", fsops_mkdir(fs, ROOT_DIR_INO, "d", 0755, &cr, &d) == 0);
	for (int i = 0; i < NNAMES && ok; i++) {
		snprintf(name, sizeof(name), "n%d", i);
		ok = fsops_mknod(fs, d.st_ino, name, S_IFREG | 0644, 0, &cr, &st) == 0;
		inos[i] = st.st_ino;
		want[i] = 1;
		fsops_forget(fs, st.st_ino, 1);
	}
	CHECK("create 120 names in 4 hash buckets", ok);
	CHECK("create a colliding name twice: EEXIST",
	      fsops_mknod(fs, d.st_ino, "n7", S_IFREG | 0644, 0, &cr, &st) == -EEXIST);
	CHECK("lookup each colliding name", lookups_match(d.st_ino, want, inos));
	CHECK("readdir lists each once (1 per call)", list_matches(d.st_ino, want, 1));
	CHECK("readdir lists each once (7 per call)", list_matches(d.st_ino, want, 7));

	/* unlink a random half, in random order */
	ok = 1;
	for (int k = 0; k < NNAMES / 2 && ok; k++) {
		int i = rand() % NNAMES;
		if (!want[i])
			continue;
		snprintf(name, sizeof(name), "n%d", i);
		ok = fsops_unlink(fs, d.st_ino, name) == 0;
		want[i] = 0;
	}
	CHECK("unlink colliding names", ok);
	CHECK("unlink a gone colliding name: ENOENT", ({
		int g = 0;
		while (want[g]) g++;
		snprintf(name, sizeof(name), "n%d", g);
		fsops_unlink(fs, d.st_ino, name) == -ENOENT; }));
	CHECK("lookups after unlink", lookups_match(d.st_ino, want, inos));
	CHECK("readdir after unlink", list_matches(d.st_ino, want, 3));

	/* rename inside the shared items: onto a free name and over a taken one */
	int a = 0, b = 0, c;
	while (!want[a]) a++;
	b = a + 1;
	while (b < NNAMES && !want[b]) b++;
	c = 0;
	while (want[c]) c++;
	snprintf(name, sizeof(name), "n%d", a);
	snprintf(name2, sizeof(name2), "n%d", c);
	CHECK("rename to a free colliding name", fsops_rename(fs, d.st_ino, name, d.st_ino, name2, 0) == 0);
	want[a] = 0; want[c] = 1; inos[c] = inos[a];
	snprintf(name, sizeof(name), "n%d", b);
	CHECK("rename over a colliding name", b < NNAMES &&
	      fsops_rename(fs, d.st_ino, name2, d.st_ino, name, 0) == 0);
	want[c] = 0; inos[b] = inos[c];
	CHECK("link to a colliding name", fsops_link(fs, inos[b], d.st_ino, name2, &st) == 0);
	want[c] = 1; inos[c] = inos[b];
	fsops_forget(fs, st.st_ino, 1);
	CHECK("lookups after rename and link", lookups_match(d.st_ino, want, inos));
	CHECK("readdir after rename and link", list_matches(d.st_ino, want, 5));

	/* fill one bucket's item: refused with EOVERFLOW, volume still writable */
	struct stat e;
	int r = 0, made = 0;
	CHECK("mkdir full", fsops_mkdir(fs, ROOT_DIR_INO, "full", 0755, &cr, &e) == 0);
	for (int i = 0; i < 100000 && r == 0; i++) {
		memset(name, 'x', 250);
		snprintf(name + 250, 20, "%d", i);
		r = fsops_mknod(fs, e.st_ino, name, S_IFREG | 0644, 0, &cr, &st);
		if (r == 0) {
			made++;
			fsops_forget(fs, st.st_ino, 1);
		}
	}
	printf("# %d long names before the shared items were full\n", made);
	CHECK("a full colliding item refuses a name: EOVERFLOW", r == -EOVERFLOW && made > 4);
	CHECK("the volume stays writable", !core_readonly(core) &&
	      fsops_mknod(fs, ROOT_DIR_INO, "after", S_IFREG | 0644, 0, &cr, &st) == 0);
	fsops_forget(fs, st.st_ino, 1);

	CHECK("unmount", items_unmount() == 0);
	CHECK("remount", items_mount(img) == 0);
	if (!fs)
		return;
	CHECK("lookups after remount", lookups_match(d.st_ino, want, inos));
	CHECK("readdir after remount", list_matches(d.st_ino, want, 11));
}

int main(void)
{
	dir_set_name_hash(narrow_hash);
	long r = items_setup(img, sizeof(img), "dirhash", (off_t)128 << 20);

	if (r < 0)
		return 1;
	unsigned seed = (unsigned)r;
	if (fs) {
		collisions(seed);
		if (fs)
			CHECK("final unmount", items_unmount() == 0);
	}
	unlink(img);
	return fails ? 1 : 0;
}
