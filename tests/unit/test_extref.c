// SPDX-License-Identifier: MIT
/*
 * test_extref.c — hard links past one B-tree item: extended back
 * references (INODE_EXTREF, fs/items/iref.h) under ASan/UBSan, through
 * fsops on a real volume in an image file.
 *
 *   many_names  5,000 names of one file in one directory (an INODE_REF
 *               holds ~230 of these 60-byte names at 16 KiB nodes): every
 *               link succeeds, readdir lists each name once, nlink counts
 *               them; half unlinked, a quarter renamed (within the
 *               directory and into another), an exchange with another
 *               file's name and back; the listings and nlink checked
 *               against a model after each step, after a commit and after
 *               a remount, fsck clean each time; then every name unlinked
 *               and no back reference left.
 *   full_extref the one limit below it: an extended ref filled by names
 *               sharing a hash (made in a raw transaction): link, rename
 *               and exchange to a name of that hash say EMLINK and change
 *               nothing; with the item gone they succeed.
 *   link_limit  the link count stops at LINK_MAX_COUNT (65,000): EMLINK
 *               past it, the volume still writable, fsck clean.
 *   dir_limit   the same for a directory's count of subdirectories:
 *               mkdir, and a rename or exchange moving a directory in.
 *   fsck_damage extended refs damaged in a raw transaction (one
 *               overrunning its item, one deleted, one in the wrong hash
 *               slot, a stale one naming nothing): fsck -n finds them
 *               (4), -y repairs them (1), -n is clean (0), the names and
 *               nlink are as before.
 *   swap        one extended ref gone and a stale one put in (the counts
 *               agree): fsck -n names both (4), -y repairs them (1), -n
 *               is clean.
 *
 * The power-loss side (a link and fsync past the plain-ref limit, crash
 * states replayed from the write log) is test_powerloss's extref_fsync.
 * NODESIZE=n picks the node size; SEED=n is printed for the runner.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs/txn/txn.h"
#include "items_test.h"
#include "fs/core/core_types.h"
#include "fs/btree/btree.h"
#include "fs/format/format.h"
#include "fs/format/items_format.h"
#include "fs/items/inode.h"
#include "fs/items/subvol.h"

#define NNAMES 5000

static char img[256];
static struct fsops_cred root_cr = { .uid = 0, .gid = 0, .umask = 0 };

/* Where name i of the file is: never made, gone, as made in d, renamed
 * within d, renamed into e. */
enum where { W_NONE, W_GONE, W_D, W_D_RENAMED, W_E };
static enum where at[NNAMES];
static uint64_t dir_d, dir_e, ino_f, ino_g;

/* Name i as made (60 bytes), or as renamed. */
static const char *name_of(int i, enum where w)
{
	static char b[2][80];
	static int which;
	char *s = b[which ^= 1];

	if (w == W_D_RENAMED || w == W_E)
		snprintf(s, 80, "%s-%05d", w == W_E ? "moved" : "renamed", i);
	else
		snprintf(s, 80, "link-%05d-%049d", i, i);
	return s;
}

/* ---- listings ----------------------------------------------------------- */

struct listing {
	char **v;
	size_t n, cap;
	uint64_t other;		/* entries naming another inode than ino_f */
};

static int collect(void *arg, const char *name, const struct stat *st, uint64_t next)
{
	struct listing *l = arg;

	(void)next;
	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return 0;
	if ((st->st_ino & SUBVOL_INO_MASK) != ino_f) {
		l->other++;
		return 0;
	}
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 1024;
		l->v = realloc(l->v, l->cap * sizeof(*l->v));
	}
	l->v[l->n++] = strdup(name);
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void listing_free(struct listing *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

/*
 * readdir of dir (one pass, as many getdents as it takes) against the
 * model: the names of f there, each once; `others` entries of other
 * inodes.  Prints the first difference.
 */
static bool listing_matches(const char *what, uint64_t dir, enum where w1, enum where w2,
			    uint64_t others)
{
	struct listing got = { 0 }, want = { 0 };
	bool ok;
	int r = fsops_readdir(fs, dir, 0, 0, collect, &got);

	want.cap = NNAMES + 1;
	want.v = malloc(want.cap * sizeof(*want.v));
	if (dir == dir_d)
		want.v[want.n++] = strdup("f");
	for (int i = 0; i < NNAMES; i++)
		if (at[i] == w1 || at[i] == w2)
			want.v[want.n++] = strdup(name_of(i, at[i]));
	if (got.n)
		qsort(got.v, got.n, sizeof(*got.v), cmp_str);
	qsort(want.v, want.n, sizeof(*want.v), cmp_str);
	ok = r == 0 && got.n == want.n && got.other == others;
	for (size_t i = 0; ok && i < got.n; i++)
		if (strcmp(got.v[i], want.v[i])) {
			printf("# %s: listing has '%s' where the model has '%s'\n", what, got.v[i],
			       want.v[i]);
			ok = false;
		}
	if (!ok)
		printf("# %s: readdir %d: %zu names of f (%llu others), the model %zu (%llu)\n", what,
		       r, got.n, (unsigned long long)got.other, want.n, (unsigned long long)others);
	listing_free(&got);
	listing_free(&want);
	return ok;
}

static uint32_t model_nlink(void)
{
	uint32_t n = 1;		/* "f" itself */

	for (int i = 0; i < NNAMES; i++)
		n += at[i] == W_D || at[i] == W_D_RENAMED || at[i] == W_E;
	return n;
}

/* Items of type `type` of object ino in the fs tree. */
static uint64_t count_items(struct root *r, uint64_t ino, uint8_t type)
{
	struct key k = { ino, type, 0 }, ik;
	struct path p;
	uint64_t n = 0;
	int ret;

	btree_path_init(&p);
	ret = btree_search_ge(r, &k, &p);
	while (ret == 0) {
		btree_item_key(&p, p.slots[0], &ik);
		if (ik.objectid != ino || ik.type != type)
			break;
		n++;
		ret = btree_next(&p);
	}
	btree_path_release(&p);
	return n;
}

/* The model checked on the mounted volume: both listings, nlink, a
 * sample of lookups. */
static void check_model(const char *what)
{
	char label[128];
	struct stat st;
	int bad = 0;

	snprintf(label, sizeof(label), "%s: readdir of d lists every name of f once", what);
	CHECK(label, listing_matches(what, dir_d, W_D, W_D_RENAMED, 0));
	snprintf(label, sizeof(label), "%s: readdir of e lists the names moved there", what);
	CHECK(label, listing_matches(what, dir_e, W_E, W_E, 1));
	snprintf(label, sizeof(label), "%s: stat nlink %u", what, model_nlink());
	CHECK(label, fsops_getattr(fs, ino_f, &st) == 0 && st.st_nlink == model_nlink());
	for (int i = 0; i < NNAMES; i += 37) {
		uint64_t dir = at[i] == W_E ? dir_e : dir_d;
		int r = fsops_lookup(fs, dir, name_of(i, at[i] == W_GONE ? W_D : at[i]), &st);
		bool want = at[i] != W_GONE;
		if (r == 0)
			fsops_forget(fs, st.st_ino, 1);
		if ((r == 0) != want || (want && (st.st_ino & SUBVOL_INO_MASK) != ino_f))
			bad++;
	}
	snprintf(label, sizeof(label), "%s: lookups find each name and none gone", what);
	CHECK(label, bad == 0);
}

static void remount_check(const char *what)
{
	char label[128];

	CHECK("commit", fsops_sync(fs) == 0);
	check_model(what);
	CHECK("unmount", items_unmount() == 0);
	snprintf(label, sizeof(label), "%s: committed", what);
	fsck_clean(label, img);
	CHECK("remount", items_mount(img) == 0);
	snprintf(label, sizeof(label), "%s, remounted", what);
	if (fs)
		check_model(label);
}

/* ---- many names ------------------------------------------------------- */

static void many_names(void)
{
	struct stat st;
	int made = 0, r = 0;

	CHECK("mkdir d", fsops_mkdir(fs, ROOT_DIR_INO, "d", 0755, &root_cr, &st) == 0);
	dir_d = st.st_ino;
	CHECK("mkdir e", fsops_mkdir(fs, ROOT_DIR_INO, "e", 0755, &root_cr, &st) == 0);
	dir_e = st.st_ino;
	CHECK("create d/f", fsops_mknod(fs, dir_d, "f", S_IFREG | 0644, 0, &root_cr, &st) == 0);
	ino_f = st.st_ino;
	CHECK("create e/g", fsops_mknod(fs, dir_e, "g", S_IFREG | 0644, 0, &root_cr, &st) == 0);
	ino_g = st.st_ino;
	/* d lists f itself too: "f" is one of f's names the model counts */
	for (int i = 0; i < NNAMES; i++) {
		r = fsops_link(fs, ino_f, dir_d, name_of(i, W_D), &st);
		if (r)
			break;
		fsops_forget(fs, ino_f, 1);
		at[i] = W_D;
		made++;
	}
	if (r)
		printf("# link %d: %s\n", made, strerror(-r));
	CHECK("5000 links of one file in one directory", made == NNAMES);
	CHECK("the names past the INODE_REF are in extended refs",
	      count_items(fs->root, ino_f, KEY_INODE_REF) == 1 &&
	      count_items(fs->root, ino_f, KEY_INODE_EXTREF) > 1000);
	CHECK("readdir sees them all (with f)", listing_matches("links", dir_d, W_D, W_D, 0));
	CHECK("stat nlink 5001", fsops_getattr(fs, ino_f, &st) == 0 && st.st_nlink == 5001);
	CHECK("commit", fsops_sync(fs) == 0);
	CHECK("the commit sets SUPER_FEAT_EXTREF", (core->sb.features & SUPER_FEAT_EXTREF) != 0);

	/* half unlinked: names in the INODE_REF and in extended refs alike */
	r = 0;
	for (int i = 0; i < NNAMES && !r; i += 2) {
		r = fsops_unlink(fs, dir_d, name_of(i, W_D));
		at[i] = W_GONE;
	}
	CHECK("unlink half", r == 0);
	check_model("unlinked half");
	/* a quarter renamed: i % 4 == 1, within d (i % 8 == 1) or into e */
	r = 0;
	for (int i = 1; i < NNAMES && !r; i += 4) {
		enum where w = i % 8 == 1 ? W_D_RENAMED : W_E;
		char from[80];
		snprintf(from, sizeof(from), "%s", name_of(i, W_D));
		r = fsops_rename(fs, dir_d, from, w == W_E ? dir_e : dir_d, name_of(i, w), 0);
		if (!r)
			at[i] = w;
	}
	CHECK("rename a quarter, within d and into e", r == 0);
	check_model("renamed a quarter");
	/* renames back into d, onto names f already has (same inode: a no-op
	 * for rename(2)), and within e */
	CHECK("rename onto another name of the same inode: nothing happens",
	      fsops_rename(fs, dir_d, name_of(3, W_D), dir_d, name_of(7, W_D), 0) == 0);
	r = 0;
	for (int i = 5; i < 400 && !r; i += 8) {	/* e -> d, a name of its own */
		char from[80];
		snprintf(from, sizeof(from), "%s", name_of(i, W_E));
		r = fsops_rename(fs, dir_e, from, dir_d, name_of(i, W_D), 0);
		if (!r)
			at[i] = W_D;
	}
	CHECK("rename back from e into d", r == 0);
	check_model("renamed back");
	/* exchange a name of f in d (an extended ref) with e/g, and back */
	const char *x = name_of(4001, W_D_RENAMED);
	CHECK("exchange d/renamed-04001 (f) with e/g",
	      at[4001] == W_D_RENAMED &&
	      fsops_rename(fs, dir_d, x, dir_e, "g", FSOPS_RENAME_EXCHANGE) == 0);
	CHECK("after the exchange: d names g, e/g is f",
	      fsops_lookup(fs, dir_d, x, &st) == 0 && (st.st_ino & SUBVOL_INO_MASK) == ino_g &&
	      fsops_lookup(fs, dir_e, "g", &st) == 0 && (st.st_ino & SUBVOL_INO_MASK) == ino_f);
	fsops_forget(fs, ino_g, 1);
	fsops_forget(fs, ino_f, 1);
	CHECK("the exchange keeps nlink",
	      fsops_getattr(fs, ino_f, &st) == 0 && st.st_nlink == model_nlink() &&
	      fsops_getattr(fs, ino_g, &st) == 0 && st.st_nlink == 1);
	CHECK("exchange back", fsops_rename(fs, dir_d, x, dir_e, "g", FSOPS_RENAME_EXCHANGE) == 0);
	remount_check("links, unlinks, renames");
}

/* Every name of f unlinked: no back reference is left, f is an orphan
 * until it is forgotten, the volume fsck clean. */
static void unlink_all(void)
{
	struct stat st;
	int r = 0;

	for (int i = 0; i < NNAMES && !r; i++) {
		if (at[i] == W_GONE || at[i] == W_NONE)
			continue;
		r = fsops_unlink(fs, at[i] == W_E ? dir_e : dir_d, name_of(i, at[i]));
		at[i] = W_GONE;
	}
	CHECK("unlink every name but f", r == 0);
	CHECK("one name left: nlink 1, one INODE_REF, no extended ref",
	      fsops_getattr(fs, ino_f, &st) == 0 && st.st_nlink == 1 &&
	      count_items(fs->root, ino_f, KEY_INODE_REF) == 1 &&
	      count_items(fs->root, ino_f, KEY_INODE_EXTREF) == 0);
	check_model("unlinked all");
}

/* ---- a full extended ref ------------------------------------------------ */

/*
 * The one limit below the link count: names whose (parent, name) share a
 * 64-bit hash share an extended ref, which can fill.  No test can find
 * such names, so the item of "target"'s hash is filled with other names
 * in a transaction of its own (misfiled, as fsck would say; it goes
 * before any commit), for a name too long for what a full INODE_REF has
 * left.  With the INODE_REF full too, link, rename and
 * exchange to "target" say EMLINK before changing anything; with the
 * item gone they succeed.
 */
static void full_extref(void)
{
	struct stat st, c, o;
	char name[80];
	int r = 0;
	/* longer than what a full INODE_REF has left (less than one entry
	 * of the 60-byte names) */
	static const char T[] = "target-with-a-name-longer-than-any-gap-a-full-INODE_REF-leaves-"
				"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx";

	CHECK("full extref: mkdir", fsops_mkdir(fs, ROOT_DIR_INO, "col", 0755, &root_cr, &st) == 0);
	uint64_t col = st.st_ino;
	CHECK("full extref: create", fsops_mknod(fs, col, "c", S_IFREG | 0644, 0, &root_cr, &c) == 0 &&
	      fsops_mknod(fs, col, "o", S_IFREG | 0644, 0, &root_cr, &o) == 0);
	for (int i = 0; i < 1200 && !r; i++) {	/* past a 64 KiB INODE_REF */
		snprintf(name, sizeof(name), "c-%05d-%049d", i, i);
		r = fsops_link(fs, c.st_ino, col, name, &st);
		if (!r)
			fsops_forget(fs, c.st_ino, 1);
	}
	CHECK("full extref: 1200 names", r == 0);

	uint32_t max = btree_max_item_size(fs->root), n = 0;
	uint8_t *b = malloc(max);
	struct key k = { c.st_ino, KEY_INODE_EXTREF, extref_hash(col, T, strlen(T)) };
	for (int i = 0; n + sizeof(struct inode_extref) + 40 <= max; i++) {
		struct inode_extref *x = (void *)(b + n);
		*x = (struct inode_extref){ col, 1000000 + (uint64_t)i, 40 };
		snprintf(name, sizeof(name), "%040d", i);
		memcpy(x->name, name, 40);
		n += (uint32_t)sizeof(*x) + 40;
	}
	struct txn *t;
	int ret = txn_join(core, 4, 0, &t);
	if (!ret) {
		ret = btree_insert(t, fs->root, &k, b, n);
		txn_end(t);
	}
	CHECK("full extref: the item of target's hash filled", ret == 0);
	snprintf(name, sizeof(name), "c-%05d-%049d", 7, 7);
	CHECK("full extref: link to target is EMLINK",
	      fsops_link(fs, c.st_ino, col, T, &st) == -EMLINK);
	CHECK("full extref: rename to target is EMLINK",
	      fsops_rename(fs, col, name, col, T, 0) == -EMLINK);
	CHECK("full extref: exchange giving c the name target is EMLINK",
	      fsops_rename(fs, col, "o", col, T, 0) == 0 &&
	      fsops_rename(fs, col, name, col, T, FSOPS_RENAME_EXCHANGE) == -EMLINK);
	CHECK("full extref: nothing changed",
	      fsops_getattr(fs, c.st_ino, &st) == 0 && st.st_nlink == 1201 &&
	      fsops_lookup(fs, col, name, &st) == 0 && st.st_ino == c.st_ino &&
	      fsops_lookup(fs, col, T, &st) == 0 && st.st_ino == o.st_ino &&
	      !core_readonly(core));
	fsops_forget(fs, c.st_ino, 1);
	fsops_forget(fs, o.st_ino, 1);
	ret = txn_join(core, 4, 0, &t);
	if (!ret) {
		ret = btree_delete(t, fs->root, &k);
		txn_end(t);
	}
	free(b);
	CHECK("full extref: with the item gone, the exchange goes",
	      ret == 0 && fsops_rename(fs, col, name, col, T, FSOPS_RENAME_EXCHANGE) == 0 &&
	      fsops_lookup(fs, col, T, &st) == 0 && st.st_ino == c.st_ino);
	fsops_forget(fs, c.st_ino, 1);
	CHECK("full extref: unlink c's names", fsops_unlink(fs, col, T) == 0 &&
	      fsops_unlink(fs, col, name) == 0 && fsops_unlink(fs, col, "c") == 0);
	for (int i = 0; i < 1200 && !r; i++) {
		if (i == 7)
			continue;
		snprintf(name, sizeof(name), "c-%05d-%049d", i, i);
		r = fsops_unlink(fs, col, name);
	}
	CHECK("full extref: no name left",
	      r == 0 && count_items(fs->root, c.st_ino, KEY_INODE_EXTREF) == 0 &&
	      count_items(fs->root, c.st_ino, KEY_INODE_REF) == 0);
}

/* ---- the link count's limit ---------------------------------------------- */

static void link_limit(void)
{
	struct stat st, h;
	char name[32];
	int r = 0;
	uint32_t n = 1;

	CHECK("limit: mkdir", fsops_mkdir(fs, ROOT_DIR_INO, "lim", 0755, &root_cr, &st) == 0);
	uint64_t lim = st.st_ino;
	CHECK("limit: create", fsops_mknod(fs, lim, "h", S_IFREG | 0644, 0, &root_cr, &h) == 0);
	while (n < LINK_MAX_COUNT) {
		snprintf(name, sizeof(name), "%u", n);
		r = fsops_link(fs, h.st_ino, lim, name, &st);
		if (r)
			break;
		fsops_forget(fs, h.st_ino, 1);
		n++;
	}
	if (r)
		printf("# link %u: %s\n", n, strerror(-r));
	CHECK("limit: links up to LINK_MAX_COUNT", n == LINK_MAX_COUNT);
	CHECK("limit: one more is EMLINK",
	      fsops_link(fs, h.st_ino, lim, "one-more", &st) == -EMLINK &&
	      fsops_link(fs, h.st_ino, ROOT_DIR_INO, "one-more", &st) == -EMLINK);
	CHECK("limit: stat nlink 65000",
	      fsops_getattr(fs, h.st_ino, &st) == 0 && st.st_nlink == LINK_MAX_COUNT);
	CHECK("limit: a rename still works (no new link)",
	      fsops_rename(fs, lim, "1", ROOT_DIR_INO, "lim-1", 0) == 0);
	CHECK("limit: unlink one, link one",
	      fsops_unlink(fs, ROOT_DIR_INO, "lim-1") == 0 &&
	      fsops_link(fs, h.st_ino, lim, "one-more", &st) == 0);
	fsops_forget(fs, h.st_ino, 2);
	CHECK("limit: the volume takes writes", !core_readonly(core) &&
	      fsops_mknod(fs, lim, "after", S_IFREG | 0644, 0, &root_cr, &st) == 0);
	fsops_forget(fs, st.st_ino, 1);
	CHECK("limit: commit", fsops_sync(fs) == 0);
}

/*
 * A directory's link count counts its subdirectories: mkdir stops at
 * LINK_MAX_COUNT, and so must a rename or an exchange that moves a
 * directory into it from another parent (a rename within it or over a
 * directory in it leaves the count as it is).
 */
static void dir_limit(void)
{
	struct stat st;
	char name[32];
	int r = 0;
	uint32_t n = 2;

	CHECK("dir limit: mkdir", fsops_mkdir(fs, ROOT_DIR_INO, "full", 0755, &root_cr, &st) == 0 &&
	      fsops_mkdir(fs, ROOT_DIR_INO, "outside", 0755, &root_cr, &st) == 0 &&
	      fsops_mknod(fs, st.st_ino, "file", S_IFREG | 0644, 0, &root_cr, &st) == 0);
	fsops_forget(fs, st.st_ino, 1);
	CHECK("dir limit: lookup", fsops_lookup(fs, ROOT_DIR_INO, "full", &st) == 0);
	uint64_t full = st.st_ino;
	CHECK("dir limit: lookup outside", fsops_lookup(fs, ROOT_DIR_INO, "outside", &st) == 0);
	uint64_t out = st.st_ino;
	CHECK("dir limit: a file in full",
	      fsops_mknod(fs, full, "f", S_IFREG | 0644, 0, &root_cr, &st) == 0);
	fsops_forget(fs, st.st_ino, 1);
	while (n < LINK_MAX_COUNT) {
		snprintf(name, sizeof(name), "%u", n);
		r = fsops_mkdir(fs, full, name, 0755, &root_cr, &st);
		if (r)
			break;
		fsops_forget(fs, st.st_ino, 1);
		n++;
	}
	CHECK("dir limit: subdirectories up to nlink 65000", n == LINK_MAX_COUNT &&
	      fsops_mkdir(fs, full, "one-more", 0755, &root_cr, &st) == -EMLINK);
	CHECK("dir limit: a directory renamed in from outside is EMLINK",
	      fsops_mkdir(fs, out, "sub", 0755, &root_cr, &st) == 0 &&
	      fsops_rename(fs, out, "sub", full, "sub", 0) == -EMLINK);
	fsops_forget(fs, st.st_ino, 1);
	CHECK("dir limit: an exchange moving a directory in is EMLINK",
	      fsops_rename(fs, out, "sub", full, "f", FSOPS_RENAME_EXCHANGE) == -EMLINK);
	CHECK("dir limit: renames within it and over a directory in it go",
	      fsops_rename(fs, full, "2", full, "two", 0) == 0 &&
	      fsops_rename(fs, out, "sub", full, "two", 0) == 0);
	CHECK("dir limit: nlink stays 65000",
	      fsops_getattr(fs, full, &st) == 0 && st.st_nlink == LINK_MAX_COUNT);
	CHECK("dir limit: commit", fsops_sync(fs) == 0);
}

/* ---- fsck of damaged extended refs -------------------------------------- */

/* The first INODE_EXTREF item of ino at or after hash `from`: its key and
 * bytes (n), 0 when there is none. */
static int ext_item(struct root *r, uint64_t ino, uint64_t from, struct key *k, uint8_t *buf,
		    uint32_t cap)
{
	struct key s = { ino, KEY_INODE_EXTREF, from };
	struct path p;
	int ret;

	btree_path_init(&p);
	ret = btree_search_ge(r, &s, &p);
	if (ret == 0) {
		uint32_t size;
		btree_item_key(&p, p.slots[0], k);
		const void *d = btree_item_ptr(&p, p.slots[0], &size);
		if (k->objectid != ino || k->type != KEY_INODE_EXTREF || size > cap)
			ret = -ENOENT;
		else {
			memcpy(buf, d, size);
			ret = (int)size;
		}
	}
	btree_path_release(&p);
	return ret > 0 ? ret : ret == 0 || ret == 1 ? -ENOENT : ret;
}

static int damage(struct txn *t, struct root *r)
{
	uint8_t b[4096];
	struct key k;
	int n, ret;

	/* 1. an entry overrunning its item */
	n = ext_item(r, ino_f, 0, &k, b, sizeof(b));
	if (n < (int)sizeof(struct inode_extref))
		return n < 0 ? n : -EINVAL;
	((struct inode_extref *)b)->name_len += 30;
	if ((ret = btree_update(t, r, &k, b, (uint32_t)n)))
		return ret;
	/* 2. an item deleted: its names have entries and no back reference */
	n = ext_item(r, ino_f, k.offset + 1, &k, b, sizeof(b));
	if (n < 0 || (ret = btree_delete(t, r, &k)))
		return n < 0 ? n : ret;
	/* 3. an item in a slot its names do not hash to */
	n = ext_item(r, ino_f, k.offset + 1, &k, b, sizeof(b));
	if (n < 0 || (ret = btree_delete(t, r, &k)))
		return n < 0 ? n : ret;
	k.offset ^= 1;
	if ((ret = btree_insert(t, r, &k, b, (uint32_t)n)))
		return ret;
	/* 4. a stale extended ref: a name of f in d no entry holds */
	struct inode_extref *x = (void *)b;
	*x = (struct inode_extref){ dir_d, 999999, 5 };
	memcpy(x->name, "ghost", 5);
	k = (struct key){ ino_f, KEY_INODE_EXTREF, extref_hash(dir_d, "ghost", 5) };
	return btree_insert(t, r, &k, b, sizeof(*x) + 5);
}

/* What fsck -n must say of swap's damage (grep patterns), made by swap. */
static char swap_says[2][400];

/*
 * One extended ref of f gone and a stale one (e, "ghost2") put in: f keeps
 * as many back references as names, so only matching them by name finds
 * either (the old fsck compared counts: clean).
 */
static int swap(struct txn *t, struct root *r)
{
	uint8_t b[4096];
	struct key k;
	int n = ext_item(r, ino_f, 0, &k, b, sizeof(b)), ret;

	if (n < (int)sizeof(struct inode_extref))
		return n < 0 ? n : -EINVAL;
	const struct inode_extref *x = (const void *)b;
	uint32_t sz = (uint32_t)sizeof(*x) + x->name_len;
	snprintf(swap_says[0], sizeof(swap_says[0]),
		 "dir %llu: entry '%.*s' (index %llu -> %llu) has no back reference",
		 (unsigned long long)x->parent, (int)x->name_len, x->name,
		 (unsigned long long)x->index, (unsigned long long)ino_f);
	snprintf(swap_says[1], sizeof(swap_says[1]),
		 "inode %llu: back reference 'ghost2' in dir %llu (index 999998, extended) has no "
		 "directory entry", (unsigned long long)ino_f, (unsigned long long)dir_e);
	if ((uint32_t)n == sz)
		ret = btree_delete(t, r, &k);
	else {
		memmove(b, b + sz, (size_t)n - sz);
		ret = btree_update(t, r, &k, b, (uint32_t)n - sz);
	}
	if (ret)
		return ret;
	struct inode_extref *g = (void *)b;
	*g = (struct inode_extref){ dir_e, 999998, 6 };
	memcpy(g->name, "ghost2", 6);
	k = (struct key){ ino_f, KEY_INODE_EXTREF, extref_hash(dir_e, "ghost2", 6) };
	return btree_insert(t, r, &k, b, sizeof(*g) + 6);
}

/* The volume unmounted, damaged by dmg in a raw transaction: fsck -n finds
 * it (4; its output matching each of says), -y repairs it (1), -n is
 * clean; remounted, the names and nlink are as before. */
static void fsck_damage(const char *what, int (*dmg)(struct txn *t, struct root *r),
			const char *const *says, int nsays)
{
	struct core *c = NULL;
	struct txn *t;
	char label[200];
	int ret;

#define L(s) (snprintf(label, sizeof(label), "%s: %s", what, s), label)
	CHECK(L("unmount"), items_unmount() == 0);
	const char *devs[] = { img };
	struct core_opts o;
	core_opts_default(&o);
	o.commit_interval_s = 3600;
	if (mount_open(devs, 1, &o, &c)) {
		CHECK(L("open"), 0);
		return;
	}
	ret = txn_join(c, 16, 0, &t);
	if (!ret) {
		ret = dmg(t, subvol_root(c, FS_TREE_OBJECTID));
		int e = txn_end(t);
		ret = ret ? ret : e;
	}
	if (!ret)
		ret = txn_commit(c, COMMIT_SYNC);
	if (ret)
		printf("# damaging: %s\n", strerror(-ret));
	CHECK(L("extended refs damaged"), ret == 0);
	CHECK(L("close"), mount_close(c) == 0);
	bool said = true;
	int n1 = items_fsck_says("-n", img, true, says, nsays, &said);
	if (n1 < 0) {
		printf("SKIP: %s: fsck.glassfs not built\n", what);
		CHECK(L("remount"), items_mount(img) == 0);
		return;
	}
	CHECK(L("fsck -n finds it (4)"), n1 == 4);
	if (nsays)
		CHECK(L("fsck -n names each"), said);
	int y = items_fsck("-y", img, true);
	if (y != 1)
		printf("# fsck -y: %d\n", y);
	CHECK(L("fsck -y repairs it (1)"), y == 1);
	fsck_clean(L("after -y"), img);
	CHECK(L("remount"), items_mount(img) == 0);
	if (fs)
		check_model(L("after the repair"));
#undef L
}

int main(void)
{
	long seed = items_setup(img, sizeof(img), "extref", (off_t)384 << 20);

	if (seed < 0)
		return 1;
	if (fs) {
		many_names();
		if (fs)
			fsck_damage("damage", damage, NULL, 0);
		if (fs)
			fsck_damage("swap", swap,
				    (const char *const[]){ swap_says[0], swap_says[1] }, 2);
		if (fs)
			unlink_all();
		if (fs)
			full_extref();
		if (fs)
			link_limit();
		if (fs)
			dir_limit();
		CHECK("final unmount", items_unmount() == 0);
		fsck_clean("final", img);
	}
	unlink(img);
	return fails ? 1 : 0;
}
