// SPDX-License-Identifier: MIT
/*
 * test_items.c — the items layer (fsops over a real volume on an image
 * file), under ASan/UBSan: a random model test of one file's data (writes,
 * truncates, punches, fallocate with every mode (preallocate, zero,
 * collapse and insert range), inline <-> extents, sparse offsets)
 * compared byte for byte with an in-memory model, also after a remount;
 * the disk layout of a file written out of order by 4 threads;
 * names, links, renames, orphans and xattrs; a write again in place
 * whose device write fails.  SEED=n replays.
 */
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

#include "fs/core/core.h"
#include "fs/core/core_types.h"
#include "fs/ops/fsops.h"
#include "fs/txn/txn.h"
#include "fs/btree/btree.h"
#include "fs/items/inode.h"
#include "fs/store/dev.h"
#include "items_test.h"

#include "check.h"

static char img[256];
static struct fsops_cred root_cr = { .uid = 0, .gid = 0, .umask = 0 };

#define MODEL_MAX (6u << 20)

static int compare(uint64_t ino, const unsigned char *model, uint64_t msize, unsigned char *buf)
{
	struct stat st;

	if (fsops_getattr(fs, ino, &st) || (uint64_t)st.st_size != msize) {
		printf("# size %lld, model %llu\n", (long long)st.st_size, (unsigned long long)msize);
		return 0;
	}
	ssize_t n = fsops_read(fs, ino, buf, msize + 100, 0);
	if (n != (ssize_t)msize) {
		printf("# read %zd, model %llu\n", n, (unsigned long long)msize);
		return 0;
	}
	for (uint64_t i = 0; i < msize; i++)
		if (buf[i] != model[i]) {
			printf("# byte %llu: %u, model %u\n", (unsigned long long)i, buf[i], model[i]);
			return 0;
		}
	return 1;
}

static void data_model(unsigned seed)
{
	unsigned char *model = calloc(1, MODEL_MAX), *buf = malloc(MODEL_MAX + 4096);
	unsigned char *w = malloc(1 << 20);
	uint64_t msize = 0;
	struct stat st;
	int ok = 1, op, shifted[2] = { 0, 0 };

	srand(seed);
	CHECK("create data file", fsops_mknod(fs, ROOT_DIR_INO, "data", S_IFREG | 0644, 0, &root_cr, &st) == 0);
	uint64_t ino = st.st_ino;
	for (op = 0; op < 400 && ok; op++) {
		int kind = rand() % 13;
		uint64_t off, len;
		/* small offsets often, to cross the inline limit both ways */
		uint64_t span = rand() % 3 == 0 ? 4096 : MODEL_MAX - (1 << 20);
		off = (uint64_t)rand() % span;
		len = 1 + (uint64_t)rand() % (rand() % 4 == 0 ? (1 << 20) : 9000);
		if (off + len > MODEL_MAX)
			len = MODEL_MAX - off;
		if (kind < 5) {
			for (uint64_t i = 0; i < len; i++)
				w[i] = (unsigned char)rand();
			ssize_t n = fsops_write(fs, ino, w, len, off);
			if (n != (ssize_t)len) {
				printf("# op %d: write %llu@%llu -> %zd\n", op, (unsigned long long)len,
				       (unsigned long long)off, n);
				ok = 0;
				break;
			}
			memcpy(model + off, w, len);
			if (off + len > msize)
				msize = off + len;
		} else if (kind < 7) {
			struct stat in = { .st_size = (off_t)off };
			if (fsops_setattr(fs, ino, &in, FSOPS_SET_SIZE, NULL)) {
				ok = 0;
				break;
			}
			if (off < msize)
				memset(model + off, 0, msize - off);
			msize = off;
		} else if (kind < 9) {
			if (fsops_fallocate(fs, ino, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off, len)) {
				ok = 0;
				break;
			}
			if (off < msize)
				memset(model + off, 0, (off + len < msize ? off + len : msize) - off);
		} else if (kind < 10) {
			int keep = rand() & 1;
			if (fsops_fallocate(fs, ino, keep ? FALLOC_FL_KEEP_SIZE : 0, off, len)) {
				ok = 0;
				break;
			}
			if (!keep && off + len > msize)
				msize = off + len;
		} else if (kind == 10) {
			int keep = rand() & 1;
			int r = fsops_fallocate(fs, ino, FALLOC_FL_ZERO_RANGE | (keep ? FALLOC_FL_KEEP_SIZE : 0),
						off, len);
			if (r) {
				printf("# op %d: zero range %llu@%llu -> %d\n", op, (unsigned long long)len,
				       (unsigned long long)off, r);
				ok = 0;
				break;
			}
			uint64_t zend = keep && off + len > msize ? msize : off + len;
			if (off < zend)
				memset(model + off, 0, zend - off);
			if (!keep && off + len > msize)
				msize = off + len;
		} else {
			/* collapse or insert, block-aligned; the kernel's EINVAL cases too */
			int ins = kind == 12;
			off &= ~4095ull;
			len = (len + 4095) & ~4095ull;
			int want = ins ? (off < msize && msize + len <= MODEL_MAX ? 0 : -EINVAL)
				       : (off + len < msize ? 0 : -EINVAL);
			if (ins && off < msize && msize + len > MODEL_MAX)
				continue;	/* valid for the engine, too big for the model */
			int r = fsops_fallocate(fs, ino, ins ? FALLOC_FL_INSERT_RANGE : FALLOC_FL_COLLAPSE_RANGE,
						off, len);
			if (r != want) {
				printf("# op %d: %s %llu@%llu (size %llu) -> %d, want %d\n", op,
				       ins ? "insert" : "collapse", (unsigned long long)len,
				       (unsigned long long)off, (unsigned long long)msize, r, want);
				ok = 0;
				break;
			}
			if (r == 0)
				shifted[ins]++;
			if (r == 0 && ins) {
				memmove(model + off + len, model + off, msize - off);
				memset(model + off, 0, len);
				msize += len;
			} else if (r == 0) {
				memmove(model + off, model + off + len, msize - off - len);
				memset(model + msize - len, 0, len);
				msize -= len;
			}
		}
		if (op % 20 == 0 && !compare(ino, model, msize, buf)) {
			printf("# mismatch after op %d (kind %d off %llu len %llu)\n", op, kind,
			       (unsigned long long)off, (unsigned long long)len);
			ok = 0;
		}
	}
	CHECK("random data ops match the model", ok && compare(ino, model, msize, buf));
	printf("# %d collapse, %d insert range\n", shifted[0], shifted[1]);
	CHECK("collapse and insert range ran", shifted[0] > 0 && shifted[1] > 0);
	CHECK("unmount", items_unmount() == 0);
	CHECK("remount", items_mount(img) == 0);
	CHECK("data after remount", compare(ino, model, msize, buf));

	/* sparse beyond 4 GiB, SEEK_DATA / SEEK_HOLE */
	CHECK("create sparse", fsops_mknod(fs, ROOT_DIR_INO, "sparse", S_IFREG | 0644, 0, &root_cr, &st) == 0);
	uint64_t sp = st.st_ino, far = 5ULL << 30;
	memset(w, 0x5a, 8192);
	CHECK("write at 5 GiB", fsops_write(fs, sp, w, 8192, far) == 8192);
	CHECK("seek data", fsops_lseek(fs, sp, 0, SEEK_DATA) == (int64_t)far);
	CHECK("seek hole", fsops_lseek(fs, sp, 0, SEEK_HOLE) == 0);
	CHECK("seek hole at eof", fsops_lseek(fs, sp, far, SEEK_HOLE) == (int64_t)(far + 8192));
	CHECK("seek past eof", fsops_lseek(fs, sp, far + 9000, SEEK_DATA) == -ENXIO);
	CHECK("hole reads zero", fsops_read(fs, sp, buf, 4096, far - 4096) == 4096 && buf[0] == 0 && buf[4095] == 0);

	/* preallocated extents are holes to SEEK_DATA / SEEK_HOLE (as on btrfs, xfs) */
	CHECK("create pa", fsops_mknod(fs, ROOT_DIR_INO, "pa", S_IFREG | 0644, 0, &root_cr, &st) == 0);
	uint64_t pa = st.st_ino;
	CHECK("fallocate 1 MiB", fsops_fallocate(fs, pa, 0, 0, 1 << 20) == 0);
	CHECK("prealloc: no data", fsops_lseek(fs, pa, 0, SEEK_DATA) == -ENXIO);
	CHECK("prealloc: hole at 0", fsops_lseek(fs, pa, 0, SEEK_HOLE) == 0);
	CHECK("prealloc: hole mid", fsops_lseek(fs, pa, 12345, SEEK_HOLE) == 12345);
	CHECK("write into prealloc", fsops_write(fs, pa, w, 8192, 65536) == 8192);
	CHECK("partly written: data", fsops_lseek(fs, pa, 0, SEEK_DATA) == 65536);
	CHECK("partly written: data inside", fsops_lseek(fs, pa, 70000, SEEK_DATA) == 70000);
	CHECK("partly written: hole at 0", fsops_lseek(fs, pa, 0, SEEK_HOLE) == 0);
	CHECK("partly written: hole after", fsops_lseek(fs, pa, 65536, SEEK_HOLE) == 65536 + 8192);
	CHECK("partly written: no data after", fsops_lseek(fs, pa, 65536 + 8192, SEEK_DATA) == -ENXIO);
	CHECK("keep size beyond eof", fsops_fallocate(fs, pa, FALLOC_FL_KEEP_SIZE, 1 << 20, 1 << 20) == 0);
	CHECK("keep size: size unchanged", fsops_getattr(fs, pa, &st) == 0 && st.st_size == 1 << 20);
	CHECK("keep size: hole inside", fsops_lseek(fs, pa, 100000, SEEK_HOLE) == 100000);
	CHECK("keep size: past eof", fsops_lseek(fs, pa, 1 << 20, SEEK_HOLE) == -ENXIO);
	/* more prealloc items than one batch before the data */
	CHECK("create pb", fsops_mknod(fs, ROOT_DIR_INO, "pb", S_IFREG | 0644, 0, &root_cr, &st) == 0);
	uint64_t pb = st.st_ino;
	int fa_ok = 1;
	for (int i = 0; i < 150; i++)
		fa_ok &= fsops_fallocate(fs, pb, 0, (uint64_t)i * 8192, 4096) == 0;
	CHECK("150 separate preallocs", fa_ok);
	CHECK("write after them", fsops_write(fs, pb, w, 4096, 150 * 8192) == 4096);
	CHECK("many preallocs: data", fsops_lseek(fs, pb, 0, SEEK_DATA) == 150 * 8192);
	CHECK("many preallocs: hole", fsops_lseek(fs, pb, 0, SEEK_HOLE) == 0);
	CHECK("many preallocs: hole after data", fsops_lseek(fs, pb, 150 * 8192, SEEK_HOLE) == 150 * 8192 + 4096);
	fsops_forget(fs, pa, 1);
	fsops_forget(fs, pb, 1);
	fsops_forget(fs, ino, 1);
	fsops_forget(fs, sp, 1);
	free(model);
	free(buf);
	free(w);
}

/*
 * Hard links to one file in one directory outgrow its INODE_REF item
 * (stress-ng's link stressor: EOVERFLOW from the item's growth once
 * aborted the transaction and sent the volume read-only; then EMLINK at
 * ~230 names): the names past it go to extended refs (iref.h), so link,
 * rename into the directory and within it, and exchange all succeed, the
 * volume stays writable and the uncommitted bytes of another file
 * survive.  test_extref.c covers extended refs in depth.
 */
static void many_links(void)
{
	struct stat st, f, x, dat;
	char name[128], name2[160], w[4096];
	int made = 0, ret = 0;
	uint64_t ml;

	memset(w, 0x5a, sizeof(w));
	CHECK("links: mkdir", fsops_mkdir(fs, ROOT_DIR_INO, "ml", 0755, &root_cr, &st) == 0);
	ml = st.st_ino;
	CHECK("links: create", fsops_mknod(fs, ml, "f", S_IFREG | 0644, 0, &root_cr, &f) == 0);
	CHECK("links: create x", fsops_mknod(fs, ml, "x", S_IFREG | 0644, 0, &root_cr, &x) == 0);
	CHECK("links: data file", fsops_mknod(fs, ROOT_DIR_INO, "ml-data", S_IFREG | 0644, 0,
					      &root_cr, &dat) == 0 &&
	      fsops_write(fs, dat.st_ino, w, sizeof(w), 0) == (ssize_t)sizeof(w));
	for (int i = 0; i < 1500; i++) {
		snprintf(name, sizeof(name), "stress-ng-link-%06d-%0*d", i, 40, i);
		ret = fsops_link(fs, f.st_ino, ml, name, &st);
		if (ret)
			break;
		fsops_forget(fs, f.st_ino, 1);
		made++;
	}
	CHECK("links: 1500 links past a full INODE_REF", ret == 0 && made == 1500);
	CHECK("links: the volume still takes writes", !core_readonly(core) &&
	      fsops_mknod(fs, ml, "after", S_IFREG | 0644, 0, &root_cr, &st) == 0);
	CHECK("links: nlink counts the names made",
	      fsops_getattr(fs, f.st_ino, &st) == 0 && st.st_nlink == (nlink_t)made + 1);
	/* rename into the directory, from outside it and within it */
	CHECK("links: a name outside", fsops_link(fs, f.st_ino, ROOT_DIR_INO, "ml-out", &st) == 0);
	snprintf(name2, sizeof(name2), "moved-in-%0*d", 110, 1);
	CHECK("links: rename into the full directory",
	      fsops_rename(fs, ROOT_DIR_INO, "ml-out", ml, name2, 0) == 0);
	snprintf(name, sizeof(name), "stress-ng-link-%06d-%0*d", 0, 40, 0);
	CHECK("links: rename within it to a longer name",
	      fsops_rename(fs, ml, name, ml, "stress-ng-longer-name-0", 0) == 0);
	CHECK("links: rename within it to a shorter name",
	      fsops_rename(fs, ml, "stress-ng-longer-name-0", ml, "s", 0) == 0);
	CHECK("links: exchange giving f a long name in the full directory",
	      fsops_link(fs, f.st_ino, ROOT_DIR_INO, "ml-out", &st) == 0 &&
	      fsops_rename(fs, ml, "x", ml, "x2", 0) == 0 &&
	      fsops_rename(fs, ROOT_DIR_INO, "ml-out", ml, "x2", FSOPS_RENAME_EXCHANGE) == 0 &&
	      fsops_lookup(fs, ml, "x2", &st) == 0 && st.st_ino == f.st_ino);
	fsops_forget(fs, f.st_ino, 2);
	CHECK("links: still writable, bytes intact", !core_readonly(core) &&
	      fsops_read(fs, dat.st_ino, name, sizeof(name), 0) == (ssize_t)sizeof(name) &&
	      (unsigned char)name[0] == 0x5a && (unsigned char)name[127] == 0x5a);
	CHECK("links: unlink every name", fsops_unlink(fs, ml, "s") == 0 &&
	      fsops_unlink(fs, ml, name2) == 0 && fsops_unlink(fs, ml, "x2") == 0);
	for (int i = 1; i < made; i++) {
		snprintf(name, sizeof(name), "stress-ng-link-%06d-%0*d", i, 40, i);
		if (fsops_unlink(fs, ml, name)) {
			CHECK("links: unlink every name", 0);
			break;
		}
	}
	CHECK("links: one name left", fsops_getattr(fs, f.st_ino, &st) == 0 && st.st_nlink == 1);
	fsops_forget(fs, f.st_ino, 1);
	fsops_forget(fs, x.st_ino, 1);
	fsops_forget(fs, dat.st_ino, 1);
}

static void names(void)
{
	struct stat st, a, d;
	char name[64], v[64];

	CHECK("mkdir", fsops_mkdir(fs, ROOT_DIR_INO, "dir", 0755, &root_cr, &d) == 0);
	CHECK("mkdir exists", fsops_mkdir(fs, ROOT_DIR_INO, "dir", 0755, &root_cr, &st) == -EEXIST);
	CHECK("create a", fsops_mknod(fs, d.st_ino, "a", S_IFREG | 0600, 0, &root_cr, &a) == 0);
	CHECK("link", fsops_link(fs, a.st_ino, ROOT_DIR_INO, "a2", &st) == 0 && st.st_nlink == 2);
	CHECK("rename over", fsops_rename(fs, ROOT_DIR_INO, "a2", d.st_ino, "a", 0) == 0);
	CHECK("rename over same inode keeps both", fsops_lookup(fs, ROOT_DIR_INO, "a2", &st) == 0);
	CHECK("rmdir not empty", fsops_rmdir(fs, ROOT_DIR_INO, "dir") == -ENOTEMPTY);
	CHECK("unlink", fsops_unlink(fs, d.st_ino, "a") == 0);
	CHECK("nlink after unlink", fsops_getattr(fs, a.st_ino, &st) == 0 && st.st_nlink == 1);
	CHECK("unlink last", fsops_unlink(fs, ROOT_DIR_INO, "a2") == 0);
	CHECK("orphan still readable", fsops_getattr(fs, a.st_ino, &st) == 0 && st.st_nlink == 0);
	for (int i = 0; i < 3000; i++) {
		snprintf(name, sizeof(name), "file-%d", i);
		if (fsops_mknod(fs, d.st_ino, name, S_IFREG | 0644, 0, &root_cr, &st)) {
			CHECK("many creates", 0);
			break;
		}
		fsops_forget(fs, st.st_ino, 1);
	}
	int found = 0;
	for (int i = 0; i < 3000; i += 7) {
		snprintf(name, sizeof(name), "file-%d", i);
		if (fsops_lookup(fs, d.st_ino, name, &st) == 0) {
			found++;
			fsops_forget(fs, st.st_ino, 1);
		}
	}
	CHECK("lookups in a 3000-entry dir", found == (3000 + 6) / 7);
	{
		/* unlink in a scrambled order: leaves empty, merge, shift */
		int bad = 0, order[3000];
		for (int i = 0; i < 3000; i++)
			order[i] = i;
		for (int i = 2999; i > 0; i--) {
			int j = rand() % (i + 1), x = order[i];
			order[i] = order[j];
			order[j] = x;
		}
		for (int i = 0; i < 2000; i++) {
			snprintf(name, sizeof(name), "file-%d", order[i]);
			int r = fsops_unlink(fs, d.st_ino, name);
			if (r) {
				if (!bad)
					printf("# unlink %s (#%d): %d\n", name, i, r);
				bad++;
			}
		}
		CHECK("unlink 2000 of 3000 in random order", bad == 0);
		found = 0;
		for (int i = 2000; i < 3000; i++) {
			snprintf(name, sizeof(name), "file-%d", order[i]);
			if (fsops_lookup(fs, d.st_ino, name, &st) == 0) {
				found++;
				fsops_forget(fs, st.st_ino, 1);
			}
		}
		CHECK("the other 1000 remain", found == 1000);
	}
	for (int i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "user.x%d", i);
		snprintf(v, sizeof(v), "value-%d", i);
		if (fsops_setxattr(fs, d.st_ino, name, v, strlen(v), 0))
			CHECK("setxattr", 0);
	}
	int len = fsops_listxattr(fs, d.st_ino, NULL, 0);
	CHECK("listxattr size", len > 0);
	CHECK("getxattr", fsops_getxattr(fs, d.st_ino, "user.x17", v, sizeof(v)) == 8 && !memcmp(v, "value-17", 8));
	CHECK("unmount 2", items_unmount() == 0);
	CHECK("remount 2 (frees the orphan)", items_mount(img) == 0);
	CHECK("orphan freed at mount", fsops_getattr(fs, a.st_ino, &st) == -ENOENT);
	CHECK("xattr after remount", fsops_getxattr(fs, d.st_ino, "user.x39", v, sizeof(v)) == 8);
	CHECK("dir nlink", fsops_getattr(fs, ROOT_DIR_INO, &st) == 0 && st.st_nlink == 3);
}

/* Threads creating and unlinking in their own directories; each unlink
 * is followed by the kernel's forget, which frees the inode's items in
 * that thread while the others change neighbouring leaves. */
struct worker_arg {
	int id, bad;
	unsigned seed;
};

static void *churn(void *argp)
{
	struct worker_arg *a = argp;
	struct stat d, st;
	char name[64], dname[32];
	uint64_t inos[1500];

	snprintf(dname, sizeof(dname), "churn%d", a->id);
	if (fsops_mkdir(fs, ROOT_DIR_INO, dname, 0755, &root_cr, &d)) {
		a->bad++;
		return NULL;
	}
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < 1500; i++) {
			snprintf(name, sizeof(name), "%08x~~~~~~~~r%di%d", a->seed + (unsigned)i, round, i);
			if (fsops_mknod(fs, d.st_ino, name, S_IFREG | 0644, 0, &root_cr, &st)) {
				a->bad++;
				return NULL;
			}
			inos[i] = st.st_ino;
		}
		for (int i = 0; i < 1500; i++) {
			snprintf(name, sizeof(name), "%08x~~~~~~~~r%di%d", a->seed + (unsigned)i, round, i);
			int r = fsops_unlink(fs, d.st_ino, name);
			if (r) {
				printf("# thread %d: unlink %s: %d\n", a->id, name, r);
				a->bad++;
				return NULL;
			}
			fsops_forget(fs, inos[i], 1);
		}
	}
	fsops_forget(fs, d.st_ino, 1);
	return NULL;
}

static volatile int churning;

static void *committer(void *arg)
{
	(void)arg;
	while (churning) {
		txn_commit(core, COMMIT_PERIODIC);
		usleep(20000);
	}
	return NULL;
}

static void threads(unsigned seed)
{
	pthread_t th[3], ct;
	struct worker_arg a[3];
	int bad = 0;

	churning = 1;
	pthread_create(&ct, NULL, committer, NULL);
	for (int i = 0; i < 3; i++) {
		a[i] = (struct worker_arg){ i, 0, seed * 7 + (unsigned)i };
		pthread_create(&th[i], NULL, churn, &a[i]);
	}
	for (int i = 0; i < 3; i++) {
		pthread_join(th[i], NULL);
		bad += a[i].bad;
	}
	churning = 0;
	pthread_join(ct, NULL);
	CHECK("3 threads create/unlink/forget 4500 files each", bad == 0);
}

/*
 * Issue 22: the writeback cache sends one sequential file's pieces from
 * several threads, which take the inode lock in any order.  4 threads
 * write a 64 MiB file in interleaved 1 MiB pieces (thread i: pieces i,
 * i+4, ...), in a fixed out-of-order schedule so the run is the same
 * every time: within each group of four the pieces come as 2 0 3 1, then
 * 1 3 0 2.  The extents must still lie on disk in file order, each
 * starting where the one before ends (the allocation goal, file.c).
 */
#define IL_PIECES 64
#define IL_PIECE (1u << 20)

static pthread_mutex_t il_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t il_cv = PTHREAD_COND_INITIALIZER;
static int il_turn;
static int il_order[IL_PIECES];
static uint64_t il_ino;

struct il_arg { int id, bad; };

static void il_fill(unsigned char *w, int piece)
{
	for (unsigned i = 0; i < IL_PIECE; i++)
		w[i] = (unsigned char)(piece * 131 + i / 4096 * 7 + i);
}

static void *il_writer(void *argp)
{
	struct il_arg *a = argp;
	unsigned char *w = malloc(IL_PIECE);

	if (!w) {
		a->bad++;
		return NULL;
	}
	pthread_mutex_lock(&il_mu);
	for (;;) {
		while (il_turn < IL_PIECES && il_order[il_turn] % 4 != a->id)
			pthread_cond_wait(&il_cv, &il_mu);
		if (il_turn >= IL_PIECES)
			break;
		int piece = il_order[il_turn];
		pthread_mutex_unlock(&il_mu);
		il_fill(w, piece);	/* the others wait for their turn */
		if (fsops_write(fs, il_ino, w, IL_PIECE, (uint64_t)piece * IL_PIECE) != IL_PIECE)
			a->bad++;
		pthread_mutex_lock(&il_mu);
		il_turn++;
		pthread_cond_broadcast(&il_cv);
	}
	pthread_mutex_unlock(&il_mu);
	free(w);
	return NULL;
}

static void interleaved(void)
{
	static const int perm[2][4] = { { 2, 0, 3, 1 }, { 1, 3, 0, 2 } };
	pthread_t th[4];
	struct il_arg a[4];
	struct stat st;
	struct file_extent fe[IL_PIECES];
	unsigned char *buf = malloc(IL_PIECE), *w = malloc(IL_PIECE);
	int bad = 0, items = 0, gaps = 0, back = 0, same = 1;

	for (int i = 0; i < IL_PIECES; i++)
		il_order[i] = i / 4 * 4 + perm[i / 4 % 2][i % 4];
	CHECK("interleaved: create",
	      fsops_mknod(fs, ROOT_DIR_INO, "interleaved", S_IFREG | 0644, 0, &root_cr, &st) == 0);
	il_ino = st.st_ino;
	il_turn = 0;
	for (int i = 0; i < 4; i++) {
		a[i] = (struct il_arg){ i, 0 };
		pthread_create(&th[i], NULL, il_writer, &a[i]);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		bad += a[i].bad;
	}
	CHECK("interleaved: 4 threads write 64 x 1 MiB out of order", bad == 0);
	for (int i = 0; i < IL_PIECES && buf && w; i++) {
		il_fill(w, i);
		if (fsops_read(fs, il_ino, buf, IL_PIECE, (uint64_t)i * IL_PIECE) != IL_PIECE ||
		    memcmp(buf, w, IL_PIECE))
			same = 0;
	}
	CHECK("interleaved: reads back", same);
	/* the layout: the items in file order (a piece that comes after the
	 * one before it in the file merges into its extent, file.c
	 * merge_last), and where each one's disk run starts against where
	 * the one before ended */
	int prev = -1;
	for (int i = 0; i < IL_PIECES; i++) {
		struct key k = mkkey(il_ino, KEY_EXTENT_DATA, (uint64_t)i * IL_PIECE);
		if (btree_lookup(fs->root, &k, &fe[i], sizeof(fe[i])) != (int)sizeof(fe[i]) ||
		    fe[i].type != FE_REG || fe[i].offset != 0)
			continue;
		items++;
		if (prev >= 0 && fe[i].disk_logical != fe[prev].disk_logical + fe[prev].disk_len) {
			gaps++;
			back += fe[i].disk_logical < fe[prev].disk_logical;
		}
		if (prev >= 0 && (uint64_t)prev * IL_PIECE + fe[prev].num_bytes != (uint64_t)i * IL_PIECE)
			gaps++;		/* an item missing or overlapping */
		prev = i;
	}
	if (prev >= 0 && (uint64_t)prev * IL_PIECE + fe[prev].num_bytes != (uint64_t)IL_PIECES * IL_PIECE)
		gaps++;
	printf("# interleaved: %d extents, %d disk gaps (%d backwards)\n", items, gaps, back);
	CHECK("interleaved: at most one extent per piece", items >= 1 && items <= IL_PIECES);
	CHECK("interleaved: extents contiguous on disk in file order", gaps == 0);
	fsops_forget(fs, il_ino, 1);
	free(buf);
	free(w);
}

/*
 * A sequential write in 1 MiB pieces (the largest FUSE WRITE) makes
 * extents of up to DATA_MERGE_GRID (8 MiB), not one per piece: each piece
 * that continues the file's last extent on disk in the same transaction
 * is merged into it (file.c merge_last, data_merge; issue 22: 259 extents
 * for 256 MiB).  The bytes read back before and after the commit, an
 * overwrite inside a merged extent splits it, and fsck (at the end of the
 * run) finds the extent items matching the file items.
 */
static void seq_extents(void)
{
	const uint64_t MiB = 1 << 20, n = 32;
	unsigned char *w = malloc(MiB), *r = malloc(MiB);
	struct file_extent fe;
	struct stat st;
	uint64_t ino, maxlen = 0;
	int items = 0, ok = 1;

	if (!w || !r) {
		CHECK("seq-extents: memory", 0);
		goto out;
	}
	CHECK("seq-extents: create",
	      fsops_mknod(fs, ROOT_DIR_INO, "seq-extents", S_IFREG | 0644, 0, &root_cr, &st) == 0);
	ino = st.st_ino;
	fsops_sync(fs);		/* the pieces below in one transaction (mostly) */
	for (uint64_t i = 0; i < n && ok; i++) {
		memset(w, (int)(0x30 + i), MiB);
		ok = fsops_write(fs, ino, w, MiB, i * MiB) == (ssize_t)MiB;
	}
	CHECK("seq-extents: 32 x 1 MiB written in order", ok);
	for (uint64_t i = 0; i < n; i++) {
		struct key k = mkkey(ino, KEY_EXTENT_DATA, i * MiB);
		if (btree_lookup(fs->root, &k, &fe, sizeof(fe)) != (int)sizeof(fe) || fe.type != FE_REG)
			continue;
		items++;
		if (fe.num_bytes > maxlen)
			maxlen = fe.num_bytes;
		if (fe.num_bytes != fe.disk_len || fe.offset)
			ok = 0;
	}
	printf("# seq-extents: %d extents for %llu MiB, the longest %llu KiB\n", items,
	       (unsigned long long)n, (unsigned long long)(maxlen >> 10));
	CHECK("seq-extents: extents of several MiB (at most 32/8 + 1)", items >= 4 && items <= 5);
	CHECK("seq-extents: none longer than 8 MiB, each mapping its whole extent",
	      ok && maxlen <= (8u << 20));
	for (int pass = 0; pass < 2; pass++) {
		ok = 1;
		for (uint64_t i = 0; i < n && ok; i++)
			ok = fsops_read(fs, ino, r, MiB, i * MiB) == (ssize_t)MiB &&
			     r[0] == 0x30 + i && r[MiB - 1] == 0x30 + i && r[MiB / 2] == 0x30 + i;
		CHECK(pass ? "seq-extents: reads back after the commit" : "seq-extents: reads back", ok);
		fsops_sync(fs);
	}
	/* 4 KiB in the middle of the file: copy on write splits the extent */
	memset(w, 0xee, 4096);
	ok = fsops_write(fs, ino, w, 4096, 13 * MiB + 8192) == 4096 &&
	     fsops_read(fs, ino, r, 3 * 4096, 13 * MiB + 4096) == 3 * 4096 &&
	     r[0] == 0x30 + 13 && r[4096] == 0xee && r[8191] == 0xee && r[8192] == 0x30 + 13;
	fsops_sync(fs);
	ok = ok && fsops_read(fs, ino, r, MiB, 13 * MiB) == (ssize_t)MiB && r[8192] == 0xee &&
	     r[0] == 0x30 + 13 && r[MiB - 1] == 0x30 + 13;
	CHECK("seq-extents: an overwrite inside a merged extent", ok);
	/*
	 * The same 8 MiB written in order twice in one transaction: each
	 * piece of the second pass finds an item starting where it starts
	 * (the first pass's extent cut there), which drop_items leaves for
	 * the caller's item to overwrite.  A piece that merged into the one
	 * before instead left that item beside the merged extent: a stale
	 * mapping of freed blocks (crash.test: a leaf with a key twice, data
	 * extents referenced by nothing).
	 */
	fsops_sync(fs);
	ok = 1;
	for (int round = 0; round < 2 && ok; round++)
		for (uint64_t i = 0; i < 8 && ok; i++) {
			memset(w, (int)(0x60 + round * 8 + i), MiB);
			ok = fsops_write(fs, ino, w, MiB, i * MiB) == (ssize_t)MiB;
		}
	for (int pass = 0; pass < 2 && ok; pass++) {
		for (uint64_t i = 0; i < 8 && ok; i++)
			ok = fsops_read(fs, ino, r, MiB, i * MiB) == (ssize_t)MiB &&
			     r[0] == 0x68 + i && r[MiB - 1] == 0x68 + i;
		uint64_t end = 0;
		struct key k = mkkey(ino, KEY_EXTENT_DATA, 0);
		struct path pth;
		btree_path_init(&pth);
		int sr = btree_search(NULL, fs->root, &k, &pth, 0, 0);
		while (ok && sr >= 0) {	/* the items of [0, 8 MiB): in order, none overlapping */
			struct key ik;
			uint32_t sz;
			if (pth.slots[0] >= (int)btree_nritems(&pth) && btree_next(&pth))
				break;
			btree_item_key(&pth, pth.slots[0], &ik);
			if (ik.objectid != ino || ik.type != KEY_EXTENT_DATA || ik.offset >= 8 * MiB)
				break;
			const struct file_extent *x = btree_item_ptr(&pth, pth.slots[0], &sz);
			ok = ik.offset >= end;
			end = ik.offset + x->num_bytes;
			if (btree_next(&pth))
				break;
		}
		btree_path_release(&pth);
		CHECK(pass ? "seq-extents: written twice in one transaction, after the commit"
			   : "seq-extents: written twice in one transaction: the second pass, no "
			     "item overlapping another", ok);
		fsops_sync(fs);
	}
	fsops_forget(fs, ino, 1);
out:
	free(w);
	free(r);
}

/* The disk address of ino's extent item at off, 0 when none. */
static uint64_t disk_at(uint64_t ino, uint64_t off, uint64_t *disk_len)
{
	struct key k = mkkey(ino, KEY_EXTENT_DATA, off);
	struct file_extent fe;

	if (btree_lookup(fs->root, &k, &fe, sizeof(fe)) != (int)sizeof(fe) || fe.type != FE_REG)
		return 0;
	if (disk_len)
		*disk_len = fe.disk_len;
	return fe.disk_logical;
}

/* write NAME: len bytes of byte v at off, then read back */
static int put_read(uint64_t ino, uint64_t off, size_t len, int v)
{
	unsigned char w[16384], r[16384];

	memset(w, v, len);
	return fsops_write(fs, ino, w, len, off) == (ssize_t)len &&
	       fsops_read(fs, ino, r, len, off) == (ssize_t)len && !memcmp(w, r, len);
}

/*
 * A block this transaction's copy on write made is written again in
 * place (file.c, write_again): the same disk address, counted in
 * data_rewrites, the bytes and checksums new.  Never for a block of
 * the last commit, one an fsync log record of this transaction may hold
 * (fsynced file, also after the kernel forgot the inode and it was
 * loaded again), or an extent two items shared; an extent merged from
 * two pieces (two checksum items) is rewritten whole, and a part of it
 * in place inside it (rewrite_part has more).  The final fsck checks
 * the checksum tree.
 */
static void rewrite_in_place(void)
{
	uint64_t *n = &fs->core->data_rewrites, n0, d0, d1, d2, dl = 0;
	struct stat st;
	uint64_t ino;
	int ok = 1;

	CHECK("rewrite: create",
	      fsops_mknod(fs, ROOT_DIR_INO, "rewrite", S_IFREG | 0644, 0, &root_cr, &st) == 0);
	ino = st.st_ino;
	for (int i = 0; i < 16 && ok; i++)
		ok = put_read(ino, (uint64_t)i * 4096, 4096, 0x10 + i);
	fsops_sync(fs);
	d0 = disk_at(ino, 16384, NULL);
	n0 = *n;
	ok = ok && put_read(ino, 16384, 4096, 0xa1);
	d1 = disk_at(ino, 16384, NULL);
	CHECK("rewrite: a block of the last commit is copied", ok && d1 && d1 != d0 && *n == n0);
	ok = put_read(ino, 16384, 4096, 0xa2) && put_read(ino, 16384, 4096, 0xa3);
	CHECK("rewrite: this transaction's block written again in place, twice",
	      ok && disk_at(ino, 16384, NULL) == d1 && *n == n0 + 2);
	fsops_sync(fs);
	ok = put_read(ino, 16384, 4096, 0xa4);
	CHECK("rewrite: after the commit: copied again", ok && disk_at(ino, 16384, NULL) != d1);

	/* an fsync's record holds the block: copy on write from then on */
	d1 = disk_at(ino, 16384, NULL);
	CHECK("rewrite: fsync", fsops_fsync(fs, ino, 0) == 0);
	n0 = *n;
	ok = put_read(ino, 16384, 4096, 0xa5);
	d2 = disk_at(ino, 16384, NULL);
	CHECK("rewrite: a block an fsync logged is copied", ok && d2 != d1 && *n == n0);
	/* ... also once the inode was forgotten and loaded again */
	fsops_forget(fs, ino, 1);
	ok = put_read(ino, 16384, 4096, 0xa6);
	CHECK("rewrite: fsynced, forgotten, loaded again: still copied",
	      ok && disk_at(ino, 16384, NULL) != d2 && *n == n0);
	CHECK("rewrite: looked up again (the inode stays loaded)",
	      fsops_lookup(fs, ROOT_DIR_INO, "rewrite", &st) == 0 && st.st_ino == ino);
	fsops_sync(fs);

	/* two 4 KiB pieces merged into one 8 KiB extent, written whole */
	ok = put_read(ino, 65536, 4096, 0xb1) && put_read(ino, 65536 + 4096, 4096, 0xb2);
	d1 = disk_at(ino, 65536, &dl);
	CHECK("rewrite: two pieces in order make one 8 KiB extent (the premise)", ok && dl == 8192);
	n0 = *n;
	ok = put_read(ino, 65536, 8192, 0xb3);
	CHECK("rewrite: the merged extent written whole in place",
	      ok && disk_at(ino, 65536, NULL) == d1 && *n == n0 + 1);
	/* part of it: in place inside it, its one item as it was */
	ok = put_read(ino, 65536 + 4096, 4096, 0xb4);
	CHECK("rewrite: part of an extent written in place inside it", ok && *n == n0 + 2 &&
	      disk_at(ino, 65536, &dl) == d1 && dl == 8192 && !disk_at(ino, 65536 + 4096, NULL));
	ok = put_read(ino, 65536 + 4096, 4096, 0xb5);
	CHECK("rewrite: that part again, in place", ok && *n == n0 + 3 &&
	      disk_at(ino, 65536, &dl) == d1 && dl == 8192);
	fsops_sync(fs);
	ok = 1;
	for (int i = 0; i < 18 && ok; i++) {
		unsigned char r[4096];
		int want = i < 16 ? 0x10 + i : i == 16 ? 0xb3 : 0xb5;
		if (i == 4)
			want = 0xa6;
		ok = fsops_read(fs, ino, r, 4096, i == 16 ? 65536 : i == 17 ? 65536 + 4096
							     : (uint64_t)i * 4096) == 4096 &&
		     r[0] == want && r[4095] == want;
	}
	CHECK("rewrite: every block reads its newest bytes after the commit", ok);
	fsops_forget(fs, ino, 1);
}

/*
 * A part of a multi-block extent written in the running transaction
 * (one item maps it, nothing else ever did) is overwritten in place
 * inside it (file.c, write_again): its one item stays, the same disk
 * bytes take the write, the checksums of those sectors change in the
 * items that hold them (reads verify them, before and after the commit,
 * and the final fsck walks the checksum tree).  Not once the file was
 * fsynced in the transaction, not for a write that reaches past the
 * extent into a hole, not for an extent two items share (a hole
 * punched in it): those are copied.
 */
static void rewrite_part(void)
{
	uint64_t *n = &fs->core->data_rewrites, n0, d, dl = 0;
	unsigned char want[65536 + 8192], r[65536 + 8192];
	struct stat st;
	uint64_t ino;
	int ok;

	CHECK("rewrite-part: create",
	      fsops_mknod(fs, ROOT_DIR_INO, "rewrite-part", S_IFREG | 0644, 0, &root_cr, &st) == 0);
	ino = st.st_ino;
	fsops_sync(fs);
	for (size_t i = 0; i < sizeof(want); i++)
		want[i] = (unsigned char)(i * 7 + i / 4096);
	ok = fsops_write(fs, ino, want, 65536, 0) == 65536;
	d = disk_at(ino, 0, &dl);
	CHECK("rewrite-part: one 64 KiB extent of this transaction (the premise)",
	      ok && d && dl == 65536);
	n0 = *n;
	ok = put_read(ino, 16384, 4096, 0x71);
	memset(want + 16384, 0x71, 4096);
	CHECK("rewrite-part: a block inside it written in place, the extent whole",
	      ok && *n == n0 + 1 && disk_at(ino, 0, &dl) == d && dl == 65536 &&
	      !disk_at(ino, 16384, NULL));
	/* 100 bytes inside a block (staged: the block read, patched) */
	memset(want + 30000, 0x72, 100);
	ok = fsops_write(fs, ino, want + 30000, 100, 30000) == 100;
	CHECK("rewrite-part: bytes inside a block, in place", ok && *n == n0 + 2 &&
	      disk_at(ino, 0, &dl) == d && dl == 65536);
	/* a write over blocks 1-3 and 60-63 in one go, then each again */
	ok = put_read(ino, 4096, 12288, 0x73) && put_read(ino, 49152, 16384, 0x74) &&
	     put_read(ino, 4096, 4096, 0x75) && put_read(ino, 61440, 4096, 0x76);
	memset(want + 4096, 0x73, 12288);
	memset(want + 49152, 0x74, 16384);
	memset(want + 4096, 0x75, 4096);
	memset(want + 61440, 0x76, 4096);
	CHECK("rewrite-part: every part in place, the extent whole",
	      ok && *n == n0 + 6 && disk_at(ino, 0, &dl) == d && dl == 65536);
	ok = fsops_read(fs, ino, r, 65536, 0) == 65536 && !memcmp(r, want, 65536);
	CHECK("rewrite-part: the file reads as written (checksums verified)", ok);
	fsops_sync(fs);
	ok = fsops_read(fs, ino, r, 65536, 0) == 65536 && !memcmp(r, want, 65536);
	CHECK("rewrite-part: after the commit: as written, the same extent",
	      ok && disk_at(ino, 0, &dl) == d && dl == 65536);

	/* a new 64 KiB extent, then the file fsynced: copied from then on */
	ok = fsops_write(fs, ino, want, 65536, 0) == 65536;
	d = disk_at(ino, 0, &dl);
	CHECK("rewrite-part: fsync", ok && dl == 65536 && fsops_fsync(fs, ino, 1) == 0);
	n0 = *n;
	ok = put_read(ino, 8192, 4096, 0x77);
	memset(want + 8192, 0x77, 4096);
	CHECK("rewrite-part: after the file's fsync, part of an extent is copied",
	      ok && *n == n0 && disk_at(ino, 8192, NULL) && disk_at(ino, 8192, NULL) != d + 8192);
	fsops_sync(fs);

	/* reaching past the extent into a hole: copied */
	ok = fsops_write(fs, ino, want, 65536, 0) == 65536;
	d = disk_at(ino, 0, &dl);
	n0 = *n;
	ok = ok && put_read(ino, 61440, 8192, 0x78);
	memset(want + 61440, 0x78, 8192);
	CHECK("rewrite-part: a write past the extent's end into a hole is copied",
	      ok && dl == 65536 && *n == n0 && disk_at(ino, 61440, NULL) &&
	      disk_at(ino, 61440, NULL) != d + 61440);
	fsops_sync(fs);

	/* a hole punched in a new extent: two items share it, copied */
	ok = fsops_write(fs, ino, want, 65536, 0) == 65536 &&
	     fsops_fallocate(fs, ino, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 20480, 4096) == 0;
	memset(want + 20480, 0, 4096);
	d = disk_at(ino, 0, NULL);
	n0 = *n;
	ok = ok && put_read(ino, 8192, 4096, 0x79);
	memset(want + 8192, 0x79, 4096);
	CHECK("rewrite-part: an extent two items share (a hole punched in it) is copied",
	      ok && *n == n0 && disk_at(ino, 8192, NULL) && disk_at(ino, 8192, NULL) != d + 8192);
	fsops_sync(fs);
	ok = fsops_read(fs, ino, r, sizeof(want), 0) == 65536 + 4096 &&
	     !memcmp(r, want, 65536 + 4096);
	CHECK("rewrite-part: every byte as last written after the commit (68 KiB)", ok);
	fsops_forget(fs, ino, 1);

	/* 2,000 8 KiB extents (written backwards: none merges), their
	 * checksum items over several leaves of the checksum tree, then the
	 * second block of each written in place: some of those items end
	 * their leaf (csum_patch's search for the block lands past them) */
	enum { NX = 2000, XL = 8192 };
	unsigned char blk[XL];
	CHECK("rewrite-part: create a file of 2,000 extents",
	      fsops_mknod(fs, ROOT_DIR_INO, "rewrite-parts", S_IFREG | 0644, 0, &root_cr,
			  &st) == 0);
	ino = st.st_ino;
	fsops_sync(fs);
	ok = 1;
	for (int i = NX - 1; i >= 0 && ok; i--) {
		memset(blk, 0x30 + i % 64, XL);
		ok = fsops_write(fs, ino, blk, XL, (uint64_t)i * XL) == XL;
	}
	d = disk_at(ino, 0, &dl);
	CHECK("rewrite-part: 2,000 extents of 8 KiB (the premise)", ok && d && dl == XL);
	n0 = *n;
	for (int i = 0; i < NX && ok; i++) {
		memset(blk, 0x80 + i % 64, 4096);
		ok = fsops_write(fs, ino, blk, 4096, (uint64_t)i * XL + 4096) == 4096;
	}
	CHECK("rewrite-part: the second block of each, in place", ok && *n == n0 + NX);
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i < NX && ok; i++)
			ok = fsops_read(fs, ino, blk, XL, (uint64_t)i * XL) == XL &&
			     blk[0] == 0x30 + i % 64 && blk[4095] == 0x30 + i % 64 &&
			     blk[4096] == 0x80 + i % 64 && blk[XL - 1] == 0x80 + i % 64;
		CHECK(pass ? "rewrite-part: 2,000 extents read back after the commit"
			   : "rewrite-part: 2,000 extents read back (checksums verified)", ok);
		fsops_sync(fs);
	}
	fsops_forget(fs, ino, 1);
}

/*
 * A WRITE over several whole extents this transaction's copy on write
 * made (the writeback cache merges adjacent dirty pages that were each
 * copied by a WRITE of their own) goes in place, every extent where it
 * is, each with its own bytes of the write and its checksums replaced
 * (file.c, write_again).  The same WRITE is copied when one of the
 * extents under it is the last commit's, when it covers part of an
 * extent only, or once the file was fsynced in the transaction.  Read
 * back before and after the commit (reads verify checksums); the final
 * fsck checks the checksum tree.
 */
static void rewrite_multi(void)
{
	uint64_t *n = &fs->core->data_rewrites, n0, d1, d2, d3, dl = 0;
	unsigned char w[16384], r[16384];
	struct stat st;
	uint64_t ino;
	int ok = 1;

	CHECK("rewrite-multi: create",
	      fsops_mknod(fs, ROOT_DIR_INO, "rewrite-multi", S_IFREG | 0644, 0, &root_cr, &st) == 0);
	ino = st.st_ino;
	for (int i = 0; i < 16 && ok; i++)
		ok = put_read(ino, (uint64_t)i * 4096, 4096, 0x20 + i);
	fsops_sync(fs);
	/* three blocks copied by WRITEs of their own, backwards: three
	 * extents (none continues the one before it in the file) */
	ok = ok && put_read(ino, 16384, 4096, 0xc1) && put_read(ino, 12288, 4096, 0xc2) &&
	     put_read(ino, 8192, 4096, 0xc3);
	d1 = disk_at(ino, 8192, NULL);
	d2 = disk_at(ino, 12288, NULL);
	d3 = disk_at(ino, 16384, NULL);
	CHECK("rewrite-multi: three extents of their own (the premise)",
	      ok && d1 && d2 && d3 && d1 + 4096 != d2 && d2 + 4096 != d3);
	n0 = *n;
	for (int i = 0; i < 12288; i++)
		w[i] = (unsigned char)(0xd0 + i / 4096 + i % 7);
	ok = fsops_write(fs, ino, w, 12288, 8192) == 12288 &&
	     fsops_read(fs, ino, r, 12288, 8192) == 12288 && !memcmp(w, r, 12288);
	CHECK("rewrite-multi: one WRITE over the three, each in place with its own bytes",
	      ok && *n == n0 + 3 && disk_at(ino, 8192, NULL) == d1 &&
	      disk_at(ino, 12288, NULL) == d2 && disk_at(ino, 16384, NULL) == d3);
	/* one of them and a block of the last commit: copied whole */
	n0 = *n;
	ok = put_read(ino, 16384, 8192, 0xc5);
	CHECK("rewrite-multi: a WRITE over a committed block too is copied",
	      ok && *n == n0 && disk_at(ino, 16384, NULL) != d3);
	/* a whole extent and the first half of the 8 KiB one just made:
	 * both in place, the 8 KiB one not split */
	d3 = disk_at(ino, 16384, &dl);
	ok = dl == 8192 && put_read(ino, 12288, 8192, 0xc6);
	CHECK("rewrite-multi: a WRITE over an extent and part of another, in place",
	      ok && *n == n0 + 2 && disk_at(ino, 12288, NULL) == d2 &&
	      disk_at(ino, 16384, &dl) == d3 && dl == 8192);
	/* three extents, the last in part: each in place */
	n0 = *n;
	ok = put_read(ino, 8192, 12288, 0xc7);
	CHECK("rewrite-multi: a WRITE over two 4 KiB extents and part of an 8 KiB one, in place",
	      ok && *n == n0 + 3 && disk_at(ino, 8192, NULL) == d1 &&
	      disk_at(ino, 12288, NULL) == d2 && disk_at(ino, 16384, NULL) == d3);
	/* a block fallocate reserved in the last commit, then written whole:
	 * an item of this transaction over all of an extent the last commit
	 * holds (not new), beside a new one: copied */
	fsops_sync(fs);
	CHECK("rewrite-multi: fallocate a block past the file's end",
	      fsops_fallocate(fs, ino, 0, 65536, 4096) == 0);
	fsops_sync(fs);
	n0 = *n;
	ok = put_read(ino, 61440, 4096, 0xe1) && put_read(ino, 65536, 4096, 0xe2);
	d3 = disk_at(ino, 65536, &dl);
	CHECK("rewrite-multi: the preallocated block is a whole extent of its own (the premise)",
	      ok && d3 && dl == 4096 && disk_at(ino, 61440, NULL) + 4096 != d3);
	ok = put_read(ino, 61440, 8192, 0xe3);
	CHECK("rewrite-multi: a WRITE over a new extent and a committed one is copied",
	      ok && *n == n0 && disk_at(ino, 65536, NULL) != d3);
	fsops_sync(fs);
	/* the file fsynced: its extents are the record's, copied from then on */
	ok = put_read(ino, 8192, 12288, 0xc7);
	d1 = disk_at(ino, 8192, NULL);
	CHECK("rewrite-multi: fsync", ok && fsops_fsync(fs, ino, 1) == 0);
	n0 = *n;
	ok = put_read(ino, 8192, 12288, 0xc8);
	CHECK("rewrite-multi: after the file's fsync, copied",
	      ok && *n == n0 && disk_at(ino, 8192, NULL) != d1);
	fsops_sync(fs);
	ok = 1;
	for (int i = 0; i < 17 && ok; i++) {
		int want = i >= 2 && i <= 4 ? 0xc8 : i == 5 ? 0xc5 : i >= 15 ? 0xe3 : 0x20 + i;
		ok = fsops_read(fs, ino, r, 4096, (uint64_t)i * 4096) == 4096 && r[0] == want &&
		     r[4095] == want;
	}
	CHECK("rewrite-multi: every block reads its newest bytes after the commit", ok);
	fsops_forget(fs, ino, 1);
}

/*
 * A file written in pieces smaller than a READ (as the writeback cache
 * sends a sequential writer's bytes) lies back to back on disk in many
 * extents; file_read reads such a run as one range: one device read per
 * MiB, not one per extent.  Also checks the bytes, a read that starts and
 * ends inside extents, and a hole between two runs.
 */
static void read_runs(void)
{
	const uint64_t piece = 96 << 10, npieces = 11, hole = 4 << 20;
	unsigned char *w = malloc(piece * npieces), *r = malloc(piece * npieces + 64);
	struct core_stats a, b;
	struct stat st;
	uint64_t ino;
	int ok = 1;

	if (!w || !r) {
		CHECK("read-runs: memory", 0);
		goto out;
	}
	for (uint64_t i = 0; i < piece * npieces; i++)
		w[i] = (unsigned char)(i * 7 + i / 4093);
	CHECK("read-runs: create",
	      fsops_mknod(fs, ROOT_DIR_INO, "runs", S_IFREG | 0644, 0, &root_cr, &st) == 0);
	ino = st.st_ino;
	for (uint64_t i = 0; i < npieces; i++)
		ok &= fsops_write(fs, ino, w + i * piece, piece, i * piece) == (ssize_t)piece &&
		      fsops_write(fs, ino, w + i * piece, piece, hole + i * piece) == (ssize_t)piece;
	CHECK("read-runs: 2 x 11 pieces of 96 KiB written", ok);
	mount_stats(core, &a);
	CHECK("read-runs: 1,056 KiB read back",
	      fsops_read(fs, ino, r, piece * npieces, 0) == (ssize_t)(piece * npieces) &&
	      memcmp(r, w, piece * npieces) == 0);
	mount_stats(core, &b);
	printf("# read-runs: %llu device reads for 11 extents\n",
	       (unsigned long long)(b.dev_read_ios - a.dev_read_ios));
	CHECK("read-runs: one device read per MiB, not per extent", b.dev_read_ios - a.dev_read_ios <= 3);
	CHECK("read-runs: a read inside extents",
	      fsops_read(fs, ino, r, 5 * piece + 77, piece / 2 + 13) == (ssize_t)(5 * piece + 77) &&
	      memcmp(r, w + piece / 2 + 13, 5 * piece + 77) == 0);
	memset(r, 0xee, piece * npieces + 64);
	CHECK("read-runs: across the hole",
	      fsops_read(fs, ino, r, 2 * piece, hole - piece) == (ssize_t)(2 * piece) &&
	      memcmp(r + piece, w, piece) == 0 && r[0] == 0 && r[piece - 1] == 0);
	fsops_forget(fs, ino, 1);
out:
	free(w);
	free(r);
}

/* Node-cache lookups (hits and misses): every B-tree node a search visits. */
static uint64_t node_lookups(void)
{
	struct core_stats st;

	mount_stats(core, &st);
	return st.cache_hits + st.cache_misses;
}

/*
 * A 4 KiB overwrite in the middle of an extent (what the writeback cache
 * sends for random buffered writes, issue 22) searches the file's tree
 * for its items once: the prealloc check and the copy on write's drop
 * share one lookup, and the lookup steps from the item before the offset
 * to the next one inside the leaf instead of searching again from the
 * root.  Counted in B-tree node visits against one point lookup of the
 * same tree: the write's searches are the inline check, the extent items,
 * the front piece's update, the tail's and the new extent's inserts and
 * the inode item's update (6), and one in the checksum tree (as tall
 * here): 7 point lookups' worth; 10 before.  The inline check is
 * remembered per inode (6), and the new extent's item goes in with the
 * tail's in one descent when they share a leaf (btree_insert_two: 5).
 * Overwriting that block again, now an extent
 * of its own, rewrites its item in place instead of deleting it and
 * inserting the new one: the extent items, the item's update, the inode
 * item and the checksum tree, 4 (6 before).
 */
static void write_lookups(void)
{
	const uint64_t MiB = 1 << 20;
	unsigned char *w = malloc(MiB), r[4096];
	struct stat st;
	uint64_t ino, l0, one, wr;
	int ok = 1;

	if (!w) {
		CHECK("write-lookups: memory", 0);
		return;
	}
	memset(w, 0x3c, MiB);
	CHECK("write-lookups: create",
	      fsops_mknod(fs, ROOT_DIR_INO, "lookups", S_IFREG | 0644, 0, &root_cr, &st) == 0);
	ino = st.st_ino;
	for (uint64_t i = 0; i < 4; i++)
		ok &= fsops_write(fs, ino, w, MiB, i * MiB) == (ssize_t)MiB;
	/* the trees taller than a root leaf (a root is not looked up): a
	 * file of 2,000 separate 4 KiB extents (and checksum items) */
	CHECK("write-lookups: a filler file",
	      fsops_mknod(fs, ROOT_DIR_INO, "lookups-filler", S_IFREG | 0644, 0, &root_cr, &st) == 0);
	for (uint64_t i = 0; i < 2000; i++)
		ok &= fsops_write(fs, (uint64_t)st.st_ino, w, 4096, i * 8192) == 4096;
	fsops_forget(fs, (uint64_t)st.st_ino, 1);
	CHECK("write-lookups: 4 MiB laid out, synced", ok && fsops_sync(fs) == 0);
	/* the first change of a transaction copies the nodes on its paths:
	 * one overwrite elsewhere first, so both counts see the same tree */
	memset(w, 0xc3, 4096);
	ok = fsops_write(fs, ino, w, 4096, 3 * MiB + 8192) == 4096;
	struct key k = { ino, KEY_INODE_ITEM, 0 };
	struct inode_item it;
	l0 = node_lookups();
	ok &= btree_lookup(fs->root, &k, &it, sizeof(it)) >= 0;
	one = node_lookups() - l0;
	l0 = node_lookups();
	ok &= fsops_write(fs, ino, w, 4096, MiB + MiB / 2) == 4096;
	wr = node_lookups() - l0;
	printf("# write-lookups: %llu node visits for a 4 KiB overwrite, %llu for one lookup\n",
	       (unsigned long long)wr, (unsigned long long)one);
	CHECK("write-lookups: a 4 KiB overwrite searches 5 times at most", ok && one > 0 && wr <= 5 * one);
	CHECK("write-lookups: the bytes",
	      fsops_read(fs, ino, r, 4096, MiB + MiB / 2) == 4096 && memcmp(r, w, 4096) == 0 &&
	      fsops_read(fs, ino, r, 4096, MiB + MiB / 2 + 4096) == 4096 && r[0] == 0x3c &&
	      fsops_read(fs, ino, r, 4096, MiB + MiB / 2 - 4096) == 4096 && r[4095] == 0x3c);
	memset(w, 0x5a, 4096);
	l0 = node_lookups();
	ok &= fsops_write(fs, ino, w, 4096, MiB + MiB / 2) == 4096;
	wr = node_lookups() - l0;
	printf("# write-lookups: %llu node visits for a 4 KiB overwrite of a 4 KiB extent\n",
	       (unsigned long long)wr);
	CHECK("write-lookups: a 4 KiB extent's overwrite searches 4 times at most",
	      ok && wr <= 4 * one);
	CHECK("write-lookups: the bytes after the second overwrite",
	      fsops_read(fs, ino, r, 4096, MiB + MiB / 2) == 4096 && memcmp(r, w, 4096) == 0 &&
	      fsops_read(fs, ino, r, 4096, MiB + MiB / 2 + 4096) == 4096 && r[0] == 0x3c &&
	      fsops_read(fs, ino, r, 4096, MiB + MiB / 2 - 4096) == 4096 && r[4095] == 0x3c);
	/* and after a commit: the item rewritten in place maps the new block
	 * alone, the old one's reference dropped (fsck's counts in the
	 * volume check at the end agree) */
	CHECK("write-lookups: synced, read back",
	      fsops_sync(fs) == 0 &&
	      fsops_read(fs, ino, r, 4096, MiB + MiB / 2) == 4096 && memcmp(r, w, 4096) == 0);
	fsops_forget(fs, ino, 1);
	free(w);
}

/* The reply of fsops_read_spans put together as the kernel gets it:
 * memory as it is, device ranges read from the device file (as libfuse's
 * splice does), under the spans' locks. */
struct spans_out {
	unsigned char *out;
	size_t bytes;
	int calls, fds;
};

static int spans_gather(void *arg, const struct data_spans *sp, size_t bytes)
{
	struct spans_out *o = arg;
	size_t at = 0;

	o->calls++;
	for (int i = 0; i < sp->n; i++) {
		const struct data_span *v = &sp->v[i];
		if (at + v->len > bytes)
			return -EOVERFLOW;
		if (v->fd >= 0) {
			o->fds++;
			if (pread(v->fd, o->out + at, v->len, (off_t)v->pos) != (ssize_t)v->len)
				return -EIO;
		} else {
			memcpy(o->out + at, v->mem, v->len);
		}
		at += v->len;
	}
	o->bytes = at;
	return at == bytes ? 0 : -EPROTO;
}

/*
 * Reads replied as spans (fs/trees/data_span.h, the FUSE layer's zero-copy
 * reads) give the bytes fsops_read gives, at random offsets and lengths
 * over extents, holes, a preallocated range, a partial last block and an
 * inline file; a data sector damaged on the device gives -EIO with no
 * reply, through the ordinary read (span_fallbacks), never the bad bytes.
 */
static void read_spans(unsigned seed)
{
	const uint64_t fsize = (3u << 20) + 1234;
	unsigned char *w = malloc(fsize), *a = malloc(1 << 20), *b = malloc(1 << 20);
	unsigned char *buf = malloc(1 << 20);
	struct data_spans *sp = malloc(sizeof(*sp));
	struct core_stats s0, s1;
	struct stat st;
	uint64_t ino, ino2 = 0;
	int ok = 1, fds = 0;

	if (!w || !a || !b || !buf || !sp) {
		CHECK("read-spans: memory", 0);
		goto out;
	}
	srand(seed);
	for (uint64_t i = 0; i < fsize; i++)
		w[i] = (unsigned char)(rand() >> 7);
	CHECK("read-spans: create",
	      fsops_mknod(fs, ROOT_DIR_INO, "spans", S_IFREG | 0644, 0, &root_cr, &st) == 0);
	ino = st.st_ino;
	/* extents of odd sizes, a hole at [1 MiB, 1 MiB + 200 KiB), a
	 * preallocated range after it, the rest written to an odd end */
	for (uint64_t o = 0; o < (1u << 20); o += 40000)
		ok &= fsops_write(fs, ino, w + o, o + 40000 > (1u << 20) ? (1u << 20) - o : 40000, o) > 0;
	ok &= fsops_fallocate(fs, ino, FALLOC_FL_KEEP_SIZE, (1u << 20) + (200u << 10), 64u << 10) == 0;
	ok &= fsops_write(fs, ino, w + (1u << 20) + (264u << 10), fsize - (1u << 20) - (264u << 10),
			  (1u << 20) + (264u << 10)) > 0;
	memset(w + (1u << 20), 0, 264u << 10);
	CHECK("read-spans: written", ok);
	CHECK("read-spans: committed", txn_commit(core, COMMIT_OTHER) == 0);
	mount_stats(core, &s0);
	for (int i = 0; i < 300 && ok; i++) {
		uint64_t off = (uint64_t)rand() % (fsize + 4096);
		size_t len = (size_t)(rand() % 3 ? rand() % (1 << 20) : (rand() % 64) << 12) + 1;
		struct spans_out o = { a, 0, 0, 0 };
		ssize_t n = fsops_read(fs, ino, b, len, off);
		ssize_t m = fsops_read_spans(fs, ino, buf, len, off, sp, spans_gather, &o);
		fds += o.fds;
		if (n < 0 || m != 0 || o.calls != 1 || o.bytes != (size_t)n || memcmp(a, b, (size_t)n) ||
		    (n > 0 && memcmp(a, w + off, (size_t)n))) {
			printf("# read-spans: off %llu len %zu: read %zd, spans %zd (%d calls, %zu bytes)\n",
			       (unsigned long long)off, len, n, m, o.calls, o.bytes);
			ok = 0;
		}
	}
	mount_stats(core, &s1);
	CHECK("read-spans: 300 random reads as fsops_read", ok);
	printf("# read-spans: %llu span reads, %llu fallbacks, %d device ranges\n",
	       (unsigned long long)(s1.span_reads - s0.span_reads),
	       (unsigned long long)(s1.span_fallbacks - s0.span_fallbacks), fds);
	CHECK("read-spans: served as device ranges, none fell back",
	      s1.span_reads > s0.span_reads && fds > 0 && s1.span_fallbacks == s0.span_fallbacks);

	/* an inline file: memory only */
	CHECK("read-spans: inline file",
	      fsops_mknod(fs, ROOT_DIR_INO, "spans-inline", S_IFREG | 0644, 0, &root_cr, &st) == 0 &&
	      fsops_write(fs, ino2 = st.st_ino, "inline bytes", 12, 0) == 12);
	{
		struct spans_out o = { a, 0, 0, 0 };
		CHECK("read-spans: inline read",
		      fsops_read_spans(fs, ino2, buf, 4096, 0, sp, spans_gather, &o) == 0 &&
		      o.bytes == 12 && o.fds == 0 && memcmp(a, "inline bytes", 12) == 0);
	}

	/* a sector damaged under the mount, in the device's page cache */
	{
		int fd = open(img, O_RDWR);
		unsigned char *scan = malloc(1 << 20), needle[64];
		off_t at = -1;
		memcpy(needle, w + (2u << 20), sizeof(needle));
		for (off_t o = 0; fd >= 0 && scan && at < 0; o += (1 << 20) - 4096) {
			ssize_t r = pread(fd, scan, 1 << 20, o);
			if (r <= 0)
				break;
			for (ssize_t k = 0; k + (ssize_t)sizeof(needle) <= r; k += 4096)
				if (!memcmp(scan + k, needle, sizeof(needle)))
					at = o + k;
		}
		CHECK("read-spans: the sector found on the device", at >= 0);
		if (at >= 0) {
			unsigned char x = 0;
			struct spans_out o = { a, 0, 0, 0 };
			ok = pread(fd, &x, 1, at + 100) == 1;
			x ^= 0x10;
			ok &= pwrite(fd, &x, 1, at + 100) == 1;
			mount_stats(core, &s0);
			CHECK("read-spans: damaged sector: -EIO, no reply",
			      ok && fsops_read_spans(fs, ino, buf, 1 << 20, (2u << 20) - 8192, sp,
						     spans_gather, &o) == -EIO && o.calls == 0);
			mount_stats(core, &s1);
			CHECK("read-spans: ... through the ordinary read",
			      s1.span_fallbacks == s0.span_fallbacks + 1 && s1.csum_errors > s0.csum_errors);
			CHECK("read-spans: the bytes before it still read",
			      fsops_read_spans(fs, ino, buf, 8192, (2u << 20) - 8192, sp, spans_gather, &o) == 0 &&
			      o.bytes == 8192 && memcmp(a, w + (2u << 20) - 8192, 8192) == 0);
			x ^= 0x10;	/* mended: later tests see a sound volume */
			CHECK("read-spans: mended", pwrite(fd, &x, 1, at + 100) == 1);
		}
		free(scan);
		if (fd >= 0)
			close(fd);
	}
	fsops_forget(fs, ino, 1);
	fsops_forget(fs, ino2, 1);
out:
	free(w);
	free(a);
	free(b);
	free(buf);
	free(sp);
}

/*
 * The commit that frees the blocks of overwritten 4 KiB extents deletes
 * each one's checksum item (data_csum_delete): one deleting search for
 * the item at the extent's start, which also sees the next item is past
 * the extent; it was three (a lookup, the delete's search, a lookup
 * finding nothing more).  Counted as node visits of the whole commit per
 * freed extent against one point lookup: 200 extents of a synced file of
 * separate 4 KiB extents overwritten, then synced.  Measured (trees two
 * levels tall, one visit a lookup): 6.4 visits per freed extent before,
 * 4.4 after (the extent item's drop, the free-space tree's and the
 * copied nodes' reference changes are the rest).
 */
static void csum_delete_lookups(void)
{
	unsigned char w[4096], r[4096];
	struct stat st;
	struct key k;
	struct inode_item it;
	uint64_t ino, l0, one, cm;
	int ok = 1;

	memset(w, 0x71, sizeof(w));
	CHECK("csum-delete: create",
	      fsops_mknod(fs, ROOT_DIR_INO, "csumdel", S_IFREG | 0644, 0, &root_cr, &st) == 0);
	ino = st.st_ino;
	for (uint64_t i = 0; i < 2000; i++)
		ok &= fsops_write(fs, ino, w, 4096, i * 8192) == 4096;
	CHECK("csum-delete: 2000 extents laid out, synced", ok && fsops_sync(fs) == 0);
	memset(w, 0x17, sizeof(w));
	for (uint64_t i = 0; i < 200; i++)
		ok &= fsops_write(fs, ino, w, 4096, i * 10 * 8192) == 4096;
	k = (struct key){ ino, KEY_INODE_ITEM, 0 };
	l0 = node_lookups();
	ok &= btree_lookup(fs->root, &k, &it, sizeof(it)) >= 0;
	one = node_lookups() - l0;
	l0 = node_lookups();
	ok &= fsops_sync(fs) == 0;
	cm = node_lookups() - l0;
	printf("# csum-delete: %.2f node visits per freed extent in the commit, %llu for one lookup\n",
	       (double)cm / 200, (unsigned long long)one);
	CHECK("csum-delete: the commit visits 5 lookups' worth per freed extent at most",
	      ok && one > 0 && cm <= 5 * 200 * one);
	CHECK("csum-delete: the bytes",
	      fsops_read(fs, ino, r, 4096, 10 * 8192) == 4096 && memcmp(r, w, 4096) == 0 &&
	      fsops_read(fs, ino, r, 4096, 8192) == 4096 && r[0] == 0x71);
	fsops_forget(fs, ino, 1);
}

/*
 * A directory entry whose DIR_INDEX item is gone: unlink finds the name
 * (DIR_ITEM) but not the index, which is corruption — -EIO, and the one
 * corruption helper (core_corrupt) forces the volume read-only with
 * -EUCLEAN as the reason (before, dir.c only logged and the transaction's
 * abort left -EIO).  Last: the volume stays read-only.
 */
static void corrupt_index(void)
{
	struct stat d, st;
	struct path p;
	struct key k = { 0 }, ik = { 0 };
	struct txn *t;
	int r;

	CHECK("corrupt: mkdir", fsops_mkdir(fs, ROOT_DIR_INO, "cdir", 0755, &root_cr, &d) == 0);
	CHECK("corrupt: create", fsops_mknod(fs, d.st_ino, "v", S_IFREG | 0644, 0, &root_cr, &st) == 0);
	k = mkkey(d.st_ino, KEY_DIR_INDEX, 0);
	btree_path_init(&p);
	r = fsctx_search_ge(fs, &k, &p);
	if (r == 0)
		btree_item_key(&p, p.slots[0], &ik);
	btree_path_release(&p);
	CHECK("corrupt: the entry's DIR_INDEX item", r == 0 && ik.objectid == d.st_ino &&
	      ik.type == KEY_DIR_INDEX);
	CHECK("corrupt: join", txn_join(core, 1, 0, &t) == 0);
	CHECK("corrupt: delete DIR_INDEX", btree_delete(t, fs->root, &ik) == 0);
	CHECK("corrupt: end", txn_end(t) == 0);
	r = fsops_unlink(fs, d.st_ino, "v");
	CHECK("corrupt: unlink without its DIR_INDEX -> -EIO", r == -EIO);
	CHECK("corrupt: volume read-only as corrupt (-EUCLEAN)",
	      __atomic_load_n(&core->aborted, __ATOMIC_SEQ_CST) == -EUCLEAN);
}

/*
 * Fill the mounted volume with files PREFIX0, PREFIX1, ... of size bytes
 * each until one does not fit (it stays, with what it got), then commit:
 * the number that fit, or -1 when the first create failed.
 */
static int fill_up(const char *prefix, size_t size)
{
	static char data[1 << 20];
	char name[32];
	struct stat st;
	int n = 0;

	memset(data, 0x5a, sizeof(data));
	for (;;) {
		snprintf(name, sizeof(name), "%s%d", prefix, n);
		if (fsops_mknod(fs, ROOT_DIR_INO, name, S_IFREG | 0644, 0, &root_cr, &st))
			break;
		ssize_t w = fsops_write(fs, st.st_ino, data, size, 0);
		fsops_forget(fs, st.st_ino, 1);
		if (w != (ssize_t)size)
			break;
		n++;
		if (n % 8 == 0)
			fsops_sync(fs);
	}
	fsops_sync(fs);
	return n;
}

/*
 * A full volume: an inline file grown past the inline limit with room
 * for one block only.  Its data moves to that block, then the write's own
 * space is not there (-ENOSPC, the file unchanged to a reader): the inode
 * item must count the block the file now holds, or the next commit stores
 * nbytes that its extents contradict (fsck: "nbytes 1175, its extents
 * hold 4096", seen by crash.test on a 90 %-full volume).
 */
static void inline_enospc(void)
{
	static char img2[256];
	static char blk[1 << 20];
	struct stat st;
	uint64_t inl;
	int n = 0;

	if (items_setup(img2, sizeof(img2), "items2", (off_t)48 << 20) < 0 || !fs)
		goto out;
	memset(blk, 0x5a, sizeof(blk));
	CHECK("inline-enospc: create",
	      fsops_mknod(fs, ROOT_DIR_INO, "inl", S_IFREG | 0644, 0, &root_cr, &st) == 0);
	inl = st.st_ino;
	CHECK("inline-enospc: 1175 inline bytes", fsops_write(fs, inl, blk, 1175, 0) == 1175);
	fsops_sync(fs);
	n = fill_up("f", sizeof(blk));
	CHECK("inline-enospc: the volume filled up", n > 0);
	/* 1 MiB free again: room for the inline data's block, not for a
	 * 1 MiB piece beside it */
	CHECK("inline-enospc: unlink one 1 MiB file", fsops_unlink(fs, ROOT_DIR_INO, "f0") == 0);
	fsops_sync(fs);
	ssize_t w = fsops_write(fs, inl, blk, sizeof(blk), 0);
	CHECK("inline-enospc: growing it past the inline limit: -ENOSPC", w == -ENOSPC);
	fsops_sync(fs);
	CHECK("inline-enospc: unmount", items_unmount() == 0);
	fsck_clean("inline-enospc", img2);
out:
	unlink(img2);
}

/*
 * A write again in place (write_again) whose device write fails: the
 * write says so (never success), the volume stops taking writes, and
 * after a remount the file is what the last commit left — the block the
 * transaction's copy on write made, and the bytes over it, were never
 * reachable.  fsck clean.
 */
static void rewrite_fails(void)
{
	static char img3[256];
	unsigned char w[4096], r[4096];
	struct stat st;
	uint64_t ino, n0;
	ssize_t got;

	if (items_setup(img3, sizeof(img3), "items3", (off_t)48 << 20) < 0 || !fs)
		goto out;
	CHECK("rewrite-fails: create",
	      fsops_mknod(fs, ROOT_DIR_INO, "rf", S_IFREG | 0644, 0, &root_cr, &st) == 0);
	ino = st.st_ino;
	memset(w, 0x11, sizeof(w));
	CHECK("rewrite-fails: committed bytes", fsops_write(fs, ino, w, 4096, 0) == 4096);
	fsops_sync(fs);
	memset(w, 0x22, sizeof(w));
	CHECK("rewrite-fails: copied once in the transaction", fsops_write(fs, ino, w, 4096, 0) == 4096);
	n0 = core->data_rewrites;
	CHECK("rewrite-fails: then written in place (the path below)",
	      fsops_write(fs, ino, w, 4096, 0) == 4096 && core->data_rewrites == ++n0);
	dev_set_fail(core->devs[0], DEV_WRITE, true);
	memset(w, 0x33, sizeof(w));
	got = fsops_write(fs, ino, w, 4096, 0);
	dev_set_fail(core->devs[0], DEV_WRITE, false);
	CHECK("rewrite-fails: the failed write in place is an error, not counted",
	      got < 0 && core->data_rewrites == n0);
	CHECK("rewrite-fails: the volume takes no more writes",
	      fsops_write(fs, ino, w, 4096, 0) < 0);
	items_unmount();
	CHECK("rewrite-fails: remount", items_mount(img3) == 0);
	if (fs) {
		got = fsops_read(fs, ino, r, 4096, 0);
		CHECK("rewrite-fails: the file holds the last commit's bytes",
		      got == 4096 && r[0] == 0x11 && r[4095] == 0x11);
		CHECK("rewrite-fails: unmount", items_unmount() == 0);
	}
	fsck_clean("rewrite-fails", img3);
out:
	unlink(img3);
}

/*
 * A full volume: a file truncated down to a size inside a block.  The
 * block's tail must read as zeros for a later extension, so it is copied
 * with the tail zeroed (copy on write) — a new block the volume does not
 * have.  -ENOSPC is the answer, with nothing changed: before, the
 * truncate's error aborted the transaction and the volume turned
 * read-only (an ENOSPC taken for corruption).  With a block free again
 * it succeeds.
 */
static void truncate_enospc(void)
{
	static char img3[256];
	static char blk[1 << 20];
	struct stat st, in = { .st_size = 5000 };
	uint64_t ino;

	if (items_setup(img3, sizeof(img3), "items3", (off_t)48 << 20) < 0 || !fs)
		goto out;
	memset(blk, 0x3c, sizeof(blk));
	CHECK("truncate-enospc: create",
	      fsops_mknod(fs, ROOT_DIR_INO, "t", S_IFREG | 0644, 0, &root_cr, &st) == 0);
	ino = st.st_ino;
	CHECK("truncate-enospc: 8192 bytes", fsops_write(fs, ino, blk, 8192, 0) == 8192);
	/* the kernel allows up to 2^63-1 (a FUSE mount's s_maxbytes): a size
	 * past ours is refused, nothing else (it aborted the volume too) */
	CHECK("truncate-enospc: to 2^62 + 1 bytes: -EFBIG", fsops_setattr(fs, ino,
	      &(struct stat){ .st_size = (1ll << 62) + 1 }, FSOPS_SET_SIZE, NULL) == -EFBIG);
	CHECK("truncate-enospc: -EFBIG leaves the volume writable",
	      __atomic_load_n(&core->aborted, __ATOMIC_SEQ_CST) == 0);
	fsops_sync(fs);
	int big = fill_up("f", sizeof(blk)), small = fill_up("g", 4096);
	CHECK("truncate-enospc: the volume filled up, to the last block", big > 0 && small >= 0);
	int r = fsops_setattr(fs, ino, &in, FSOPS_SET_SIZE, &st);
	CHECK("truncate-enospc: truncate to 5000 bytes: -ENOSPC", r == -ENOSPC);
	CHECK("truncate-enospc: the volume stays writable",
	      __atomic_load_n(&core->aborted, __ATOMIC_SEQ_CST) == 0);
	CHECK("truncate-enospc: the file unchanged", fsops_getattr(fs, ino, &st) == 0 &&
	      st.st_size == 8192 && fsops_read(fs, ino, blk, 8192, 0) == 8192 &&
	      blk[0] == 0x3c && blk[8191] == 0x3c);
	CHECK("truncate-enospc: unlink a 1 MiB file", fsops_unlink(fs, ROOT_DIR_INO, "f0") == 0);
	/* no sync: its blocks are pinned until a commit, which the truncate
	 * makes itself (fsops.c, commit_for_space) */
	CHECK("truncate-enospc: with room a commit away, the truncate works",
	      fsops_setattr(fs, ino, &in, FSOPS_SET_SIZE, &st) == 0 && st.st_size == 5000);
	memset(blk, 0x77, 8192);
	CHECK("truncate-enospc: 5000 bytes, then zeros past them",
	      fsops_setattr(fs, ino, &(struct stat){ .st_size = 8192 }, FSOPS_SET_SIZE, NULL) == 0 &&
	      fsops_read(fs, ino, blk, 8192, 0) == 8192 && blk[4999] == 0x3c && blk[5000] == 0 &&
	      blk[8191] == 0);
	fsops_sync(fs);
	CHECK("truncate-enospc: unmount", items_unmount() == 0);
	fsck_clean("truncate-enospc", img3);
out:
	unlink(img3);
}

/*
 * A read the zero-copy way cannot serve walks the file's extent items
 * once (issue 22): spans that cannot be mapped (here a relocation's
 * barrier, c->reloc_lock held exclusively, as a resync segment holds it)
 * are read the ordinary way from what was collected, and a read of more
 * pieces than a reply takes (8 KiB extents apart on disk, 900 KiB: 113
 * pieces, 64 fit) is read into the buffer in the same walk when the list
 * fills.  Counted in B-tree node visits against the plain read of the
 * same range: the old fallback walked the items and loaded the checksums
 * twice (1 MiB of 256 back-to-back extents, one run: 18 visits against
 * the plain read's 10; the 113 pieces: 181 against 117); now neither
 * again (the checksums the spans loaded are the ones checked): no more
 * than the plain read.  The bytes are the plain read's.
 */
static void read_fallback_walks(void)
{
	const size_t MiB = 1 << 20, C = 8192;
	unsigned char *w = malloc(2 * MiB), *a = malloc(MiB), *b = malloc(MiB);
	struct data_spans *sp = malloc(sizeof(*sp));
	struct core_stats s0, s1;
	struct stat st;
	uint64_t ino = 0, ino2, l0, plain, fb;
	int ok = 1;

	if (!w || !a || !b || !sp) {
		CHECK("read-walks: memory", 0);
		goto out;
	}
	for (size_t i = 0; i < 2 * MiB; i++)
		w[i] = (unsigned char)(i * 7 + (i >> 12));
	CHECK("read-walks: files",
	      fsops_mknod(fs, ROOT_DIR_INO, "walks", S_IFREG | 0644, 0, &root_cr, &st) == 0 &&
	      (ino = st.st_ino) != 0 &&
	      fsops_mknod(fs, ROOT_DIR_INO, "walks-frag", S_IFREG | 0644, 0, &root_cr, &st) == 0);
	ino2 = st.st_ino;
	/* 256 extents back to back on disk: one run (one checksum lookup),
	 * their items over more than one leaf */
	for (size_t i = 0; i < MiB; i += 4096)
		ok &= fsops_write(fs, ino, w + i, 4096, i) == 4096;
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = (size_t)pass; i < 2 * MiB / C; i += 2)
			ok &= fsops_write(fs, ino2, w + i * C, C, i * C) == (ssize_t)C;
		ok &= txn_commit(core, COMMIT_OTHER) == 0;
	}
	CHECK("read-walks: written, committed", ok);

	l0 = node_lookups();
	ok = fsops_read(fs, ino, b, MiB, 0) == (ssize_t)MiB;
	plain = node_lookups() - l0;
	{
		struct spans_out o = { a, 0, 0, 0 };
		mount_stats(core, &s0);
		glock_write(&core->reloc_lock);
		l0 = node_lookups();
		ok &= fsops_read_spans(fs, ino, a, MiB, 0, sp, spans_gather, &o) == 0;
		fb = node_lookups() - l0;
		glock_write_unlock(&core->reloc_lock);
		mount_stats(core, &s1);
		ok &= o.calls == 1 && o.bytes == MiB && o.fds == 0 && memcmp(a, b, MiB) == 0 &&
		      memcmp(a, w, MiB) == 0;
	}
	printf("# read-walks: 1 MiB behind a relocation's barrier: %llu node visits, the plain read %llu\n",
	       (unsigned long long)fb, (unsigned long long)plain);
	CHECK("read-walks: barrier: the bytes, as memory, one fallback",
	      ok && s1.span_fallbacks == s0.span_fallbacks + 1);
	CHECK("read-walks: barrier: items and checksums looked up once", fb <= plain);

	l0 = node_lookups();
	ok = fsops_read(fs, ino2, b, 900 << 10, 100 << 10) == 900 << 10;
	plain = node_lookups() - l0;
	{
		struct spans_out o = { a, 0, 0, 0 };
		mount_stats(core, &s0);
		l0 = node_lookups();
		ok &= fsops_read_spans(fs, ino2, a, 900 << 10, 100 << 10, sp, spans_gather, &o) == 0;
		fb = node_lookups() - l0;
		mount_stats(core, &s1);
		ok &= o.calls == 1 && o.bytes == 900 << 10 && memcmp(a, b, 900 << 10) == 0 &&
		      memcmp(a, w + (100 << 10), 900 << 10) == 0;
	}
	printf("# read-walks: 900 KiB of 8 KiB extents: %llu node visits, the plain read %llu\n",
	       (unsigned long long)fb, (unsigned long long)plain);
	CHECK("read-walks: too many pieces: the bytes, one fallback",
	      ok && s1.span_fallbacks == s0.span_fallbacks + 1);
	CHECK("read-walks: too many pieces: items and checksums looked up once", fb <= plain);
	fsops_forget(fs, ino, 1);
	fsops_forget(fs, ino2, 1);
out:
	free(w);
	free(a);
	free(b);
	free(sp);
}

int main(void)
{
	long r = items_setup(img, sizeof(img), "items", (off_t)512 << 20);

	if (r < 0)
		return 1;
	unsigned seed = (unsigned)r;
	if (fs) {
		interleaved();
		seq_extents();
		rewrite_in_place();
		rewrite_part();
		rewrite_multi();
		read_runs();
		write_lookups();
		csum_delete_lookups();
		read_spans(seed);
		read_fallback_walks();
		data_model(seed);
		names();
		many_links();
		threads(seed);
		CHECK("final unmount", items_unmount() == 0);
		fsck_clean("final", img);
		CHECK("remount", items_mount(img) == 0);
		if (fs)
			corrupt_index();
		items_unmount();	/* read-only now: no final commit to check */
	}
	unlink(img);
	inline_enospc();
	truncate_enospc();
	rewrite_fails();
	return fails ? 1 : 0;
}
