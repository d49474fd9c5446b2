// SPDX-License-Identifier: MIT
/*
 * test_snapshot.c — subvolumes and snapshots through the items layer,
 * under ASan/UBSan: files written, a snapshot taken, both sides changed at
 * random against in-memory models (shared nodes copied on write, shared
 * data extents), a snapshot of the snapshot, the first snapshot deleted
 * and freed by the cleaner; after every phase fsck.glassfs (full, not
 * core-only) must be clean: reference counts of nodes shared by several
 * trees and of data extents shared by several leaves.  SEED=n replays.
 */
#include "core_test.h"
#include "fs/btree/meta.h"
#include "fs/trees/extent.h"
#include "fs/ops/fsops.h"
#include "fs/items/subvol.h"

#define NFILES 24
#define MAXSZ (96 * 1024)

struct model {
	uint8_t *data[NFILES];
	size_t size[NFILES];
};

static int full_fsck(const char *img)
{
	char bin[512], cmd[1400];
	int st;

	if (t_fsck_bin(bin, sizeof(bin)))
		return -1;
	snprintf(cmd, sizeof(cmd), "%s -n %s > %s.fsck 2>&1 || %s head -20 %s.fsck", bin, img, img,
		 t_fsck_quiet ? "true ||" : "", img);
	st = system(cmd);
	snprintf(cmd, sizeof(cmd), "grep -q ', 0 errors' %s.fsck", img);
	st = system(cmd);
	snprintf(cmd, sizeof(cmd), "%s.fsck", img);
	unlink(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 99;
}
#define FSCK(name, img) do { \
	int _f = full_fsck(img); \
	if (_f < 0) printf("SKIP: %s: fsck.glassfs not built\n", name); \
	else CHECK(name, _f == 0); \
} while (0)

static const struct fsops_cred root_cr = { .uid = 0, .gid = 0 };

/* The last child of a tree's root (btree_walk visitor): away from the
 * root directory's items, which the snapshot's link copies on write. */
struct first_child {
	uint64_t bytenr, level;
	int root_level;
};

static int find_child(const struct node_info *ni, void *arg)
{
	struct first_child *fc = arg;

	if (fc->root_level < 0)
		fc->root_level = ni->level;
	else if (ni->level == fc->root_level - 1)
		fc->bytenr = ni->bytenr;
	return 0;
}

static uint64_t lookup(struct fsctx *fs, const char *name)
{
	struct stat st;

	if (fsops_lookup(fs, ROOT_DIR_INO, name, &st) < 0)
		return 0;
	fsops_forget(fs, st.st_ino & SUBVOL_INO_MASK, 1);
	return st.st_ino & SUBVOL_INO_MASK;
}

static int put_file(struct fsctx *fs, struct model *m, int i, size_t off, size_t len)
{
	char name[32];
	uint64_t ino;
	struct stat st;
	int ret;

	snprintf(name, sizeof(name), "f%d", i);
	ino = lookup(fs, name);
	if (!ino) {
		ret = fsops_mknod(fs, ROOT_DIR_INO, name, S_IFREG | 0644, 0, &root_cr, &st);
		if (ret < 0)
			return ret;
		ino = st.st_ino & SUBVOL_INO_MASK;
		fsops_forget(fs, ino, 1);
	}
	if (off + len > MAXSZ)
		len = MAXSZ - off;
	if (off > m->size[i])	/* a hole reads as zeros */
		memset(m->data[i] + m->size[i], 0, off - m->size[i]);
	for (size_t b = 0; b < len; b++)
		m->data[i][off + b] = (uint8_t)t_rand();
	if (off + len > m->size[i])
		m->size[i] = off + len;
	ssize_t n = fsops_write(fs, ino, m->data[i] + off, len, off);
	return n == (ssize_t)len ? 0 : (n < 0 ? (int)n : -EIO);
}

static int cut_file(struct fsctx *fs, struct model *m, int i, size_t size)
{
	char name[32];
	struct stat in = { .st_size = (off_t)size }, out;
	uint64_t ino;

	snprintf(name, sizeof(name), "f%d", i);
	ino = lookup(fs, name);
	if (!ino)
		return -ENOENT;
	if (size < m->size[i])
		m->size[i] = size;
	else {
		memset(m->data[i] + m->size[i], 0, size - m->size[i]);
		m->size[i] = size;
	}
	return fsops_setattr(fs, ino, &in, FSOPS_SET_SIZE, &out);
}

/* Every file of fs has the model's contents. */
static bool matches(struct fsctx *fs, const struct model *m)
{
	uint8_t *buf = malloc(MAXSZ);
	bool ok = buf != NULL;

	for (int i = 0; i < NFILES && ok; i++) {
		char name[32];
		uint64_t ino;
		ssize_t n;

		snprintf(name, sizeof(name), "f%d", i);
		ino = lookup(fs, name);
		n = ino ? fsops_read(fs, ino, buf, MAXSZ, 0) : -1;
		if (n != (ssize_t)m->size[i] || memcmp(buf, m->data[i], m->size[i])) {
			printf("  file f%d: read %zd bytes, model has %zu\n", i, n, m->size[i]);
			ok = false;
		}
	}
	free(buf);
	return ok;
}

static void model_copy(struct model *dst, const struct model *src)
{
	for (int i = 0; i < NFILES; i++) {
		memcpy(dst->data[i], src->data[i], MAXSZ);
		dst->size[i] = src->size[i];
	}
}

/* Random changes to one side: overwrites, appends, truncates. */
static int churn(struct fsctx *fs, struct model *m, int rounds)
{
	for (int r = 0; r < rounds; r++) {
		int i = (int)(t_rand() % NFILES), ret;
		unsigned op = t_rand() % 4;

		if (op == 3)
			ret = cut_file(fs, m, i, t_rand() % (m->size[i] + 1));
		else
			ret = put_file(fs, m, i, t_rand() % MAXSZ, 1 + t_rand() % 20000);
		if (ret < 0)
			return ret;
	}
	return 0;
}

static int mount_all(const char *img, struct core **c, struct fsctx **fs)
{
	struct core_opts o;
	int ret = t_open(img, false, c);

	if (ret)
		return ret;
	core_opts_default(&o);
	o.commit_interval_s = 3600;
	return fsops_mount(*c, &o, fs);
}

static void unmount_all(struct core **c, struct fsctx **fs)
{
	fsops_unmount(*fs);
	*fs = NULL;
	mount_close(*c);
	*c = NULL;
}

static void run(uint32_t nodesize)
{
	char img[256], name[128];
	struct core *c = NULL;
	struct fsctx *fs = NULL, *sfs, *s2fs;
	struct model a, b, b2;
	uint64_t id = 0, id2 = 0, del = 0;
	struct core_space sp0, sp1;

	img[0] = 0;
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	memset(&b2, 0, sizeof(b2));
#define N(s) (snprintf(name, sizeof(name), "[%u] %s", nodesize, s), name)
	for (int i = 0; i < NFILES; i++) {
		a.data[i] = calloc(1, MAXSZ);
		b.data[i] = calloc(1, MAXSZ);
		b2.data[i] = calloc(1, MAXSZ);
		MUST(a.data[i] && b.data[i] && b2.data[i] ? 0 : -ENOMEM);
	}
	MUST(t_image(img, sizeof(img), 256ull << 20));
	MUST(t_format(img, nodesize));
	MUST(mount_all(img, &c, &fs));
	mount_space(c, &sp0);
	for (int i = 0; i < NFILES; i++)
		MUST(put_file(fs, &a, i, 0, (i % 5) * 3000 + t_rand() % (MAXSZ / 2)));
	/* many small directory entries: a tree of several levels */
	for (int i = 0; i < (nodesize == 4096 ? 400 : 100); i++) {
		struct stat st;
		char nm[32];
		snprintf(nm, sizeof(nm), "empty-file-with-a-long-name-%d", i);
		MUST(fsops_mknod(fs, ROOT_DIR_INO, nm, S_IFREG | 0600, 0, &root_cr, &st));
		fsops_forget(fs, st.st_ino, 1);
	}
	MUST(txn_commit(c, COMMIT_SYNC));

	CHECK(N("snapshot of the default subvolume"),
	      subvol_snapshot(fs, fs, ROOT_DIR_INO, "snap", false, &root_cr, &id) == 0 &&
	      id >= FIRST_SUBVOL_OBJECTID);
	sfs = subvol_fs(fs, id);
	model_copy(&b, &a);
	CHECK(N("snapshot reads the source's files"), matches(sfs, &b));
	CHECK(N("source unchanged"), matches(fs, &a));

	/* both sides diverge, with commits in between */
	for (int k = 0; k < 4; k++) {
		MUST(churn(fs, &a, 40));
		MUST(churn(sfs, &b, 40));
		MUST(txn_commit(c, COMMIT_SYNC));
	}
	CHECK(N("source matches its model after divergence"), matches(fs, &a));
	CHECK(N("snapshot matches its model after divergence"), matches(sfs, &b));
	unmount_all(&c, &fs);
	FSCK(N("fsck: shared trees after divergence"), img);

	MUST(mount_all(img, &c, &fs));
	sfs = subvol_fs(fs, id);
	CHECK(N("both sides survive a remount"), matches(fs, &a) && matches(sfs, &b));

	/* a snapshot of the snapshot, then delete the first snapshot */
	CHECK(N("snapshot of a snapshot"),
	      subvol_snapshot(sfs, fs, ROOT_DIR_INO, "snap2", false, &root_cr, &id2) == 0);
	model_copy(&b2, &b);
	s2fs = subvol_fs(fs, id2);
	MUST(churn(sfs, &b, 30));
	CHECK(N("subvolume delete"), subvol_delete(fs, ROOT_DIR_INO, "snap", &root_cr, &del) == 0 &&
	      del == id);
	for (int i = 0; i < 500 && subvol_cleaner_pending(c); i++)
		usleep(10000);
	CHECK(N("cleaner freed the deleted snapshot"), subvol_cleaner_pending(c) == 0);
	MUST(churn(s2fs, &b2, 30));
	MUST(txn_commit(c, COMMIT_SYNC));
	CHECK(N("snapshot of the deleted snapshot intact"), matches(s2fs, &b2));
	CHECK(N("source intact"), matches(fs, &a));
	unmount_all(&c, &fs);
	FSCK(N("fsck: after deleting a snapshot"), img);

	/* delete the rest: space returns to what the files of the source use */
	MUST(mount_all(img, &c, &fs));
	CHECK(N("delete the second snapshot"),
	      subvol_delete(fs, ROOT_DIR_INO, "snap2", &root_cr, &del) == 0 && del == id2);
	for (int i = 0; i < 500 && subvol_cleaner_pending(c); i++)
		usleep(10000);
	MUST(txn_commit(c, COMMIT_SYNC));
	MUST(txn_commit(c, COMMIT_SYNC));
	mount_space(c, &sp1);
	CHECK(N("data space back after deleting every snapshot"),
	      sp0.free_bytes - sp1.free_bytes <= (uint64_t)NFILES * MAXSZ + (4u << 20));
	CHECK(N("source intact at the end"), matches(fs, &a));
	unmount_all(&c, &fs);
	FSCK(N("fsck: after deleting every snapshot"), img);

	/* fsck must notice a shared node whose count lost a reference */
	MUST(mount_all(img, &c, &fs));
	MUST(subvol_snapshot(fs, fs, ROOT_DIR_INO, "snap3", false, &root_cr, &id));
	{
		struct first_child fc = { 0, 0, -1 };
		struct extent_item ei;
		struct txn *t;
		uint64_t lvl;

		MUST(btree_walk(subvol_root(c, id), find_child, NULL, &fc));
		MUST(fc.bytenr ? 0 : -ENOENT);
		CHECK(N("a node under the snapshot's root is shared (refs 2)"),
		      extent_lookup(c, fc.bytenr, false, &ei, &lvl) == 0 && ei.refs == 2);
		ei.refs = 1;
		struct key k = { fc.bytenr, KEY_METADATA_ITEM, lvl };
		MUST(txn_join(c, 4, 0, &t));
		int r = btree_update(t, core_tree(c, CT_EXTENT), &k, &ei, sizeof(ei));
		txn_end(t);
		MUST(r);
	}
	unmount_all(&c, &fs);
	{
		t_fsck_quiet = true;
		int f = full_fsck(img);
		t_fsck_quiet = false;
		if (f < 0)
			printf("SKIP: %s: fsck.glassfs not built\n", N("fsck finds a wrong shared count"));
		else
			CHECK(N("fsck finds a wrong shared count"), f != 0);
	}
out:
	if (fs)
		fsops_unmount(fs);
	if (c)
		mount_close(c);
	for (int i = 0; i < NFILES; i++) {
		free(a.data[i]);
		free(b.data[i]);
		free(b2.data[i]);
	}
	if (img[0])
		unlink(img);
#undef N
}

int main(void)
{
	t_seed_init();
	run(4096);
	run(16384);
	return fails ? 1 : 0;
}
