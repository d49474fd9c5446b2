// SPDX-License-Identifier: MIT
/*
 * test_log.c — the fsync log (fs/items/log.c) under ASan/UBSan, in one process:
 * files are changed and fsync'd, then the volume is dropped without a
 * commit (the abort flag stops mount_close from writing: what a crash
 * leaves), reopened read-only (log_check sees the pending log), and read-
 * write (log_replay): every fsync'd state is back, unsynced changes are
 * not, and a full commit clears the log.  fsync=commit writes no log.
 * SEED=n replays.
 */
#include "core_test.h"
#include "fs/ops/fsops.h"
#include "fs/items/log.h"
#include "fs/items/log_int.h"
#include "fs/store/chunk.h"
#include "fs/store/dev.h"
#include "fs/base/crc32c.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/syscall.h>

static char img[256];
static struct core *core;
static struct fsctx *fs;
static struct fsops_cred cr = { .uid = 0, .gid = 0 };

/* Device writes while `armed`: where an fsops_write put its data. */
static struct { uint64_t off, len; } wrote[64];
static int nwrote;
static bool armed;

/*
 * While `tracking`: the log segments written into a hole of the image
 * (`fresh_segs`, counted by pwrite64 below before the write): on an
 * image file each is a hole the host allocates at the flush, a journal
 * commit of ext4 in every fsync.
 */
static uint64_t fresh_segs;
static bool tracking;

/*
 * While `segtrack`: every log segment written (the image's offsets) and
 * every arena's zero fill, checked as they come: a segment or a zero
 * fill over a segment written before (in one transaction nothing the
 * log wrote is written again: every segment and slot is carved once).
 * Writes come from several threads (data from the writers, segments
 * from the leader).
 */
static pthread_mutex_t segtrack_mu = PTHREAD_MUTEX_INITIALIZER;
static bool segtrack;
static struct { uint64_t off, len; } *segw;
static size_t nsegw, segwcap, zero_fills, seg_overlaps;

static bool all_zero(const void *buf, uint64_t len)
{
	const uint8_t *b = buf;

	return len && b[0] == 0 && !memcmp(b, b + 1, len - 1);
}

static void segtrack_write(uint64_t off, const void *buf, uint64_t len)
{
	bool seg = len >= 16 && (!memcmp((const char *)buf + 8, "GlaaSLOG", 8) ||
				 !memcmp((const char *)buf + 8, "GlaaSLG2", 8));
	bool zeros = !seg && len >= (64u << 10) && all_zero(buf, len);

	if (!seg && !zeros)
		return;
	pthread_mutex_lock(&segtrack_mu);
	for (size_t i = 0; i < nsegw; i++)
		if (off < segw[i].off + segw[i].len && segw[i].off < off + len) {
			if (!seg_overlaps)
				printf("# %s %llu+%llu over the segment at %llu+%llu\n",
				       seg ? "segment" : "zero fill", (unsigned long long)off,
				       (unsigned long long)len, (unsigned long long)segw[i].off,
				       (unsigned long long)segw[i].len);
			seg_overlaps++;
		}
	zero_fills += zeros;
	if (seg) {
		if (nsegw == segwcap) {
			segwcap = segwcap ? segwcap * 2 : 256;
			segw = realloc(segw, segwcap * sizeof(*segw));
			if (!segw)
				abort();
		}
		segw[nsegw].off = off;
		segw[nsegw++].len = len;
	}
	pthread_mutex_unlock(&segtrack_mu);
}

/*
 * While `filltrack`: the bytes of arena zero fills written (a write of
 * at least 64 KiB of zeros: the test's data is never all zeros), where
 * the first one went, and the log segments written in [seg_lo, seg_hi).
 */
static bool filltrack;
static uint64_t fill_bytes, fill_at, seg_lo, seg_hi, seg_in;

static void recorder(void *arg, const struct dev *d, int op, uint64_t off, const void *buf,
		     uint64_t len)
{
	(void)arg;
	(void)d;
	if (filltrack && op == DEV_WRITE) {
		if (len >= (64u << 10) && all_zero(buf, len)) {
			fill_at = fill_bytes ? fill_at : off;
			fill_bytes += len;
		} else if (len >= 16 &&
			   (!memcmp((const char *)buf + 8, "GlaaSLOG", 8) ||
			    !memcmp((const char *)buf + 8, "GlaaSLG2", 8))) {
			seg_in += off >= seg_lo && off < seg_hi;
		}
	}
	if (__atomic_load_n(&segtrack, __ATOMIC_ACQUIRE) && op == DEV_WRITE)
		segtrack_write(off, buf, len);
	if (armed && op == DEV_WRITE && nwrote < (int)(sizeof(wrote) / sizeof(wrote[0])))
		wrote[nwrote++] = (typeof(wrote[0])){ off, len };
}

static int mount_rw(int fsync_mode)
{
	const char *devs[1] = { img };
	struct core_opts o;
	int ret;

	core_opts_default(&o);
	o.commit_interval_s = 3600;
	o.fsync_mode = fsync_mode;
	o.dev_recorder = recorder;
	ret = mount_open(devs, 1, &o, &core);
	if (!ret)
		ret = fsops_mount(core, &o, &fs);
	return ret;
}

/* What a crash leaves: nothing more is written. */
static void crash(void)
{
	txn_stop_commit_thread(core);
	core->aborted = -EIO;
	fsops_unmount(fs);
	fs = NULL;
	mount_close(core);
	core = NULL;
}

/* Set (or clear) bits in `features` of every superblock copy of path,
 * checksums rewritten: the copies changed, or -errno. */
static int super_features(const char *path, uint64_t bits, bool set)
{
	static const uint64_t offs[SUPER_COPIES] = { SUPER_OFFSET, SUPER_MIRROR1, SUPER_MIRROR2 };
	struct super_block sb;
	int fd = open(path, O_RDWR), n = 0;

	if (fd < 0)
		return -errno;
	for (int k = 0; k < SUPER_COPIES; k++) {
		if (pread(fd, &sb, sizeof(sb), (off_t)offs[k]) != (ssize_t)sizeof(sb) ||
		    sb.magic != GLASSFS_MAGIC)
			continue;
		sb.features = set ? sb.features | bits : sb.features & ~bits;
		uint32_t crc = crc32c(0, (const uint8_t *)&sb + 32, SUPER_SIZE - 32);
		memcpy(sb.csum, &crc, 4);
		if (pwrite(fd, &sb, sizeof(sb), (off_t)offs[k]) != (ssize_t)sizeof(sb)) {
			close(fd);
			return -EIO;
		}
		n++;
	}
	close(fd);
	return n;
}

static void fill(unsigned char *b, size_t n, unsigned key)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (unsigned char)((i * 131 + key * 7) ^ (i >> 9));
}

/* File parent/name holds exactly n bytes of fill(key)? */
static bool holds(uint64_t parent, const char *name, size_t n, unsigned key)
{
	struct stat st;
	unsigned char *want = malloc(n + 1), *got = malloc(n + 4096);
	bool ok = false;

	if (fsops_lookup(fs, parent, name, &st) == 0 && (size_t)st.st_size == n) {
		fill(want, n, key);
		ssize_t r = fsops_read(fs, st.st_ino, got, n + 4096, 0);
		ok = r == (ssize_t)n && memcmp(want, got, n) == 0;
		fsops_forget(fs, st.st_ino, 1);
	}
	free(want);
	free(got);
	return ok;
}

static int put(uint64_t parent, const char *name, size_t n, unsigned key, uint64_t *ino)
{
	struct stat st;
	unsigned char *b = malloc(n + 1);
	int ret = fsops_mknod(fs, parent, name, S_IFREG | 0644, 0, &cr, &st);

	fill(b, n, key);
	if (!ret && n)
		ret = fsops_write(fs, st.st_ino, b, n, 0) == (ssize_t)n ? 0 : -EIO;
	free(b);
	*ino = st.st_ino;
	return ret;
}

/* A file NAME in parent of nb extents of bsz bytes, want's bytes (made
 * fill(key)), written last block first so that no two extents merge, and
 * committed: *ino. */
static int extents_file(uint64_t parent, const char *name, unsigned char *want, size_t nb,
			size_t bsz, unsigned key, uint64_t *ino)
{
	struct stat st;
	int ret;

	fill(want, nb * bsz, key);
	ret = fsops_mknod(fs, parent, name, S_IFREG | 0644, 0, &cr, &st);
	for (size_t i = nb; i-- > 0 && !ret;)
		if (fsops_write(fs, st.st_ino, want + i * bsz, bsz, i * bsz) != (ssize_t)bsz)
			ret = -EIO;
	if (!ret)
		*ino = st.st_ino;
	return ret ? ret : fsops_sync(fs);
}

/* A crash, then a mount that replays the log: "TAG: replayed" (nothing
 * left pending) and "TAG: WHAT" (file f reads back want's n bytes, read
 * into got).  0, or the mount's error. */
static int crash_reads_back(const char *tag, const char *what, uint64_t f,
			    const unsigned char *want, unsigned char *got, size_t n)
{
	char name[300];
	int ret;

	crash();
	ret = mount_rw(CORE_FSYNC_LOG);
	if (ret)
		return ret;
	snprintf(name, sizeof(name), "%s: replayed", tag);
	CHECK(name, !log_pending(core));
	snprintf(name, sizeof(name), "%s: %s", tag, what);
	CHECK(name, fsops_read(fs, f, got, n, 0) == (ssize_t)n && memcmp(got, want, n) == 0);
	return 0;
}

/* fsync each of inos: all through the log, no commit? */
static bool fsyncs_by_log(const uint64_t *inos, int n)
{
	struct log_stats l0, l1;
	struct core_stats s0, s1;

	log_stats(core, &l0);
	mount_stats(core, &s0);
	for (int i = 0; i < n; i++)
		if (fsops_fsync(fs, inos[i], 0) != 0)
			return false;
	mount_stats(core, &s1);
	log_stats(core, &l1);
	return l1.syncs == l0.syncs + (uint64_t)n && s1.commits == s0.commits && log_pending(core);
}

/*
 * Many threads fsyncing files of their own at once (fs/items/log.c): the
 * records batch behind one leader (a 1 ms flush widens the window), the
 * log's arenas are reserved one after another as they fill (64 KiB
 * doubling to 1 MiB), slots carved from them.  No segment or zero fill
 * may land on a segment written before (the recorder checks each write),
 * every fsync goes by the log, and after a crash the log checks clean
 * (fsck) and replays every file's last fsync'd content.
 */
#define CA_THREADS 8
#define CA_ROUNDS 96
#define CA_FILE (64u << 10)
struct ca_arg {
	uint64_t ino;
	unsigned key;
	unsigned char want[CA_FILE];
	uint64_t fsyncs;
	int err;
};

static uint64_t ca_arenas_goal;

static void *ca_thread(void *arg)
{
	struct ca_arg *a = arg;
	unsigned char blk[8192];

	/* at least CA_ROUNDS each, then until the log reserved its fifth
	 * arena (how many records share a batch varies from run to run) */
	for (int r = 0; r < CA_ROUNDS * 8 && !a->err; r++) {
		if (r >= CA_ROUNDS) {
			struct log_stats l;
			log_stats(core, &l);
			if (l.arenas >= ca_arenas_goal)
				break;
		}
		/* 8 KiB at a 4 KiB step: each write overlaps the one before */
		uint64_t at = (uint64_t)(r * 4096) % (CA_FILE - sizeof(blk));
		fill(blk, sizeof(blk), a->key + (unsigned)r);
		if (fsops_write(fs, a->ino, blk, sizeof(blk), at) != (ssize_t)sizeof(blk))
			a->err = -EIO;
		else
			a->err = fsops_fsync(fs, a->ino, r & 1);
		if (!a->err) {
			memcpy(a->want + at, blk, sizeof(blk));
			a->fsyncs++;
		}
	}
	return NULL;
}

static void concurrent_arenas(unsigned k)
{
	static struct ca_arg a[CA_THREADS];
	pthread_t th[CA_THREADS];
	struct log_stats l0, l1;
	struct core_stats s0, s1;
	struct stat st;
	unsigned char *got = malloc(CA_FILE);
	int nth = 0;

	MUST(got ? 0 : -ENOMEM);
	MUST(t_format(img, 0));
	MUST(mount_rw(CORE_FSYNC_LOG));
	for (int i = 0; i < CA_THREADS; i++) {
		char name[16];
		snprintf(name, sizeof(name), "ca%d", i);
		a[i].key = k + 1000 * (unsigned)(i + 1);
		a[i].err = 0;
		a[i].fsyncs = 0;
		fill(a[i].want, CA_FILE, a[i].key);
		MUST(fsops_mknod(fs, ROOT_DIR_INO, name, S_IFREG | 0644, 0, &cr, &st));
		a[i].ino = st.st_ino;
		MUST(fsops_write(fs, a[i].ino, a[i].want, CA_FILE, 0) == CA_FILE ? 0 : -EIO);
	}
	MUST(fsops_sync(fs));
	for (int i = 0; i < core->ndevs; i++)
		dev_set_latency(core->devs[i], DEV_FLUSH, 1000000);
	log_stats(core, &l0);
	mount_stats(core, &s0);
	ca_arenas_goal = l0.arenas + 5;
	nsegw = zero_fills = seg_overlaps = 0;
	__atomic_store_n(&segtrack, true, __ATOMIC_RELEASE);
	for (; nth < CA_THREADS; nth++)
		if (pthread_create(&th[nth], NULL, ca_thread, &a[nth]))
			break;
	for (int i = 0; i < nth; i++)
		pthread_join(th[i], NULL);
	__atomic_store_n(&segtrack, false, __ATOMIC_RELEASE);
	for (int i = 0; i < core->ndevs; i++)
		dev_set_latency(core->devs[i], DEV_FLUSH, 0);
	log_stats(core, &l1);
	mount_stats(core, &s1);
	bool ok = nth == CA_THREADS;
	uint64_t fsyncs = 0;
	for (int i = 0; i < CA_THREADS; i++) {
		ok &= a[i].err == 0;
		fsyncs += a[i].fsyncs;
	}
	printf("# concurrent fsyncs: %llu by the log in %llu batches (%llu segments seen), "
	       "%llu arenas, %zu zero fills, %llu commits\n",
	       (unsigned long long)(l1.syncs - l0.syncs),
	       (unsigned long long)(l1.batches - l0.batches), (unsigned long long)nsegw,
	       (unsigned long long)(l1.arenas - l0.arenas), zero_fills,
	       (unsigned long long)(s1.commits - s0.commits));
	CHECK("concurrent fsyncs: every one returns 0", ok);
	CHECK("concurrent fsyncs: all by the log, no commit",
	      l1.syncs - l0.syncs == fsyncs && s1.commits == s0.commits);
	CHECK("concurrent fsyncs: batched (fewer segments than fsyncs)",
	      l1.batches - l0.batches < fsyncs);
	/* 64 + 128 + 256 + 512 KiB, then 1 MiB arenas */
	CHECK("concurrent fsyncs: arenas up to 1 MiB reserved", l1.arenas - l0.arenas >= 5);
	CHECK("concurrent fsyncs: no segment or zero fill over a segment", seg_overlaps == 0);
	crash();

	MUST(t_open(img, true, &core));
	FILE *devnull = fopen("/dev/null", "w");
	int rc = log_check(core, devnull);
	fclose(devnull);
	mount_close(core);
	core = NULL;
	CHECK("concurrent fsyncs: the log checks clean", rc > 0);
	CHECK("concurrent fsyncs: fsck clean with the log pending", t_fsck(img) == 0);
	MUST(mount_rw(CORE_FSYNC_LOG));
	CHECK("concurrent fsyncs: replayed", !log_pending(core));
	for (int i = 0; i < CA_THREADS; i++) {
		ok = fsops_read(fs, a[i].ino, got, CA_FILE, 0) == CA_FILE &&
		     memcmp(got, a[i].want, CA_FILE) == 0;
		CHECK("concurrent fsyncs: each file as its last fsync left it", ok);
		if (!ok)
			printf("# file %d differs\n", i);
	}
	fsops_unmount(fs);
	fs = NULL;
	MUST(mount_close(core));
	core = NULL;
	CHECK("concurrent fsyncs: fsck clean after the replay", t_fsck(img) == 0);
out:
	free(got);
}

/*
 * The host filesystem out of space under the image (arena_fill_enospc):
 * this test's pwrite64 stands in for libc's (the engine is linked into
 * the test statically, so dev_write's calls come here) and refuses
 * writes with ENOSPC, as a full host filesystem refuses a write into a
 * hole of a sparse image.  An arena's zero fill is a write of at least
 * 64 KiB of zeros (the test's data is never all zeros).
 *   HOST_FILLS:  every zero fill refused, the rest written (room for a
 *                segment, not for an arena);
 *   HOST_BURST:  from the first zero fill, it and the write after it
 *                (the segment) refused, then room again (space freed:
 *                the fsync's fallback commit finds it);
 *   HOST_FULL:   from the first zero fill on, every write refused.
 */
enum { HOST_OK, HOST_FILLS, HOST_BURST, HOST_FULL };
static int host_mode, host_burst_left;
static bool host_full;
static uint64_t host_refused, host_fills_refused;
static pthread_mutex_t host_mu = PTHREAD_MUTEX_INITIALIZER;

ssize_t pwrite64(int fd, const void *buf, size_t n, off64_t off)
{
	if (__atomic_load_n(&tracking, __ATOMIC_ACQUIRE) && n >= 16 &&
	    (!memcmp((const char *)buf + 8, "GlaaSLOG", 8) ||
	     !memcmp((const char *)buf + 8, "GlaaSLG2", 8))) {
		off64_t h = lseek64(fd, off, SEEK_HOLE);
		if (h >= 0 && h < off + (off64_t)n)
			__atomic_fetch_add(&fresh_segs, 1, __ATOMIC_RELAXED);
	}
	if (__atomic_load_n(&host_mode, __ATOMIC_ACQUIRE) != HOST_OK) {
		bool fill = n >= (64u << 10) && all_zero(buf, n), refuse = false;
		pthread_mutex_lock(&host_mu);
		if (fill)
			host_fills_refused++;
		if (host_mode == HOST_FILLS)
			refuse = fill;
		else if (host_mode == HOST_BURST) {
			if (fill && !host_burst_left && !host_refused)
				host_burst_left = 2;
			refuse = host_burst_left > 0;
			host_burst_left -= refuse;
		} else if (host_mode == HOST_FULL) {
			host_full |= fill;
			refuse = host_full;
		}
		host_refused += refuse;
		if (fill && !refuse)
			host_fills_refused--;
		pthread_mutex_unlock(&host_mu);
		if (refuse) {
			errno = ENOSPC;
			return -1;
		}
	}
	return syscall(SYS_pwrite64, fd, buf, n, off);
}

static void host_set(int mode)
{
	pthread_mutex_lock(&host_mu);
	host_refused = host_fills_refused = 0;
	host_burst_left = 0;
	host_full = false;
	__atomic_store_n(&host_mode, mode, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&host_mu);
}

static uint64_t host_get(uint64_t *fills)
{
	pthread_mutex_lock(&host_mu);
	uint64_t r = host_refused;
	if (fills)
		*fills = host_fills_refused;
	pthread_mutex_unlock(&host_mu);
	return r;
}

/* img as a new sparse file of its size: nothing earlier tests wrote
 * left allocated on the host (t_format alone writes only its blocks). */
static int img_sparse(void)
{
	struct stat st;
	int ret = stat(img, &st) ? -errno : 0;

	if (!ret && (truncate(img, 0) || truncate(img, st.st_size)))
		ret = -errno;
	return ret;
}

/* A fresh volume on a sparse image with one committed 64 KiB file af of
 * fill(key): its ino. */
static int af_start(unsigned key, unsigned char *want, uint64_t *ino)
{
	struct stat st;
	int ret = img_sparse();

	if (!ret)
		ret = t_format(img, 0);

	if (!ret)
		ret = mount_rw(CORE_FSYNC_LOG);
	if (!ret)
		ret = fsops_mknod(fs, ROOT_DIR_INO, "af", S_IFREG | 0644, 0, &cr, &st);
	fill(want, 65536, key);
	if (!ret)
		ret = fsops_write(fs, st.st_ino, want, 65536, 0) == 65536 ? 0 : -EIO;
	if (!ret)
		ret = fsops_sync(fs);
	*ino = st.st_ino;
	return ret;
}

/* Write 4 KiB of fill(key) at block i % 16 of ino (and want). */
static ssize_t af_write(uint64_t ino, unsigned char *want, int i, unsigned key)
{
	size_t at = (size_t)(i % 16) * 4096;
	unsigned char blk[4096];

	fill(blk, sizeof(blk), key);
	ssize_t r = fsops_write(fs, ino, blk, sizeof(blk), at);
	if (r == (ssize_t)sizeof(blk))
		memcpy(want + at, blk, sizeof(blk));
	return r;
}

/* After a crash: the log checks clean, fsck too, and af holds `want`
 * (or `alt`, when not NULL) after the replay; fsck clean after. */
static void af_check(const char *what, uint64_t ino, const unsigned char *want,
		     const unsigned char *alt)
{
	unsigned char got[65536];
	char name[160];

	snprintf(name, sizeof(name), "%s: fsck clean before the replay", what);
	CHECK(name, t_fsck(img) == 0);
	if (mount_rw(CORE_FSYNC_LOG)) {
		snprintf(name, sizeof(name), "%s: mount", what);
		CHECK(name, false);
		return;
	}
	bool ok = fsops_read(fs, ino, got, sizeof(got), 0) == (ssize_t)sizeof(got);
	snprintf(name, sizeof(name), "%s: the file as its last fsync that returned 0 left it", what);
	CHECK(name, ok && (!memcmp(got, want, sizeof(got)) || (alt && !memcmp(got, alt, sizeof(got)))));
	fsops_unmount(fs);
	fs = NULL;
	mount_close(core);
	core = NULL;
	snprintf(name, sizeof(name), "%s: fsck clean after the replay", what);
	CHECK(name, t_fsck(img) == 0);
}

/*
 * A new log arena's zero fill failing (fs/items/log.c, arena_fill): the
 * host filesystem under a sparse image out of space.  The fill is best
 * effort — the arena stays the log's, its segments go into the holes —
 * so: with room for segments only, every fsync still goes by the log and
 * is replayed after a crash; with no room for the fill or the segment
 * and room again at once, the batch fails, the fsync commits instead
 * and returns 0 with its data durable, and the log serves the next
 * transaction's fsyncs; with no room at all, the fsync returns an error
 * (never 0), and what earlier fsyncs made durable survives the crash.
 */
static void arena_fill_enospc(unsigned k)
{
	unsigned char want[65536], before[65536];
	struct log_stats l0, l1;
	struct core_stats s0, s1;
	uint64_t f, fills;
	int i, r = 0;

	/* room for segments, none for arenas */
	MUST(af_start(k + 1, want, &f));
	log_stats(core, &l0);
	mount_stats(core, &s0);
	host_set(HOST_FILLS);
	for (i = 0; i < 400 && !r && host_get(&fills) < 2; i++) {
		r = af_write(f, want, i, k + 2 + (unsigned)i) == 4096 ? 0 : -EIO;
		if (!r)
			r = fsops_fsync(fs, f, 1);
	}
	host_get(&fills);
	host_set(HOST_OK);
	log_stats(core, &l1);
	mount_stats(core, &s1);
	printf("# arena fills refused: %llu of %llu arenas, %d fsyncs, %llu by the log\n",
	       (unsigned long long)fills, (unsigned long long)(l1.arenas - l0.arenas), i,
	       (unsigned long long)(l1.syncs - l0.syncs));
	CHECK("arena fill refused (ENOSPC): every fsync returns 0", r == 0);
	CHECK("arena fill refused: two arenas' fills refused", fills == 2 && l1.arenas - l0.arenas == 2);
	CHECK("arena fill refused: every fsync by the log, no commit",
	      l1.syncs - l0.syncs == (uint64_t)i && s1.commits == s0.commits);
	crash();
	af_check("arena fill refused", f, want, NULL);

	/* no room for the fill or the segment, then room again */
	MUST(af_start(k + 3, want, &f));
	host_set(HOST_BURST);
	for (i = 0; i < 400 && !r && !host_get(NULL); i++) {
		log_stats(core, &l0);
		mount_stats(core, &s0);
		r = af_write(f, want, i, k + 4 + (unsigned)i) == 4096 ? 0 : -EIO;
		if (!r)
			r = fsops_fsync(fs, f, 1);
	}
	uint64_t refused = host_get(&fills);
	host_set(HOST_OK);
	log_stats(core, &l1);
	mount_stats(core, &s1);
	CHECK("arena fill and segment refused: the fill and the segment, nothing else",
	      refused == 2 && fills == 1);
	CHECK("arena fill and segment refused: the fsync returns 0", r == 0);
	printf("# arena fill and segment refused: fsync %d: syncs +%llu, fallbacks +%llu, commits +%llu\n",
	       i - 1, (unsigned long long)(l1.syncs - l0.syncs),
	       (unsigned long long)(l1.fallbacks - l0.fallbacks),
	       (unsigned long long)(s1.commits - s0.commits));
	CHECK("arena fill and segment refused: the fsync committed instead",
	      l1.syncs == l0.syncs && l1.fallbacks == l0.fallbacks + 1 && s1.commits == s0.commits + 1);
	/* the commit cleared the failure: the log serves the next fsync */
	log_stats(core, &l0);
	MUST(af_write(f, want, i, k + 500) == 4096 ? 0 : -EIO);
	CHECK("after the fallback commit: the next fsync by the log",
	      fsops_fsync(fs, f, 1) == 0 && (log_stats(core, &l1), l1.syncs == l0.syncs + 1) &&
	      log_pending(core));
	crash();
	af_check("arena fill and segment refused", f, want, NULL);

	/* no room at all from the fill on */
	MUST(af_start(k + 5, want, &f));
	r = 0;
	host_set(HOST_FULL);
	bool zero_after_full = false;
	for (i = 0; i < 400 && !r; i++) {
		memcpy(before, want, sizeof(want));
		r = af_write(f, want, i, k + 6 + (unsigned)i) == 4096 ? 0 : -EIO;
		if (r)
			break;	/* a data write refused: its fsync never ran */
		r = fsops_fsync(fs, f, 1);
		zero_after_full |= r == 0 && host_get(NULL);
	}
	refused = host_get(&fills);
	host_set(HOST_OK);
	/* room again: what the volume does next (a failed commit aborts it) */
	unsigned char scratch[65536];
	ssize_t wr = af_write(f, scratch, i, k + 900);
	int again = fsops_fsync(fs, f, 1);
	printf("# host full, then room again: a write: %zd, an fsync: %d (%s)\n", wr, again,
	       strerror(-again));
	CHECK("host full, then room again: the aborted volume's fsync fails (never a silent 0)",
	      again < 0);
	printf("# host full from an arena fill: fsync %d returned %d (%s), %llu writes refused\n", i,
	       r, strerror(-r), (unsigned long long)refused);
	CHECK("host full: an fsync returns an error", r < 0 && refused > 0 && fills == 1);
	CHECK("host full: no fsync returns 0 once writes are refused", !zero_after_full);
	crash();
	/* the failed fsync's write may be durable or not; every write
	 * before it is (its fsync returned 0) */
	af_check("host full", f, before, want);
out:
	host_set(HOST_OK);
}

/*
 * Zeros over every hole of img in [off, off + len): the image reads the
 * same (a hole reads as zeros), its host now has blocks there.
 */
static int img_allocate(uint64_t off, uint64_t len)
{
	static const uint8_t zeros[4096];
	int fd = open(img, O_RDWR), ret = 0;

	if (fd < 0)
		return -errno;
	for (uint64_t at = off; at < off + len && !ret; at += sizeof(zeros)) {
		off_t h = lseek(fd, (off_t)at, SEEK_HOLE);
		if (h >= 0 && (uint64_t)h < at + sizeof(zeros) &&
		    pwrite(fd, zeros, sizeof(zeros), (off_t)at) != (ssize_t)sizeof(zeros))
			ret = -EIO;
	}
	close(fd);
	return ret;
}

/* No hole of img in [off, off + len). */
static bool img_allocated(uint64_t off, uint64_t len)
{
	int fd = open(img, O_RDONLY);
	off_t h = fd >= 0 ? lseek(fd, (off_t)off, SEEK_HOLE) : -1;

	if (fd >= 0)
		close(fd);
	return h >= 0 && (uint64_t)h >= off + len;
}

/*
 * One arena's worth of fsyncs on a fresh volume (af_start, unmounted and
 * mounted again, prep(at, len) on the image between): 4 KiB writes
 * fsync'd until the log reserves its first arena, with the zero fills
 * recorded, then until a segment lands in [at, at + len) (at 0: where the
 * first fill went), *seg_in when one did.  The arenas reserved and the
 * fills counted in *arenas and *fills (log_stats); the file's ino and
 * content in *ino, want.
 */
static int fill_run(unsigned key, int (*prep)(uint64_t at, uint64_t len), uint64_t at,
		    uint64_t len, unsigned char *want, uint64_t *ino, uint64_t *arenas,
		    uint64_t *fills, bool *in)
{
	struct log_stats l0, l1;
	int ret = af_start(key, want, ino), i = 0;

	fsops_unmount(fs);
	fs = NULL;
	if (!ret)
		ret = mount_close(core);
	core = NULL;
	if (!ret && prep)
		ret = prep(at, len);
	if (!ret)
		ret = mount_rw(CORE_FSYNC_LOG);
	if (ret)
		return ret;
	log_stats(core, &l0);
	l1 = l0;
	fill_bytes = fill_at = seg_in = 0;
	seg_lo = at;
	seg_hi = at + len;
	filltrack = true;
	for (; i < 128 && !ret && !seg_in && l1.arenas <= l0.arenas + 1; i++) {
		ret = af_write(*ino, want, i, key + 1 + (unsigned)i) == 4096 ? 0 : -EIO;
		if (!ret)
			ret = fsops_fsync(fs, *ino, 1);
		log_stats(core, &l1);
		if (!seg_hi && fill_bytes) {
			seg_lo = fill_at;
			seg_hi = fill_at + LOG_ARENA_MIN;
		}
	}
	filltrack = false;
	*arenas = l1.arenas - l0.arenas;
	*fills = l1.fills - l0.fills;
	*in = seg_in > 0;
	return ret;
}

/* A 4 KiB hole at 32 KiB into [at, at + len), the rest allocated. */
static int img_allocate_but_one(uint64_t at, uint64_t len)
{
	int ret = img_allocate(at, len), fd = open(img, O_RDWR);

	if (fd < 0)
		return -errno;
	if (!ret && fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			      (off_t)(at + (32u << 10)), 4096) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

/*
 * A new arena's zero fill (fs/items/log.c, arena_fill) only where the
 * image has a hole under it.  The same fresh volume and fsyncs three
 * times: over the never-written space of a sparse image, the arena is
 * written with zeros (its bytes, and no hole there after); over space
 * the image file already has blocks for, not a byte of fill; with one
 * 4 KiB hole inside it, the fill again.  Each time the log reserves its
 * first arena of the transaction at the same place (checked: the
 * segment that took it lands in it), and a crash replays the fsyncs.
 */
static void arena_fill_holes(unsigned k)
{
	unsigned char want[65536];
	uint64_t f, arenas, fills, at;
	bool in;

	MUST(fill_run(k + 1, NULL, 0, 0, want, &f, &arenas, &fills, &in));
	at = fill_at;
	printf("# arena over holes: %llu arena, %llu zero-fill bytes at %llu\n",
	       (unsigned long long)arenas, (unsigned long long)fill_bytes, (unsigned long long)at);
	CHECK("arena over holes: one arena, written with zeros (its 64 KiB)",
	      arenas == 1 && fills == 1 && fill_bytes == LOG_ARENA_MIN);
	CHECK("arena over holes: a segment written inside it", in);
	CHECK("arena over holes: no hole left under it", img_allocated(at, LOG_ARENA_MIN));
	crash();
	af_check("arena over holes", f, want, NULL);

	MUST(fill_run(k + 1, img_allocate, at, LOG_ARENA_MIN, want, &f, &arenas, &fills, &in));
	printf("# arena over allocated space: %llu arena, %llu zero-fill bytes\n",
	       (unsigned long long)arenas, (unsigned long long)fill_bytes);
	CHECK("arena over allocated space: the same place (a segment written inside it)",
	      arenas == 1 && in);
	CHECK("arena over allocated space: no zero fill written", fill_bytes == 0 && fills == 0);
	crash();
	af_check("arena over allocated space", f, want, NULL);

	MUST(fill_run(k + 1, img_allocate_but_one, at, LOG_ARENA_MIN, want, &f, &arenas, &fills,
		      &in));
	printf("# arena over one 4 KiB hole: %llu arena, %llu zero-fill bytes at %llu\n",
	       (unsigned long long)arenas, (unsigned long long)fill_bytes,
	       (unsigned long long)fill_at);
	CHECK("arena over one hole: the same place (a segment written inside it)",
	      arenas == 1 && in);
	CHECK("arena over one hole: written with zeros",
	      fills == 1 && fill_bytes == LOG_ARENA_MIN && fill_at == at);
	CHECK("arena over one hole: no hole left under it", img_allocated(at, LOG_ARENA_MIN));
	crash();
	af_check("arena over one hole", f, want, NULL);
out:
	return;
}

/* Write segment h (its checksum made again) at logical `at` of the closed
 * volume on img, every copy: 0 or -errno. */
static int seg_put(struct log_seg_hdr *h, uint64_t at)
{
	struct chunk_copy cp[CHUNK_MAX_STRIPES];
	struct core *c = NULL;
	int n, ret = t_open(img, true, &c), fd;

	if (ret)
		return ret;
	n = chunk_map_lookup(c, at, h->len, cp, NULL);
	h->bytenr = at;
	h->csum = crc32c(0, (const uint8_t *)h + 4, h->len - 4);
	fd = open(img, O_RDWR);
	for (int i = 0; i < n && fd >= 0 && !ret; i++)
		ret = pwrite(fd, h, h->len, (off_t)cp[i].physical) == (ssize_t)h->len ? 0 : -EIO;
	if (fd >= 0)
		close(fd);
	mount_close(c);
	return n <= 0 ? -ENOENT : fd < 0 ? -errno : ret;
}

/*
 * fsck sees a log segment written over an earlier one of its chain
 * (log_check's chain_geometry).  A log of two segments (two files'
 * fsyncs), then, after the crash, the image changed two ways: the second
 * segment's `next` made to name the first (the next fsync would have
 * written over the log), and the second segment written over the first,
 * in the slot (a chain of seq 2 where seq 1 belongs: replay finds no log
 * there, and everything both fsyncs made durable is gone).  Both read
 * as a valid log / no log on the old code (log_check > 0 / 0, fsck
 * clean); now log_check fails and fsck is unclean.
 */
static void chain_overwritten(unsigned k)
{
	struct log_seg_hdr *s1 = NULL, *s2 = NULL;
	uint64_t a, b;
	FILE *devnull = fopen("/dev/null", "w");
	int rc = 0;

	MUST(t_format(img, 0));
	MUST(mount_rw(CORE_FSYNC_LOG));
	MUST(put(ROOT_DIR_INO, "ca", 3000, k + 11, &a));
	MUST(put(ROOT_DIR_INO, "cb", 3000, k + 12, &b));
	MUST(fsops_sync(fs));
	unsigned char blk[5000];
	fill(blk, sizeof(blk), k + 13);
	MUST(fsops_write(fs, a, blk, sizeof(blk), 0) == (ssize_t)sizeof(blk) ? 0 : -EIO);
	MUST(fsops_fsync(fs, a, 0));
	fill(blk, sizeof(blk), k + 14);
	MUST(fsops_write(fs, b, blk, sizeof(blk), 0) == (ssize_t)sizeof(blk) ? 0 : -EIO);
	MUST(fsops_fsync(fs, b, 0));
	crash();
	MUST(t_open(img, true, &core));
	rc = log_check(core, devnull);
	if (core->sb.log_slot && !log_read_seg(core, core->sb.log_slot, &s1) && s1->next)
		log_read_seg(core, s1->next, &s2);
	mount_close(core);
	core = NULL;
	printf("# chain: log_check %d, segments at %llu and %llu\n", rc,
	       s1 ? (unsigned long long)s1->bytenr : 0ull, s2 ? (unsigned long long)s2->bytenr : 0ull);
	CHECK("chain: two fsyncs, a valid log of two segments", rc == 2 && s1 && s2 &&
	      s1->seq == 1 && s2->seq == 2 && s2->prev == s1->bytenr);
	MUST(s1 && s2 ? 0 : -ENOENT);
	CHECK("chain: fsck clean as it is", t_fsck(img) == 0);

	/* the second segment's next slot over the first segment */
	uint64_t at2 = s2->bytenr, next2 = s2->next, len2 = s2->next_len;
	s2->next = s1->bytenr;
	s2->next_len = s1->len;
	MUST(seg_put(s2, at2));
	MUST(t_open(img, true, &core));
	rc = log_check(core, devnull);
	mount_close(core);
	core = NULL;
	printf("# chain: next over the first segment: log_check %d\n", rc);
	CHECK("chain: a next slot over an earlier segment: log_check fails", rc == -EUCLEAN);
	CHECK("chain: a next slot over an earlier segment: fsck unclean", t_fsck(img) != 0);

	/* the second segment (its own next again) written over the first */
	s2->next = next2;
	s2->next_len = len2;
	MUST(seg_put(s2, at2));
	MUST(s2->len <= s1->len ? 0 : -ENOSPC);
	s2->prev = 0;
	MUST(seg_put(s2, s1->bytenr));
	MUST(t_open(img, true, &core));
	bool pending = log_pending(core);
	rc = log_check(core, devnull);
	mount_close(core);
	core = NULL;
	printf("# chain: seq 2 in the slot: pending %d, log_check %d\n", pending, rc);
	CHECK("chain: a later segment over the first: log_check fails", rc == -EUCLEAN);
	CHECK("chain: a later segment over the first: fsck unclean", t_fsck(img) != 0);
out:
	if (core)
		mount_close(core);
	core = NULL;
	free(s1);
	free(s2);
	if (devnull)
		fclose(devnull);
}

/*
 * A raid1 log whose one-block segment is bad on copy 0 past its header
 * (a bad sector in the records): replay reads it from copy 1 and brings
 * the fsync back.  Failed on the old code: log_read_seg checked a
 * one-block segment's body only on the copy whose header held, so the
 * log read as torn at its first segment and the fsync was lost
 * (test_powerloss convert_keep_log found it: a balance keeping copy 0).
 */
static void raid1_seg_body_bad(unsigned k)
{
	static char i1[256], i2[256];
	const char *devs2[2] = { i1, i2 };
	struct format_opts fo = { .label = "unit", .force = true,
				  .meta_profile = CORE_PROFILE_RAID1,
				  .data_profile = CORE_PROFILE_RAID1 };
	struct chunk_copy cp[CHUNK_MAX_STRIPES];
	unsigned char old[8192], blk[4096], got[8192];
	char bad[256] = "";
	struct core_opts o;
	struct log_stats l;
	struct stat st;
	uint64_t f, ph = 0;
	int r;

	i1[0] = i2[0] = 0;
	MUST(t_image(i1, sizeof(i1), 256ull << 20));
	MUST(t_image(i2, sizeof(i2), 256ull << 20));
	MUST(mount_format(devs2, 2, &fo));
	core_opts_default(&o);
	o.commit_interval_s = 3600;
	MUST(mount_open(devs2, 2, &o, &core));
	MUST(fsops_mount(core, &o, &fs));
	MUST(fsops_mknod(fs, ROOT_DIR_INO, "sb", S_IFREG | 0644, 0, &cr, &st));
	f = st.st_ino;
	fill(old, sizeof(old), k + 40);
	MUST(fsops_write(fs, f, old, sizeof(old), 0) == (ssize_t)sizeof(old) ? 0 : -EIO);
	MUST(fsops_sync(fs));
	fill(blk, sizeof(blk), k + 41);
	MUST(fsops_write(fs, f, blk, sizeof(blk), 0) == (ssize_t)sizeof(blk) ? 0 : -EIO);
	MUST(fsops_fsync(fs, f, 1));	/* one segment, in the slot */
	crash();
	o.readonly = true;
	r = mount_open(devs2, 2, &o, &core);
	o.readonly = false;
	MUST(r);
	if (core->sb.log_slot && chunk_map_lookup(core, core->sb.log_slot, 4096, cp, NULL) == 2) {
		snprintf(bad, sizeof(bad), "%s", cp[0].dev->path);
		ph = cp[0].physical;
	}
	mount_close(core);
	core = NULL;
	MUST(bad[0] ? 0 : -ENOENT);
	MUST(t_poke(bad, ph + 300, 0x5a));	/* past the 104-byte header */
	r = mount_open(devs2, 2, &o, &core);
	if (!r)
		r = fsops_mount(core, &o, &fs);
	CHECK("raid1, a segment's body bad on copy 0: the replay mounts", r == 0);
	if (!r) {
		log_stats(core, &l);
		memcpy(old, blk, sizeof(blk));
		CHECK("raid1, a segment's body bad on copy 0: the fsync'd block is back (read from copy 1)",
		      fsops_read(fs, f, got, sizeof(got), 0) == (ssize_t)sizeof(got) &&
		      memcmp(got, old, sizeof(got)) == 0 && l.rejected == 0 && !log_pending(core));
	}
out:
	if (fs)
		fsops_unmount(fs);
	fs = NULL;
	if (core)
		mount_close(core);
	core = NULL;
	if (i1[0])
		unlink(i1);
	if (i2[0])
		unlink(i2);
}

/*
 * log_fsync's early return when it cannot join a transaction (no room
 * for its metadata: txn_join -ENOSPC): the caller commits instead, and
 * that fsync counts in log_fallbacks like every other that commits
 * (fails on 5ab9529^: +0).  A 64 MiB volume of its own: the file's
 * change first, then fallocate until its data chunks hold every
 * unallocated byte, then items in the running transaction until a join
 * of one item is refused; nothing is committed (a crash ends it).
 */
/*
 * A file with names past a full INODE_REF (extended refs, fs/items/iref.h)
 * at 64 KiB nodes, where that item alone holds up to 64 KiB.  A link and
 * its fsync commit (names changed); then data fsyncs of the file go by the
 * log, in records that hold no back reference (replay keeps the tree's:
 * the whole INODE_REF in each made the record pass LOG_RECORD_COMMIT and
 * every fsync commit).  After a crash the replay keeps every name, nlink
 * and the fsync'd bytes.
 */
#define MN_NAMES 900
static void many_names_fsync(unsigned k)
{
	char keep[256], name[128];
	unsigned char blk[8192];
	struct stat st;
	uint64_t f, d;
	int r = 0, bad = 0;

	snprintf(keep, sizeof(keep), "%s", img);
	MUST(t_image(img, sizeof(img), 256ull << 20));
	MUST(t_format(img, 65536));
	MUST(mount_rw(CORE_FSYNC_LOG));
	MUST(fsops_mkdir(fs, ROOT_DIR_INO, "d", 0755, &cr, &st));
	d = st.st_ino;
	MUST(put(d, "f", 8192, k + 40, &f));
	MUST(fsops_sync(fs));
	for (int i = 0; i < MN_NAMES && !r; i++) {
		snprintf(name, sizeof(name), "%04d-%0100d", i, i);
		r = fsops_link(fs, f, d, name, &st);
		if (!r)
			fsops_forget(fs, f, 1);
	}
	CHECK("many names: 900 links of 105 bytes (past a 64 KiB INODE_REF)", r == 0);
	struct core_stats s0, s1;
	mount_stats(core, &s0);
	MUST(fsops_fsync(fs, f, 0));
	mount_stats(core, &s1);
	CHECK("many names: the fsync after the links commits", s1.commits > s0.commits &&
	      !log_pending(core) && (core->sb.features & SUPER_FEAT_EXTREF));
	fill(blk, sizeof(blk), k + 41);
	MUST(fsops_write(fs, f, blk, sizeof(blk), 0) == (ssize_t)sizeof(blk) ? 0 : -EIO);
	CHECK("many names: a data fsync of the file goes by the log", fsyncs_by_log(&f, 1));
	crash();
	MUST(mount_rw(CORE_FSYNC_LOG));		/* replays */
	CHECK("many names: replayed: nlink and the fsync'd bytes",
	      fsops_getattr(fs, f, &st) == 0 && st.st_nlink == MN_NAMES + 1 &&
	      holds(d, "f", sizeof(blk), k + 41));
	for (int i = 0; i < MN_NAMES; i += 7) {
		snprintf(name, sizeof(name), "%04d-%0100d", i, i);
		if (fsops_lookup(fs, d, name, &st) || st.st_ino != f)
			bad++;
		else
			fsops_forget(fs, f, 1);
	}
	CHECK("many names: replayed: every name there", bad == 0);
	snprintf(name, sizeof(name), "%04d-%0100d", MN_NAMES - 1, MN_NAMES - 1);
	CHECK("many names: replayed: an extended ref unlinks",
	      fsops_unlink(fs, d, name) == 0 && fsops_getattr(fs, f, &st) == 0 &&
	      st.st_nlink == MN_NAMES);
	MUST(fsops_sync(fs));
	fsops_unmount(fs);
	fs = NULL;
	MUST(mount_close(core));
	core = NULL;
	char bin[512], cmd[2400];
	if (t_fsck_bin(bin, sizeof(bin))) {
		printf("SKIP: many names: fsck.glassfs not built\n");
	} else {
		/* the items checks too (t_fsck's -c leaves them out) */
		snprintf(cmd, sizeof(cmd), "%s -n %s 2>&1 | grep -v '^fsck.glassfs: ' | head -5; "
			 "exit $(%s -n %s >/dev/null 2>&1; echo $?)", bin, img, bin, img);
		int fr = system(cmd);
		CHECK("many names: fsck clean after the replay", WIFEXITED(fr) && !WEXITSTATUS(fr));
	}
out:
	if (fs && core)
		crash();
	unlink(img);
	snprintf(img, sizeof(img), "%s", keep);
}

static void join_enospc(void)
{
	char keep[256];
	unsigned char blk[4096];
	struct log_stats l0, l1;
	struct stat st;
	uint64_t f, big, n = 0;
	int r = 0, fr = 0, joins_refused = 0;

	snprintf(keep, sizeof(keep), "%s", img);
	MUST(t_image(img, sizeof(img), 64ull << 20));
	MUST(t_format(img, 0));
	MUST(mount_rw(CORE_FSYNC_LOG));
	MUST(fsops_mknod(fs, ROOT_DIR_INO, "f", S_IFREG | 0644, 0, &cr, &st));
	f = st.st_ino;
	MUST(fsops_mknod(fs, ROOT_DIR_INO, "big", S_IFREG | 0644, 0, &cr, &st));
	big = st.st_ino;
	MUST(fsops_sync(fs));
	fill(blk, sizeof(blk), 77);
	MUST(fsops_write(fs, f, blk, sizeof(blk), 0) == (ssize_t)sizeof(blk) ? 0 : -EIO);
	for (uint64_t off = 0; !fr && off < (64ull << 20); off += 1u << 20)
		fr = fsops_fallocate(fs, big, 0, off, 1u << 20);
	/* metadata full: joins of fewer and fewer items, down to one */
	for (uint64_t batch = 256; batch;) {
		r = t_insert_items(core, 1000000 + n, batch, 200);
		if (!r)
			n += batch;
		else if (r == -ENOSPC)
			batch /= 4;	/* 1, then 0: a join of one was refused */
		else
			break;
	}
	if (r == -ENOSPC) {
		struct txn *t;
		int jr = txn_join(core, 1, 0, &t);
		if (!jr)
			txn_end(t);
		joins_refused = jr == -ENOSPC;
	}
	printf("# join ENOSPC: fallocate ended %d, %llu items inserted, last %d, a join of one "
	       "item refused: %d\n", fr, (unsigned long long)n, r, joins_refused);
	CHECK("join ENOSPC: the data chunks are full and a join of one item is refused",
	      fr == -ENOSPC && joins_refused == 1 && !core->aborted);
	log_stats(core, &l0);
	r = log_fsync(fs, f);
	log_stats(core, &l1);
	printf("# join ENOSPC: log_fsync %d, syncs +%llu, fallbacks +%llu\n", r,
	       (unsigned long long)(l1.syncs - l0.syncs),
	       (unsigned long long)(l1.fallbacks - l0.fallbacks));
	CHECK("join ENOSPC: log_fsync says 'commit instead' and counts a fallback",
	      r == 1 && l1.syncs == l0.syncs && l1.fallbacks == l0.fallbacks + 1);
	crash();
out:
	if (fs && core)
		crash();
	unlink(img);
	snprintf(img, sizeof(img), "%s", keep);
}

int main(void)
{
	struct stat st;
	uint64_t d, a, b, c, e, big;
	unsigned char *buf = malloc(1 << 20);
	char val[64];

	t_seed_init();
	unsigned k = t_rand();
	MUST(t_image(img, sizeof(img), 1ull << 30));	/* 128 MiB data chunks: room for a 48 MiB extent */
	MUST(t_format(img, 0));

	/* committed state: a directory with b (to append to) and e (to shrink) */
	MUST(mount_rw(CORE_FSYNC_LOG));
	MUST(fsops_mkdir(fs, ROOT_DIR_INO, "d", 0755, &cr, &st));
	d = st.st_ino;
	MUST(put(d, "b", 10000, k + 1, &b));
	MUST(put(d, "e", 300000, k + 2, &e));
	MUST(put(d, "gone", 100, k + 3, &c));
	MUST(fsops_sync(fs));
	CHECK("no log after a commit", !log_pending(core));
	struct core_stats sc;
	mount_stats(core, &sc);

	/* after the last commit: a new file a (several extents), an append to
	 * b plus an xattr, e truncated, a big new file, each fsync'd; then
	 * an unsynced file c and an unsynced append to a */
	MUST(put(d, "a", 70000, k + 4, &a));
	fill(buf, 70000, k + 4);	/* rewrite a range: a second extent */
	MUST(fsops_write(fs, a, buf + 65000, 5000, 65000));
	MUST(fsops_fsync(fs, a, 0));
	CHECK("fsync of a new file writes the log", log_pending(core));
	fill(buf, 60000, k + 1);
	MUST(fsops_write(fs, b, buf + 10000, 50000, 10000));
	MUST(fsops_setxattr(fs, b, "user.log", "yes", 3, 0));
	MUST(fsops_fsync(fs, b, 1));
	struct stat in = { .st_size = 4097 };
	MUST(fsops_setattr(fs, e, &in, FSOPS_SET_SIZE, &st));
	MUST(fsops_fsync(fs, e, 0));
	MUST(put(d, "big", 900000, k + 5, &big));
	MUST(fsops_fsync(fs, big, 0));
	struct core_stats s0;
	mount_stats(core, &s0);
	MUST(put(d, "c", 5000, k + 6, &c));
	fill(buf, 10, k + 9);
	MUST(fsops_write(fs, a, buf, 10, 70000));
	struct log_stats ls;
	log_stats(core, &ls);
	CHECK("four fsyncs served by the log", ls.syncs == 4);
	CHECK("no commit for them", s0.commits == sc.commits);
	crash();

	/* read-only: the last commit, the log pending and valid */
	MUST(t_open(img, true, &core));
	FILE *devnull = fopen("/dev/null", "w");
	int rc = log_check(core, devnull);
	fclose(devnull);
	CHECK("log_check: pending log with 4 records", rc == 4);
	mount_close(core);
	core = NULL;

	/* read-write: replayed */
	MUST(mount_rw(CORE_FSYNC_LOG));
	CHECK("replay commits and clears the log", !log_pending(core));
	CHECK("new file a: fsync'd state", holds(d, "a", 70000, k + 4));
	CHECK("b: appended data", holds(d, "b", 60000, k + 1));
	CHECK("b: xattr", fsops_getxattr(fs, b, "user.log", val, sizeof(val)) == 3 &&
	      memcmp(val, "yes", 3) == 0);
	CHECK("e: truncated", holds(d, "e", 4097, k + 2));
	CHECK("big new file", holds(d, "big", 900000, k + 5));
	CHECK("unsynced file c: absent", fsops_lookup(fs, d, "c", &st) == -ENOENT);
	CHECK("untouched file: kept", holds(d, "gone", 100, k + 3));

	/* fsync=commit: a full commit, no log */
	fsops_unmount(fs);
	fs = NULL;
	MUST(mount_close(core));
	core = NULL;
	MUST(mount_rw(CORE_FSYNC_COMMIT));
	MUST(fsops_write(fs, b, buf, 100, 0));
	mount_stats(core, &s0);
	MUST(fsops_fsync(fs, b, 0));
	struct core_stats s1;
	mount_stats(core, &s1);
	CHECK("fsync=commit: a commit, no log", s1.commits == s0.commits + 1 && !log_pending(core));

	/* a rename is not covered: a full commit */
	fsops_unmount(fs);
	fs = NULL;
	MUST(mount_close(core));
	core = NULL;
	MUST(mount_rw(CORE_FSYNC_LOG));
	MUST(fsops_rename(fs, d, "gone", d, "renamed", 0));
	mount_stats(core, &s0);
	MUST(fsops_lookup(fs, d, "renamed", &st));
	MUST(fsops_fsync(fs, st.st_ino, 0));
	fsops_forget(fs, st.st_ino, 1);
	mount_stats(core, &s1);
	CHECK("fsync after a rename: a full commit", s1.commits == s0.commits + 1 && !log_pending(core));
	crash();
	MUST(mount_rw(CORE_FSYNC_LOG));
	CHECK("renamed file under its new name", holds(d, "renamed", 100, k + 3));

	/*
	 * A file of many committed extents (each 4 KiB block its own,
	 * written back to front so none can grow another), then one block
	 * rewritten and one punched out: the record holds the changed items
	 * and runs of the unchanged ones, so the log serves the fsync however
	 * many extents the file has (a list of their offsets outgrew a record
	 * past 4096 extents and every fsync committed).  The punched block
	 * splits the run around it: replay must not keep the committed
	 * extent that was there.
	 */
	{
		enum { NB = 6000, BSZ = 4096 };
		unsigned char *want = malloc((size_t)NB * BSZ), *got = malloc((size_t)NB * BSZ);
		uint64_t f;
		MUST(want && got ? 0 : -ENOMEM);
		MUST(extents_file(d, "frag", want, NB, BSZ, k + 7, &f));
		fill(want + 3000 * BSZ, BSZ, k + 8);
		MUST(fsops_write(fs, f, want + 3000 * BSZ, BSZ, 3000 * BSZ) == BSZ ? 0 : -EIO);
		MUST(fsops_fallocate(fs, f, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				     100 * BSZ, BSZ));
		memset(want + 100 * BSZ, 0, BSZ);
		struct log_stats w0, w1;
		log_stats(core, &w0);
		CHECK("fsync of a file of 6000 extents: the log, no commit", fsyncs_by_log(&f, 1));
		log_stats(core, &w1);
		/* the leaves the last commit wrote are one run each, unread:
		 * only the leaves the write and the punch copied are walked */
		printf("# fsync of a file of 6000 extents, 2 changed: %llu items read\n",
		       (unsigned long long)(w1.walked - w0.walked));
		CHECK("6000 extents: record capture reads the changed leaves, not every item",
		      w1.walked - w0.walked < 1000);
		MUST(crash_reads_back("6000 extents", "rewritten block, punched block and the rest",
				      f, want, got, (size_t)NB * BSZ));
		free(want);
		free(got);
	}

	/*
	 * fio's --fsync=1 in one transaction: 60 changes to a file of 6000
	 * extents, each fsync'd — 4 KiB writes, writes across a block edge
	 * (pieces of committed extents left beside them), holes punched (one
	 * of 2000 extents, more than the log keeps notes for), a range
	 * fallocated and written in place, a truncate.  Each record
	 * holds every change since the last commit, but its capture reads
	 * only what changed since the file's last fsync (the inode's last
	 * capture is kept, log_note_extent): reading the leaves this
	 * transaction copied, at every fsync, read ~190 items more per leaf
	 * copied (~270,000 for these 60; 1,300 leaf searches and 14,500
	 * items per fsync after fio's random phase, most of its fsync time).
	 * The crash then finds the last record whole: every change is back.
	 */
	{
		enum { NB = 6000, BSZ = 4096, OPS = 60 };
		size_t fl = (size_t)NB * BSZ;
		unsigned char *want = calloc((size_t)NB + 64, BSZ), *got = malloc(((size_t)NB + 64) * BSZ);
		uint64_t f;
		MUST(want && got ? 0 : -ENOMEM);
		MUST(extents_file(d, "fsyncrand", want, NB, BSZ, k + 30, &f));
		struct core_stats s0, s1;
		struct log_stats l0, l1;
		mount_stats(core, &s0);
		log_stats(core, &l0);
		int byl = 0;
		for (int i = 0; i < OPS; i++) {
			unsigned r = t_rand(), op = r % 10;
			size_t blk = (size_t)(t_rand() % (NB - 16));
			if (i == OPS / 3) {		/* 2000 extents punched: too many to note */
				MUST(fsops_fallocate(fs, f, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
						     1000 * BSZ, 2000 * BSZ));
				memset(want + 1000 * BSZ, 0, 2000 * BSZ);
			} else if (i == OPS / 2) {	/* truncate 8 blocks off */
				struct stat in = { .st_size = (off_t)(fl - 8 * BSZ) };
				MUST(fsops_setattr(fs, f, &in, FSOPS_SET_SIZE, NULL));
				fl -= 8 * BSZ;
				memset(want + fl, 0, 8 * BSZ);
			} else if (op < 5) {		/* a block */
				fill(want + blk * BSZ, BSZ, k + 40 + (unsigned)i);
				MUST(fsops_write(fs, f, want + blk * BSZ, BSZ, blk * BSZ) == BSZ ? 0 : -EIO);
			} else if (op < 7) {		/* across a block edge */
				size_t at = blk * BSZ + 2048, n = 6144;
				fill(want + at, n, k + 40 + (unsigned)i);
				MUST(fsops_write(fs, f, want + at, n, at) == (ssize_t)n ? 0 : -EIO);
			} else if (op < 9) {		/* a hole */
				size_t n = (1 + r % 3) * BSZ;
				MUST(fsops_fallocate(fs, f, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
						     blk * BSZ, n));
				memset(want + blk * BSZ, 0, n);
			} else {			/* fallocated, then half written in place */
				MUST(fsops_fallocate(fs, f, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
						     blk * BSZ, 4 * BSZ));
				MUST(fsops_fallocate(fs, f, FALLOC_FL_KEEP_SIZE, blk * BSZ, 4 * BSZ));
				memset(want + blk * BSZ, 0, 4 * BSZ);
				fill(want + blk * BSZ + BSZ, 2 * BSZ, k + 40 + (unsigned)i);
				MUST(fsops_write(fs, f, want + blk * BSZ + BSZ, 2 * BSZ, blk * BSZ + BSZ) ==
				     2 * BSZ ? 0 : -EIO);
			}
			byl += fsyncs_by_log(&f, 1);
		}
		mount_stats(core, &s1);
		log_stats(core, &l1);
		printf("# %d changes to a file of 6000 extents, each fsync'd: %d by the log, "
		       "%llu commits, %llu items read, %llu segment bytes\n", OPS, byl,
		       (unsigned long long)(s1.commits - s0.commits),
		       (unsigned long long)(l1.walked - l0.walked),
		       (unsigned long long)(l1.bytes - l0.bytes));
		CHECK("60 changes, each fsync'd: every fsync by the log, no commit",
		      byl == OPS && s1.commits == s0.commits);
		CHECK("60 changes, each fsync'd: capture reads what changed since the last fsync "
		      "(< 400 items per fsync), not every leaf the transaction copied",
		      l1.walked - l0.walked < OPS * 400);
		crash();
		MUST(mount_rw(CORE_FSYNC_LOG));
		CHECK("60 changes: replayed", !log_pending(core));
		MUST(fsops_lookup(fs, d, "fsyncrand", &st));
		CHECK("60 changes: the size after the truncate", (size_t)st.st_size == fl);
		CHECK("60 changes: every write, hole, in-place fill and the truncate",
		      fsops_read(fs, f, got, fl, 0) == (ssize_t)fl && memcmp(got, want, fl) == 0);
		fsops_forget(fs, st.st_ino, 1);
		free(want);
		free(got);
	}

	/*
	 * fio's --fsync=1 for longer: 400 4 KiB random writes into a
	 * committed file of 2000 extents, each fsync'd, in one transaction.
	 * A record holding every change of the file since the last commit
	 * grew by ~200 bytes a write (16.5 KB on average under fio), past
	 * LOG_RECORD_COMMIT every ~160 fsyncs, and that fsync committed
	 * (the tail of fio's fsync latency: 576 nodes written and flushed).
	 * A delta record (LOG_REC_DELTA) holds what changed since the file's
	 * last fsync: its inode item and the write's extent items and
	 * checksums, one 4 KiB log block per fsync, no commit.  Then a crash
	 * replays the whole record and the 399 deltas after it in order.
	 */
	{
		enum { NB = 2000, BSZ = 4096, OPS = 400 };
		size_t fl = (size_t)NB * BSZ;
		unsigned char *want = malloc(fl), *got = malloc(fl);
		uint64_t f;
		MUST(want && got ? 0 : -ENOMEM);
		MUST(extents_file(d, "fsyncdb", want, NB, BSZ, k + 50, &f));
		struct core_stats s0, s1;
		struct log_stats l0, l1;
		mount_stats(core, &s0);
		log_stats(core, &l0);
		fresh_segs = 0;
		__atomic_store_n(&tracking, true, __ATOMIC_RELEASE);
		int byl = 0;
		for (int i = 0; i < OPS; i++) {
			size_t blk = (size_t)(t_rand() % NB);
			fill(want + blk * BSZ, BSZ, k + 60 + (unsigned)i);
			MUST(fsops_write(fs, f, want + blk * BSZ, BSZ, blk * BSZ) == BSZ ? 0 : -EIO);
			byl += fsyncs_by_log(&f, 1);
		}
		__atomic_store_n(&tracking, false, __ATOMIC_RELEASE);
		mount_stats(core, &s1);
		log_stats(core, &l1);
		printf("# %d fsyncs of 4 KiB random writes into 2000 extents: %d by the log, %llu "
		       "commits, %llu segment bytes, %llu record bytes (%llu per fsync), %llu deltas, "
		       "%llu segments written into a hole of the image (%llu arenas)\n",
		       OPS, byl, (unsigned long long)(s1.commits - s0.commits),
		       (unsigned long long)(l1.bytes - l0.bytes),
		       (unsigned long long)(l1.rec_bytes - l0.rec_bytes),
		       (unsigned long long)((l1.rec_bytes - l0.rec_bytes) / OPS),
		       (unsigned long long)(l1.deltas - l0.deltas), (unsigned long long)fresh_segs,
		       (unsigned long long)(l1.arenas - l0.arenas));
		CHECK("400 fsyncs of random writes: every one by the log, no commit",
		      byl == OPS && s1.commits == s0.commits);
		CHECK("400 fsyncs of random writes: one 4 KiB log block each (the change since "
		      "the last fsync, not every change since the commit)",
		      l1.bytes - l0.bytes <= (uint64_t)OPS * 4096);
		/* the log's 1 MiB arenas are written with zeros when reserved
		 * over a hole: an image file's host allocates once per arena,
		 * not per fsync */
		CHECK("400 fsyncs of random writes: log segments go where the image has blocks "
		      "(< 4 of 400 into a hole)", fresh_segs < 4);
		MUST(crash_reads_back("400 fsyncs of random writes", "every write back", f, want, got, fl));
		free(want);
		free(got);
	}

	/*
	 * fio's --fsync=1 longer still: 2,500 fsyncs of 4 KiB writes, each to
	 * a block with no written block beside it, in a committed file of
	 * 6,000 extents.  Each write splits a run of the file's kept capture
	 * around its item: two entries more a write, ~5,000 in all.  A
	 * capture of 4,096 entries asked for a commit (the sorted array it
	 * was moved every entry after a change), every ~1,300-1,500 of
	 * fio's fsyncs; the capture in chunks (log_cseq.c) keeps going, its
	 * memory bounded (LOG_ICACHE_BYTES), until the log's size or the
	 * commit interval asks.  Then a crash replays the whole record and
	 * the deltas after it.
	 */
	{
		enum { NB = 6000, BSZ = 4096, OPS = 2500 };
		size_t fl = (size_t)NB * BSZ;
		unsigned char *want = malloc(fl), *got = malloc(fl);
		uint64_t f;
		MUST(want && got ? 0 : -ENOMEM);
		MUST(extents_file(d, "fsyncdb2", want, NB, BSZ, k + 70, &f));
		/* without GLASSFS_LOG_VERIFY (tests/run.sh sets it): its fresh
		 * capture at every fsync reads every item and checksum of this
		 * transaction, 2,500 times (40 s here); the kept capture in
		 * chunks is checked so by the 400 fsyncs above (800 entries,
		 * a dozen chunks), this one by the replay */
		char *verify = getenv("GLASSFS_LOG_VERIFY");
		verify = verify ? strdup(verify) : NULL;
		unsetenv("GLASSFS_LOG_VERIFY");
		crash();
		MUST(mount_rw(CORE_FSYNC_LOG));
		struct core_stats s0, s1;
		struct log_stats l0, l1;
		mount_stats(core, &s0);
		log_stats(core, &l0);
		/* even blocks in a random order: no write lands beside another,
		 * so each splits a run in two around its item */
		size_t slot[NB / 2];
		for (size_t i = 0; i < NB / 2; i++)
			slot[i] = 2 * i;
		for (size_t i = NB / 2 - 1; i > 0; i--) {
			size_t j = t_rand() % (i + 1), x = slot[i];
			slot[i] = slot[j];
			slot[j] = x;
		}
		int byl = 0;
		for (int i = 0; i < OPS; i++) {
			size_t blk = slot[i];
			fill(want + blk * BSZ, BSZ, k + 80 + (unsigned)i);
			MUST(fsops_write(fs, f, want + blk * BSZ, BSZ, blk * BSZ) == BSZ ? 0 : -EIO);
			byl += fsyncs_by_log(&f, 1);
		}
		mount_stats(core, &s1);
		log_stats(core, &l1);
		printf("# %d fsyncs of 4 KiB writes to distinct blocks of 6000 extents: %d by the "
		       "log, %llu commits, %llu deltas\n", OPS, byl,
		       (unsigned long long)(s1.commits - s0.commits),
		       (unsigned long long)(l1.deltas - l0.deltas));
		CHECK("2500 fsyncs, a kept capture past 4096 entries: every one by the log, "
		      "no commit", byl == OPS && s1.commits == s0.commits);
		MUST(crash_reads_back("2500 fsyncs, a kept capture past 4096 entries", "every write back",
				      f, want, got, fl));
		if (verify) {
			setenv("GLASSFS_LOG_VERIFY", verify, 1);
			free(verify);
			crash();
			MUST(mount_rw(CORE_FSYNC_LOG));
		}
		free(want);
		free(got);
	}

	/*
	 * A file fallocated and filled in place (what fio lays out): its
	 * items are 1 MiB pieces of one 48 MiB disk extent.  One block
	 * rewritten and fsync'd logs the checksums of the pieces that
	 * changed, not of the whole extent (48 KiB of them, past a record:
	 * every fsync committed).  Then a piece whose checksum item begins
	 * before it: 8 KiB written into a committed prealloc extent, its
	 * first block punched; the item left reads sectors that item covers.
	 */
	{
		const size_t MB = 1 << 20, FL = 48 * MB;
		unsigned char *want = malloc(FL), *got = malloc(FL);
		uint64_t f, g;
		MUST(want && got ? 0 : -ENOMEM);
		fill(want, FL, k + 10);
		MUST(fsops_mknod(fs, d, "laidout", S_IFREG | 0644, 0, &cr, &st));
		f = st.st_ino;
		MUST(fsops_fallocate(fs, f, 0, 0, FL));
		for (size_t o = 0; o < FL; o += MB)
			MUST(fsops_write(fs, f, want + o, MB, o) == (ssize_t)MB ? 0 : -EIO);
		MUST(fsops_mknod(fs, d, "straddle", S_IFREG | 0644, 0, &cr, &st));
		g = st.st_ino;
		MUST(fsops_fallocate(fs, g, 0, 0, 64 * 1024));
		MUST(fsops_sync(fs));
		fill(want + 20 * MB + 8192, 4096, k + 11);
		MUST(fsops_write(fs, f, want + 20 * MB + 8192, 4096, 20 * MB + 8192) == 4096 ?
		     0 : -EIO);
		unsigned char g8[8192];
		fill(g8, sizeof(g8), k + 12);
		MUST(fsops_write(fs, g, g8, sizeof(g8), 0) == (ssize_t)sizeof(g8) ? 0 : -EIO);
		MUST(fsops_fallocate(fs, g, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 4096));
		memset(g8, 0, 4096);
		uint64_t fg[2] = { f, g };
		CHECK("fsync of a piece of a 48 MiB extent: the log, no commit", fsyncs_by_log(fg, 2));
		crash();
		MUST(mount_rw(CORE_FSYNC_LOG));
		CHECK("48 MiB extent: replayed", !log_pending(core));
		CHECK("48 MiB extent: the rewritten block and the rest",
		      fsops_read(fs, f, got, FL, 0) == (ssize_t)FL && memcmp(got, want, FL) == 0);
		CHECK("piece of a checksum item: its checksums replayed, it reads",
		      fsops_read(fs, g, got, sizeof(g8), 0) == (ssize_t)sizeof(g8) &&
		      memcmp(got, g8, sizeof(g8)) == 0);
		free(want);
		free(got);
	}

	/*
	 * The database pattern: 4 KiB random writes, each fsync'd.  Each
	 * record goes to a reserved slot, with its data, under one flush —
	 * the first after a commit to the slot the commit named in its
	 * superblock (before: a superblock write naming the segment, two
	 * flushes), each later one to the slot the segment before reserved
	 * — and replay verifies that data against the record's checksums
	 * instead of a flush before the segment ordering it (two flushes
	 * per fsync before).
	 */
	{
		enum { DB = 1 << 20, N = 24 };
		unsigned char *want = malloc(DB), *got = malloc(DB);
		uint64_t f;
		unsigned rs = k;
		MUST(want && got ? 0 : -ENOMEM);
		fill(want, DB, k + 13);
		MUST(fsops_mknod(fs, d, "db", S_IFREG | 0644, 0, &cr, &st));
		f = st.st_ino;
		MUST(fsops_write(fs, f, want, DB, 0) == DB ? 0 : -EIO);
		MUST(fsops_sync(fs));
		struct core_stats s0, s1;
		struct log_stats l0, l1;
		mount_stats(core, &s0);
		log_stats(core, &l0);
		/* the transaction's first segment: in the slot the commit named */
		MUST(fsops_write(fs, f, want, 4096, 0) == 4096 ? 0 : -EIO);
		MUST(fsops_fsync(fs, f, 1));
		mount_stats(core, &s1);
		log_stats(core, &l1);
		printf("# the first fsync after a commit: %llu flushes, %llu superblock writes\n",
		       (unsigned long long)(s1.dev_flushes - s0.dev_flushes),
		       (unsigned long long)(l1.supers - l0.supers));
		CHECK("the first fsync after a commit: one flush, no superblock write",
		      l1.syncs - l0.syncs == 1 && s1.commits == s0.commits && l1.supers == l0.supers &&
		      s1.dev_flushes - s0.dev_flushes == 1);
		mount_stats(core, &s0);
		log_stats(core, &l0);
		for (int i = 0; i < N; i++) {
			uint64_t at = (uint64_t)((rs = rs * 1103515245u + 12345u) >> 8) % (DB / 4096) * 4096;
			fill(want + at, 4096, k + 14 + (unsigned)i);
			MUST(fsops_write(fs, f, want + at, 4096, at) == 4096 ? 0 : -EIO);
			MUST(fsops_fsync(fs, f, 1));
		}
		mount_stats(core, &s1);
		log_stats(core, &l1);
		printf("# %d fsyncs of 4 KiB random writes: %llu flushes, %llu commits, %llu "
		       "segments (%llu with a superblock write)\n", N,
		       (unsigned long long)(s1.dev_flushes - s0.dev_flushes),
		       (unsigned long long)(s1.commits - s0.commits),
		       (unsigned long long)(l1.batches - l0.batches),
		       (unsigned long long)(l1.supers - l0.supers));
		CHECK("4 KiB random write + fsync: one flush each, no commit",
		      l1.syncs - l0.syncs == N && s1.commits == s0.commits && l1.supers == l0.supers &&
		      s1.dev_flushes - s0.dev_flushes == N);

		/*
		 * Power loss keeps the last segment and loses the data it
		 * references (the same flush would have made both durable; the
		 * fsync never returned): replay finds the data does not match
		 * the checksums the record carries and drops the record — the
		 * file is as the fsync before left it, and nothing reads as
		 * garbage.  Without the check the replay made the lost block
		 * reachable (a checksum error on read, or wrong bytes).
		 */
		unsigned char old[4096];
		memcpy(old, want + 8192, 4096);
		fill(want + 8192, 4096, k + 99);
		nwrote = 0;
		armed = true;
		MUST(fsops_write(fs, f, want + 8192, 4096, 8192) == 4096 ? 0 : -EIO);
		armed = false;
		MUST(fsops_fsync(fs, f, 1));
		CHECK("the last write: its data went to the device", nwrote > 0);
		crash();
		int fd = open(img, O_RDWR);
		static const unsigned char zero[4096];
		for (int i = 0; fd >= 0 && i < nwrote; i++)
			for (uint64_t o = 0; o < wrote[i].len; o += 4096)
				MUST(pwrite(fd, zero, 4096, (off_t)(wrote[i].off + o)) == 4096 ? 0 : -EIO);
		if (fd >= 0)
			close(fd);
		MUST(t_open(img, true, &core));
		devnull = fopen("/dev/null", "w");
		rc = log_check(core, devnull);
		fclose(devnull);
		CHECK("log_check: a record whose data was lost is not damage (replay drops it)",
		      rc == N + 1);
		mount_close(core);
		core = NULL;
		MUST(mount_rw(CORE_FSYNC_LOG));
		log_stats(core, &l1);
		memcpy(want + 8192, old, 4096);
		CHECK("replay dropped the record whose data was lost", l1.rejected == 1);
		CHECK("the file as the fsync before left it, every byte readable",
		      fsops_read(fs, f, got, DB, 0) == DB && memcmp(got, want, DB) == 0);

		/*
		 * A clean unmount, then the first fsync of the next mount: it
		 * goes to the slot the unmount's commit named (claimed at
		 * mount), one flush; a crash then replays the log from there.
		 */
		fsops_unmount(fs);
		fs = NULL;
		MUST(mount_close(core));
		core = NULL;
		MUST(mount_rw(CORE_FSYNC_LOG));
		CHECK("the last commit names a slot for the next fsync",
		      core->sb.log_slot && (core->sb.features & SUPER_FEAT_LOG_SLOT));
		mount_stats(core, &s0);
		log_stats(core, &l0);
		fill(want + 12288, 4096, k + 98);
		MUST(fsops_write(fs, f, want + 12288, 4096, 12288) == 4096 ? 0 : -EIO);
		MUST(fsops_fsync(fs, f, 1));
		mount_stats(core, &s1);
		log_stats(core, &l1);
		CHECK("the first fsync after a mount: one flush, no superblock write",
		      l1.syncs - l0.syncs == 1 && l1.supers == l0.supers &&
		      s1.dev_flushes - s0.dev_flushes == 1);
		crash();
		MUST(mount_rw(CORE_FSYNC_LOG));
		CHECK("a log that starts in the slot: replayed",
		      !log_pending(core) && fsops_read(fs, f, got, DB, 0) == DB &&
		      memcmp(got, want, DB) == 0);

		/* a features bit this build does not know: not mounted (a
		 * newer format could keep what this build would not read) */
		fsops_unmount(fs);
		fs = NULL;
		MUST(mount_close(core));
		core = NULL;
		CHECK("unknown features bit set on every superblock copy",
		      super_features(img, 1ull << 62, true) > 0);
		CHECK("an unknown features bit: mount refuses (EOPNOTSUPP)",
		      mount_rw(CORE_FSYNC_LOG) == -EOPNOTSUPP);
		if (core) {
			if (fs)
				fsops_unmount(fs);
			mount_close(core);
		}
		fs = NULL;
		core = NULL;
		MUST(super_features(img, 1ull << 62, false));
		MUST(mount_rw(CORE_FSYNC_LOG));

		/*
		 * A volume last committed by code without delta records: its
		 * superblocks lack SUPER_FEAT_LOG_DELTA, and the first
		 * transaction's log hangs from one of them, so that code may
		 * read it after a crash — it would stop at a delta and lose the
		 * fsyncs after it.  Whole records only until the mount's first
		 * commit sets the bit (which makes that code refuse the volume,
		 * as above); deltas after.  Every fsync replayed either way.
		 */
		CHECK("every commit sets SUPER_FEAT_LOG_DELTA",
		      (core->sb.features & SUPER_FEAT_LOG_DELTA) != 0);
		fsops_unmount(fs);
		fs = NULL;
		MUST(mount_close(core));
		core = NULL;
		MUST(super_features(img, SUPER_FEAT_LOG_DELTA, false) > 0 ? 0 : -EIO);
		MUST(mount_rw(CORE_FSYNC_LOG));
		struct log_stats d0, d1, d2;
		log_stats(core, &d0);
		for (int i = 0; i < 8; i++) {	/* 4 fsyncs, a commit, 4 more */
			if (i == 4) {
				log_stats(core, &d1);
				CHECK("a volume without SUPER_FEAT_LOG_DELTA: whole records until its "
				      "first commit",
				      !(core->sb.features & SUPER_FEAT_LOG_DELTA) &&
				      d1.deltas == d0.deltas && d1.syncs - d0.syncs == 4);
				MUST(fsops_sync(fs));
			}
			fill(want + (size_t)i * 4096, 4096, k + 90 + (unsigned)i);
			MUST(fsops_write(fs, f, want + (size_t)i * 4096, 4096, (uint64_t)i * 4096) == 4096 ?
			     0 : -EIO);
			MUST(fsyncs_by_log(&f, 1) ? 0 : -EIO);
		}
		log_stats(core, &d2);
		CHECK("after the mount's first commit: the bit, and deltas",
		      (core->sb.features & SUPER_FEAT_LOG_DELTA) && d2.deltas - d1.deltas >= 3);
		crash();
		MUST(mount_rw(CORE_FSYNC_LOG));
		CHECK("whole records, a commit, deltas: replayed",
		      !log_pending(core) && fsops_read(fs, f, got, DB, 0) == DB &&
		      memcmp(got, want, DB) == 0);
		free(want);
		free(got);
	}

	/*
	 * 4 KiB writes into 40 of the 1 MiB pieces of a committed, filled-in
	 * fallocated file, each fsync'd: a write splits its piece, and the
	 * pieces left beside it (items of this transaction reading committed
	 * data) need no checksums in the record — replay keeps the committed
	 * ones.  Logged with theirs, each fsync added ~1 KiB to the file's
	 * record and one in ~25 committed (past LOG_RECORD_COMMIT).  The
	 * last piece, preallocated at the commit and written in place after
	 * it, keeps its checksums logged (log_note_inplace): the committed
	 * extent no longer holds what the last commit's checksums say.
	 */
	{
		const size_t MB = 1 << 20, FL = 48 * MB;
		unsigned char *want = malloc(FL), *got = malloc(FL);
		uint64_t f;
		MUST(want && got ? 0 : -ENOMEM);
		fill(want, FL, k + 20);
		MUST(fsops_mknod(fs, d, "pieces", S_IFREG | 0644, 0, &cr, &st));
		f = st.st_ino;
		MUST(fsops_fallocate(fs, f, 0, 0, FL));
		for (size_t o = 0; o < FL - MB; o += MB)
			MUST(fsops_write(fs, f, want + o, MB, o) == (ssize_t)MB ? 0 : -EIO);
		MUST(fsops_sync(fs));
		MUST(fsops_write(fs, f, want + FL - MB, MB, FL - MB) == (ssize_t)MB ? 0 : -EIO);
		struct core_stats s0, s1;
		struct log_stats l0, l1;
		mount_stats(core, &s0);
		log_stats(core, &l0);
		for (int i = 0; i < 40; i++) {
			size_t at = (size_t)i * MB + (size_t)(i * 37 % 200) * 4096;
			fill(want + at, 4096, k + 21 + (unsigned)i);
			MUST(fsops_write(fs, f, want + at, 4096, at) == 4096 ? 0 : -EIO);
			MUST(fsops_fsync(fs, f, 1));
		}
		mount_stats(core, &s1);
		log_stats(core, &l1);
		printf("# 40 fsyncs of 4 KiB writes into 1 MiB pieces: %llu commits, %llu by the log, "
		       "%llu segment bytes\n", (unsigned long long)(s1.commits - s0.commits),
		       (unsigned long long)(l1.syncs - l0.syncs),
		       (unsigned long long)(l1.bytes - l0.bytes));
		CHECK("4 KiB writes splitting committed pieces: every fsync by the log, no commit",
		      l1.syncs - l0.syncs == 40 && s1.commits == s0.commits);
		crash();
		MUST(mount_rw(CORE_FSYNC_LOG));
		CHECK("pieces: replayed", !log_pending(core));
		CHECK("pieces: the written blocks, the pieces beside them and the piece written in place",
		      fsops_read(fs, f, got, FL, 0) == (ssize_t)FL && memcmp(got, want, FL) == 0);
		free(want);
		free(got);
	}
	fsops_unmount(fs);
	fs = NULL;
	MUST(mount_close(core));
	core = NULL;

	/*
	 * raid1, one device's reads failing at the replay: the last
	 * segment's data cannot be verified on that copy, the other copy
	 * matches — the record is replayed (a read error is not a lost
	 * write; failing the mount, or dropping an fsync that returned,
	 * would be worse than the check's absence).
	 */
	{
		static char img2[256];
		const char *devs2[2] = { img, img2 };
		struct format_opts fo = { .label = "unit", .force = true,
					  .meta_profile = CORE_PROFILE_RAID1,
					  .data_profile = CORE_PROFILE_RAID1 };
		struct core_opts o;
		unsigned char blk[4096], got[8192];
		uint64_t f;
		MUST(t_image(img2, sizeof(img2), 1ull << 30));
		MUST(mount_format(devs2, 2, &fo));
		core_opts_default(&o);
		o.commit_interval_s = 3600;
		MUST(mount_open(devs2, 2, &o, &core));
		MUST(fsops_mount(core, &o, &fs));
		MUST(fsops_mknod(fs, ROOT_DIR_INO, "r1", S_IFREG | 0644, 0, &cr, &st));
		f = st.st_ino;
		fill(buf, 8192, k + 30);
		MUST(fsops_write(fs, f, buf, 8192, 0) == 8192 ? 0 : -EIO);
		MUST(fsops_sync(fs));
		MUST(fsops_write(fs, f, buf, 4096, 0) == 4096 ? 0 : -EIO);
		MUST(fsops_fsync(fs, f, 1));	/* the superblock's segment */
		fill(blk, sizeof(blk), k + 31);
		MUST(fsops_write(fs, f, blk, 4096, 4096) == 4096 ? 0 : -EIO);
		MUST(fsops_fsync(fs, f, 1));	/* a slot's: verified at replay */
		memcpy(buf + 4096, blk, 4096);
		crash();
		int r = mount_open(devs2, 2, &o, &core);
		if (!r) {
			/* the second device's reads fail from the replay on */
			for (int i = 0; i < core->ndevs; i++)
				if (!strcmp(core->devs[i]->path, img2))
					dev_set_fail(core->devs[i], DEV_READ, true);
			r = fsops_mount(core, &o, &fs);
			for (int i = 0; core && i < core->ndevs; i++)
				dev_set_fail(core->devs[i], DEV_READ, false);
		}
		CHECK("raid1, a device's reads failing: the replay mounts", r == 0);
		if (!r) {
			struct log_stats l;
			log_stats(core, &l);
			CHECK("raid1, a copy unreadable: the record is replayed, not dropped",
			      l.rejected == 0 && !log_pending(core));
			CHECK("raid1, a copy unreadable: the fsync'd block",
			      fsops_read(fs, f, got, sizeof(got), 0) == 8192 &&
			      memcmp(got, buf, 8192) == 0);
			fsops_unmount(fs);
			fs = NULL;
			mount_close(core);
			core = NULL;
		} else {
			if (core)
				mount_close(core);
			core = NULL;
		}
		unlink(img2);
	}
	concurrent_arenas(k);
	arena_fill_enospc(k);
	arena_fill_holes(k);
	join_enospc();
	many_names_fsync(k);
	chain_overwritten(k);
	raid1_seg_body_bad(k);
out:
	if (fs)
		fsops_unmount(fs);
	if (core)
		mount_close(core);
	free(buf);
	unlink(img);
	return fails ? 1 : 0;
}
