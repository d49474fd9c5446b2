// SPDX-License-Identifier: MIT
/*
 * test_fsck_repair.c — the corruption catalogue of fsck.glassfs -y.
 *
 * Each case makes a fresh image holding known files (written through
 * fsops, as the daemon writes them), damages it on purpose through the
 * engine's own APIs (items edited in a transaction, the allocator told a
 * lie, checksums deleted), then runs the built fsck.glassfs:
 *   -n reports it (exit 4), -y repairs it (exit 1), -n is then clean
 *   (exit 0), the image mounts, and every file the case did not damage
 *   reads back byte for byte.
 * Cases that cannot be repaired safely (no checksum and one copy; copies
 * that differ) must end -y with exit 4 and say why, and leave the image no
 * worse (-n reports the same count).
 *
 * The files: /c (8 KiB), /small (inline, 100 B), /d (a directory),
 * /d/a (20 KiB, hard-linked as /d/a2) and /d/b (12 KiB).  Data is dup,
 * so checksums have another copy to be recomputed from.
 */
#include "core_test.h"
#include "fs/ops/fsops.h"
#include "fs/store/alloc.h"
#include "fs/store/chunk.h"
#include "fs/store/dev.h"
#include "fs/format/items_format.h"
#include "fs/format/format.h"
#include "fs/items/subvol.h"
#include "fs/services/scrub.h"
#include "fs/btree/node.h"

#include <dirent.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <sys/stat.h>

/* past the first superblock mirror (64 MiB): two copies, one to damage */
#define IMG_SIZE (80ull << 20)

static struct fsops_cred root_cr = { .uid = 0, .gid = 0, .umask = 0 };

struct file { const char *dir, *name; size_t len; uint64_t ino; uint8_t *data; };
static struct file files[] = {
	{ NULL, "c", 8192, 0, NULL },
	{ NULL, "small", 100, 0, NULL },
	{ "d", "a", 20480, 0, NULL },
	{ "d", "b", 12288, 0, NULL },
};
enum { F_C, F_SMALL, F_A, F_B, NFILES };
static uint64_t dir_d, snap_id;
/* the image, fsck's output, and the copies a case keeps beside it */
static char img[256], out[300], before[300], orig[300];

/* The shell command running now (0: none).  system() would leave its
 * child running when a SIGTERM kills this process, and a shell that has
 * not opened its "> out" yet creates the file after on_kill unlinked it;
 * on_kill kills this child's process group (the shell and what it runs)
 * and reaps it first. */
static volatile pid_t child;

extern char **environ;

/* sh -c CMD: its wait status, as system() gives it (-1: not started). */
static int sh(const char *cmd)
{
	char *argv[] = { "sh", "-c", (char *)cmd, NULL };
	pid_t pid;
	int st;

	/* the kill signals wait until child names the new process */
	sigset_t kills, old, none;
	sigemptyset(&kills);
	sigaddset(&kills, SIGTERM);
	sigaddset(&kills, SIGINT);
	sigaddset(&kills, SIGHUP);
	sigemptyset(&none);
	sigprocmask(SIG_BLOCK, &kills, &old);
	posix_spawnattr_t at;
	posix_spawnattr_init(&at);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
	posix_spawnattr_setpgroup(&at, 0);
	posix_spawnattr_setsigmask(&at, &none);
	int sr = posix_spawn(&pid, "/bin/sh", NULL, &at, argv, environ);
	posix_spawnattr_destroy(&at);
	if (!sr)
		child = pid;
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (sr)
		return -1;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR) {
			st = -1;
			break;
		}
	child = 0;
	return st;
}

static int mount_fs(struct core **c, struct fsctx **fs)
{
	struct core_opts o;
	const char *devs[1] = { img };
	int ret;

	core_opts_default(&o);
	o.commit_interval_s = 3600;
	ret = mount_open(devs, 1, &o, c);
	if (ret)
		return ret;
	ret = fsops_mount(*c, &o, fs);
	if (ret) {
		mount_close(*c);
		*c = NULL;
	}
	return ret;
}

static int unmount_fs(struct core *c, struct fsctx *fs)
{
	fsops_unmount(fs);
	return mount_close(c);
}

static int build_image(uint64_t data_profile, bool snap, bool meta_single);

/*
 * A fresh image with the files above (and a snapshot of it, /snap);
 * metadata dup unless meta_single.  Each kind is built once (the files'
 * bytes come from the seed) and copied for each case that asks for it:
 * building is a format, a mount, the writes and a commit.
 */
static struct built {
	uint64_t data_profile;
	bool snap, meta_single;
	char path[300];
	uint64_t ino[NFILES], dir_d, snap_id;
} built[8];
static int nbuilt;

static int make_image(uint64_t data_profile, bool snap, bool meta_single)
{
	char cmd[700];
	struct built *b = NULL;
	int ret;

	for (int i = 0; i < nbuilt; i++)
		if (built[i].data_profile == data_profile && built[i].snap == snap &&
		    built[i].meta_single == meta_single)
			b = &built[i];
	if (b) {
		snprintf(cmd, sizeof(cmd), "cp --sparse=always %s %s", b->path, img);
		if (sh(cmd))
			return -EIO;
		for (int i = 0; i < NFILES; i++)
			files[i].ino = b->ino[i];
		dir_d = b->dir_d;
		snap_id = b->snap_id;
		return 0;
	}
	if ((ret = build_image(data_profile, snap, meta_single)))
		return ret;
	if (nbuilt == (int)(sizeof(built) / sizeof(built[0])))
		return 0;
	b = &built[nbuilt];
	*b = (struct built){ data_profile, snap, meta_single, "", { 0 }, dir_d, snap_id };
	snprintf(b->path, sizeof(b->path), "%s.built%d", img, nbuilt);
	for (int i = 0; i < NFILES; i++)
		b->ino[i] = files[i].ino;
	snprintf(cmd, sizeof(cmd), "cp --sparse=always %s %s", img, b->path);
	if (!sh(cmd))
		nbuilt++;
	return 0;
}

static int build_image(uint64_t data_profile, bool snap, bool meta_single)
{
	const char *devs[1] = { img };
	struct format_opts fo = { .label = "fsckrep", .force = true, .data_profile = data_profile,
				  .meta_profile = meta_single ? CORE_PROFILE_SINGLE : CORE_PROFILE_DUP };
	struct core *c;
	struct fsctx *fs;
	struct stat st;
	int ret;

	unlink(img);
	int fd = open(img, O_CREAT | O_RDWR | O_TRUNC, 0644);
	if (fd < 0 || ftruncate(fd, (off_t)IMG_SIZE) < 0)
		return -errno;
	close(fd);
	if ((ret = mount_format(devs, 1, &fo)) || (ret = mount_fs(&c, &fs)))
		return ret;
	ret = fsops_mkdir(fs, ROOT_DIR_INO, "d", S_IFDIR | 0755, &root_cr, &st);
	dir_d = st.st_ino;
	for (int i = 0; i < NFILES && !ret; i++) {
		struct file *f = &files[i];
		ret = fsops_mknod(fs, f->dir ? dir_d : ROOT_DIR_INO, f->name, S_IFREG | 0644, 0,
				  &root_cr, &st);
		if (ret)
			break;
		f->ino = st.st_ino;
		ssize_t n = fsops_write(fs, f->ino, f->data, f->len, 0);
		if (n != (ssize_t)f->len)
			ret = n < 0 ? (int)n : -EIO;
		fsops_forget(fs, f->ino, 1);
	}
	if (!ret)
		ret = fsops_link(fs, files[F_A].ino, dir_d, "a2", &st);
	if (!ret && snap)
		ret = subvol_snapshot(fs, fs, ROOT_DIR_INO, "snap", false, &root_cr, &snap_id);
	if (!ret)
		ret = fsops_sync(fs);
	int r2 = unmount_fs(c, fs);
	return ret ? ret : r2;
}

/* fsck.glassfs FLAGS on the image: its exit code; its output added to out
 * (append) or replacing it. */
static int fsck_run(const char *flag, bool append)
{
	char bin[512], cmd[1400];

	if (t_fsck_bin(bin, sizeof(bin)))
		return -1;
	snprintf(cmd, sizeof(cmd), "%s %s %s %s %s 2>&1", bin, flag, img, append ? ">>" : ">", out);
	int st = sh(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 99;
}

static int fsck(const char *flag) { return fsck_run(flag, true); }
static int fsck_out(const char *flag) { return fsck_run(flag, false); }

static void show_out(void)
{
	char cmd[400];

	snprintf(cmd, sizeof(cmd), "grep -v '^fsck.glassfs: checking' %s | head -40 | sed 's/^/    | /'", out);
	if (sh(cmd)) {
	}
}

/* Read path (dir may be NULL: the root) and compare with want. */
static bool read_back(struct fsctx *fs, const char *dir, const char *name, const uint8_t *want,
		      size_t len)
{
	struct stat st;
	uint64_t parent = ROOT_DIR_INO;
	bool ok;

	if (dir) {
		if (fsops_lookup(fs, ROOT_DIR_INO, dir, &st))
			return false;
		parent = st.st_ino;
	}
	if (fsops_lookup(fs, parent, name, &st))
		return false;
	uint8_t *buf = malloc(len + 1);
	ssize_t n = buf ? fsops_read(fs, st.st_ino, buf, len + 1, 0) : -ENOMEM;
	ok = n == (ssize_t)len && (size_t)st.st_size == len && !memcmp(buf, want, len);
	free(buf);
	return ok;
}

/* The image mounts and every file but the skipped ones (bits) reads back intact. */
static bool verify(unsigned skip, const char **why)
{
	struct core *c;
	struct fsctx *fs;
	bool ok = true;

	if (mount_fs(&c, &fs)) {
		*why = "does not mount";
		return false;
	}
	for (int i = 0; i < NFILES; i++) {
		if (skip >> i & 1)
			continue;
		if (!read_back(fs, files[i].dir, files[i].name, files[i].data, files[i].len)) {
			*why = files[i].name;
			ok = false;
		}
	}
	if (!(skip >> F_A & 1) && !read_back(fs, "d", "a2", files[F_A].data, files[F_A].len)) {
		*why = "a2";
		ok = false;
	}
	if (unmount_fs(c, fs) && ok) {
		*why = "unmount";
		ok = false;
	}
	return ok;
}

/* ---- the corruptions: each gets the opened core and a handle ------------ */

static uint64_t target_tree = FS_TREE_OBJECTID;	/* the tree a case damages */
static struct root *fsr(struct core *c) { return subvol_root(c, target_tree); }

static int file_extent(struct core *c, uint64_t ino, struct file_extent *fe)
{
	struct key k = { ino, KEY_EXTENT_DATA, 0 };
	int n = btree_lookup(fsr(c), &k, fe, sizeof(*fe));
	return n == (int)sizeof(*fe) ? 0 : n < 0 ? n : -EINVAL;
}

static int set_nlink(struct txn *t, struct core *c, uint64_t ino, uint32_t nlink)
{
	struct inode_item it;
	struct key k = { ino, KEY_INODE_ITEM, 0 };
	int n = btree_lookup(fsr(c), &k, &it, sizeof(it));
	if (n != (int)sizeof(it))
		return n < 0 ? n : -EINVAL;
	it.nlink = nlink;
	return btree_update(t, fsr(c), &k, &it, sizeof(it));
}

/* The DIR_INDEX seq of ino's name in dir (from its INODE_REF). */
static int name_index(struct core *c, uint64_t ino, uint64_t dir, uint64_t *index)
{
	uint8_t b[300];
	struct key k = { ino, KEY_INODE_REF, dir };
	int n = btree_lookup(fsr(c), &k, b, sizeof(b));
	if (n < (int)sizeof(struct inode_ref))
		return n < 0 ? n : -EINVAL;
	*index = ((struct inode_ref *)b)->index;
	return 0;
}

/* Drop name's entry from its DIR_ITEM (deleting the item: no collisions here). */
static int del_dir_item(struct txn *t, struct core *c, uint64_t dir, const char *name)
{
	struct key k = { dir, KEY_DIR_ITEM, name_hash(name, strlen(name)) };
	return btree_delete(t, fsr(c), &k);
}

/* Drop the DIR_INDEX of ino's name in dir. */
static int del_dir_index(struct txn *t, struct core *c, uint64_t ino, uint64_t dir)
{
	uint64_t idx;
	int ret = name_index(c, ino, dir, &idx);
	struct key k = { dir, KEY_DIR_INDEX, idx };
	return ret ? ret : btree_delete(t, fsr(c), &k);
}

/* The DIR_INDEX numbers of /c's and d/b's names. */
static int c_b_indexes(struct core *c, uint64_t *ic, uint64_t *ib)
{
	int ret = name_index(c, files[F_C].ino, ROOT_DIR_INO, ic);
	return ret ? ret : name_index(c, files[F_B].ino, dir_d, ib);
}

static int c_free_space(struct txn *t, struct core *c)
{
	struct file_extent fe;
	uint64_t leak;
	int ret = file_extent(c, files[F_C].ino, &fe);

	(void)t;
	if (ret)
		return ret;
	/* live data the free-space tree calls free, and free space it calls used */
	alloc_free_now(c, fe.disk_logical, fe.disk_len);
	return alloc_reserve(c, BG_DATA, 16384, CORE_SECTORSIZE, &leak);
}

static int c_extent_refs(struct txn *t, struct core *c)
{
	struct file_extent fe;
	struct extent_item ei;
	int ret = file_extent(c, files[F_B].ino, &fe);
	if (ret)
		return ret;
	struct key k = { fe.disk_logical, KEY_EXTENT_ITEM, fe.disk_len };
	if (btree_lookup(core_tree(c, CT_EXTENT), &k, &ei, sizeof(ei)) != (int)sizeof(ei))
		return -EINVAL;
	ei.refs = 3;
	ret = btree_update(t, core_tree(c, CT_EXTENT), &k, &ei, sizeof(ei));
	/* and the fs tree's root node */
	struct root *r = fsr(c);
	k = (struct key){ r->bytenr, KEY_METADATA_ITEM, (uint64_t)r->level };
	if (!ret && btree_lookup(core_tree(c, CT_EXTENT), &k, &ei, sizeof(ei)) != (int)sizeof(ei))
		return -EINVAL;
	ei.refs = 2;
	return ret ? ret : btree_update(t, core_tree(c, CT_EXTENT), &k, &ei, sizeof(ei));
}

static int c_link_counts(struct txn *t, struct core *c)
{
	int ret = set_nlink(t, c, files[F_C].ino, 5);
	if (!ret)
		ret = set_nlink(t, c, files[F_A].ino, 1);	/* has two names */
	return ret ? ret : set_nlink(t, c, dir_d, 7);
}

static int c_orphans(struct txn *t, struct core *c)
{
	struct key k = { ORPHAN_OBJECTID, KEY_ORPHAN_ITEM, files[F_C].ino };
	uint64_t v = files[F_C].ino;
	int ret = btree_insert(t, fsr(c), &k, &v, sizeof(v));	/* named, nlink 1 */
	k.offset = v = 99999;					/* no such inode */
	return ret ? ret : btree_insert(t, fsr(c), &k, &v, sizeof(v));
}

static int c_dir_index(struct txn *t, struct core *c)
{
	/* d/b: the DIR_INDEX gone (readdir misses it); /c: the DIR_ITEM gone
	 * (lookup misses it) */
	int ret = del_dir_index(t, c, files[F_B].ino, dir_d);
	return ret ? ret : del_dir_item(t, c, ROOT_DIR_INO, "c");
}

static int c_backrefs(struct txn *t, struct core *c)
{
	/* d/b's back reference gone; /c given a stale one (d, "ghost") */
	struct key k = { files[F_B].ino, KEY_INODE_REF, dir_d };
	int ret = btree_delete(t, fsr(c), &k);
	uint8_t b[sizeof(struct inode_ref) + 5];
	struct inode_ref *ir = (void *)b;
	*ir = (struct inode_ref){ 999, 5 };
	memcpy(ir->name, "ghost", 5);
	k = (struct key){ files[F_C].ino, KEY_INODE_REF, dir_d };
	return ret ? ret : btree_insert(t, fsr(c), &k, b, sizeof(b));
}

static int c_backref_swap(struct txn *t, struct core *c)
{
	/* d/a's back reference "a2" replaced by a stale one (d, "ghost"):
	 * two names, two back references, one of them wrong */
	uint64_t ia;
	int ret = name_index(c, files[F_A].ino, dir_d, &ia);
	uint8_t b[2 * sizeof(struct inode_ref) + 6];
	struct inode_ref *ir = (void *)b;
	*ir = (struct inode_ref){ ia, 1 };
	ir->name[0] = 'a';
	ir = (void *)(b + sizeof(*ir) + 1);
	*ir = (struct inode_ref){ 999, 5 };
	memcpy(ir->name, "ghost", 5);
	struct key k = { files[F_A].ino, KEY_INODE_REF, dir_d };
	return ret ? ret : btree_update(t, fsr(c), &k, b, sizeof(b));
}

static int c_backref_twice(struct txn *t, struct core *c)
{
	/* /c's one back reference there twice (the same name and index) */
	uint8_t b[2 * (sizeof(struct inode_ref) + 1)];
	struct key k = { files[F_C].ino, KEY_INODE_REF, ROOT_DIR_INO };
	int n = btree_lookup(fsr(c), &k, b, sizeof(b));
	if (n != (int)sizeof(b) / 2)
		return n < 0 ? n : -EINVAL;
	memcpy(b + n, b, (size_t)n);
	return btree_update(t, fsr(c), &k, b, sizeof(b));
}

/* d/a's name "a2" held by an extended ref (well formed, in its hash
 * slot), on this volume whose superblock lacks SUPER_FEAT_EXTREF (no name
 * here ever needed one) */
static int c_extref_nofeat(struct txn *t, struct core *c)
{
	uint64_t ia, ia2;
	uint8_t b[64];
	int ret = name_index(c, files[F_A].ino, dir_d, &ia);
	struct key k = { files[F_A].ino, KEY_INODE_REF, dir_d };
	int n = ret ? ret : btree_lookup(fsr(c), &k, b, sizeof(b));
	/* the INODE_REF holds "a" then "a2" (link order) */
	const struct inode_ref *r2 = (const void *)(b + sizeof(struct inode_ref) + 1);
	if (n != (int)(2 * sizeof(struct inode_ref) + 3) || r2->name_len != 2 ||
	    memcmp(r2->name, "a2", 2))
		return n < 0 ? n : -EINVAL;
	ia2 = r2->index;
	if (c->sb.features & SUPER_FEAT_EXTREF)
		return -EEXIST;
	ret = btree_update(t, fsr(c), &k, b, (uint32_t)sizeof(struct inode_ref) + 1);
	struct inode_extref *x = (void *)b;
	*x = (struct inode_extref){ dir_d, ia2, 2 };
	memcpy(x->name, "a2", 2);
	k = (struct key){ files[F_A].ino, KEY_INODE_EXTREF, extref_hash(dir_d, "a2", 2) };
	(void)ia;
	return ret ? ret : btree_insert(t, fsr(c), &k, b, sizeof(*x) + 2);
}

/* A malformed extended ref (its name overruns the item) of /c, on a
 * volume without SUPER_FEAT_EXTREF: it goes, and the bit is not needed */
static int c_extref_nofeat_bad(struct txn *t, struct core *c)
{
	uint8_t b[sizeof(struct inode_extref) + 4];
	struct inode_extref *x = (void *)b;
	*x = (struct inode_extref){ ROOT_DIR_INO, 12345, 40 };
	memcpy(x->name, "junk", 4);
	struct key k = { files[F_C].ino, KEY_INODE_EXTREF, extref_hash(ROOT_DIR_INO, "junk", 4) };
	return btree_insert(t, fsr(c), &k, b, sizeof(b));
}

static int c_missing_inode(struct txn *t, struct core *c)
{
	/* d/b's INODE_ITEM lost: its names, back reference and extents dangle */
	struct key k = { files[F_B].ino, KEY_INODE_ITEM, 0 };
	return btree_delete(t, fsr(c), &k);
}

static int c_unnamed(struct txn *t, struct core *c)
{
	/* /c named nowhere (entry and index gone, its back reference stale) */
	int ret = del_dir_index(t, c, files[F_C].ino, ROOT_DIR_INO);
	return ret ? ret : del_dir_item(t, c, ROOT_DIR_INO, "c");
}

static int c_csum(struct txn *t, struct core *c)
{
	struct file_extent fe;
	int ret = file_extent(c, files[F_A].ino, &fe);
	return ret ? ret : data_csum_delete(t, fe.disk_logical, fe.disk_len);
}

/* Missing checksums, and the two copies differ in one sector. */
static int c_csum_differ(struct txn *t, struct core *c)
{
	struct file_extent fe;
	struct chunk_copy cp[CHUNK_MAX_STRIPES];
	int ret = c_csum(t, c);
	if (!ret)
		ret = file_extent(c, files[F_A].ino, &fe);
	if (ret)
		return ret;
	int n = chunk_map_lookup(c, fe.disk_logical, fe.disk_len, cp, NULL);
	if (n < 2)
		return -EINVAL;
	uint8_t b[CORE_SECTORSIZE];
	if ((ret = dev_read(cp[1].dev, cp[1].physical, b, sizeof(b))))
		return ret;
	b[7] ^= 0x40;
	return dev_write(cp[1].dev, cp[1].physical, b, sizeof(b));
}

/* In the snapshot's tree (its leaves shared with the live tree's): a
 * link count and a directory index. */
static int c_snapshot(struct txn *t, struct core *c)
{
	target_tree = snap_id;
	int ret = fsr(c) ? c_link_counts(t, c) : -ENOENT;
	if (!ret)
		ret = c_dir_index(t, c);
	target_tree = FS_TREE_OBJECTID;
	return ret;
}

/* Several at once, in one image: the passes must not trip on each other. */
static int c_combined(struct txn *t, struct core *c)
{
	int ret = c_free_space(t, c);
	if (!ret)
		ret = c_extent_refs(t, c);
	if (!ret)
		ret = c_orphans(t, c);
	if (!ret)
		ret = c_csum(t, c);
	if (!ret)
		ret = c_unnamed(t, c);
	if (!ret)
		ret = c_missing_inode(t, c);
	return ret;
}

/* Rewrite the entry of index idx in item k (a DIR_ITEM or DIR_INDEX) with
 * edit() applied to it; an edit may change the name only to one of the
 * same length. */
static int edit_entry(struct txn *t, struct core *c, const struct key *k, uint64_t idx,
		      void (*edit)(struct dir_entry *de))
{
	uint8_t b[1024];
	int n = btree_lookup(fsr(c), k, b, sizeof(b));
	for (int off = 0; n > 0 && off + (int)sizeof(struct dir_entry) <= n;) {
		struct dir_entry *de = (void *)(b + off);
		if (de->index == idx) {
			edit(de);
			return btree_update(t, fsr(c), k, b, (uint32_t)n);
		}
		off += (int)sizeof(*de) + de->name_len;
	}
	return n < 0 ? n : -ENOENT;
}

static void to_dir(struct dir_entry *de) { de->type = DT_DIR; }
static void to_lnk(struct dir_entry *de) { de->type = DT_LNK; }

static int c_dentry_type(struct txn *t, struct core *c)
{
	uint64_t ic, ib;
	int ret = c_b_indexes(c, &ic, &ib);
	if (ret)
		return ret;
	/* /c a directory by both its entries (its parent's subdirectory
	 * count with it); d/b a symlink by its DIR_ITEM only */
	struct key k = { ROOT_DIR_INO, KEY_DIR_INDEX, ic };
	ret = edit_entry(t, c, &k, ic, to_dir);
	k = (struct key){ ROOT_DIR_INO, KEY_DIR_ITEM, name_hash("c", 1) };
	if (!ret)
		ret = edit_entry(t, c, &k, ic, to_dir);
	k = (struct key){ dir_d, KEY_DIR_ITEM, name_hash("b", 1) };
	return ret ? ret : edit_entry(t, c, &k, ib, to_lnk);
}

static uint64_t conflict_ino;
static void to_other(struct dir_entry *de)
{
	de->ino = conflict_ino;
	de->name[0] = 'z';
}
static void to_other_ino(struct dir_entry *de) { de->ino = conflict_ino; }

static int c_index_conflict(struct txn *t, struct core *c)
{
	uint64_t ic, ib;
	int ret = c_b_indexes(c, &ic, &ib);
	if (ret)
		return ret;
	/* d/b's DIR_INDEX names /d/a as "z" (its DIR_ITEM entry is right);
	 * /c's DIR_ITEM entry names /small (its DIR_INDEX is right) */
	conflict_ino = files[F_A].ino;
	struct key k = { dir_d, KEY_DIR_INDEX, ib };
	ret = edit_entry(t, c, &k, ib, to_other);
	conflict_ino = files[F_SMALL].ino;
	k = (struct key){ ROOT_DIR_INO, KEY_DIR_ITEM, name_hash("c", 1) };
	return ret ? ret : edit_entry(t, c, &k, ic, to_other_ino);
}

static void to_long(struct dir_entry *de) { de->name_len += 40; }

static int c_bad_items(struct txn *t, struct core *c)
{
	uint64_t ib;
	uint8_t junk[24] = "not an item glassfs has";
	/* an item of a type no fs tree holds, in /c's object */
	struct key k = { files[F_C].ino, 50, 7 };
	int ret = btree_insert(t, fsr(c), &k, junk, sizeof(junk));
	/* d/b's back reference and DIR_INDEX: names that overrun the item */
	uint8_t b[300];
	k = (struct key){ files[F_B].ino, KEY_INODE_REF, dir_d };
	int n = ret ? ret : btree_lookup(fsr(c), &k, b, sizeof(b));
	if (n < (int)sizeof(struct inode_ref))
		return n < 0 ? n : -EINVAL;
	((struct inode_ref *)b)->name_len += 9;
	ret = btree_update(t, fsr(c), &k, b, (uint32_t)n);
	if (!ret)
		ret = name_index(c, files[F_B].ino, dir_d, &ib);
	k = (struct key){ dir_d, KEY_DIR_INDEX, ib };
	return ret ? ret : edit_entry(t, c, &k, ib, to_long);
}

static int c_misfiled(struct txn *t, struct core *c)
{
	/* /c's entry in the DIR_ITEM of another hash (lookup misses it), and
	 * an xattr of d/b in a slot its name does not hash to */
	uint8_t b[300];
	struct key k = { ROOT_DIR_INO, KEY_DIR_ITEM, name_hash("c", 1) };
	int n = btree_lookup(fsr(c), &k, b, sizeof(b));
	if (n < (int)sizeof(struct dir_entry))
		return n < 0 ? n : -EINVAL;
	int ret = btree_delete(t, fsr(c), &k);
	k.offset += 12345;
	if (!ret)
		ret = btree_insert(t, fsr(c), &k, b, (uint32_t)n);
	struct xattr_entry *x = (void *)b;
	*x = (struct xattr_entry){ 10, 3 };
	memcpy(x->name, "user.color" "red", 13);
	k = (struct key){ files[F_B].ino, KEY_XATTR_ITEM, name_hash("user.color", 10) ^ 1 };
	return ret ? ret : btree_insert(t, fsr(c), &k, b, sizeof(*x) + 13);
}

/* The first superblock copy damaged (after the commit that follows the
 * case's corruption, which rewrites every copy). */
static int raw_super(void)
{
	return t_poke(img, SUPER_OFFSET + 1000, 0x5a);
}

static int c_none(struct txn *t, struct core *c)
{
	(void)t, (void)c;
	return 0;
}

static int c_subvol_name(struct txn *t, struct core *c)
{
	/* the snapshot's ROOT_BACKREF gone: named by a ROOT_REF only */
	struct key k = { snap_id, KEY_ROOT_BACKREF, FS_TREE_OBJECTID };
	return btree_delete(t, core_tree(c, CT_ROOT), &k);
}

/* The checksum tree's only node, on single metadata (one copy): its
 * location now, its bytes damaged after the commit (raw_node). */
static uint64_t node_phys;
static int c_unreadable(struct txn *t, struct core *c)
{
	struct chunk_copy cp[CHUNK_MAX_STRIPES];
	struct root *r = core_tree(c, CT_CSUM);
	(void)t;
	if (r->level != 0 || chunk_map_lookup(c, r->bytenr, c->nodesize, cp, NULL) != 1)
		return -EINVAL;
	node_phys = cp[0].physical;
	return 0;
}

static int raw_node(void)
{
	return t_poke(img, node_phys + 200, 0xff);
}

/* The fs root's reference item records another generation than the
 * node's header names. */
static int c_meta_gen(struct txn *t, struct core *c)
{
	struct root *r = fsr(c);
	struct key k = { r->bytenr, KEY_METADATA_ITEM, (uint64_t)r->level };
	struct extent_item ei;

	if (btree_lookup(core_tree(c, CT_EXTENT), &k, &ei, sizeof(ei)) != (int)sizeof(ei))
		return -EINVAL;
	ei.generation += 1000;
	return btree_update(t, core_tree(c, CT_EXTENT), &k, &ei, sizeof(ei));
}

struct ccase {
	const char *name;
	int (*corrupt)(struct txn *t, struct core *c);
	uint64_t data_profile;
	unsigned damaged;	/* the files whose content is not checked (bits of F_*) */
	int want_y;		/* exit of the repair: 1 repaired, 4 cannot be */
	const char *lost_found;	/* /c (the unnamed-inode cases damage it) is expected
				 * in this directory (NULL: not checked) */
	const char *flag;	/* the repair's flag: NULL = -y */
	bool snap;		/* the image holds a snapshot */
	const char *reason;	/* want_y 4: the output says this */
	bool then_y;		/* want_y 4: -y afterwards repairs it (exit 1, then -n 0) */
	int (*raw)(void);	/* damage made to the image file after the commit */
	bool meta_single;	/* metadata single (one copy of each node) */
	bool untouched;		/* want_y 4: the repair must not write to the image */
	const char *says[2];	/* the first -n's output holds these (NULL: not checked) */
	int extref_feat;	/* after the repair the superblock has SUPER_FEAT_EXTREF
				 * (1) or not (-1); 0: not checked */
};

/* The cases, by name: crash_case and worse_case pick theirs from here. */
enum {
	C_FREE_SPACE, C_EXTENT_REFS, C_LINK_COUNTS, C_ORPHANS, C_DIR_INDEX, C_BACKREFS,
	C_BACKREF_SWAP, C_BACKREF_TWICE, C_EXTREF_NOFEAT, C_EXTREF_NOFEAT_BAD, C_MISSING_INODE, C_UNNAMED, C_CSUM, C_CSUM_DIFFER, C_CSUM_SINGLE, C_COMBINED,
	C_SNAPSHOT, C_PREEN_LINK_COUNTS, C_PREEN_ORPHANS, C_PREEN_FREE_SPACE, C_PREEN_UNNAMED,
	C_DENTRY_TYPE, C_PREEN_DENTRY_TYPE, C_INDEX_CONFLICT, C_BAD_ITEMS, C_MISFILED, C_SUPER,
	C_PREEN_SUPER, C_SUBVOL_NAME, C_UNREADABLE, C_META_GEN, NCASES
};

static const struct ccase cases[] = {
	[C_FREE_SPACE] = { "free-space tree disagrees with the extent tree",
	  c_free_space, CORE_PROFILE_DUP, .want_y = 1 },
	[C_EXTENT_REFS] = { "wrong extent reference counts (data and node)",
	  c_extent_refs, CORE_PROFILE_DUP, .want_y = 1 },
	[C_LINK_COUNTS] = { "wrong link counts (file, hard-linked file, dir)",
	  c_link_counts, CORE_PROFILE_DUP, .want_y = 1 },
	[C_ORPHANS] = { "orphan items (named inode, missing inode)",
	  c_orphans, CORE_PROFILE_DUP, .want_y = 1 },
	[C_DIR_INDEX] = { "directory index disagrees with its entries",
	  c_dir_index, CORE_PROFILE_DUP, .want_y = 1 },
	[C_BACKREFS] = { "back references disagree with the names (missing, stale)",
	  c_backrefs, CORE_PROFILE_DUP, .want_y = 1 },
	[C_BACKREF_SWAP] = { "one back reference stale, one missing, on one inode (counts agree)",
	  c_backref_swap, CORE_PROFILE_DUP, .want_y = 1,
	  .says = { "back reference 'ghost' in dir [0-9]* (index 999) has no directory entry",
		    "entry 'a2' (index [0-9]* -> [0-9]*) has no back reference" } },
	[C_BACKREF_TWICE] = { "one back reference there twice (the same name and index)",
	  c_backref_twice, CORE_PROFILE_DUP, .want_y = 1,
	  .says = { "back reference 'c' in dir [0-9]* (index [0-9]*) is there twice" } },
	[C_EXTREF_NOFEAT] = { "a sound extended ref on a volume without the feature bit (the bit set)",
	  c_extref_nofeat, CORE_PROFILE_DUP, .want_y = 1,
	  .says = { "INODE_EXTREF on a volume without SUPER_FEAT_EXTREF" }, .extref_feat = 1 },
	[C_EXTREF_NOFEAT_BAD] = { "a malformed extended ref on a volume without the feature bit (removed)",
	  c_extref_nofeat_bad, CORE_PROFILE_DUP, .want_y = 1,
	  .says = { "INODE_EXTREF on a volume without SUPER_FEAT_EXTREF",
		    "INODE_EXTREF [0-9]*: entry overruns the item" }, .extref_feat = -1 },
	[C_MISSING_INODE] = { "entries naming a missing inode (removed)",
	  c_missing_inode, CORE_PROFILE_DUP, .damaged = 1u << F_B, .want_y = 1 },
	[C_UNNAMED] = { "inode nobody names (to /lost+found)",
	  c_unnamed, CORE_PROFILE_DUP, .damaged = 1u << F_C, .want_y = 1,
	  .lost_found = "lost+found" },
	[C_CSUM] = { "checksums missing, dup copies agree (recomputed)",
	  c_csum, CORE_PROFILE_DUP, .want_y = 1 },
	[C_CSUM_DIFFER] = { "checksums missing, dup copies differ (cannot repair)",
	  c_csum_differ, CORE_PROFILE_DUP, .damaged = 1u << F_A, .want_y = 4,
	  .reason = "cannot be told" },
	[C_CSUM_SINGLE] = { "checksums missing, single copy (cannot repair)",
	  c_csum, CORE_PROFILE_SINGLE, .damaged = 1u << F_A, .want_y = 4,
	  .reason = "nothing to verify" },
	[C_COMBINED] = { "all at once: free space, refs, orphans, checksums, unnamed and missing inodes",
	  c_combined, CORE_PROFILE_DUP, .damaged = 1u << F_B | 1u << F_C, .want_y = 1,
	  .lost_found = "lost+found" },
	[C_SNAPSHOT] = { "link counts and directory index in a snapshot (shared leaves)",
	  c_snapshot, CORE_PROFILE_DUP, .want_y = 1, .snap = true },
	[C_PREEN_LINK_COUNTS] = { "preen (-p): link counts (safe: repaired)",
	  c_link_counts, CORE_PROFILE_DUP, .want_y = 1, .flag = "-p" },
	[C_PREEN_ORPHANS] = { "preen (-p): orphan items (safe: repaired)",
	  c_orphans, CORE_PROFILE_DUP, .want_y = 1, .flag = "-p" },
	[C_PREEN_FREE_SPACE] = { "preen (-p): free-space tree (safe: repaired)",
	  c_free_space, CORE_PROFILE_DUP, .want_y = 1, .flag = "-p" },
	[C_PREEN_UNNAMED] = { "preen (-p): inode nobody names (needs -y: refused, then -y)",
	  c_unnamed, CORE_PROFILE_DUP, .damaged = 1u << F_C, .want_y = 4, .flag = "-p",
	  .reason = "run fsck.glassfs -y", .then_y = true },
	[C_DENTRY_TYPE] = { "entry types disagree with the inodes' modes (both halves, one half)",
	  c_dentry_type, CORE_PROFILE_DUP, .want_y = 1 },
	[C_PREEN_DENTRY_TYPE] = { "preen (-p): entry types (safe: repaired)",
	  c_dentry_type, CORE_PROFILE_DUP, .want_y = 1, .flag = "-p" },
	[C_INDEX_CONFLICT] = { "index and entry of the same number disagree (the back reference decides)",
	  c_index_conflict, CORE_PROFILE_DUP, .want_y = 1 },
	[C_BAD_ITEMS] = { "malformed and unknown items (removed, rebuilt from their other halves)",
	  c_bad_items, CORE_PROFILE_DUP, .want_y = 1 },
	[C_MISFILED] = { "names filed under another hash: a directory entry, an xattr (moved)",
	  c_misfiled, CORE_PROFILE_DUP, .want_y = 1 },
	[C_SUPER] = { "damaged superblock copy (rewritten from the good one)",
	  c_none, CORE_PROFILE_DUP, .want_y = 1, .raw = raw_super },
	[C_PREEN_SUPER] = { "preen (-p): damaged superblock copy (safe: repaired)",
	  c_none, CORE_PROFILE_DUP, .want_y = 1, .flag = "-p", .raw = raw_super },
	[C_SUBVOL_NAME] = { "subvolume name without its back reference (made from its twin)",
	  c_subvol_name, CORE_PROFILE_DUP, .want_y = 1, .snap = true },
	[C_UNREADABLE] = { "unreadable node with one copy (cannot repair: image untouched)",
	  c_unreadable, CORE_PROFILE_SINGLE, .damaged = 1u << F_C | 1u << F_A | 1u << F_B,
	  .want_y = 4, .reason = "cannot be read from any copy", .raw = raw_node,
	  .meta_single = true, .untouched = true },
	[C_META_GEN] = { "a node's reference item records another generation (made the node's)",
	  c_meta_gen, CORE_PROFILE_DUP, .want_y = 1 },
};
_Static_assert(sizeof(cases) / sizeof(cases[0]) == NCASES, "a case without its name");

/* The case's image, damaged.  0, or -1 (FAIL printed). */
static int prepare(const struct ccase *cc)
{
	struct core *c = NULL;
	struct txn *t;
	int ret;

	if ((ret = make_image(cc->data_profile, cc->snap, cc->meta_single))) {
		printf("FAIL: %s: making the image: %s\n", cc->name, strerror(-ret));
		fails++;
		return -1;
	}
	MUST(t_open(img, false, &c));
	MUST(txn_join(c, 16, 0, &t));
	ret = cc->corrupt(t, c);
	int e = txn_end(t);
	if (ret || e) {
		printf("FAIL: %s: corrupting: %s\n", cc->name, strerror(-(ret ? ret : e)));
		fails++;
		goto out;
	}
	MUST(txn_commit(c, COMMIT_SYNC));
	ret = mount_close(c);
	c = NULL;
	MUST(ret);
	if (cc->raw && (ret = cc->raw())) {
		printf("FAIL: %s: damaging the image file: %s\n", cc->name, strerror(-ret));
		fails++;
		return -1;
	}
	return 0;
out:
	if (c)
		mount_close(c);
	return -1;
}

static void run_case(const struct ccase *cc)
{
	struct core *c = NULL;
	const char *why = "";
	int n1 = -1, y = -1, n2 = -1;

	if (prepare(cc))
		return;

	snprintf(out, sizeof(out), "%s.fsck", img);
	unlink(out);
	char cmd[700];
	snprintf(cmd, sizeof(cmd), "cp --sparse=always %s %s", img, before);
	n1 = fsck("-n");
	bool said_all = true;	/* what the first -n must say, from its output alone */
	for (int i = 0; i < 2 && cc->says[i]; i++) {
		snprintf(cmd, sizeof(cmd), "grep -q \"%s\" %s", cc->says[i], out);
		if (sh(cmd) != 0) {
			printf("# %s: the -n output lacks: %s\n", cc->name, cc->says[i]);
			said_all = false;
		}
	}
	bool copied = cc->untouched && sh(cmd) == 0;
	y = fsck(cc->flag ? cc->flag : "-y");
	snprintf(cmd, sizeof(cmd), "cmp -s %s %s", img, before);
	bool untouched = !cc->untouched || (copied && sh(cmd) == 0);
	unlink(before);
	n2 = fsck("-n");
	if (n1 < 0) {
		printf("SKIP: %s: fsck.glassfs not built\n", cc->name);
		goto out;
	}
	if (cc->want_y == 4) {
		/* refused, said why, and no worse: the second -n finds it still */
		snprintf(cmd, sizeof(cmd), "grep -q '%s' %s", cc->reason, out);
		bool said = sh(cmd) == 0;
		bool ok = n1 == 4 && y == 4 && n2 == 4 && said && untouched &&
			  verify(cc->damaged, &why);
		int y2 = -1, n3 = -1;	/* -1: not run */
		if (ok && cc->then_y) {
			y2 = fsck("-y");
			n3 = fsck("-n");
			ok = y2 == 1 && n3 == 0;
		}
		if (ok)
			printf("PASS: %s: detected (-n 4), %s says why and exits 4, image %s, mounts, contents intact%s\n",
			       cc->name, cc->flag ? cc->flag : "-y",
			       cc->untouched ? "byte for byte untouched" : "no worse",
			       cc->then_y ? "; -y then repairs (1), -n clean (0)" : "");
		else {
			printf("FAIL: %s: -n %d, repair %d, -n after %d (want 4 4 4), reason given %d, untouched %d, verify %s; then -y %d -n %d\n",
			       cc->name, n1, y, n2, said, untouched, why, y2, n3);
			fails++;
			show_out();
		}
		goto out;
	}
	bool ok = n1 == 4 && y == 1 && n2 == 0 && said_all && verify(cc->damaged, &why);
	if (!said_all)
		why = "the -n output lacks a name (above)";
	if (ok && cc->extref_feat && t_open(img, true, &c) == 0) {
		bool has = c->sb.features & SUPER_FEAT_EXTREF;
		mount_close(c);
		c = NULL;
		if (has != (cc->extref_feat > 0)) {
			ok = false;
			why = has ? "SUPER_FEAT_EXTREF set" : "SUPER_FEAT_EXTREF not set";
		}
	}
	if (ok && cc->lost_found) {
		struct fsctx *fs;
		char name[32];
		snprintf(name, sizeof(name), "#%llu", (unsigned long long)files[F_C].ino);
		ok = mount_fs(&c, &fs) == 0;
		if (ok) {
			ok = read_back(fs, cc->lost_found, name, files[F_C].data, files[F_C].len);
			if (!ok)
				why = "not in lost+found with its content";
			unmount_fs(c, fs);
			c = NULL;
		}
	}
	if (ok) {
		printf("PASS: %s: detected (-n 4%s), repaired (%s 1), clean after (-n 0), mounts, contents intact\n",
		       cc->name, cc->says[0] ? ", each by name" : "", cc->flag ? cc->flag : "-y");
	} else {
		printf("FAIL: %s: -n %d, %s %d, -n after %d (want 4 1 0); verify: %s\n", cc->name, n1,
		       cc->flag ? cc->flag : "-y", y, n2, why);
		fails++;
		show_out();
	}
out:
	if (c)
		mount_close(c);
}

/* The last number before `what` in the fsck output (-1: none). */
static long out_number(const char *what)
{
	char line[512];
	long v = -1;
	FILE *fp = fopen(out, "r");

	while (fp && fgets(line, sizeof(line), fp)) {
		char *w = strstr(line, what);
		if (!w)
			continue;
		while (w > line && w[-1] == ' ')
			w--;
		while (w > line && w[-1] >= '0' && w[-1] <= '9')
			w--;
		v = strtol(w, NULL, 10);
	}
	if (fp)
		fclose(fp);
	return v;
}


/*
 * A crash inside a repair pass (fsck.glassfs ends after the pass's Nth
 * device write: --test-crash-after), at points spread over the pass
 * and at its last two writes: the image left
 * must be the one before the pass (the same errors) or the repaired one
 * (clean), never a mix; and -y then finishes the repair.  What reached
 * the device before the exit stays there (as kill -9; power loss is
 * test_powerloss's subject, on the same commit path).
 */
static void crash_case(const struct ccase *cc)
{
	char cmd[700];
	long w, e0;
	int old = 0, repaired = 0, bad = 0, points = 0;

	if (prepare(cc))
		return;
	snprintf(out, sizeof(out), "%s.fsck", img);
	snprintf(cmd, sizeof(cmd), "cp --sparse=always %s %s", img, orig);
	if (sh(cmd) || fsck_out("-n") != 4 || (e0 = out_number(" errors")) <= 0 ||
	    fsck_out("--test-crash-after 0 -y") != 1 ||
	    (w = out_number(" device writes")) <= 0) {
		printf("FAIL: crash inside a repair pass (%s): no baseline\n", cc->name);
		fails++;
		show_out();
		unlink(orig);
		return;
	}
	/* the first write, one inside, and the last two (the last is the
	 * superblock on these small images: the commit point) */
	long at[4] = { 1, w / 2, w - 1, w };
	for (int i = 0; i < 4; i++) {
		long n = at[i];
		char env[64];
		if (n < 1 || (i && n <= at[i - 1]))
			continue;
		snprintf(cmd, sizeof(cmd), "cp --sparse=always %s %s", orig, img);
		if (sh(cmd))
			break;
		snprintf(env, sizeof(env), "--test-crash-after %ld -y", n);
		int y = fsck_out(env);
		int r = fsck_out("-n");
		long e = out_number(" errors");
		points++;
		if (y == 99 && r == 4 && e == e0)
			old++;
		else if ((y == 99 || n == w) && r == 0)
			repaired++;
		else {
			bad++;
			printf("  crash after write %ld of %ld: -y %d, then -n %d with %ld errors (before: %ld)\n",
			       n, w, y, r, e, e0);
			show_out();
		}
		if (n == at[1]) {	/* and -y finishes the job from there */
			int y2 = fsck_out("-y"), r2 = fsck_out("-n");
			if ((y2 != 0 && y2 != 1) || r2 != 0) {
				bad++;
				printf("  crash after write %ld: -y then %d, -n %d\n", n, y2, r2);
			}
		}
	}
	unlink(orig);
	if (!bad && old && repaired)
		printf("PASS: crash inside a repair pass (%s): %ld writes, %d crash points: %d left the image "
		       "before the pass, %d the repaired one, none a mix\n", cc->name, w, points, old, repaired);
	else {
		printf("FAIL: crash inside a repair pass (%s): %d crash points, %d old, %d repaired, %d neither\n",
		       cc->name, points, old, repaired, bad);
		fails++;
	}
}

/* A pass that makes the volume worse (--test-bad-repair: the pass
 * also breaks the root directory's link count, size and byte count) is undone: -y
 * exits 4 saying so, and the volume has exactly the errors it had. */
static void worse_case(const struct ccase *cc)
{
	long e0, e1;

	if (prepare(cc))
		return;
	snprintf(out, sizeof(out), "%s.fsck", img);
	int n1 = fsck_out("-n");
	e0 = out_number(" errors");
	int y = fsck_out("--test-bad-repair -y");
	char cmd[400];
	snprintf(cmd, sizeof(cmd), "grep -q 'undone' %s", out);
	bool said = sh(cmd) == 0;
	int n2 = fsck_out("-n");
	e1 = out_number(" errors");
	int y2 = fsck_out("-y"), n3 = fsck_out("-n");
	const char *why = "";
	bool ok = n1 == 4 && y == 4 && said && n2 == 4 && e1 == e0 && y2 == 1 && n3 == 0 &&
		  verify(0, &why);
	if (ok)
		printf("PASS: a repair pass that makes the volume worse is undone (%s): -y 4, the same %ld errors after, "
		       "then -y repairs it\n", cc->name, e0);
	else {
		printf("FAIL: a repair pass that makes the volume worse is undone (%s): -n %d (%ld errors), "
		       "bad -y %d (said %d), -n %d (%ld errors), -y %d, -n %d, verify %s\n", cc->name, n1, e0,
		       y, said, n2, e1, y2, n3, why);
		fails++;
		show_out();
	}
}

/* A volume with a pending fsync log (a crash after an fsync, before the
 * next commit) and a wrong link count: -y repairs nothing (the log's
 * replay at mount comes first) and exits 4 saying so; after a mount and
 * unmount -y repairs it. */
static void log_case(void)
{
	struct core *c;
	struct fsctx *fs;
	int ret = make_image(CORE_PROFILE_DUP, false, false);

	if (!ret && !(ret = t_open(img, false, &c))) {
		struct txn *t;
		if (!(ret = txn_join(c, 4, 0, &t))) {
			ret = set_nlink(t, c, files[F_C].ino, 4);
			int e = txn_end(t);
			ret = ret ? ret : e;
		}
		if (!ret)
			ret = txn_commit(c, COMMIT_SYNC);
		int e = mount_close(c);
		ret = ret ? ret : e;
	}
	fflush(stdout);
	pid_t pid = ret ? -1 : fork();
	if (pid == 0) {		/* fsync, then die before any commit */
		if (mount_fs(&c, &fs))
			_exit(1);
		uint8_t b[4096];
		memset(b, 0x5a, sizeof(b));
		if (fsops_write(fs, files[F_B].ino, b, sizeof(b), 0) != (ssize_t)sizeof(b) ||
		    fsops_fsync(fs, files[F_B].ino, 0))
			_exit(2);
		_exit(0);
	}
	int st = 0;
	if (pid > 0)
		waitpid(pid, &st, 0);
	snprintf(out, sizeof(out), "%s.fsck", img);
	unlink(out);
	int y = pid > 0 && WIFEXITED(st) && !WEXITSTATUS(st) ? fsck("-y") : -1;
	char cmd[400];
	snprintf(cmd, sizeof(cmd), "grep -q 'fsync log is pending' %s", out);
	bool said = sh(cmd) == 0;
	int y2 = -1, n2 = -1;
	if (!mount_fs(&c, &fs)) {
		unmount_fs(c, fs);
		y2 = fsck("-y");
		n2 = fsck("-n");
	}
	if (y == 4 && said && y2 == 1 && n2 == 0)
		printf("PASS: pending fsync log: -y repairs nothing and says mount first (4); after a mount -y repairs (1)\n");
	else {
		printf("FAIL: pending fsync log: -y %d (said %d), after a mount -y %d, -n %d\n", y, said, y2, n2);
		fails++;
		show_out();
	}
}

/* ---- missing checksums on raid10, raid1c3, raid5 and raid6 ------------------ */

/* What a raid case does to the file's extent after deleting its checksums. */
enum rdamage { RD_NONE, RD_COPY1, RD_COPY0, RD_DATA };

struct rcase {
	const char *name;
	int ndev;
	uint64_t prof;
	enum rdamage damage;
	int want_y;		/* 1 repaired, 4 cannot be */
	const char *say;	/* the -y output says this (NULL: not checked) */
};

static char rimg[4][256];

/* fsck.glassfs FLAGS over the case's images, output appended to out. */
static int rfsck(const char *flag, int ndev)
{
	char bin[512], cmd[2600];

	if (t_fsck_bin(bin, sizeof(bin)))
		return -1;
	snprintf(cmd, sizeof(cmd), "%s %s %s %s %s %s >> %s 2>&1", bin, flag, rimg[0],
		 ndev > 1 ? rimg[1] : "", ndev > 2 ? rimg[2] : "", ndev > 3 ? rimg[3] : "", out);
	int st = sh(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 99;
}

static int rmount(int ndev, struct core **c, struct fsctx **fs)
{
	const char *devs[4] = { rimg[0], rimg[1], rimg[2], rimg[3] };
	struct core_opts o;
	int ret;

	core_opts_default(&o);
	o.commit_interval_s = 3600;
	if ((ret = mount_open(devs, ndev, &o, c)))
		return ret;
	if (fs && (ret = fsops_mount(*c, &o, fs))) {
		mount_close(*c);
		*c = NULL;
	}
	return ret;
}

/* Flip a byte of the sector at logical on copy m (a mirror) or where the
 * raid5/6 layout keeps it (format.h's table). */
static int damage_sector(struct core *c, uint64_t logical, int m)
{
	struct chunk_copy cp[CHUNK_MAX_STRIPES], at;
	struct chunk_geom g;
	uint8_t b[CORE_SECTORSIZE];
	int ret;

	if (chunk_map_is_parity(c, logical)) {
		if ((ret = chunk_map_geometry(c, logical, &g)))
			return ret;
		uint64_t s = (logical - g.logical) / CORE_SECTORSIZE, r = s / (uint64_t)g.ndata;
		int j = (int)(s % (uint64_t)g.ndata);
		at = g.stripes[(r + (uint64_t)j) % (uint64_t)g.num_stripes];
		at.physical += r * CORE_SECTORSIZE;
	} else {
		int n = chunk_map_lookup(c, logical, CORE_SECTORSIZE, cp, NULL);
		if (n <= m)
			return -EINVAL;
		at = cp[m];
	}
	if ((ret = dev_read(at.dev, at.physical, b, sizeof(b))))
		return ret;
	b[100] ^= 0x24;
	return dev_write(at.dev, at.physical, b, sizeof(b));
}

/*
 * A file of 300 KiB (raid10: five 64 KiB elements, so the checksums span
 * both pairs) loses its checksums; a case may damage one sector's copy
 * (RD_COPY0/1) or its raid5/6 column (RD_DATA).  -n reports it (4), -y
 * repairs it (1: checksums from copies that agree, the odd copy outvoted
 * or the bad column blamed by P and Q and rebuilt, then -n clean and the
 * file reads its bytes) or says why it cannot (4).
 */
static void raid_csum_case(const struct rcase *rc)
{
	const size_t len = 300u << 10;
	uint8_t *data = malloc(len), *back = malloc(len);
	struct core *c = NULL;
	struct fsctx *fs = NULL;
	struct stat st;
	uint64_t ino = 0;
	int n1 = -1, y = -1, n2 = -1;
	bool said = true, reads = false;

	MUST(data && back ? 0 : -ENOMEM);
	for (size_t i = 0; i < len; i++)
		data[i] = (uint8_t)(t_rand() >> (i % 5));
	for (int i = 0; i < rc->ndev; i++)
		MUST(t_image(rimg[i], sizeof(rimg[i]), IMG_SIZE));
	const char *devs[4] = { rimg[0], rimg[1], rimg[2], rimg[3] };
	struct format_opts fo = { .label = "fsckraid", .force = true, .data_profile = rc->prof,
				  .meta_profile = CORE_PROFILE_RAID1 };
	MUST(mount_format(devs, rc->ndev, &fo));
	MUST(rmount(rc->ndev, &c, &fs));
	MUST(fsops_mknod(fs, ROOT_DIR_INO, "big", S_IFREG | 0644, 0, &root_cr, &st));
	ino = st.st_ino;
	MUST(fsops_write(fs, ino, data, len, 0) == (ssize_t)len ? 0 : -EIO);
	fsops_forget(fs, ino, 1);
	MUST(fsops_sync(fs));
	MUST(unmount_fs(c, fs));
	c = NULL;
	fs = NULL;
	/* the checksums go, then the damage */
	MUST(rmount(rc->ndev, &c, NULL));
	struct file_extent fe;
	struct key k = { ino, KEY_EXTENT_DATA, 0 };
	struct txn *t;
	MUST(btree_lookup(subvol_root(c, FS_TREE_OBJECTID), &k, &fe, sizeof(fe)) == (int)sizeof(fe) ?
	     0 : -EINVAL);
	MUST(txn_join(c, 16, 0, &t));
	int ret = data_csum_delete(t, fe.disk_logical, fe.disk_len);
	int e = txn_end(t);
	MUST(ret ? ret : e);
	MUST(txn_commit(c, COMMIT_SYNC));
	uint64_t bad = fe.disk_logical + (68u << 10);	/* raid10: inside the second element */
	if (rc->damage != RD_NONE)
		MUST(damage_sector(c, bad, rc->damage == RD_COPY1 ? 1 : 0));
	MUST(mount_close(c));
	c = NULL;

	snprintf(out, sizeof(out), "%s.fsck", rimg[0]);
	unlink(out);
	n1 = rfsck("-n", rc->ndev);
	y = rfsck("-y", rc->ndev);
	n2 = rfsck("-n", rc->ndev);
	if (rc->say) {
		char cmd[600];
		snprintf(cmd, sizeof(cmd), "grep -q '%s' %s", rc->say, out);
		said = sh(cmd) == 0;
	}
	if (n1 >= 0 && !rmount(rc->ndev, &c, &fs)) {
		if (!fsops_lookup(fs, ROOT_DIR_INO, "big", &st))
			reads = fsops_read(fs, st.st_ino, back, len, 0) == (ssize_t)len &&
				!memcmp(back, data, len);
		unmount_fs(c, fs);
		c = NULL;
	}
	if (n1 < 0)
		printf("SKIP: %s: fsck.glassfs not built\n", rc->name);
	else if (n1 == 4 && y == rc->want_y && said &&
		 (rc->want_y == 1 ? n2 == 0 && reads : n2 == 4))
		printf("PASS: %s: -n 4, -y %d, then -n %d%s\n", rc->name, y, n2,
		       rc->want_y == 1 ? ", the file reads its bytes" : "");
	else {
		printf("FAIL: %s: -n %d, -y %d (want %d, said '%s': %d), -n %d, the file reads: %d\n",
		       rc->name, n1, y, rc->want_y, rc->say ? rc->say : "", said, n2, reads);
		fails++;
		show_out();
	}
out:
	if (c)
		mount_close(c);
	unlink(out);
	for (int i = 0; i < rc->ndev; i++)
		unlink(rimg[i]);
	free(data);
	free(back);
}

static const struct rcase rcases[] = {
	{ "raid10: checksums missing, copies agree (each element from its pair)", 4, CORE_PROFILE_RAID10,
	  RD_NONE, 1, NULL },
	{ "raid10: checksums missing, one copy differs (cannot be told)", 4, CORE_PROFILE_RAID10,
	  RD_COPY1, 4, "cannot be told" },
	{ "raid1c3: checksums missing, one copy of three differs (outvoted, rewritten)", 3,
	  CORE_PROFILE_RAID1C3, RD_COPY0, 1, "rewritten from them" },
	{ "raid5: checksums missing, rows agree with parity (recomputed)", 3, CORE_PROFILE_RAID5,
	  RD_NONE, 1, NULL },
	{ "raid5: checksums missing, a data column differs (cannot be told)", 3, CORE_PROFILE_RAID5,
	  RD_DATA, 4, "cannot be told" },
	{ "raid6: checksums missing, rows agree with parity (recomputed)", 4, CORE_PROFILE_RAID6,
	  RD_NONE, 1, NULL },
	{ "raid6: checksums missing, a data column corrupt (blamed by P and Q, rebuilt)", 4,
	  CORE_PROFILE_RAID6, RD_DATA, 1, "rebuilt from the rest of the row" },
};

/* Killed (SIGTERM from tests/run.sh's timeout, SIGINT): the images go
 * with the process (unlink only: async-signal-safe). */
static void on_kill(int sig)
{
	const char *v[] = { img, out, before, orig, rimg[0], rimg[1], rimg[2], rimg[3] };
	pid_t pid = child;

	if (pid > 0) {
		kill(-pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		if (v[i][0])
			unlink(v[i]);
	for (int i = 0; i < nbuilt; i++)
		unlink(built[i].path);
	signal(sig, SIG_DFL);
	raise(sig);
}

static int c_meta_item(struct txn *t, struct core *c)
{
	struct root *r = fsr(c);
	struct key k = { r->bytenr, KEY_METADATA_ITEM, (uint64_t)r->level };

	return btree_delete(t, core_tree(c, CT_EXTENT), &k);
}

/*
 * A node's reference item missing: -y makes it again, with the
 * generation the node's header names (the one allocation recorded), not
 * the repair's: scrub holds every node to its item's generation, and a
 * repaired volume must scrub clean.  Failed with the repair's generation
 * (the fs root's two copies "stale": two node errors, uncorrectable).
 */
/*
 * A dup node's second copy a sound node of an earlier generation (a lost
 * write): fsck -n reports it (every copy is held to the generation the
 * tree accepted), where it read as clean before.
 */
static void stale_copy_case(void)
{
	struct chunk_copy cp[CHUNK_MAX_STRIPES];
	struct core *c = NULL;
	uint64_t ph = 0, gen = 0;
	int n1;

	if (make_image(CORE_PROFILE_DUP, false, false)) {
		printf("FAIL: stale node copy: making the image\n");
		fails++;
		return;
	}
	MUST(t_open(img, true, &c));
	if (chunk_map_lookup(c, fsr(c)->bytenr, c->nodesize, cp, NULL) == 2) {
		ph = cp[1].physical;
		gen = fsr(c)->generation;
	}
	uint32_t ns = c->nodesize;
	mount_close(c);
	c = NULL;
	MUST(ph && gen > 1 ? 0 : -ENOENT);
	MUST(t_forge_node_gen(img, ph, ns, gen - 1));
	snprintf(out, sizeof(out), "%s.fsck", img);
	n1 = fsck("-n");
	char cmd[700];
	snprintf(cmd, sizeof(cmd), "grep -q 'copy 2 .* is bad: generation' %s", out);
	CHECK("a node copy of an earlier generation: fsck -n reports it (4)",
	      n1 == 4 && sh(cmd) == 0);
	unlink(out);
out:
	if (c)
		mount_close(c);
}

static void meta_item_case(void)
{
	static const struct ccase cc = {
		"a node's reference item missing (made again with the node's generation)",
		c_meta_item, CORE_PROFILE_DUP, 0, 1, NULL, NULL, false, NULL, false, NULL, false,
		false, { NULL, NULL }, 0 };
	struct scrub_opts so = { .readonly = true };
	struct scrub_progress sp;
	struct core *c = NULL;
	int n1, y, n2;

	if (prepare(&cc))
		return;
	snprintf(out, sizeof(out), "%s.fsck", img);
	n1 = fsck("-n");
	y = fsck("-y");
	n2 = fsck("-n");
	CHECK("a node's reference item missing: detected (-n 4), repaired (-y 1), clean after (-n 0)",
	      n1 == 4 && y == 1 && n2 == 0);
	/* read-only: a read-write mount may copy the node (and free it) */
	MUST(t_open(img, true, &c));
	MUST(scrub_run(c, &so, &sp));
	printf("# %s: scrub after: %llu node errors, %llu uncorrectable\n", cc.name,
	       (unsigned long long)sp.meta_errors, (unsigned long long)sp.uncorrectable_bytes);
	CHECK("a node's reference item made again: a scrub after the repair finds nothing",
	      sp.meta_errors == 0 && sp.uncorrectable_bytes == 0 && sp.nodes > 0);
out:
	if (c)
		mount_close(c);
	unlink(out);
}

int main(int argc, char **argv)
{
	t_seed_init();
	/* commits' flushes are not the subject here: tmpfs unless told */
	if (!getenv("TMPDIR") && access("/dev/shm", W_OK) == 0)
		setenv("TMPDIR", "/dev/shm", 1);
	struct sigaction sa = { .sa_handler = on_kill };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	MUST(t_image(img, sizeof(img), IMG_SIZE));
	snprintf(before, sizeof(before), "%s.before", img);
	snprintf(orig, sizeof(orig), "%s.orig", img);
	for (int i = 0; i < NFILES; i++) {
		files[i].data = malloc(files[i].len);
		for (size_t j = 0; j < files[i].len; j++)
			files[i].data[j] = (uint8_t)(t_rand() >> (j % 7));
	}
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (argc < 2 || strstr(cases[i].name, argv[1]))
			run_case(&cases[i]);
	if (argc < 2 || strstr("crash", argv[1])) {
		crash_case(&cases[C_FREE_SPACE]);	/* free-space tree rebuilt */
		crash_case(&cases[C_UNNAMED]);	/* lost+found made, an inode moved there */
	}
	if (argc < 2 || strstr("log", argv[1]))
		log_case();
	if (argc < 2 || strstr("reference item", argv[1]))
		meta_item_case();
	if (argc < 2 || strstr("stale copy", argv[1]))
		stale_copy_case();
	for (size_t i = 0; i < sizeof(rcases) / sizeof(rcases[0]); i++)
		if (argc < 2 || strstr(rcases[i].name, argv[1]))
			raid_csum_case(&rcases[i]);
	if (argc < 2 || strstr("worse", argv[1]))
		worse_case(&cases[C_ORPHANS]);	/* 2 errors; the bad pass makes 3 */
	/* repairs refused while checking only, and the usage rules */
	snprintf(out, sizeof(out), "%s.fsck", img);
	if (!make_image(CORE_PROFILE_DUP, false, false)) {
		int a = fsck("-n -y");
		CHECK("fsck: -n with -y is a usage error (16)", a == 16);
		int b = fsck("-y");
		CHECK("fsck -y on a clean image: 0", b == 0);
	}
	unlink(out);
out:
	unlink(img);
	for (int i = 0; i < nbuilt; i++)
		unlink(built[i].path);
	for (int i = 0; i < NFILES; i++)
		free(files[i].data);
	return fails ? 1 : 0;
}
