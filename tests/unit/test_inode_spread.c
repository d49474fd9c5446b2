// SPDX-License-Identifier: MIT
/*
 * test_inode_spread.c — inode numbers spread by directory (inode.h,
 * INODE_SPREAD_BLOCK), under ASan/UBSan, in one process: files created in
 * two directories alternately take numbers from each directory's own
 * block, so their items land in different leaves; inode_spread=off keeps
 * one counter; and after a crash whose fsync log is replayed at the next
 * mount no number is handed out twice.  SEED=n replays.
 */
#include "core_test.h"
#include "fs/ops/fsops.h"
#include "fs/items/inode.h"
#include "fs/items/log.h"

#include <sys/stat.h>

static char img[256];
static struct core *core;
static struct fsctx *fs;
static struct fsops_cred cr = { .uid = 0, .gid = 0 };

#define NFILES 300	/* per directory: several leaves' worth at 16 KiB */
#define BLK INODE_SPREAD_BLOCK

static int mount_rw(bool dense)
{
	const char *devs[1] = { img };
	struct core_opts o;
	int ret;

	core_opts_default(&o);
	o.commit_interval_s = 3600;
	o.inode_spread = !dense;
	ret = mount_open(devs, 1, &o, &core);
	if (!ret)
		ret = fsops_mount(core, &o, &fs);
	return ret;
}

static void unmount(void)
{
	fsops_unmount(fs);
	fs = NULL;
	mount_close(core);
	core = NULL;
}

/* What a crash leaves: nothing more is written (as test_log.c). */
static void crash(void)
{
	txn_stop_commit_thread(core);
	core->aborted = -EIO;
	unmount();
}

static int create(uint64_t dir, const char *pfx, int i, uint64_t *ino)
{
	char name[32];
	struct stat st;

	snprintf(name, sizeof(name), "%s%d", pfx, i);
	int ret = fsops_mknod(fs, dir, name, S_IFREG | 0644, 0, &cr, &st);
	if (ret == 0) {
		*ino = st.st_ino;
		fsops_forget(fs, st.st_ino, 1);
	}
	return ret;
}

/* The first key of the leaf holding ino's INODE_ITEM: two inodes whose
 * leaves start at different keys are in different leaves. */
static int leaf_of(uint64_t ino, struct key *first)
{
	struct path p;
	struct key k = mkkey(ino, KEY_INODE_ITEM, 0);

	btree_path_init(&p);
	int ret = btree_search(NULL, fs->root, &k, &p, 0, 0);
	if (ret == 0)
		btree_item_key(&p, 0, first);
	btree_path_release(&p);
	return ret == 0 ? 0 : -ENOENT;
}

static bool in_block(const uint64_t *inos, int n, uint64_t dir)
{
	for (int i = 0; i < n; i++)
		if (inos[i] <= dir || inos[i] >= dir + BLK)
			return false;
	return true;
}

static bool all_distinct(const uint64_t *v, int n)
{
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++)
			if (v[i] == v[j])
				return false;
	return true;
}

static uint64_t a_ino[NFILES], b_ino[NFILES];

/* Two directories, creates alternating between them. */
static void alternate(void)
{
	struct stat st;
	uint64_t a, b;
	struct key la, lb;

	MUST(mount_rw(false));
	MUST(fsops_mkdir(fs, ROOT_DIR_INO, "a", 0755, &cr, &st));
	a = st.st_ino;
	MUST(fsops_mkdir(fs, ROOT_DIR_INO, "b", 0755, &cr, &st));
	b = st.st_ino;
	CHECK("spread: each directory starts a block of its own",
	      (a > b ? a - b : b - a) >= BLK);
	for (int i = 0; i < NFILES; i++) {
		MUST(create(a, "f", i, &a_ino[i]));
		MUST(create(b, "f", i, &b_ino[i]));
	}
	CHECK("spread: a's files are numbered from a's block", in_block(a_ino, NFILES, a));
	CHECK("spread: b's files are numbered from b's block", in_block(b_ino, NFILES, b));
	MUST(leaf_of(a_ino[NFILES - 1], &la));
	MUST(leaf_of(b_ino[NFILES - 1], &lb));
	CHECK("spread: a's and b's newest inode items sit in different leaves",
	      key_cmp(&la, &lb) != 0);
	MUST(fsops_sync(fs));
	unmount();

	/* inode_spread=off: one counter, numbers in creation order */
	MUST(mount_rw(true));
	uint64_t x, y;
	MUST(create(a, "g", 0, &x));
	MUST(create(b, "g", 0, &y));
	CHECK("inode_spread=off: consecutive numbers across directories", y == x + 1);
	MUST(fsops_sync(fs));
out:
	if (fs)
		unmount();
}

#define NR 40

/* Created and fsync'd after the last commit, then a crash: the log replay
 * brings the files back, and nothing created after the remount reuses a
 * number (the counter restarts above the replayed inodes). */
static void replay(void)
{
	struct stat st;
	uint64_t d, e, v[3 * NR + 2];
	int n = 0;

	MUST(mount_rw(false));
	MUST(fsops_mkdir(fs, ROOT_DIR_INO, "d", 0755, &cr, &st));
	d = st.st_ino;
	MUST(fsops_mkdir(fs, ROOT_DIR_INO, "e", 0755, &cr, &st));
	e = st.st_ino;
	MUST(fsops_sync(fs));
	for (int i = 0; i < NR; i++)
		MUST(create(d, "s", i, &v[n++]));
	MUST(create(e, "s", 0, &v[n++]));
	MUST(fsops_fsync(fs, v[n - 2], 0));	/* d's last: the log holds d's entries */
	MUST(fsops_fsync(fs, v[n - 1], 0));
	CHECK("replay: the fsyncs went to the log", log_pending(core));
	crash();

	MUST(mount_rw(false));
	CHECK("replay: d's fsync'd file is back", fsops_lookup(fs, d, "s39", &st) == 0 &&
	      st.st_ino == v[NR - 1]);
	fsops_forget(fs, st.st_ino, 1);
	CHECK("replay: e's fsync'd file is back", fsops_lookup(fs, e, "s0", &st) == 0 &&
	      st.st_ino == v[NR]);
	fsops_forget(fs, st.st_ino, 1);
	/* the kernel holds a lookup of a directory it creates in: its
	 * in-memory inode, and with it the block, stays cached */
	MUST(fsops_lookup(fs, ROOT_DIR_INO, "d", &st));
	MUST(fsops_lookup(fs, ROOT_DIR_INO, "e", &st));
	uint64_t dn[NR], en[NR], top = v[NR];
	for (int i = 0; i < NR; i++)
		top = v[i] > top ? v[i] : top;
	for (int i = 0; i < NR; i++) {
		MUST(create(d, "t", i, &dn[i]));
		MUST(create(e, "t", i, &en[i]));
		v[n++] = dn[i];
		v[n++] = en[i];
		if (n > (int)(sizeof(v) / sizeof(v[0])) - 2)
			break;
	}
	bool above = true;
	for (int i = 0; i < NR; i++)
		above = above && dn[i] > top && en[i] > top;
	CHECK("replay: numbers after the remount are above every replayed one", above);
	CHECK("replay: no number handed out twice", all_distinct(v, n));
	CHECK("replay: after the remount d and e still number from blocks of their own",
	      in_block(dn + 1, NR - 1, dn[0] - 1) && in_block(en + 1, NR - 1, en[0] - 1) &&
	      (dn[0] > en[0] ? dn[0] - en[0] : en[0] - dn[0]) >= BLK);
	MUST(fsops_sync(fs));
out:
	if (fs)
		unmount();
}

/* Numbers end where the FUSE node id's subvolume bits begin: past
 * SUBVOL_INO_MASK a create says ENOSPC instead of handing out a number
 * whose node id names another subvolume's inode. */
static void top_of_space(void)
{
	struct stat st;
	uint64_t f, g = 0;

	MUST(mount_rw(false));
	fs->next_ino = (1ull << 48) - 2;
	MUST(fsops_mkdir(fs, ROOT_DIR_INO, "top", 0755, &cr, &st));
	MUST(create(st.st_ino, "f", 0, &f));
	CHECK("top: the last number below 2^48 is handed out", f == (1ull << 48) - 1);
	CHECK("top: past it a create says ENOSPC", create(st.st_ino, "f", 1, &g) == -ENOSPC &&
	      g == 0);
	CHECK("top: the refused create left the volume writable (a commit works)",
	      fsops_sync(fs) == 0);
out:
	if (fs)
		unmount();
}

int main(void)
{
	t_seed_init();
	if (t_image(img, sizeof(img), 256ull << 20) < 0 || t_format(img, 0) < 0) {
		printf("FAIL: setup\n");
		return 1;
	}
	alternate();
	replay();
	top_of_space();
	char bin[512];
	if (t_fsck_bin(bin, sizeof(bin)) == 0) {
		char cmd[1024];
		snprintf(cmd, sizeof(cmd), "%s -n %s >/dev/null 2>&1", bin, img);
		CHECK("fsck: the volume with spread numbers is clean", system(cmd) == 0);
	}
	unlink(img);
	return fails ? 1 : 0;
}
