// SPDX-License-Identifier: MIT
/*
 * test_raid.c — chunk profiles (single, dup, raid1, raid10, raid5, raid6 for
 * data and metadata) on image files:
 * mkfs error paths, where chunks land (devices of different sizes,
 * rotational classes), round trips, one damaged copy of metadata and of
 * data (reads succeed, scrub repairs, a second scrub finds nothing, fsck
 * clean), a device that fails its reads or writes (degraded, not failed).
 */
#include "core_test.h"
#include "fs/trees/chunk_tree.h"
#include "fs/btree/meta.h"
#include "fs/store/alloc.h"
#include "fs/store/chunk.h"
#include "fs/store/dev.h"
#include "fs/store/parity.h"
#include "fs/trees/data_span.h"
#include "fs/ops/fsops.h"
#include "fs/btree/node.h"
#include "fs/store/discard.h"
#include "fs/services/scrub.h"
#include "fs/services/trim.h"
#include "fs/services/volume.h"
#include "fs/services/volinfo.h"
#include "fs/format/ioctl.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#define NITEMS 400
#define NEXT 4
#define EXTLEN (64u << 10)


struct vol {
	char img[6][256];
	const char *devs[6];
	int n;
};

static int vol_make(struct vol *v, int n, const uint64_t *sizes)
{
	v->n = n;
	for (int i = 0; i < n; i++) {
		int ret = t_image(v->img[i], sizeof(v->img[i]), sizes[i]);
		if (ret)
			return ret;
		v->devs[i] = v->img[i];
	}
	return 0;
}

/* Unlink the images made; a case that failed before making some (its
 * v zeroed) leaves empty names, skipped. */
static void vol_rm(struct vol *v)
{
	for (int i = 0; i < v->n && i < 6; i++)
		if (v->img[i][0])
			unlink(v->img[i]);
}

/* A case's end: its volume closed (c may be NULL), its images removed. */
static void vol_done(struct vol *v, struct core *c)
{
	if (c)
		mount_close(c);
	vol_rm(v);
}

static int vol_format(struct vol *v, uint64_t dprof, uint64_t mprof, const int8_t *rot)
{
	struct format_opts o = { .label = "raid", .nodesize = 4096, .force = true,
				 .data_profile = dprof, .meta_profile = mprof, .rotational = rot };
	return mount_format(v->devs, v->n, &o);
}

static int vol_open(struct vol *v, struct core **c)
{
	struct core_opts o;
	core_opts_default(&o);
	o.commit_interval_s = 3600;
	return mount_open(v->devs, v->n, &o, c);
}

/* A volume of n new images of sizes[] bytes, formatted with data profile
 * dprof and metadata mprof, opened: most cases' start. */
static int vol_up(struct vol *v, int n, const uint64_t *sizes, uint64_t dprof, uint64_t mprof,
		  struct core **c)
{
	int ret = vol_make(v, n, sizes);

	if (!ret)
		ret = vol_format(v, dprof, mprof, NULL);
	return ret ? ret : vol_open(v, c);
}

/* A writable degraded open of the n devices left of a volume. */
static int vol_open_degraded(const char **left, int n, struct core **c)
{
	struct core_opts o;
	core_opts_default(&o);
	o.commit_interval_s = 3600;
	o.degraded = true;
	return mount_open(left, n, &o, c);
}

/* A read-only degraded open of the n devices given, as vol_open_degraded
 * but writing nothing. */
static int vol_open_degraded_ro(const char **devs, int n, struct core **c)
{
	struct core_opts o;
	core_opts_default(&o);
	o.commit_interval_s = 3600;
	o.degraded = true;
	o.readonly = true;
	return mount_open(devs, n, &o, c);
}

/* v opened with device dev's op (DEV_READ, DEV_WRITE) taking us
 * microseconds each: a resync slow enough to act beside. */
static int vol_open_slow(struct vol *v, int dev, int op, uint64_t us, struct core **c)
{
	struct core_opts o;
	core_opts_default(&o);
	o.commit_interval_s = 3600;
	o.dev_lat_dev_us[dev][op] = us;
	o.dev_lat_dev_set[dev] = (uint8_t)(1u << op);
	return mount_open(v->devs, v->n, &o, c);
}

/* Wait (5 s at most) until the resync begun at open has copied
 * something: the stats then in *st. */
static void resync_begun(struct core *c, struct core_stats *st)
{
	for (int i = 0; i < 5000; i++) {
		mount_stats(c, st);
		if (st->resync_done_bytes)
			break;
		usleep(1000);
	}
}

/* The devices of v but the one at index away, into left (v->n - 1 of
 * them, in order): their count. */
static int vol_devs_but(const struct vol *v, int away, const char **left)
{
	int n = 0;

	for (int k = 0; k < v->n; k++)
		if (k != away)
			left[n++] = v->devs[k];
	return n;
}

static bool vol_fsck_quiet;

/* fsck.glassfs -n -c over every device: exit code, -1 when not built. */
static int vol_fsck(struct vol *v)
{
	char bin[512], cmd[2048];
	int st;

	if (t_fsck_bin(bin, sizeof(bin)))
		return -1;
	snprintf(cmd, sizeof(cmd), "%s -n -c %s %s %s %s > %s.fsck 2>&1", bin, v->devs[0],
		 v->n > 1 ? v->devs[1] : "", v->n > 2 ? v->devs[2] : "",
		 v->n > 3 ? v->devs[3] : "", v->devs[0]);
	st = system(cmd);
	st = WIFEXITED(st) ? WEXITSTATUS(st) : 99;
	if (st && !vol_fsck_quiet) {
		snprintf(cmd, sizeof(cmd), "head -20 %s.fsck", v->devs[0]);
		if (system(cmd) < 0)
			st = 99;
	}
	snprintf(cmd, sizeof(cmd), "%s.fsck", v->devs[0]);
	unlink(cmd);
	return st;
}
/* CHECK with the case's name in front. */
#define CHECKF(what, name, cond) do { \
	char _n[256]; \
	snprintf(_n, sizeof(_n), "%s: %s", what, name); \
	CHECK(_n, cond); \
} while (0)
#define CHECK_VFSCK(name, v) do { \
	int _f = vol_fsck(v); \
	if (_f < 0) printf("SKIP: %s: fsck.glassfs not built\n", name); \
	else CHECK(name, _f == 0); \
} while (0)

/* Chunks of each type: how many, and do they all have the profile? */
struct prof_check {
	uint64_t type, prof;
	int n, wrong;
	bool want_rot_ok;
};

static int check_chunk(const struct chunk *ch, void *arg)
{
	struct prof_check *pc = arg;

	if (!(ch->type & pc->type))
		return 0;
	pc->n++;
	if ((ch->type & BG_PROFILE_MASK) != pc->prof)
		pc->wrong++;
	else if (pc->prof & BG_MIRROR) {
		/* raid1 2, raid1c3 3, raid1c4 4 stripes, each on a device of its own */
		bool distinct = ch->num_stripes == profile_copies(pc->prof);
		for (int i = 0; i < ch->num_stripes; i++)
			for (int k = 0; k < i; k++)
				distinct &= ch->stripes[i].dev != ch->stripes[k].dev;
		pc->wrong += !distinct;
	}
	else if (pc->prof == BG_DUP &&
		 (ch->num_stripes != 2 || ch->stripes[0].dev != ch->stripes[1].dev ||
		  (ch->stripes[0].physical < ch->stripes[1].physical + ch->length &&
		   ch->stripes[1].physical < ch->stripes[0].physical + ch->length)))
		pc->wrong++;
	else if (pc->prof == 0 && ch->num_stripes != 1)
		pc->wrong++;
	else if (pc->prof & (BG_RAID5 | BG_RAID6)) {
		int k = ch->num_stripes - ((pc->prof & BG_RAID6) ? 2 : 1);
		if (k < 2 || chunk_stripe_span(ch->type, ch->num_stripes, ch->length) * (uint64_t)k !=
			     ch->length)
			pc->wrong++;
	} else if (pc->prof == BG_RAID10) {
		/* four stripes on four devices, each length / 2 long */
		bool distinct = ch->num_stripes == 4;
		for (int i = 0; i < ch->num_stripes; i++)
			for (int k = 0; k < i; k++)
				distinct &= ch->stripes[i].dev != ch->stripes[k].dev;
		if (!distinct || chunk_stripe_span(ch->type, ch->num_stripes, ch->length) * 2 !=
				 ch->length)
			pc->wrong++;
	}
	return 0;
}

static bool profiles_ok(struct core *c, uint64_t dprof, uint64_t mprof)
{
	struct prof_check d = { BG_DATA, dprof, 0, 0, true };
	struct prof_check m = { BG_METADATA | BG_SYSTEM, mprof, 0, 0, true };

	chunk_for_each(c, check_chunk, &d);
	chunk_for_each(c, check_chunk, &m);
	return d.n >= 1 && m.n >= 2 && !d.wrong && !m.wrong;
}

static void fill(uint8_t *b, uint64_t n, unsigned seed)
{
	for (uint64_t i = 0; i < n; i++)
		b[i] = (uint8_t)((i * 131 + seed * 7 + (i >> 9)) ^ seed);
}

/* Items and data extents (logicals out[]), committed. */
static int populate(struct core *c, uint64_t *out)
{
	uint8_t *b = malloc(EXTLEN);
	struct txn *t;
	int ret = t_insert_items(c, 0, NITEMS, 100);

	if (!b)
		return -ENOMEM;
	for (int e = 0; e < NEXT && !ret; e++) {
		ret = txn_join(c, 4, 0, &t);
		if (ret)
			break;
		fill(b, EXTLEN, (unsigned)e + 1);
		ret = data_alloc(t, EXTLEN, &out[e]);
		if (!ret)
			ret = data_write(t, out[e], b, EXTLEN);
		int r2 = txn_end(t);
		ret = ret ? ret : r2;
	}
	free(b);
	return ret ? ret : txn_commit(c, COMMIT_SYNC);
}

/*
 * Flushes of a volume's devices run at the same time: each device's
 * flush, as the device layer reports it (the recorder sees a flush
 * before it is issued, in the thread issuing it), waits until the other
 * device's flush has been issued too.  Issued one after another (the
 * first device's flush returning before the second's starts), the first
 * never sees the second and gives up after FLUSH_MEET_NS: the test
 * counts meetings, not time.  Through chunk_flush_devs (every caller:
 * commit, fsync log) and through a commit.
 */
#define FLUSH_MEET_NS (2ull * 1000000000ull)
static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	const struct dev *dev[2];
	uint64_t issued[2];	/* flushes seen per device */
	int met, alone;		/* flushes that saw the other device's, or gave up */
} fm = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, { 0 }, { 0 }, 0, 0 };

static void flush_meet(void *arg, const struct dev *d, int op, uint64_t off, const void *buf,
		       uint64_t len)
{
	(void)arg, (void)off, (void)buf, (void)len;
	if (op != DEV_FLUSH)
		return;
	pthread_mutex_lock(&fm.mu);
	int me = d == fm.dev[1], other = !me;
	uint64_t mine = ++fm.issued[me];
	struct timespec dl;
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += (time_t)(FLUSH_MEET_NS / 1000000000ull);
	pthread_cond_broadcast(&fm.cv);
	int timedout = 0;
	while (fm.issued[other] < mine && !timedout)
		timedout = pthread_cond_timedwait(&fm.cv, &fm.mu, &dl) != 0;
	if (fm.issued[other] >= mine)
		fm.met++;
	else
		fm.alone++;
	pthread_mutex_unlock(&fm.mu);
}

static void parallel_flush(void)
{
	struct vol v = { .n = 0 };
	uint64_t sz[2] = { 64ull << 20, 64ull << 20 };
	struct core *c = NULL;

	MUST(vol_up(&v, 2, sz, CORE_PROFILE_RAID1, CORE_PROFILE_RAID1, &c));
	MUST(t_insert_items(c, 0, 10, 100));
	MUST(txn_commit(c, COMMIT_SYNC));
	fm.dev[0] = c->devs[0];
	fm.dev[1] = c->devs[1];
	fm.issued[0] = fm.issued[1] = 0;
	fm.met = fm.alone = 0;
	for (int i = 0; i < 2; i++)
		dev_set_recorder(c->devs[i], flush_meet, NULL);
	MUST(chunk_flush_devs(c, "test"));
	CHECK("raid1 flush: both devices' flushes issued at once",
	      fm.met == 2 && fm.alone == 0);
	fm.met = fm.alone = 0;
	MUST(t_insert_items(c, 10, 10, 100));
	MUST(txn_commit(c, COMMIT_SYNC));
	printf("# raid1 commit: %d flushes met the other device's, %d alone\n", fm.met, fm.alone);
	CHECK("raid1 commit: every flush issued with the other device's",
	      fm.met >= 2 && fm.alone == 0 && fm.issued[0] == fm.issued[1]);
out:
	if (c) {
		for (int i = 0; i < 2; i++)
			dev_set_recorder(c->devs[i], NULL, NULL);
		mount_close(c);
	}
	vol_rm(&v);
}

/* Every item populate() inserted reads back (no data extents). */
static bool verify_all_items(struct core *c)
{
	int err;

	return t_count_items(c, 0, NITEMS, &err) == NITEMS && !err;
}

/* Every item and every extent reads back right. */
static bool verify_all(struct core *c, const uint64_t *ext)
{
	uint8_t *b = malloc(EXTLEN), *w = malloc(EXTLEN);
	int err;
	bool ok = b && w && t_count_items(c, 0, NITEMS, &err) == NITEMS && !err;

	for (int e = 0; e < NEXT && ok; e++) {
		fill(w, EXTLEN, (unsigned)e + 1);
		ok = data_read(c, ext[e], b, EXTLEN) == 0 && memcmp(b, w, EXTLEN) == 0;
	}
	free(b);
	free(w);
	return ok;
}

static uint64_t copy_phys(struct core *c, uint64_t logical, uint64_t len, int m,
			  const char **path)
{
	struct chunk_copy cp[CHUNK_MAX_STRIPES];
	int n = chunk_map_lookup(c, logical, chunk_map_piece(c, logical, len), cp, NULL);
	if (n <= m)
		return 0;
	*path = cp[m].dev->path;
	return cp[m].physical;
}

static void mkfs_errors(void)
{
	struct vol v = { 0 };
	uint64_t sz[1] = { 64ull << 20 };

	if (vol_make(&v, 1, sz)) {
		printf("FAIL: mkfs errors: cannot make an image\n");
		fails++;
		return;
	}
	CHECK("mkfs: raid1 data with one device is refused (EINVAL)",
	      vol_format(&v, CORE_PROFILE_RAID1, 0, NULL) == -EINVAL);
	CHECK("mkfs: raid1 metadata with one device is refused (EINVAL)",
	      vol_format(&v, 0, CORE_PROFILE_RAID1, NULL) == -EINVAL);
	CHECK("mkfs: an unknown profile bit is refused",
	      vol_format(&v, 1ull << 3, 0, NULL) == -EINVAL);
	uint64_t p = 99;
	CHECK("profile names parse", core_profile_parse("raid1", &p) == 0 && p == CORE_PROFILE_RAID1 &&
	      core_profile_parse("dup", &p) == 0 && p == CORE_PROFILE_DUP &&
	      core_profile_parse("single", &p) == 0 && p == 0 &&
	      core_profile_parse("raid5", &p) == 0 && p == CORE_PROFILE_RAID5 &&
	      core_profile_parse("raid7", &p) == -EINVAL);
	CHECK("profile names parse: raid1c3, raid1c4 (btrfs's bits)",
	      core_profile_parse("raid1c3", &p) == 0 && p == BG_RAID1C3 && p == (1ull << 9) &&
	      core_profile_parse("raid1c4", &p) == 0 && p == BG_RAID1C4 && p == (1ull << 10) &&
	      !strcmp(core_profile_name(BG_RAID1C3 | BG_DATA), "raid1c3") &&
	      !strcmp(core_profile_name(BG_RAID1C4), "raid1c4"));
	CHECK("mkfs: raid1c3 metadata with one device is refused (EINVAL)",
	      vol_format(&v, 0, CORE_PROFILE_RAID1C3, NULL) == -EINVAL);
	CHECK("discard option names parse", core_discard_parse("async") == CORE_DISCARD_ASYNC &&
	      core_discard_parse("nodiscard") == CORE_DISCARD_OFF &&
	      core_discard_parse("sync") == CORE_DISCARD_SYNC && core_discard_parse("x") < 0);
	vol_rm(&v);
}

/*
 * The total a scrub announces before it reads anything (a scrub cancelled
 * before its walk: the totals only) is what a whole scrub then checks:
 * glassctl's percentage and time left come from it.  (The totals grow
 * to what was checked as the walk goes, so the end of a scrub shows no
 * difference.)
 */
static bool scrub_total_ok(struct core *c, const char *tag)
{
	struct scrub_opts co = { .cancel = 1 }, so = { 0 };
	struct scrub_progress cp, sp;

	if (scrub_run(c, &co, &cp) != -ECANCELED || scrub_run(c, &so, &sp))
		return false;
	printf("%s: scrub announces %llu bytes to check, checks %llu\n", tag,
	       (unsigned long long)cp.total_check_bytes, (unsigned long long)sp.checked_bytes);
	return cp.checked_bytes == 0 && cp.total_check_bytes == sp.checked_bytes;
}

/*
 * One profile combination end to end.  corrupt: damage copy 1 of the fs
 * root node and of one data extent in the closed images, then read,
 * scrub, scrub again, fsck.
 */
/*
 * What a damaged volume must show (damage_scrub): errors scrub finds, at
 * least; bytes it corrects, at least; errors the reads count, at least;
 * and, when extents is set, that scrub read at least checked bytes, more
 * than 3 nodes and exactly that many extents.
 */
struct damage_want {
	uint64_t meta, data, parity, fixed, csum_errors, degraded;
	uint64_t checked, extents;
};

/*
 * The closed volume v, with copies damaged by the caller: fsck -n reports
 * them (exit 4), reads_ok(c, arg) still holds, the damage is counted,
 * scrub finds and repairs it with nothing uncorrectable, a second scrub
 * finds nothing, scrub's expected total is what it read, fsck is clean.
 */
static void damage_scrub(struct vol *v, const char *tag, bool (*reads_ok)(struct core *, void *),
			 void *arg, const struct damage_want *w)
{
	struct core *c = NULL;
	struct core_stats st;
	struct scrub_opts so = { 0 };
	struct scrub_progress sp;
	char name[200];
#define N(s) (snprintf(name, sizeof(name), "%s: %s", tag, s), name)

	vol_fsck_quiet = true;
	int fr = vol_fsck(v);
	vol_fsck_quiet = false;
	if (fr >= 0)
		CHECK(N("fsck reports the damaged copies (exit 4)"), fr == 4);
	MUST(vol_open(v, &c));
	CHECK(N("with copies damaged every read still succeeds"), reads_ok(c, arg));
	mount_stats(c, &st);
	CHECK(N("the damage is counted (csum_errors, degraded)"),
	      st.csum_errors >= w->csum_errors && st.degraded >= w->degraded);
	MUST(scrub_run(c, &so, &sp));
	CHECK(N("scrub finds the bad copies"), sp.meta_errors >= w->meta && sp.data_errors >= w->data &&
	      sp.parity_errors >= w->parity);
	CHECK(N("scrub repairs them, nothing uncorrectable"),
	      sp.corrected_bytes >= w->fixed && sp.uncorrectable_bytes == 0);
	if (w->extents)
		CHECK(N("scrub checked every copy of everything"),
		      sp.checked_bytes >= w->checked && sp.nodes > 3 && sp.extents == w->extents);
	MUST(scrub_run(c, &so, &sp));
	CHECK(N("a second scrub finds nothing"), sp.meta_errors == 0 && sp.data_errors == 0 &&
	      sp.parity_errors == 0 && sp.corrected_bytes == 0 && sp.uncorrectable_bytes == 0 &&
	      sp.checked_bytes > 0);
	CHECK(N("scrub's expected total is the bytes it reads (every copy, every column)"),
	      scrub_total_ok(c, tag));
	MUST(mount_close(c));
	c = NULL;
	CHECK_VFSCK(N("fsck clean after the repair"), v);
out:
	if (c)
		mount_close(c);
#undef N
}

static bool all_read(struct core *c, void *ext)
{
	return verify_all(c, ext);
}

/* Each device of v but `away` (-1: none) missing in turn, the others
 * opened degraded and read-only: how many opened and read right
 * (reads(c, arg)). */
static int served_each_missing(struct vol *v, int away, bool (*reads)(struct core *, void *),
			       void *arg)
{
	const char *devs[6];
	struct core *c;
	int served = 0;

	for (int gone = 0; gone < v->n; gone++) {
		if (gone == away)
			continue;
		if (vol_open_degraded_ro(devs, vol_devs_but(v, gone, devs), &c) == 0) {
			served += reads(c, arg);
			mount_close(c);
		}
	}
	return served;
}

static void profile_case(const char *tag, int ndev, uint64_t dprof, uint64_t mprof)
{
	struct vol v = { 0 };
	uint64_t sz[4] = { 64ull << 20, 96ull << 20, 64ull << 20, 80ull << 20 }, ext[NEXT];
	struct core *c = NULL;
	char name[200];
	const char *np = NULL, *dp = NULL;
	char npath[256], dpath[256];
	uint64_t nphys, dphys, nodesize = 0;
#define N(s) (snprintf(name, sizeof(name), "%s: %s", tag, s), name)

	MUST(vol_up(&v, ndev, sz, dprof, mprof, &c));
	CHECK(N("new chunks have the profiles asked for"), profiles_ok(c, dprof, mprof));
	MUST(populate(c, ext));
	CHECK(N("chunks created later keep the profiles"), profiles_ok(c, dprof, mprof));
	MUST(mount_close(c));
	c = NULL;
	CHECK_VFSCK(N("fsck clean after the round trip (every copy)"), &v);

	MUST(vol_open(&v, &c));
	CHECK(N("profiles survive reopen"), profiles_ok(c, dprof, mprof));
	CHECK(N("items and data read back after reopen"), verify_all(c, ext));
	nphys = copy_phys(c, subvol_root(c, FS_TREE_OBJECTID)->bytenr, c->nodesize, 0, &np);
	nodesize = c->nodesize;
	dphys = copy_phys(c, ext[1], EXTLEN, 0, &dp);
	uint64_t dpiece = chunk_map_piece(c, ext[1], EXTLEN);	/* raid10: one element */
	snprintf(npath, sizeof(npath), "%s", np ? np : "");
	snprintf(dpath, sizeof(dpath), "%s", dp ? dp : "");
	MUST(mount_close(c));
	c = NULL;
	if (!nphys || !dphys) {
		printf("FAIL: %s: no copy found to damage\n", tag);
		fails++;
		goto out;
	}

	/* damage copy 1 of the fs root node and of data extent 1 */
	MUST(t_poke(npath, nphys + 300, 0x5a));
	MUST(t_poke(dpath, dphys + dpiece / 2 + 17, 0x81));
	/* a node and a sector: one node size and one sector corrected */
	struct damage_want w = { .meta = 1, .data = 1, .fixed = nodesize + CORE_SECTORSIZE,
				 .csum_errors = 2, .degraded = 2,
				 .checked = 2 * (uint64_t)NEXT * EXTLEN, .extents = NEXT };
	damage_scrub(&v, tag, all_read, ext, &w);
out:
	vol_done(&v, c);
#undef N
}

/* raid1 and a device that fails: reads from the other, writes degrade. */
static void failing_device(void)
{
	struct vol v = { 0 };
	uint64_t sz[2] = { 64ull << 20, 80ull << 20 }, ext[NEXT], l;
	struct core *c = NULL;
	struct core_stats st;
	struct txn *t;
	uint8_t *b = malloc(EXTLEN), *r = malloc(EXTLEN);

	if (!b || !r)
		goto out;
	MUST(vol_up(&v, 2, sz, CORE_PROFILE_RAID1, CORE_PROFILE_RAID1, &c));
	MUST(populate(c, ext));
	MUST(mount_close(c));
	MUST(vol_open(&v, &c));
	int served = 0;
	for (int k = 0; k < 2; k++) {
		/* each device in turn fails its reads, with a cold cache so
		 * metadata comes from the devices */
		MUST(mount_close(c));
		MUST(vol_open(&v, &c));
		dev_set_fail(c->devs[k], DEV_READ, true);
		mount_stats(c, &st);
		uint64_t d0 = st.degraded;
		CHECK(k ? "raid1: device 2 failing reads: everything reads"
			: "raid1: device 1 failing reads: everything reads", verify_all(c, ext));
		mount_stats(c, &st);
		/* reads that hit the failing device were served by the other */
		CHECK(k ? "raid1: device 2 failing reads: each failed read counted as degraded"
			: "raid1: device 1 failing reads: each failed read counted as degraded",
		      c->devs[k]->errors == 0 || st.degraded > d0);
		served += c->devs[k]->errors > 0;
		dev_set_fail(c->devs[k], DEV_READ, false);
	}
	CHECK("raid1: the failing device was really asked (and failed)", served >= 1);
	/* writes: one copy fails, the write does not */
	dev_set_fail(c->devs[0], DEV_WRITE, true);
	mount_stats(c, &st);
	uint64_t d1 = st.degraded;
	MUST(txn_join(c, 4, 0, &t));
	fill(b, EXTLEN, 77);
	int wr = data_alloc(t, EXTLEN, &l);
	if (!wr)
		wr = data_write(t, l, b, EXTLEN);
	txn_end(t);
	mount_stats(c, &st);
	CHECK("raid1: a write with one failing copy succeeds, degraded", wr == 0 && st.degraded > d1);
	CHECK("raid1: and reads back from the good copy",
	      data_read(c, l, r, EXTLEN) == 0 && memcmp(r, b, EXTLEN) == 0);
	dev_set_fail(c->devs[0], DEV_WRITE, false);
	/* both copies failing: EIO, never bad bytes */
	dev_set_fail(c->devs[0], DEV_READ, true);
	dev_set_fail(c->devs[1], DEV_READ, true);
	memset(r, 0xee, EXTLEN);
	int rr = data_read(c, ext[0], r, EXTLEN);
	CHECK("raid1: both copies failing gives EIO", rr == -EIO && r[0] == 0 && r[EXTLEN - 1] == 0);
	dev_set_fail(c->devs[0], DEV_READ, false);
	dev_set_fail(c->devs[1], DEV_READ, false);
	/* scrub rewrites the copy the failed write left stale (once committed) */
	struct scrub_opts so = { 0 };
	struct scrub_progress sp;
	MUST(txn_commit(c, COMMIT_SYNC));
	MUST(scrub_run(c, &so, &sp));
	CHECK("raid1: scrub repairs the copy the failed write missed",
	      sp.data_errors >= EXTLEN / CORE_SECTORSIZE && sp.uncorrectable_bytes == 0 &&
	      sp.corrected_bytes >= EXTLEN);
	MUST(mount_close(c));
	c = NULL;
	CHECK_VFSCK("raid1: fsck clean after the failing device and scrub", &v);
out:
	vol_done(&v, c);
	free(b);
	free(r);
}

/* Metadata on non-rotational devices, data on rotational ones. */
static int where_chunk(const struct chunk *ch, void *arg)
{
	int *bad = arg;
	bool meta = !(ch->type & BG_DATA);

	for (int s = 0; s < ch->num_stripes; s++)
		if (ch->stripes[s].dev->rotational == meta)
			(*bad)++;
	return 0;
}

static void rotational(void)
{
	struct vol v = { 0 };
	uint64_t sz[2] = { 48ull << 20, 128ull << 20 }, ext[NEXT];
	int8_t rot[2] = { 0, 1 };	/* small fast device, big slow one */
	struct core *c = NULL;
	int bad = 0;

	MUST(vol_make(&v, 2, sz));
	MUST(vol_format(&v, 0, 0, rot));
	MUST(vol_open(&v, &c));
	CHECK("rotational: flags recorded at mkfs come back at open",
	      !c->devs[0]->rotational && c->devs[1]->rotational);
	MUST(populate(c, ext));
	chunk_for_each(c, where_chunk, &bad);
	CHECK("rotational: metadata chunks on the non-rotational device, data on the rotational one",
	      bad == 0);
	MUST(mount_close(c));
	c = NULL;
	/* both rotational: metadata falls back to them */
	int8_t rot2[2] = { 1, 1 };
	MUST(vol_format(&v, 0, 0, rot2));
	MUST(vol_open(&v, &c));
	MUST(populate(c, ext));
	CHECK("rotational: with no fast device metadata still gets chunks", verify_all(c, ext));
	MUST(mount_close(c));
	c = NULL;
	CHECK_VFSCK("rotational: fsck clean", &v);
out:
	vol_done(&v, c);
}

/* Mount-option fields: discard mode and device latency come from core_opts. */
static void opts_fields(void)
{
	struct vol v = { 0 };
	uint64_t sz[1] = { 32ull << 20 };
	struct core *c = NULL;
	struct core_opts o;

	MUST(vol_make(&v, 1, sz));
	MUST(vol_format(&v, 0, 0, NULL));
	core_opts_default(&o);
	o.commit_interval_s = 3600;
	o.discard = CORE_DISCARD_SYNC;
	o.dev_lat_us[DEV_FLUSH] = 7;
	MUST(mount_open(v.devs, 1, &o, &c));
	CHECK("core_opts.discard=sync sets the discard mode", c->discard.mode == DISCARD_SYNC);
	CHECK("core_opts.dev_lat_us sets the device latency model",
	      c->devs[0]->lat_ns[DEV_FLUSH] == 7000 && c->devs[0]->lat_ns[DEV_READ] == 0);
	MUST(mount_close(c));
	c = NULL;
	o.discard = CORE_DISCARD_ASYNC;
	o.discard_iops = 1000;
	MUST(mount_open(v.devs, 1, &o, &c));
	CHECK("core_opts.discard=async starts the discard thread",
	      c->discard.mode == DISCARD_ASYNC && c->discard.thread.started);
	MUST(mount_close(c));
	c = NULL;
	setenv("GLASSFS_DISCARD", "sync", 1);
	o.discard = CORE_DISCARD_OFF;
	MUST(mount_open(v.devs, 1, &o, &c));
	CHECK("discard=off wins over GLASSFS_DISCARD", c->discard.mode == DISCARD_OFF);
	MUST(mount_close(c));
	c = NULL;
	o.discard = CORE_DISCARD_DEFAULT;
	MUST(mount_open(v.devs, 1, &o, &c));
	CHECK("no discard option: GLASSFS_DISCARD still applies", c->discard.mode == DISCARD_SYNC);
	unsetenv("GLASSFS_DISCARD");
out:
	vol_done(&v, c);
}

/* A fresh extent of len bytes in its own committed transaction. */
static int one_extent(struct core *c, uint64_t len, uint64_t *l)
{
	struct txn *t;
	int ret = txn_join(c, 4, 0, &t);

	if (ret)
		return ret;
	ret = data_alloc(t, len, l);
	txn_end(t);
	return ret ? ret : txn_commit(c, COMMIT_SYNC);
}

static int drop_extent(struct core *c, uint64_t l, uint64_t len)
{
	struct txn *t;
	int ret = txn_join(c, 4, 0, &t);

	if (ret)
		return ret;
	ret = data_ref(t, l, len, -1);
	txn_end(t);
	return ret ? ret : txn_commit(c, COMMIT_SYNC);
}

/* A 64 MiB volume mounted discard=async, each discard taking lat_us. */
static int async_open(struct vol *v, uint32_t lat_us, struct core **c)
{
	uint64_t sz[1] = { 64ull << 20 };
	struct core_opts o;
	int ret = vol_make(v, 1, sz);

	if (!ret)
		ret = vol_format(v, 0, 0, NULL);
	core_opts_default(&o);
	o.commit_interval_s = 3600;
	o.discard = CORE_DISCARD_ASYNC;
	o.dev_lat_us[DEV_DISCARD] = lat_us;
	return ret ? ret : mount_open(v->devs, 1, &o, c);
}

/* Wait (up to 2 s) until the discard thread is issuing a range. */
static bool discard_busy(struct core *c)
{
	bool busy = false;

	for (int i = 0; i < 2000 && !busy; i++) {
		glock_write(&c->discard.lock);
		busy = c->discard.busy;
		glock_write_unlock(&c->discard.lock);
		if (!busy)
			usleep(1000);
	}
	return busy;
}

/*
 * discard=async never holds freed space hostage: with every discard
 * taking 0.3 s and the thread busy with one, ranges A and B freed meanwhile
 * are queued behind it and must be allocatable at once (before, queued
 * space stayed used until discarded, and a writer short of space waited
 * for the whole queue while holding its handle, which the commit waits
 * for).  An allocation short of space waits for the range in flight only.
 */
static void async_discard_frees_at_once(void)
{
	struct vol v = { .n = 0 };
	uint64_t a, x, b, y, len = 1 << 20;
	struct core *c = NULL;

	MUST(async_open(&v, 300000, &c));
	MUST(one_extent(c, len, &a));
	MUST(one_extent(c, len, &x));	/* keeps A and B apart */
	MUST(one_extent(c, len, &b));
	MUST(one_extent(c, len, &y));
	MUST(drop_extent(c, y, len));	/* the thread starts a 0.3 s discard */
	CHECK("async discard: the thread is discarding", discard_busy(c));
	MUST(drop_extent(c, a, len));
	MUST(drop_extent(c, b, len));
	glock_write(&c->discard.lock);
	size_t queued = c->discard.n;
	glock_write_unlock(&c->discard.lock);
	CHECK("async discard: A and B wait in the queue", queued >= 2);
	CHECK("async discard: queued space is allocatable at once",
	      !alloc_any_used(c, a, len) && !alloc_any_used(c, b, len));
	CHECK("async discard: an allocation short of space waits for the range in flight",
	      discard_wait_inflight(c, 0));
	glock_write(&c->discard.lock);
	size_t left = c->discard.n + c->discard.busy;
	glock_write_unlock(&c->discard.lock);
	CHECK("async discard: ... not for the queue behind it", left >= 2);
	discard_wait_idle(c, 0);
	CHECK("async discard: all free once discarded", !alloc_any_used(c, a, len) &&
	      !alloc_any_used(c, b, len) && !alloc_any_used(c, y, len) && alloc_is_used(c, x, len));
	MUST(mount_close(c));
	c = NULL;
	CHECK_VFSCK("async discard: fsck clean", &v);
out:
	vol_done(&v, c);
}

/*
 * A full async discard queue drops new ranges and counts them in
 * mount_stats().discard_dropped (glassctl stats): with the thread busy on a
 * 0.5 s discard and the queue lowered to one range, freeing three
 * separate extents (and the metadata their commits free) queues one range
 * and drops the rest, and the dropped space is free all the same.
 */
static void async_discard_queue_full(void)
{
	struct vol v = { .n = 0 };
	uint64_t e[7], len = 1 << 20, done0;
	struct core *c = NULL;
	struct core_stats st;
	bool busy;

	MUST(async_open(&v, 500000, &c));
	for (int i = 0; i < 7; i++)
		MUST(one_extent(c, len, &e[i]));
	mount_stats(c, &st);
	CHECK("discard queue full: nothing dropped yet", st.discard_dropped == 0);
	MUST(drop_extent(c, e[6], len));	/* the thread starts a 0.5 s discard */
	busy = discard_busy(c);
	glock_write(&c->discard.lock);
	c->discard.max = 1;
	done0 = c->discard.done;
	glock_write_unlock(&c->discard.lock);
	CHECK("discard queue full: the thread is discarding", busy);
	for (int i = 0; i < 6; i += 2)	/* e0, e2, e4: not adjacent, not merged */
		MUST(drop_extent(c, e[i], len));
	mount_stats(c, &st);
	glock_write(&c->discard.lock);
	bool same = c->discard.done == done0;
	uint64_t dropped = c->discard.dropped;
	glock_write_unlock(&c->discard.lock);
	/* each commit also frees metadata blocks: more ranges than the three
	 * extents compete for the one slot; with the thread busy throughout,
	 * at least two extents were dropped */
	if (!(dropped >= (same ? 2u : 1u) && st.discard_dropped == dropped))
		printf("# dropped %llu, stats %llu, thread %s\n", (unsigned long long)dropped,
		       (unsigned long long)st.discard_dropped, same ? "busy throughout" : "moved on");
	CHECK("discard queue full: new ranges dropped and counted in core_stats",
	      dropped >= (same ? 2u : 1u) && st.discard_dropped == dropped);
	discard_wait_idle(c, 0);
	CHECK("discard queue full: dropped ranges are free all the same",
	      !alloc_any_used(c, e[0], len) && !alloc_any_used(c, e[2], len) &&
	      !alloc_any_used(c, e[4], len) && alloc_is_used(c, e[1], len));
	MUST(mount_close(c));
	c = NULL;
	CHECK_VFSCK("discard queue full: fsck clean", &v);
out:
	vol_done(&v, c);
}

/* A data extent of len bytes holding fill(seed), committed. */
static int put_extent(struct core *c, uint64_t len, unsigned seed, uint64_t *l)
{
	uint8_t *b = malloc(len);
	struct txn *t;
	int ret = b ? txn_join(c, 4, 0, &t) : -ENOMEM;

	if (!ret) {
		fill(b, len, seed);
		ret = data_alloc(t, len, l);
		if (!ret)
			ret = data_write(t, *l, b, len);
		int r2 = txn_end(t);
		ret = ret ? ret : r2;
	}
	free(b);
	return ret ? ret : txn_commit(c, COMMIT_SYNC);
}

static bool extent_reads(struct core *c, uint64_t l, uint64_t len, unsigned seed)
{
	uint8_t *b = malloc(len), *w = malloc(len);
	bool ok = b && w;

	if (ok) {
		fill(w, len, seed);
		ok = data_read(c, l, b, len) == 0 && memcmp(b, w, len) == 0;
	}
	free(b);
	free(w);
	return ok;
}

/*
 * Extents l[0..n) of len bytes each, back to back on disk (seed + i the
 * fill of l[i]), read in one data_read as a file read's run reads them
 * (fs/items/file.c read_run), and through the zero-copy spans: pieces of
 * 1 MiB from the first one's start, one straddling where l[1] starts
 * when that is no MiB multiple from l[0] (a chunk cut there).
 */
static bool range_reads(struct core *c, const uint64_t *l, uint64_t len, int n, unsigned seed)
{
	uint64_t all = len * (uint64_t)n;
	uint8_t *b = malloc(all), *w = malloc(all);
	struct data_spans *sp = malloc(sizeof(*sp));
	bool ok = b && w && sp;

	for (int i = 0; ok && i < n; i++) {
		ok &= i == 0 || l[i] == l[i - 1] + len;
		fill(w + (uint64_t)i * len, len, seed + (unsigned)i);
	}
	if (ok) {
		int r = data_read(c, l[0], b, all);
		if (r)
			printf("# data_read %llu+%llu: %s\n", (unsigned long long)l[0],
			       (unsigned long long)all, strerror(-r));
		ok = r == 0 && memcmp(b, w, all) == 0;
	}
	if (ok) {	/* 1 MiB (a FUSE read's most) around l[1]'s start */
		uint64_t at = l[1] - (1ull << 19), off = at - l[0];
		data_spans_init(sp);
		int r = data_spans_add(c, sp, at, 1ull << 20);
		if (!r && !(r = data_spans_map(c, sp))) {
			for (int i = 0, o = 0; i < sp->n && ok; o += (int)sp->v[i].len, i++)
				ok = sp->v[i].fd >= 0 ? pread(sp->v[i].fd, b + o, sp->v[i].len,
							      (off_t)sp->v[i].pos) == (ssize_t)sp->v[i].len
						      : !!memcpy(b + o, sp->v[i].mem, sp->v[i].len);
			data_spans_done(c, sp);
		} else if (r == -EAGAIN) {	/* not served zero-copy: the ordinary way */
			r = data_spans_read(c, sp, b);
		}
		if (r)
			printf("# spans %llu+1 MiB: %s\n", (unsigned long long)at, strerror(-r));
		ok = ok && r == 0 && memcmp(b, w + off, 1ull << 20) == 0;
	}
	free(b);
	free(w);
	free(sp);
	return ok;
}

/* The chunk holding logical: start, length, first stripe's physical. */
struct chunk_at { uint64_t logical, start, len, phys, type; int n; };
static int find_chunk(const struct chunk *ch, void *arg)
{
	struct chunk_at *a = arg;

	a->n++;
	if (a->logical >= ch->logical && a->logical < ch->logical + ch->length) {
		a->start = ch->logical;
		a->len = ch->length;
		a->phys = ch->stripes[0].physical;
		a->type = ch->type;
	}
	return 0;
}
static struct chunk_at chunk_of(struct core *c, uint64_t logical)
{
	struct chunk_at a = { .logical = logical };
	chunk_for_each(c, find_chunk, &a);
	return a;
}

/* Items of the extent and free-space trees that name block groups, each
 * checked against the allocator's groups: no stray, none missing. */
struct bg_items { int bg, info, bitmap, bad; };
static int match_bg(const struct bgroup *bg, void *arg)
{
	const struct key *k = arg;
	uint64_t off = k->objectid - bg->start, segb = (uint64_t)FST_SEG_SECTORS * 4096;

	if (k->objectid < bg->start || k->objectid >= bg->start + bg->len)
		return 0;
	if (k->type == KEY_FREE_SPACE_BITMAP)
		return off % segb == 0 && k->offset == (bg->len - off < segb ? bg->len - off : segb);
	return off == 0 && k->offset == bg->len;
}
static struct bg_items count_bg_items(struct core *c)
{
	struct bg_items n = { 0, 0, 0, 0 };
	struct root *r[2] = { core_tree(c, CT_EXTENT), core_tree(c, CT_FST) };

	for (int i = 0; i < 2; i++) {
		struct path p;
		int ret;
		btree_path_init(&p);
		ret = btree_search_ge(r[i], &(struct key){ 0, 0, 0 }, &p);
		while (ret == 0) {
			struct key k;
			btree_item_key(&p, p.slots[0], &k);
			if (k.type == KEY_BLOCK_GROUP_ITEM || k.type == KEY_FREE_SPACE_INFO ||
			    k.type == KEY_FREE_SPACE_BITMAP) {
				n.bg += k.type == KEY_BLOCK_GROUP_ITEM;
				n.info += k.type == KEY_FREE_SPACE_INFO;
				n.bitmap += k.type == KEY_FREE_SPACE_BITMAP;
				n.bad += alloc_for_each_bg(c, match_bg, &k) != 1;
			}
			ret = btree_next(&p);
		}
		btree_path_release(&p);
	}
	return n;
}
static int count_segs(const struct bgroup *bg, void *arg)
{
	*(int *)arg += (int)bg->nsegs;
	return 0;
}

/*
 * A chunk split (what a relocation does when no hole takes the whole
 * chunk): extents of 1.5 MiB cross every MiB boundary but each third one;
 * chunk_split_point finds only those, the fence keeps new extents off every
 * boundary below it, and the split replaces the chunk's items with both
 * halves' (no stray or missing block group / free-space item), the data
 * reads the same before and after a reopen, fsck is clean.
 */
static void chunk_split_case(void)
{
	struct vol v = { 0 };
	uint64_t sz[1] = { 128ull << 20 }, ext[10], f[3], MB = 1ull << 20, len = 3 * MB / 2;
	struct core *c = NULL;
	struct txn *t;
	struct chunk_at ch;
	int nx = 0;
	bool ok;

	MUST(vol_up(&v, 1, sz, 0, 0, &c));
	/* fence first: three 768 KiB extents on an empty chunk skip the MiB
	 * boundaries they would cross */
	MUST(one_extent(c, 4096, &f[0]));
	ch = chunk_of(c, f[0]);
	MUST(drop_extent(c, f[0], 4096));
	MUST(txn_commit(c, COMMIT_SYNC));
	CHECK("split: an empty data chunk of 16 MiB", ch.len == 16 * MB && (ch.type & BG_DATA));
	MUST(alloc_fence(c, ch.start, ch.len));
	ok = true;
	for (int i = 0; i < 3; i++) {
		MUST(one_extent(c, 768 << 10, &f[i]));
		ok &= (f[i] - ch.start) / MB == (f[i] - ch.start + (768 << 10) - 1) / MB;
	}
	CHECK("split: a fence keeps new extents off the MiB boundaries below it", ok);
	MUST(alloc_fence(c, ch.start, 0));
	for (int i = 0; i < 3; i++)
		MUST(drop_extent(c, f[i], 768 << 10));
	MUST(txn_commit(c, COMMIT_SYNC));
	MUST(txn_commit(c, COMMIT_SYNC));
	/* 10 extents of 1.5 MiB from the chunk's start */
	for (int i = 0; i < 10; i++) {
		MUST(put_extent(c, len, (unsigned)i + 1, &ext[i]));
		nx += ext[i] == ch.start + (uint64_t)i * len;
	}
	CHECK("split: extents laid out from the chunk's start", nx == 10);
	/* oracle: a boundary b is free when no extent crosses it */
	ok = true;
	for (uint64_t upto = 1; upto <= 15; upto++) {
		uint64_t want = 0;
		for (uint64_t b = upto; b >= 1 && !want; b--) {
			bool crossed = false;
			for (int i = 0; i < 10; i++)
				crossed |= ext[i] < ch.start + b * MB && ext[i] + len > ch.start + b * MB;
			if (!crossed)
				want = b * MB;
		}
		uint64_t got = chunk_split_point(c, ch.start, upto * MB, ch.len, MB);
		if (got != want) {
			printf("# upto %llu MiB: split point %llu, want %llu\n", (unsigned long long)upto,
			       (unsigned long long)got, (unsigned long long)want);
			ok = false;
		}
	}
	CHECK("split: chunk_split_point finds the boundaries no extent crosses", ok &&
	      chunk_split_point(c, ch.start, 12 * MB, 12 * MB, MB) == 9 * MB);
	/* at any sector: the nearest extent start at or below (an extent's
	 * start is a cut none crosses), a free sector past the last one */
	CHECK("split: at sector granularity the cut falls on an extent start",
	      chunk_split_point(c, ch.start, 5 * MB, ch.len, 4096) == 9 * MB / 2 &&
	      chunk_split_point(c, ch.start, 9 * MB / 2, ch.len, 4096) == 9 * MB / 2 &&
	      chunk_split_point(c, ch.start, 9 * MB / 2, 9 * MB / 2, 4096) == 3 * MB &&
	      chunk_split_point(c, ch.start, 4 * MB, ch.len, 8 * MB) == 0 &&
	      chunk_split_point(c, ch.start, 16 * MB - 4096, ch.len, 4096) == 16 * MB - 4096 &&
	      chunk_split_point(c, ch.start, MB, ch.len, 4096) == 0);
	{
		struct chunk_at sys = { 0 };
		for (uint64_t l = 0; l < (1ull << 30) && !(sys.type & BG_SYSTEM); l += MB) {
			sys = chunk_of(c, l);
			if (!sys.len)
				sys.type = 0;
		}
		MUST(txn_join(c, 4, 0, &t));
		CHECK("split: a system chunk is not split", (sys.type & BG_SYSTEM) &&
		      chunk_split(t, sys.start, MB) == -EINVAL);
		CHECK("split: a cut that is no sector multiple is refused",
		      chunk_split(t, ch.start, MB + 512) == -EINVAL);
		txn_end(t);
	}
	struct bg_items b0 = count_bg_items(c);
	MUST(alloc_fence(c, ch.start, 12 * MB));
	MUST(txn_commit(c, COMMIT_SYNC));
	MUST(txn_join(c, 16, 0, &t));
	int r = chunk_split(t, ch.start, chunk_split_point(c, ch.start, 12 * MB, ch.len, MB));
	int r2 = txn_end(t);
	MUST(r ? r : r2);
	MUST(txn_commit(c, COMMIT_SYNC));
	struct chunk_at h1 = chunk_of(c, ch.start), h2 = chunk_of(c, ch.start + 12 * MB);
	CHECK("split: two chunks, stripes cut at the same offset",
	      h1.start == ch.start && h1.len == 12 * MB && h2.start == ch.start + 12 * MB &&
	      h2.len == 4 * MB && h2.phys == ch.phys + 12 * MB && h2.n == ch.n + 1);
	struct bg_items b1 = count_bg_items(c);
	int segs = 0;
	alloc_for_each_bg(c, count_segs, &segs);
	if (b1.bad || b1.bg != b0.bg + 1 || b1.info != b0.info + 1 || b1.bitmap != segs)
		printf("# items before: bg %d info %d bitmap %d; after: bg %d info %d bitmap %d "
		       "(segments %d), %d stray\n", b0.bg, b0.info, b0.bitmap, b1.bg, b1.info,
		       b1.bitmap, segs, b1.bad);
	CHECK("split: block group and free-space items replaced, none stray",
	      !b1.bad && b1.bg == b0.bg + 1 && b1.info == b0.info + 1 && b1.bitmap == segs);
	ok = true;
	for (int i = 0; i < 10; i++)
		ok &= extent_reads(c, ext[i], len, (unsigned)i + 1);
	CHECK("split: every extent reads", ok);
	CHECK("split: extents back to back across the cut read as one range",
	      ext[8] == h2.start && range_reads(c, &ext[7], len, 2, 8));
	/* the halves take new extents (the fence is gone) and frees */
	MUST(drop_extent(c, ext[9], len));
	MUST(txn_commit(c, COMMIT_SYNC));
	MUST(put_extent(c, MB, 99, &f[0]));
	MUST(mount_close(c));
	c = NULL;
	MUST(vol_open(&v, &c));
	ok = extent_reads(c, f[0], MB, 99);
	for (int i = 0; i < 9; i++)
		ok &= extent_reads(c, ext[i], len, (unsigned)i + 1);
	CHECK("split: reopened, every extent reads", ok);
	MUST(mount_close(c));
	c = NULL;
	CHECK_VFSCK("split: fsck clean", &v);
out:
	vol_done(&v, c);
}

static uint64_t disk_bytes(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (uint64_t)st.st_blocks * 512 : 0;
}

/* Free every extent of ext but the last, committed twice (the second
 * commit ends their pinning: the space is free for trim). */
static int free_but_last(struct core *c, const uint64_t *ext)
{
	struct txn *t;
	int ret = txn_join(c, 8, TXN_USE_RESERVE, &t);

	if (ret)
		return ret;
	for (int e = 0; e < NEXT - 1 && !ret; e++)
		ret = data_ref(t, ext[e], EXTLEN, -1);
	int r2 = txn_end(t);
	ret = ret ? ret : r2;
	if (!ret)
		ret = txn_commit(c, COMMIT_SYNC);
	return ret ? ret : txn_commit(c, COMMIT_SYNC);
}

/* Batch trim punches holes where nothing lives, and only there. */
static void trim_case(void)
{
	struct vol v = { 0 };
	uint64_t sz[1] = { 64ull << 20 }, ext[NEXT], trimmed = 0;
	struct core *c = NULL;
	uint8_t *b = malloc(EXTLEN), *w = malloc(EXTLEN);

	if (!b || !w)
		goto out0;
	MUST(vol_up(&v, 1, sz, CORE_PROFILE_DUP, CORE_PROFILE_DUP, &c));
	MUST(populate(c, ext));
	MUST(free_but_last(c, ext));
	uint64_t before = disk_bytes(v.img[0]);
	int r = trim_batch(c, 0, &trimmed);
	uint64_t after = disk_bytes(v.img[0]);
	printf("trim: %llu bytes trimmed, image %llu -> %llu bytes on disk\n",
	       (unsigned long long)trimmed, (unsigned long long)before, (unsigned long long)after);
	CHECK("trim: succeeds and reports bytes", r == 0 && trimmed > 0);
	CHECK("trim: the image holds fewer blocks (freed extents punched, both copies)",
	      after + 2ull * (NEXT - 1) * EXTLEN <= before);
	fill(w, EXTLEN, NEXT);
	CHECK("trim: the live extent and every item still read",
	      data_read(c, ext[NEXT - 1], b, EXTLEN) == 0 && memcmp(b, w, EXTLEN) == 0 &&
	      ({ int err; t_count_items(c, 0, NITEMS, &err) == NITEMS && !err; }));
	MUST(mount_close(c));
	c = NULL;
	CHECK_VFSCK("trim: fsck clean after trim", &v);
out:
	vol_done(&v, c);
out0:
	free(b);
	free(w);
}

/* A device missing: refused unless degraded; then read-only, reads served. */
static void missing_device(void)
{
	struct vol v = { 0 };
	uint64_t sz[2] = { 64ull << 20, 64ull << 20 }, ext[NEXT];
	struct core *c = NULL;
	struct core_opts o;

	MUST(vol_up(&v, 2, sz, CORE_PROFILE_RAID1, CORE_PROFILE_RAID1, &c));
	MUST(populate(c, ext));
	MUST(mount_close(c));
	c = NULL;
	core_opts_default(&o);
	for (int k = 0; k < 2; k++) {
		const char *one[1] = { v.devs[k] };
		o.degraded = false;
		CHECK(k ? "missing device 1: refused without degraded (ENODEV)"
			: "missing device 2: refused without degraded (ENODEV)",
		      mount_open(one, 1, &o, &c) == -ENODEV);
		c = NULL;
		/* read-only here: a writable degraded open of each device in
		 * turn would let the two copies diverge (see stale_device) */
		o.degraded = true;
		o.readonly = true;
		MUST(mount_open(one, 1, &o, &c));
		CHECK(k ? "missing device 1: degraded ro open, every read served"
			: "missing device 2: degraded ro open, every read served",
		      core_readonly(c) && verify_all(c, ext));
		struct txn *t;
		CHECK("degraded ro: no transaction can start (EROFS)", txn_join(c, 1, 0, &t) == -EROFS);
		MUST(mount_close(c));
		c = NULL;
		o.readonly = false;
	}
	/* single data on a missing device cannot be served: refused even degraded */
	MUST(vol_format(&v, 0, CORE_PROFILE_RAID1, NULL));
	{
		const char *one[1] = { v.devs[0] };
		struct core *c2 = NULL;
		int r0 = mount_open(one, 1, &o, &c2), r1;
		if (!r0)
			mount_close(c2);
		one[0] = v.devs[1];
		c2 = NULL;
		r1 = mount_open(one, 1, &o, &c2);
		if (!r1)
			mount_close(c2);
		CHECK("degraded: a single-profile chunk with its device missing refuses the open",
		      r0 == -ENODEV || r1 == -ENODEV);
	}
	CHECK_VFSCK("degraded: both devices together still check clean", &v);
out:
	vol_done(&v, c);
}

/* Where the sector at logical lives on a raid5/6 chunk: its data column
 * (parity q < 0) or the row's parity column q (0 P, 1 Q). */
static uint64_t parity_phys(struct core *c, uint64_t logical, int q, const char **path)
{
	struct chunk_geom g;
	uint64_t s, r;
	int d;

	if (chunk_map_geometry(c, logical, &g) || !g.nparity)
		return 0;
	s = (logical - g.logical) / CORE_SECTORSIZE;
	r = s / (uint64_t)g.ndata;
	d = (int)((r + (q < 0 ? s % (uint64_t)g.ndata : (uint64_t)(g.ndata + q))) %
		  (uint64_t)g.num_stripes);
	if (!g.stripes[d].dev)
		return 0;	/* a degraded mount's missing device */
	*path = g.stripes[d].dev->path;
	return g.stripes[d].physical + r * CORE_SECTORSIZE;
}

/* Device-index masks of the mirrored (metadata) chunks of a volume. */
struct mirror_masks {
	const struct vol *v;
	unsigned m[64];
	int n;
};

static int note_mirror(const struct chunk *ch, void *arg)
{
	struct mirror_masks *mm = arg;
	unsigned m = 0;

	if ((ch->type & (BG_RAID5 | BG_RAID6)) || mm->n == 64)
		return 0;
	for (int i = 0; i < ch->num_stripes; i++)
		for (int k = 0; k < mm->v->n; k++)
			if (ch->stripes[i].dev && strcmp(ch->stripes[i].dev->path, mm->v->devs[k]) == 0)
				m |= 1u << k;
	mm->m[mm->n++] = m;
	return 0;
}

#define ODDLEN (5u * 4096)	/* not whole rows: the last row is padded */

/*
 * raid5 (three devices) or raid6 (four) data: round trip, every way of
 * losing one (raid5) or two (raid6) devices serves every read, a flipped
 * data sector and a flipped parity sector: reads good, scrub repairs
 * both, a second scrub finds nothing, fsck clean before (exit 4) and after.
 */
/* parity_case's reads: every extent and the odd-length one */
struct odd_reads {
	const uint64_t *ext;
	uint64_t odd;
	uint8_t *ob, *ow;
};

static bool odd_read(struct core *c, void *arg)
{
	struct odd_reads *r = arg;

	return verify_all(c, r->ext) && data_read(c, r->odd, r->ob, ODDLEN) == 0 &&
	       memcmp(r->ob, r->ow, ODDLEN) == 0;
}

static void parity_case(const char *tag, int ndev, uint64_t prof)
{
	struct vol v = { 0 };
	uint64_t sz[4] = { 64ull << 20, 80ull << 20, 64ull << 20, 72ull << 20 }, ext[NEXT], odd = 0;
	struct core *c = NULL;
	struct core_opts o;
	char name[200], dpath[256], ppath[256];
	const char *dp = NULL, *pp = NULL;
	uint64_t dphys, pphys;
	uint8_t *ob = malloc(ODDLEN), *ow = malloc(ODDLEN);
	int lose = prof == CORE_PROFILE_RAID6 ? 2 : 1, served = 0, cases = 0, wrong = 0;
	struct mirror_masks mm = { &v, { 0 }, 0 };
#define N(s) (snprintf(name, sizeof(name), "%s: %s", tag, s), name)
#define ODD_OK(c) (data_read(c, odd, ob, ODDLEN) == 0 && memcmp(ob, ow, ODDLEN) == 0)

	MUST(ob && ow ? 0 : -ENOMEM);
	fill(ow, ODDLEN, 77);
	MUST(vol_up(&v, ndev, sz, prof, CORE_PROFILE_RAID1, &c));
	MUST(populate(c, ext));
	{
		struct txn *t;
		MUST(txn_join(c, 4, 0, &t));
		int r = data_alloc(t, ODDLEN, &odd);
		if (!r)
			r = data_write(t, odd, ow, ODDLEN);
		int r2 = txn_end(t);
		MUST(r ? r : r2);
		MUST(txn_commit(c, COMMIT_SYNC));
	}
	CHECK(N("data chunks have the profile"), profiles_ok(c, prof, CORE_PROFILE_RAID1));
	CHECK(N("extents start on whole rows"), chunk_row_bytes(c, ext[0]) > CORE_SECTORSIZE &&
	      (ext[1] - ext[0]) % chunk_row_bytes(c, ext[0]) == 0 &&
	      (odd - ext[0]) % chunk_row_bytes(c, ext[0]) == 0);
	CHECK(N("items and data read back"), verify_all(c, ext) && ODD_OK(c));
	chunk_for_each(c, note_mirror, &mm);
	MUST(mount_close(c));
	c = NULL;
	CHECK_VFSCK(N("fsck clean after the round trip (data and parity)"), &v);

	/* every way of losing `lose` devices: every read served, read-only */
	core_opts_default(&o);
	o.degraded = true;
	o.readonly = true;
	for (unsigned mask = 1; mask < (1u << ndev); mask++) {
		const char *devs[4];
		int n = 0, r;
		if (__builtin_popcount(mask) != lose)
			continue;
		for (int k = 0; k < ndev; k++)
			if (!(mask & (1u << k)))
				devs[n++] = v.devs[k];
		/* the raid1 metadata survives only with one of its copies */
		bool meta = true;
		for (int i = 0; i < mm.n; i++)
			meta &= (mm.m[i] & ~mask) != 0;
		if (!meta)
			continue;
		cases++;
		r = mount_open(devs, n, &o, &c);
		if (!r) {
			bool ok = verify_all(c, ext) && ODD_OK(c);
			served += ok;
			wrong += !ok;
			mount_close(c);
		} else {
			printf("%s: open without device mask %#x: %s\n", tag, mask, strerror(-r));
		}
		c = NULL;
	}
	printf("%s: %d of %d ways of losing %d device(s) that leave a metadata copy serve every read\n",
	       tag, served, cases, lose);
	CHECK(N("any device(s) parity covers missing (metadata kept): every read served, rebuilt"),
	      cases > 0 && served == cases && wrong == 0);

	/* flip a data sector of extent 1 and the parity of extent 2's first row */
	MUST(vol_open(&v, &c));
	dphys = parity_phys(c, ext[1] + 3 * CORE_SECTORSIZE, -1, &dp);
	pphys = parity_phys(c, ext[2], 0, &pp);
	snprintf(dpath, sizeof(dpath), "%s", dp ? dp : "");
	snprintf(ppath, sizeof(ppath), "%s", pp ? pp : "");
	MUST(mount_close(c));
	c = NULL;
	if (!dphys || !pphys) {
		printf("FAIL: %s: no sector found to damage\n", tag);
		fails++;
		goto out;
	}
	MUST(t_poke(dpath, dphys + 100, 0x81));
	MUST(t_poke(ppath, pphys + 2000, 0x42));
	/* a data sector (served rebuilt) and a parity sector: two corrected */
	struct odd_reads orr = { ext, odd, ob, ow };
	struct damage_want w = { .data = 1, .parity = 1, .fixed = 2 * CORE_SECTORSIZE,
				 .csum_errors = 1, .degraded = 1 };
	damage_scrub(&v, tag, odd_read, &orr, &w);
out:
	if (c)
		mount_close(c);
	free(ob);
	free(ow);
	vol_rm(&v);
#undef ODD_OK
#undef N
}

/*
 * raid10 over four devices with devices missing: refused without
 * degraded; degraded (read-only), any one device gone serves every read,
 * and two gone either serve every read (one of each pair) or refuse the
 * open (a whole pair) — never a wrong byte.
 */
static void raid10_missing(void)
{
	struct vol v = { 0 };
	uint64_t sz[4] = { 64ull << 20, 64ull << 20, 64ull << 20, 64ull << 20 }, ext[NEXT];
	struct core *c = NULL;
	struct core_opts o;
	int served[3] = { 0 }, refused[3] = { 0 }, wrong = 0;

	MUST(vol_up(&v, 4, sz, CORE_PROFILE_RAID10, CORE_PROFILE_RAID10, &c));
	MUST(populate(c, ext));
	MUST(mount_close(c));
	c = NULL;
	core_opts_default(&o);
	{
		const char *three[3] = { v.devs[0], v.devs[1], v.devs[2] };
		CHECK("raid10: a missing device is refused without degraded (ENODEV)",
		      mount_open(three, 3, &o, &c) == -ENODEV);
		c = NULL;
	}
	o.degraded = true;
	o.readonly = true;
	for (unsigned mask = 1; mask < 16; mask++) {	/* bit k: device k missing */
		const char *devs[4];
		int n = 0, gone = __builtin_popcount(mask), r;

		if (gone > 2)
			continue;
		for (int k = 0; k < 4; k++)
			if (!(mask & (1u << k)))
				devs[n++] = v.devs[k];
		r = mount_open(devs, n, &o, &c);
		if (!r) {
			served[gone]++;
			wrong += !verify_all(c, ext);
			mount_close(c);
		} else {
			refused[gone] += r == -ENODEV;
			wrong += r != -ENODEV;
		}
		c = NULL;
	}
	CHECK("raid10 degraded: any one device missing serves every read", served[1] == 4);
	CHECK("raid10 degraded: two missing serve every read or refuse (ENODEV), never wrong bytes",
	      wrong == 0 && served[2] + refused[2] == 6);
	CHECK("raid10 degraded: two from different pairs serve, a whole pair refuses",
	      served[2] >= 1 && refused[2] >= 1);
	CHECK_VFSCK("raid10: all four devices still check clean", &v);
out:
	vol_done(&v, c);
}

/*
 * Superblocks on a multi-device volume: a device whose superblock write
 * or flush fails is skipped (degraded) while another takes it; only all
 * failing fails the commit.  The volume reopens and checks clean.
 */
static void failing_supers(void)
{
	struct vol v = { 0 };
	uint64_t sz[2] = { 64ull << 20, 64ull << 20 }, ext[NEXT];
	struct core *c = NULL;
	struct core_stats st;
	uint64_t d0, gen;

	MUST(vol_up(&v, 2, sz, CORE_PROFILE_RAID1, CORE_PROFILE_RAID1, &c));
	MUST(populate(c, ext));
	/* a commit with device 2 failing every write: nodes and superblock
	 * go to device 1 only, the commit succeeds */
	mount_stats(c, &st);
	d0 = st.degraded;
	dev_set_fail(c->devs[1], DEV_WRITE, true);
	int r = t_insert_items(c, 100000, 50, 80);
	if (!r)
		r = txn_commit(c, COMMIT_SYNC);
	dev_set_fail(c->devs[1], DEV_WRITE, false);
	mount_stats(c, &st);
	CHECK("supers: commit with one device failing writes succeeds, degraded",
	      r == 0 && st.degraded > d0);
	CHECK("supers: num_devices stays 2", c->sb.num_devices == 2);
	/* flush failing on one device: skipped; on both: the error */
	gen = c->generation;
	mount_stats(c, &st);
	d0 = st.degraded;
	dev_set_fail(c->devs[0], DEV_FLUSH, true);
	r = txn_write_supers(c, gen);
	mount_stats(c, &st);
	CHECK("supers: flush failing on device 1 only: written, degraded",
	      r == 0 && st.degraded == d0 + 1);
	dev_set_fail(c->devs[1], DEV_FLUSH, true);
	r = txn_write_supers(c, gen);
	CHECK("supers: flush failing on both devices: EIO", r == -EIO);
	dev_set_fail(c->devs[0], DEV_FLUSH, false);
	dev_set_fail(c->devs[1], DEV_FLUSH, false);
	dev_set_fail(c->devs[0], DEV_WRITE, true);
	dev_set_fail(c->devs[1], DEV_WRITE, true);
	r = txn_write_supers(c, gen);
	CHECK("supers: write failing on both devices: EIO", r == -EIO);
	dev_set_fail(c->devs[0], DEV_WRITE, false);
	dev_set_fail(c->devs[1], DEV_WRITE, false);
	MUST(txn_write_supers(c, gen));
	MUST(mount_close(c));
	c = NULL;
	/* reopen: everything is there (stale copies on device 2 are served
	 * from device 1), scrub repairs them, fsck clean */
	MUST(vol_open(&v, &c));
	int err = 0;
	CHECK("supers: reopened, every extent reads", verify_all(c, ext));
	CHECK("supers: reopened, items written while degraded are there",
	      t_count_items(c, 100000, 50, &err) == 50 && err == 0);
	struct scrub_opts so = { 0 };
	struct scrub_progress sp;
	MUST(scrub_run(c, &so, &sp));
	CHECK("supers: scrub leaves nothing uncorrectable", sp.uncorrectable_bytes == 0);
	MUST(mount_close(c));
	c = NULL;
	CHECK_VFSCK("supers: fsck clean after skipped superblocks and scrub", &v);
out:
	vol_done(&v, c);
}

/*
 * A writable degraded open (device 2 missing) commits without device 2;
 * the next full open finds device 2's superblock stale and rewrites its
 * copies from device 1 in the background (reads meanwhile are served from
 * device 1 first); closed before the end, the next open starts over;
 * then device 2 alone serves everything written while it was away.
 */
static void stale_device(void)
{
	struct vol v = { 0 };
	uint64_t sz[2] = { 64ull << 20, 64ull << 20 }, ext[NEXT];
	struct core *c = NULL;
	struct core_stats st;
	const char *one[1];

	MUST(vol_make(&v, 2, sz));
	MUST(vol_format(&v, CORE_PROFILE_RAID1, CORE_PROFILE_RAID1, NULL));
	one[0] = v.devs[0];
	MUST(vol_open_degraded(one, 1, &c));
	CHECK("stale: a degraded open is writable", !core_readonly(c));
	MUST(populate(c, ext));
	MUST(mount_close(c));
	c = NULL;
	/* slow writes on device 2 (50 ms each): the resync takes a while,
	 * the open does not wait for it; closed in the middle, the next
	 * open starts over */
	uint64_t t0 = glock_now_ns();
	MUST(vol_open_slow(&v, 1, DEV_WRITE, 50000, &c));
	uint64_t open_ns = glock_now_ns() - t0;
	CHECK("stale: the open does not wait for the resync: the device is still read last",
	      c->devs[1]->stale);
	resync_begun(c, &st);
	CHECK("stale: resync progress in core_stats",
	      st.resync_bytes > 0 && st.resync_done_bytes > 0 && st.resync_done_bytes < st.resync_bytes);
	CHECK("stale: everything reads during the resync", verify_all(c, ext));
	MUST(mount_close(c));	/* cancels it */
	c = NULL;
	MUST(vol_open(&v, &c));
	CHECK("stale: a resync cut short starts over at the next open", c->devs[1]->stale);
	volume_resync_wait(c);
	mount_stats(c, &st);
	CHECK("stale: the resync finishes in the background",
	      st.repaired == 1 && !c->devs[1]->stale && st.resync_done_bytes == st.resync_bytes &&
	      st.resync_bytes > 0);
	if (open_ns > 2000000000ull)
		printf("# the open took %.1f s\n", (double)open_ns / 1e9);
	CHECK("stale: everything reads after the resync", verify_all(c, ext));
	MUST(mount_close(c));
	c = NULL;
	MUST(vol_open(&v, &c));
	CHECK("stale: after a finished resync the next open finds nothing stale",
	      !c->devs[0]->stale && !c->devs[1]->stale);
	MUST(mount_close(c));
	c = NULL;
	one[0] = v.devs[1];
	MUST(vol_open_degraded_ro(one, 1, &c));
	CHECK("stale: the resynced device alone serves what was written while it was away",
	      c->generation > 2 && verify_all(c, ext));
	MUST(mount_close(c));
	c = NULL;
	CHECK_VFSCK("stale: fsck clean over both devices", &v);
out:
	vol_done(&v, c);
}

/* The resync-with-writes cases' extents: 24 of 1 MiB (put_extent seeds
 * more_seed + i) the resync copies, 6 of 256 KiB (during_seed + i)
 * written while it ran. */
struct resync_writes {
	const uint64_t *more, *during;
	unsigned more_seed, during_seed;
};

static bool resync_writes_read(struct core *c, void *arg)
{
	const struct resync_writes *rw = arg;
	bool ok = true;

	for (int i = 0; i < 24 && ok; i++)
		ok = extent_reads(c, rw->more[i], 1u << 20, rw->more_seed + (unsigned)i);
	for (int i = 0; i < 6 && ok; i++)
		ok = extent_reads(c, rw->during[i], 256u << 10, rw->during_seed + (unsigned)i);
	return ok;
}

/*
 * Writes during a resync go on beside the segment being copied.  The
 * returning device's source (device 0) reads slowly (10 ms a read), so
 * the copier spends most of its time inside a segment; meanwhile the
 * test writes and commits extents.  Each segment's copy used to hold
 * c->reloc_lock exclusively across its device I/O, and every write of
 * the volume waited for it (on f1d61d8: 9 chunk-class lock waits over
 * the 6 writes and their commits); now only a write of the segment waits
 * (fs/store/copy_fence.h), and the chunk-class waits are none or
 * nearly.  What was written during the resync must then be on the
 * returning device: it alone serves every extent.
 */
static void resync_writes_beside(void)
{
	struct vol v = { 0 };
	uint64_t sz[2] = { 96ull << 20, 96ull << 20 }, more[24], during[6];
	struct core *c = NULL;
	struct core_stats st0, st1;
	struct glock_stats g0, g1;
	const char *one[1];

	/* 24 MiB on both (raid1 chunks; a resync copies what is in use),
	 * then items written with device 1 away */
	MUST(vol_up(&v, 2, sz, CORE_PROFILE_RAID1, CORE_PROFILE_RAID1, &c));
	for (int i = 0; i < 24; i++)
		MUST(put_extent(c, 1u << 20, 100u + (unsigned)i, &more[i]));
	MUST(mount_close(c));
	c = NULL;
	one[0] = v.devs[0];
	MUST(vol_open_degraded(one, 1, &c));
	MUST(t_insert_items(c, 0, NITEMS, 100));	/* metadata only: no new chunk */
	MUST(txn_commit(c, COMMIT_SYNC));
	MUST(mount_close(c));
	c = NULL;
	MUST(vol_open_slow(&v, 0, DEV_READ, 10000, &c));
	resync_begun(c, &st0);
	glock_stats_read(&g0);
	for (int i = 0; i < 6; i++)
		MUST(put_extent(c, 256u << 10, 200u + (unsigned)i, &during[i]));
	glock_stats_read(&g1);
	mount_stats(c, &st1);
	uint64_t waits = g1.waits[GLOCK_CLASS_CHUNK] - g0.waits[GLOCK_CLASS_CHUNK];
	printf("resync beside: %llu chunk-class lock waits over 6 committed writes, "
	       "%llu writes beside a segment, %llu waited for theirs; resync %llu of %llu bytes\n",
	       (unsigned long long)waits,
	       (unsigned long long)(st1.copy_fence_passed - st0.copy_fence_passed),
	       (unsigned long long)(st1.copy_fence_waits - st0.copy_fence_waits),
	       (unsigned long long)st1.resync_done_bytes, (unsigned long long)st1.resync_bytes);
	CHECK("resync beside: the writes ran while the resync copied",
	      st0.resync_done_bytes > 0 && st1.resync_done_bytes < st1.resync_bytes &&
	      st1.copy_fence_passed > st0.copy_fence_passed);
	CHECK("resync beside: the writes did not wait for the segments (chunk-class lock waits <= 2)",
	      waits <= 2);
	volume_resync_wait(c);
	CHECK("resync beside: the resync finishes", !c->devs[1]->stale);
	MUST(mount_close(c));
	c = NULL;
	one[0] = v.devs[1];
	MUST(vol_open_degraded_ro(one, 1, &c));
	struct resync_writes rw = { more, during, 100, 200 };
	CHECK("resync beside: the returning device alone serves everything, the writes during the resync too",
	      verify_all_items(c) && resync_writes_read(c, &rw));
	MUST(mount_close(c));
	c = NULL;
	CHECK_VFSCK("resync beside: fsck clean over both devices", &v);
out:
	vol_done(&v, c);
}

/*
 * raid5 / raid6: writes during the rebuild of a returning device's
 * stripes.  Device `away` misses 24 MiB of data; back, its columns are
 * rebuilt from the others while one of those (slow) reads at 10 ms a
 * read; meanwhile 6 extents are written and committed — on raid5/6 into
 * new rows, beside the rows being rebuilt (the copy fence lets a write
 * that overlaps no segment go on).  After the rebuild, with any other
 * device missing, every extent reads: those the rebuild made and those
 * written during it.
 */

static void striped_resync_writes(const char *tag, int ndev, uint64_t dprof, int away, int slow)
{
	struct vol v = { 0 };
	uint64_t sz[4] = { 96ull << 20, 96ull << 20, 96ull << 20, 96ull << 20 }, more[24], during[6];
	struct core *c = NULL;
	struct core_stats st0, st1;
	const char *devs[4];
	char name[200];
#define N(s) (snprintf(name, sizeof(name), "%s: %s", tag, s), name)

	MUST(vol_make(&v, ndev, sz));
	MUST(vol_format(&v, dprof, CORE_PROFILE_RAID1, NULL));
	MUST(vol_open_degraded(devs, vol_devs_but(&v, away, devs), &c));
	for (int i = 0; i < 24; i++)
		MUST(put_extent(c, 1u << 20, 300u + (unsigned)i, &more[i]));
	MUST(mount_close(c));
	c = NULL;
	MUST(vol_open_slow(&v, slow, DEV_READ, 10000, &c));
	resync_begun(c, &st0);
	for (int i = 0; i < 6; i++)
		MUST(put_extent(c, 256u << 10, 400u + (unsigned)i, &during[i]));
	mount_stats(c, &st1);
	printf("%s: %llu writes beside a segment, %llu waited for theirs; rebuilt %llu of %llu bytes "
	       "when the writes ended\n", tag,
	       (unsigned long long)(st1.copy_fence_passed - st0.copy_fence_passed),
	       (unsigned long long)(st1.copy_fence_waits - st0.copy_fence_waits),
	       (unsigned long long)st1.resync_done_bytes, (unsigned long long)st1.resync_bytes);
	CHECK(N("the writes ran while the rebuild copied"),
	      st0.resync_done_bytes > 0 && st1.resync_done_bytes < st1.resync_bytes);
	volume_resync_wait(c);
	CHECK(N("the rebuild finishes"), !c->devs[away]->stale);
	bool ok = true;
	for (int i = 0; i < 6 && ok; i++)
		ok = extent_reads(c, during[i], 256u << 10, 400u + (unsigned)i);
	CHECK(N("the writes made during the rebuild read back"), ok);
	MUST(mount_close(c));
	c = NULL;
	struct resync_writes rw = { more, during, 300, 400 };
	CHECK(N("then any other device missing: every extent reads, the rebuilt and the new"),
	      served_each_missing(&v, away, resync_writes_read, &rw) == ndev - 1);
	CHECK_VFSCK(N("fsck clean over every device"), &v);
out:
	vol_done(&v, c);
#undef N
}

/*
 * raid10 / raid5 / raid6: written while device `away` was missing, then
 * back: the resync rebuilds its stripes (raid10 from its pair, raid5/6
 * from the other stripes), after which each other device in turn may go
 * missing and every read is still served (from the resynced device).
 */
static void stale_striped(const char *tag, int ndev, uint64_t dprof, uint64_t mprof, int away)
{
	struct vol v = { 0 };
	uint64_t sz[4] = { 64ull << 20, 64ull << 20, 64ull << 20, 64ull << 20 }, ext[NEXT];
	struct core *c = NULL;
	struct core_stats st;
	const char *devs[4];
	char name[200];
#define N(s) (snprintf(name, sizeof(name), "%s: %s", tag, s), name)

	MUST(vol_make(&v, ndev, sz));
	MUST(vol_format(&v, dprof, mprof, NULL));
	MUST(vol_open_degraded(devs, vol_devs_but(&v, away, devs), &c));
	MUST(populate(c, ext));
	MUST(mount_close(c));
	c = NULL;
	MUST(vol_open(&v, &c));
	volume_resync_wait(c);
	mount_stats(c, &st);
	CHECK(N("the returning device is resynced"), !c->devs[away]->stale && st.resync_bytes > 0);
	CHECK(N("everything reads after the resync"), verify_all(c, ext));
	MUST(mount_close(c));
	c = NULL;
	CHECK(N("then any other device missing: every read served (the resynced stripes are right)"),
	      served_each_missing(&v, away, all_read, ext) == ndev - 1);
	CHECK_VFSCK(N("fsck clean over every device"), &v);
out:
	vol_done(&v, c);
#undef N
}

/* Wait for a balance to end; its result. */
static int balance_wait(struct core *c)
{
	struct volume_balance_status s;

	for (int i = 0; i < 3000; i++) {
		volume_balance_status(c, &s);
		if (!s.running)
			return s.result;
		usleep(10000);
	}
	return -ETIMEDOUT;
}

/* A balance to data profile d and metadata profile m (-1: left as they
 * are), waited for: its result.  Why it failed (refused, cancelled, the
 * status's message) is printed after what, unless NULL. */
static int balance_run(struct core *c, int64_t d, int64_t m, const char *what)
{
	struct volume_balance_status bs;
	char msg[256];
	int r = volume_balance_start(c, d, m, msg, sizeof(msg));

	if (r) {
		if (what)
			printf("# %s: %s\n", what, msg);
		return r;
	}
	r = balance_wait(c);
	if (r && what) {
		volume_balance_status(c, &bs);
		printf("# %s: %s\n", what, r == -ECANCELED ? "cancelled" : bs.msg);
	}
	return r;
}

static int count_on(const struct chunk *ch, void *arg)
{
	const struct dev *d = ((const struct dev **)arg)[0];
	int *n = ((int **)arg)[1];

	for (int i = 0; i < ch->num_stripes; i++)
		*n += ch->stripes[i].dev == d;
	return 0;
}

/* One balance converting data to d and metadata to m, waited for:
 * checked by every chunk's profile and every item and extent read back. */
static void convert_step(struct core *c, uint64_t d, uint64_t m, const char *what,
			 const uint64_t *ext)
{
	char name[200];
	int r = balance_run(c, (int64_t)d, (int64_t)m, what);

	snprintf(name, sizeof(name), "convert %s: finishes, every chunk converted, every byte reads",
		 what);
	CHECK(name, r == 0 && profiles_ok(c, d, m) && verify_all(c, ext));
}

/*
 * Conversions to and from raid10 on four devices, each checked by its
 * chunks' profiles, every byte read back and fsck: raid1 -> raid10 ->
 * single -> raid10 -> raid1; then removing a device from a raid10 volume
 * is refused (3 would be left).
 */
static void raid10_convert(void)
{
	struct vol v = { 0 };
	uint64_t sz[4] = { 64ull << 20, 64ull << 20, 64ull << 20, 64ull << 20 }, ext[NEXT];
	struct core *c = NULL;
	char msg[256];
	static const struct { uint64_t d, m; const char *name; } steps[] = {
		{ CORE_PROFILE_RAID10, CORE_PROFILE_RAID10, "raid1 -> raid10" },
		{ CORE_PROFILE_SINGLE, CORE_PROFILE_RAID1, "raid10 -> single data, raid1 metadata" },
		{ CORE_PROFILE_RAID10, CORE_PROFILE_RAID10, "single -> raid10" },
		{ CORE_PROFILE_RAID1, CORE_PROFILE_DUP, "raid10 -> raid1 data, dup metadata" },
	};

	MUST(vol_up(&v, 4, sz, CORE_PROFILE_RAID1, CORE_PROFILE_RAID1, &c));
	MUST(populate(c, ext));
	for (size_t k = 0; k < sizeof(steps) / sizeof(steps[0]); k++) {
		convert_step(c, steps[k].d, steps[k].m, steps[k].name, ext);
		if (k == 2)
			CHECK("raid10: removing a device (3 would be left) is refused",
			      volume_dev_remove(c, v.devs[3], msg, sizeof(msg)) == -EINVAL &&
			      strstr(msg, "raid10"));
	}
	MUST(mount_close(c));
	c = NULL;
	CHECK_VFSCK("raid10 conversions: fsck clean", &v);
out:
	vol_done(&v, c);
}

/*
 * A conversion that keeps old copies and drops the rest (to single: copy
 * 0; raid1c3 -> raid1: copies 0 and 1; dup -> raid1: copy 0 beside a new
 * one): with copy `bad` of the fs root node and of a data sector damaged
 * (and, all_bad, every other copy of that sector too), the balance must
 * mend the kept copy from another first.  After it (and a reopen: the
 * node cache must not answer) every item and extent reads, a scrub finds
 * nothing to repair, fsck clean; with every copy of the sector bad, the
 * balance ends with -EIO naming its logical address, and the rest reads
 * as before.  Failed on the old code: the kept copy went unread, the
 * root node read EIO (to single) or scrub found the kept copy bad.
 */
struct keep_want {
	const char *tag;
	int ndev;
	uint64_t from, to;
	int bad;
	bool all_bad;
	/* every copy of the fs root node bad (and no data sector): the
	 * balance ends -EIO naming the node, nothing else is lost */
	bool node_all_bad;
	/* the device holding copy `bad` of the sector fails every read
	 * during the balance (a kept stripe's read error, not a checksum
	 * mismatch), its bytes bad behind the error */
	bool read_err;
	/* copy `bad` of the fs root node is a sound node of an earlier
	 * generation (a lost write), and no sector is damaged */
	bool stale_node;
};

/* Format and fill the closed volume v, then damage copy w->bad of the fs
 * root node and of a sector of ext[1] (every copy of the sector,
 * all_bad; every copy of the node and no sector, node_all_bad); *sect:
 * that sector's logical (node_all_bad: the node's), sect_dev the path
 * of its copy w->bad. */
static int keep_damage(struct vol *v, const struct keep_want *w, uint64_t *ext, uint64_t *sect,
		       char *sect_dev, size_t dlen)
{
	struct { char path[256]; uint64_t phys; uint32_t off; } d[CHUNK_MAX_STRIPES + 1];
	struct core *c = NULL;
	uint64_t root;
	int nd = 0, ret;

	MUST(vol_format(v, w->from, w->from, NULL));
	MUST(vol_open(v, &c));
	MUST(populate(c, ext));
	root = subvol_root(c, FS_TREE_OBJECTID)->bytenr;
	if (w->stale_node) {
		const char *p = NULL;
		uint64_t ph = copy_phys(c, root, c->nodesize, w->bad, &p);
		uint64_t gen = subvol_root(c, FS_TREE_OBJECTID)->generation;
		uint32_t ns = c->nodesize;
		*sect = root;
		if (!ph || gen < 2)
			goto out;
		snprintf(d[0].path, sizeof(d[0].path), "%s", p);
		MUST(mount_close(c));
		c = NULL;
		return t_forge_node_gen(d[0].path, ph, ns, gen - 1);
	}
	*sect = w->node_all_bad ? root : ext[1] + 5 * CORE_SECTORSIZE;
	for (int m = 0; m < CHUNK_MAX_STRIPES; m++) {
		const char *p = NULL;
		uint64_t ph = copy_phys(c, *sect, CORE_SECTORSIZE, m, &p);

		if (ph && m == w->bad)
			snprintf(sect_dev, dlen, "%s", p);
		if (ph && !w->node_all_bad && (m == w->bad || w->all_bad)) {
			snprintf(d[nd].path, sizeof(d[nd].path), "%s", p);
			d[nd].off = 17 + 40 * (uint32_t)m;	/* a different byte on each copy */
			d[nd++].phys = ph;
		}
		ph = copy_phys(c, root, c->nodesize, m, &p);
		if (ph && (m == w->bad || w->node_all_bad)) {
			snprintf(d[nd].path, sizeof(d[nd].path), "%s", p);
			d[nd].off = 300 + 8 * (uint32_t)m;
			d[nd++].phys = ph;
		}
	}
	MUST(mount_close(c));
	c = NULL;
	ret = nd >= (w->all_bad ? 3 : 2) ? 0 : -ENOENT;
	for (int i = 0; !ret && i < nd; i++)
		ret = t_poke(d[i].path, d[i].phys + d[i].off, 0x5a);
	return ret;
out:
	if (c)
		mount_close(c);
	return -EIO;
}

/* The balance to w->to, waited for: its result, its message in msg. */
static int keep_balance(struct core *c, const struct keep_want *w, char *msg, size_t mlen)
{
	struct volume_balance_status s;
	int r = volume_balance_start(c, (int64_t)w->to, (int64_t)w->to, msg, mlen);

	if (r)
		return r;
	r = balance_wait(c);
	volume_balance_status(c, &s);
	snprintf(msg, mlen, "%s", s.msg);
	if (r)
		printf("# %s: balance: %s\n", w->tag, msg);
	return r;
}

static void keep_case(const struct keep_want *w)
{
	struct vol v = { 0 };
	uint64_t sz[3] = { 96ull << 20, 96ull << 20, 96ull << 20 }, ext[NEXT], sect = 0;
	char name[200], msg[256] = "", at[32], sect_dev[256] = "";
	struct scrub_opts so = { 0 };
	struct scrub_progress sp;
	struct core *c = NULL;
	struct dev *rerr = NULL;
	int r;
#define N(s) (snprintf(name, sizeof(name), "%s: %s", w->tag, s), name)

	MUST(vol_make(&v, w->ndev, sz));
	if (keep_damage(&v, w, ext, &sect, sect_dev, sizeof(sect_dev))) {
		printf("FAIL: %s: no copies found to damage\n", w->tag);
		fails++;
		goto out;
	}
	MUST(vol_open(&v, &c));
	CHECK(N("before: the items read, the extent reads unless every copy is bad"),
	      verify_all_items(c) == !w->node_all_bad &&
	      extent_reads(c, ext[1], EXTLEN, 2) == !w->all_bad);
	for (int i = 0; w->read_err && i < c->ndevs; i++)
		if (!strcmp(c->devs[i]->path, sect_dev))
			rerr = c->devs[i];
	if (w->read_err && !rerr) {
		printf("FAIL: %s: no device %s\n", w->tag, sect_dev);
		fails++;
		goto out;
	}
	if (rerr)
		dev_set_fail(rerr, DEV_READ, true);
	uint64_t rerrs0 = rerr ? rerr->err[DEV_ERR_READ] : 0;
	r = keep_balance(c, w, msg, sizeof(msg));
	if (rerr) {
		dev_set_fail(rerr, DEV_READ, false);
		printf("# %s: %llu reads of %s failed during the balance\n", w->tag,
		       (unsigned long long)(rerr->err[DEV_ERR_READ] - rerrs0), rerr->path);
		CHECK(N("the kept copy's device failed reads during the balance"),
		      rerr->err[DEV_ERR_READ] > rerrs0);
	}
	snprintf(at, sizeof(at), "%llu", (unsigned long long)sect);
	if (w->all_bad || w->node_all_bad)
		CHECK(N("the balance ends with -EIO naming the block no copy has"),
		      r == -EIO && strstr(msg, at) != NULL);
	else
		CHECK(N("the balance finishes"), r == 0);
	CHECK(N("every chunk has the new profile"), profiles_ok(c, w->to, w->to));
	MUST(mount_close(c));
	c = NULL;
	MUST(vol_open(&v, &c));
	if (w->node_all_bad) {
		bool rest = true;
		for (int e = 0; e < NEXT; e++)
			rest &= extent_reads(c, ext[e], EXTLEN, (unsigned)e + 1);
		CHECK(N("after a reopen: every extent reads, the lost node's items still not"),
		      rest && !verify_all_items(c));
		MUST(scrub_run(c, &so, &sp));
		printf("# %s: scrub: %llu node errors, %llu uncorrectable bytes, %llu data errors\n",
		       w->tag, (unsigned long long)sp.meta_errors,
		       (unsigned long long)sp.uncorrectable_bytes, (unsigned long long)sp.data_errors);
		CHECK(N("a scrub finds the one lost node and nothing else"),
		      sp.uncorrectable_bytes == c->nodesize && sp.data_errors == 0 &&
		      sp.corrected_bytes == 0 && sp.read_errors == 0);
	} else if (w->all_bad) {
		bool rest = verify_all_items(c);
		for (int e = 0; e < NEXT; e++)
			rest &= e == 1 || extent_reads(c, ext[e], EXTLEN, (unsigned)e + 1);
		CHECK(N("after a reopen: everything readable before reads, the lost sector still not"),
		      rest && !extent_reads(c, ext[1], EXTLEN, 2));
	} else {
		CHECK(N("after a reopen: every item and extent reads"), verify_all(c, ext));
		MUST(scrub_run(c, &so, &sp));
		CHECK(N("a scrub finds nothing to repair (every kept copy was mended)"),
		      sp.meta_errors == 0 && sp.data_errors == 0 && sp.corrected_bytes == 0 &&
		      sp.uncorrectable_bytes == 0 && sp.checked_bytes > 0);
	}
	MUST(mount_close(c));
	c = NULL;
	if (!w->all_bad && !w->node_all_bad)
		CHECK_VFSCK(N("fsck clean"), &v);
out:
	vol_done(&v, c);
#undef N
}

static void keep_cases(void)
{
	static const struct keep_want w[] = {
		{ "raid1 -> single, kept copy 0 bad", 2, CORE_PROFILE_RAID1, CORE_PROFILE_SINGLE, 0,
		  false, false, false, false },
		{ "dup -> single, kept copy 0 bad", 1, CORE_PROFILE_DUP, CORE_PROFILE_SINGLE, 0,
		  false, false, false, false },
		{ "raid1c3 -> raid1, kept copy 1 bad", 3, CORE_PROFILE_RAID1C3, CORE_PROFILE_RAID1, 1,
		  false, false, false, false },
		{ "dup -> raid1, kept copy 0 bad", 2, CORE_PROFILE_DUP, CORE_PROFILE_RAID1, 0,
		  false, false, false, false },
		{ "raid1 -> single, every copy of a sector bad", 2, CORE_PROFILE_RAID1,
		  CORE_PROFILE_SINGLE, 0, true, false, false, false },
		{ "raid1 -> single, every copy of a node bad", 2, CORE_PROFILE_RAID1,
		  CORE_PROFILE_SINGLE, 0, false, true, false, false },
		{ "raid1c3 -> raid1, kept copy 0 unreadable and bad", 3, CORE_PROFILE_RAID1C3,
		  CORE_PROFILE_RAID1, 0, false, false, true, false },
		{ "raid1 -> single, kept copy 0 of a node a lost write", 2, CORE_PROFILE_RAID1,
		  CORE_PROFILE_SINGLE, 0, false, false, false, true },
	};

	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++)
		keep_case(&w[i]);
}

/*
 * A device removal whose surviving copies have a block no copy verifies
 * ends as a balance does (volume_lost_say): the removal done, -EIO naming
 * the block.  missing: `device remove missing` of the device holding copy
 * 1 of a sector whose copy 0 (the survivor) is bad; else a plain remove
 * of the device holding copy 0, every copy of the sector bad.  The rest
 * reads after, and after a reopen of what is left.  Failed on the old
 * code: both returned 0 (a plain remove said nothing, `remove missing`
 * named the block in a success message).
 */
static void remove_lost_case(bool missing)
{
	const char *tag = missing ? "remove missing, survivor bad" : "remove, every copy bad";
	struct vol v = { 0 };
	uint64_t sz[3] = { 96ull << 20, 96ull << 20, 96ull << 20 }, ext[NEXT], sect;
	const char *left[3], *p0 = NULL, *p1 = NULL;
	char name[200], msg[512] = "", at[32], d0[256], d1[256];
	uint64_t ph0, ph1;
	struct core *c = NULL;
	int gone = -1, r, nleft;
#define N(s) (snprintf(name, sizeof(name), "%s: %s", tag, s), name)

	MUST(vol_up(&v, 3, sz, CORE_PROFILE_RAID1, CORE_PROFILE_RAID1, &c));
	MUST(populate(c, ext));
	sect = ext[1] + 5 * CORE_SECTORSIZE;
	ph0 = copy_phys(c, sect, CORE_SECTORSIZE, 0, &p0);
	ph1 = copy_phys(c, sect, CORE_SECTORSIZE, 1, &p1);
	MUST(ph0 && ph1 ? 0 : -ENOENT);
	snprintf(d0, sizeof(d0), "%s", p0);	/* the device's own goes at close */
	snprintf(d1, sizeof(d1), "%s", p1);
	MUST(mount_close(c));
	c = NULL;
	for (int k = 0; k < v.n; k++)
		if (!strcmp(v.devs[k], missing ? d1 : d0))
			gone = k;
	MUST(gone >= 0 ? 0 : -ENOENT);
	MUST(t_poke(d0, ph0 + 17, 0x5a));
	if (!missing)
		MUST(t_poke(d1, ph1 + 57, 0x5a));
	nleft = vol_devs_but(&v, gone, left);
	if (missing)
		MUST(vol_open_degraded(left, nleft, &c));
	else
		MUST(vol_open(&v, &c));
	r = volume_dev_remove(c, missing ? "missing" : v.devs[gone], msg, sizeof(msg));
	printf("# %s: %d: %s\n", tag, r, msg);
	snprintf(at, sizeof(at), "%llu", (unsigned long long)sect);
	CHECK(N("ends with -EIO naming the block, saying the device was removed"),
	      r == -EIO && strstr(msg, at) && strstr(msg, "removed"));
	CHECK(N("the device is gone"), c->ndevs == 2 && c->sb.num_devices == 2);
	bool rest = verify_all_items(c);
	for (int e = 0; e < NEXT; e++)
		rest &= e == 1 || extent_reads(c, ext[e], EXTLEN, (unsigned)e + 1);
	CHECK(N("every other item and extent reads, the lost sector not"),
	      rest && !extent_reads(c, ext[1], EXTLEN, 2));
	MUST(mount_close(c));
	c = NULL;
	{
		struct core_opts o;	/* not degraded: no device is missing now */
		core_opts_default(&o);
		o.commit_interval_s = 3600;
		r = mount_open(left, nleft, &o, &c);
	}
	CHECK(N("what is left opens, not degraded"), r == 0);
	if (!r) {
		rest = verify_all_items(c);
		for (int e = 0; e < NEXT; e++)
			rest &= e == 1 || extent_reads(c, ext[e], EXTLEN, (unsigned)e + 1);
		CHECK(N("after a reopen: the same"), rest);
	}
out:
	vol_done(&v, c);
#undef N
}

/*
 * Online device add, balance with conversion, device remove, through the
 * engine API (the ioctls call the same functions).
 */
static void volume_ops(void)
{
	struct vol v = { 0 };
	uint64_t sz[3] = { 64ull << 20, 64ull << 20, 64ull << 20 }, ext[NEXT];
	struct core *c = NULL;
	char msg[512];
	int n;

	MUST(vol_make(&v, 3, sz));
	v.n = 1;
	MUST(vol_format(&v, 0, CORE_PROFILE_DUP, NULL));
	MUST(vol_open(&v, &c));
	MUST(populate(c, ext));
	CHECK("volume: raid1 convert on one device is refused",
	      volume_balance_start(c, (int64_t)CORE_PROFILE_RAID1, -1, msg, sizeof(msg)) == -EINVAL &&
	      strstr(msg, "needs 2 devices"));
	CHECK("volume: removing the last device is refused",
	      volume_dev_remove(c, v.devs[0], msg, sizeof(msg)) == -EINVAL && strstr(msg, "last device"));
	CHECK("volume: add a device", volume_dev_add(c, v.devs[1], msg, sizeof(msg)) == 0 &&
	      c->ndevs == 2 && c->sb.num_devices == 2);
	CHECK("volume: adding it again is refused (EEXIST)",
	      volume_dev_add(c, v.devs[1], msg, sizeof(msg)) == -EEXIST);
	CHECK("volume: balance to raid1/raid1 starts",
	      volume_balance_start(c, (int64_t)CORE_PROFILE_RAID1, (int64_t)CORE_PROFILE_RAID1,
				   msg, sizeof(msg)) == 0);
	CHECK("volume: balance finishes", balance_wait(c) == 0);
	struct prof_check pc = { BG_DATA, BG_RAID1, 0, 0, false };
	chunk_for_each(c, check_chunk, &pc);
	CHECK("volume: every data chunk is raid1 after the convert", pc.n > 0 && pc.wrong == 0);
	CHECK("volume: everything reads after the convert", verify_all(c, ext));
	CHECK("volume: raid1 -> single -> raid1 data converts (keeping a stripe each way)",
	      balance_run(c, (int64_t)CORE_PROFILE_SINGLE, -1, NULL) == 0 && verify_all(c, ext) &&
	      balance_run(c, (int64_t)CORE_PROFILE_RAID1, -1, NULL) == 0 && verify_all(c, ext));
	CHECK("volume: removing a device under raid1 with 2 devices is refused",
	      volume_dev_remove(c, v.devs[0], msg, sizeof(msg)) == -EINVAL);
	CHECK("volume: add a third device", volume_dev_add(c, v.devs[2], msg, sizeof(msg)) == 0);
	CHECK("volume: remove the first one (its stripes move)",
	      volume_dev_remove(c, v.devs[0], msg, sizeof(msg)) == 0 && c->ndevs == 2);
	n = 0;
	const void *arg[2] = { NULL, &n };
	chunk_for_each(c, count_on, arg);	/* no stripe points at a NULL device */
	CHECK("volume: no stripe left without a device", n == 0);
	CHECK("volume: everything reads after the removal", verify_all(c, ext));
	MUST(mount_close(c));
	c = NULL;
	v.devs[0] = v.img[1];
	v.devs[1] = v.img[2];
	v.n = 2;
	MUST(vol_open(&v, &c));
	CHECK("volume: reopens from the two devices left, everything reads", verify_all(c, ext));
	MUST(mount_close(c));
	c = NULL;
	CHECK_VFSCK("volume: fsck clean after add, convert and remove", &v);
out:
	v.n = 3;
	vol_done(&v, c);
}

/* Extents of assorted lengths (whole rows, a padded last row, several
 * MiB), each remembered with its seed, to read back after every move. */
#define PX_MAX 512
struct pset {
	uint64_t l[PX_MAX], len[PX_MAX];
	unsigned seed[PX_MAX];
	int n, err;
	struct core *c;
	const int *stop;
};

static int pset_add(struct pset *ps, uint64_t len)
{
	int i = ps->n, ret;

	if (i == PX_MAX)
		return 0;
	ps->len[i] = len;
	ps->seed[i] = (unsigned)i * 13 + 5;
	ret = put_extent(ps->c, len, ps->seed[i], &ps->l[i]);
	if (!ret)
		__atomic_store_n(&ps->n, i + 1, __ATOMIC_RELEASE);
	return ret;
}

static int pset_fill(struct pset *ps, int n)
{
	static const uint64_t lens[] = { 4096, 5 * 4096, 64 << 10, 3 * 4096, 1 << 20, 7 * 4096,
					  (2 << 20) + 4096, 12 << 10 };
	int ret = 0;

	for (int i = 0; i < n && !ret; i++)
		ret = pset_add(ps, lens[ps->n % 8]);
	return ret;
}

/* Every extent of ps reads back its bytes (checksums verified). */
static bool pset_reads(struct pset *ps)
{
	int n = __atomic_load_n(&ps->n, __ATOMIC_ACQUIRE), bad = 0;

	for (int i = 0; i < n; i++)
		bad += !extent_reads(ps->c, ps->l[i], ps->len[i], ps->seed[i]);
	if (bad)
		printf("# %d of %d extents do not read back\n", bad, n);
	return n > 0 && bad == 0;
}

/* pset_reads on volume c (served_each_missing's reads). */
static bool pset_reads_on(struct core *c, void *ps)
{
	((struct pset *)ps)->c = c;
	return pset_reads(ps);
}

/* A writer beside a balance: small extents until *stop. */
static void *pset_writer(void *arg)
{
	struct pset *ps = arg;

	while (!__atomic_load_n(ps->stop, __ATOMIC_ACQUIRE) && ps->n < PX_MAX - 8)
		if ((ps->err = pset_fill(ps, 1)) != 0)
			break;
	return NULL;
}

/* Chunks of a type with stripes on a device (or missing ones: dev NULL). */
struct on_dev { const struct dev *d; uint64_t type; int n; bool missing; };
static int note_on_dev(const struct chunk *ch, void *arg)
{
	struct on_dev *o = arg;

	for (int i = 0; i < ch->num_stripes; i++)
		if ((ch->type & o->type) && (o->missing ? !ch->stripes[i].dev : ch->stripes[i].dev == o->d))
			o->n++;
	return 0;
}

/*
 * nimg images of mib MiB, the first nfmt of them formatted with dprof
 * data and mprof metadata and mounted in *c: NITEMS items committed, ps
 * filled with nfill extents.  v->n is nfmt.
 */
static int pset_vol(struct vol *v, int nimg, int nfmt, uint64_t mib, uint64_t dprof,
		    uint64_t mprof, struct pset *ps, int nfill, struct core **c)
{
	uint64_t sz[6];
	int ret;

	for (int i = 0; i < 6; i++)
		sz[i] = mib << 20;
	ret = vol_make(v, nimg, sz);
	v->n = nfmt;
	if (!ret)
		ret = vol_format(v, dprof, mprof, NULL);
	if (!ret)
		ret = vol_open(v, c);
	if (ret)
		return ret;
	ps->c = *c;
	ret = t_insert_items(*c, 0, NITEMS, 100);
	if (!ret)
		ret = txn_commit(*c, COMMIT_SYNC);
	return ret ? ret : pset_fill(ps, nfill);
}

/*
 * glassctl device replace missing NEW on degraded c: the nadd devices of
 * add added, the missing ones removed.  True when that worked and no
 * chunk has a stripe on a missing device; else the error is printed
 * after `what`.
 */
static bool replace_missing(struct core *c, const char *const *add, int nadd, const char *what)
{
	struct on_dev od = { NULL, BG_DATA | BG_METADATA | BG_SYSTEM, 0, true };
	char msg[512];
	int r = 0;

	for (int i = 0; i < nadd && !r; i++)
		r = volume_dev_add(c, add[i], msg, sizeof(msg));
	if (!r)
		r = volume_dev_remove(c, "missing", msg, sizeof(msg));
	if (r)
		printf("# %s: %s\n", what, msg);
	chunk_for_each(c, note_on_dev, &od);
	return r == 0 && od.n == 0;
}

/*
 * The end of a device remove or replace: *c closed, the n devices of
 * devs mounted alone (not degraded), every extent of ps reads back
 * (CHECK reads), closed again, fsck clean on them (CHECK fsck).
 */
static int pset_remount(struct core **c, const char *const *devs, int n, struct pset *ps,
			const char *reads, const char *fsck)
{
	struct vol nv = { .n = n };
	int ret = mount_close(*c);

	for (int i = 0; i < n; i++)
		nv.devs[i] = devs[i];
	*c = NULL;
	if (!ret)
		ret = vol_open(&nv, c);
	if (ret)
		return ret;
	ps->c = *c;
	CHECK(reads, pset_reads(ps));
	ret = mount_close(*c);
	*c = NULL;
	if (!ret)
		CHECK_VFSCK(fsck, &nv);
	return ret;
}

/*
 * raid5 and raid6 data moved in every direction on four devices, a
 * writer running beside each balance: raid1 -> raid5 -> raid6 -> raid10
 * -> raid5 -> single -> raid6 -> dup -> raid1, each step with every chunk
 * in the new profile and every extent (old and written meanwhile) read
 * back; extents written after a conversion to raid5/6 start on rows;
 * fsck clean at the end (metadata: meta_parity_convert).
 */
static void parity_convert(void)
{
	struct vol v = { 0 };
	static const struct { uint64_t d; const char *name; } steps[] = {
		{ CORE_PROFILE_RAID5, "raid1 -> raid5" },
		{ CORE_PROFILE_RAID6, "raid5 -> raid6" },
		{ CORE_PROFILE_RAID10, "raid6 -> raid10" },
		{ CORE_PROFILE_RAID5, "raid10 -> raid5" },
		{ CORE_PROFILE_SINGLE, "raid5 -> single" },
		{ CORE_PROFILE_RAID6, "single -> raid6" },
		{ CORE_PROFILE_DUP, "raid6 -> dup" },
		{ CORE_PROFILE_RAID1, "dup -> raid1" },
	};
	struct pset *ps = calloc(1, sizeof(*ps));
	struct core *c = NULL;
	char msg[256], name[200];

	MUST(ps ? 0 : -ENOMEM);
	MUST(pset_vol(&v, 4, 4, 256, CORE_PROFILE_RAID1, CORE_PROFILE_RAID1, ps, 24, &c));
	for (size_t k = 0; k < sizeof(steps) / sizeof(steps[0]); k++) {
		int stop = 0, r;
		pthread_t th;
		bool writer;

		ps->stop = &stop;
		ps->err = 0;
		writer = pthread_create(&th, NULL, pset_writer, ps) == 0;
		r = volume_balance_start(c, (int64_t)steps[k].d, -1, msg, sizeof(msg));
		if (!r)
			r = balance_wait(c);
		__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
		if (writer)
			pthread_join(th, NULL);
		if (r || ps->err) {
			struct volume_balance_status bs;
			volume_balance_status(c, &bs);
			printf("# %s: %s (writer: %s)\n", steps[k].name, r ? bs.msg : "ok",
			       strerror(-ps->err));
		}
		/* chunks the writer made meanwhile may still be of the old
		 * profile: a second balance, with no writer, moves them */
		if (!r)
			r = volume_balance_start(c, (int64_t)steps[k].d, -1, msg, sizeof(msg));
		if (!r)
			r = balance_wait(c);
		snprintf(name, sizeof(name), "convert %s beside a writer: every data chunk converted, "
			 "every extent reads back (%d extents)", steps[k].name, ps->n);
		CHECK(name, r == 0 && !ps->err && profiles_ok(c, steps[k].d, CORE_PROFILE_RAID1) &&
		      pset_reads(ps) && verify_all_items(c));
		if (steps[k].d & (CORE_PROFILE_RAID5 | CORE_PROFILE_RAID6)) {
			int i = ps->n;
			r = pset_fill(ps, 1);
			snprintf(name, sizeof(name), "after %s: a new extent starts on a row and reads back",
				 steps[k].name);
			CHECK(name, r == 0 && chunk_row_bytes(c, ps->l[i]) > CORE_SECTORSIZE &&
			      (ps->l[i] - chunk_of(c, ps->l[i]).start) % chunk_row_bytes(c, ps->l[i]) == 0 &&
			      pset_reads(ps));
		}
	}
	MUST(mount_close(c));
	c = NULL;
	CHECK_VFSCK("parity convert: fsck clean after every conversion", &v);
	MUST(vol_open(&v, &c));
	ps->c = c;
	CHECK("parity convert: after a remount every extent reads back", pset_reads(ps));
out:
	vol_done(&v, c);
	free(ps);
}

/*
 * A three-device raid5 chunk cut at 1 MiB: 128 rows of 8 KiB, no multiple
 * of three, so the rest's rows would find their columns on the wrong
 * devices (parity rotates by row) unless its stripes turn with the cut.
 * Every extent on both sides reads back, before and after a remount, and
 * fsck is clean.
 */
static void split_turns_stripes(void)
{
	struct vol v = { 0 };
	uint64_t sz[3] = { 64ull << 20, 64ull << 20, 64ull << 20 }, l[8], MB = 1ull << 20;
	struct core *c = NULL;
	struct chunk_at ch, h2;
	struct txn *t;
	bool ok = true;

	MUST(vol_up(&v, 3, sz, CORE_PROFILE_RAID5, CORE_PROFILE_RAID1, &c));
	for (int i = 0; i < 8; i++)
		MUST(put_extent(c, MB / 2, 40u + (unsigned)i, &l[i]));
	ch = chunk_of(c, l[0]);
	for (int i = 0; i < 8; i++)
		ok &= l[i] == ch.start + (uint64_t)i * MB / 2;
	CHECK("split turns stripes: 512 KiB extents end to end in a three-device raid5 chunk",
	      ok && (ch.type & BG_RAID5) && chunk_row_bytes(c, l[0]) == 8192 && ch.len > 4 * MB);
	MUST(alloc_fence(c, ch.start, MB));
	MUST(txn_commit(c, COMMIT_SYNC));
	MUST(txn_join(c, 16, 0, &t));
	int r = chunk_split(t, ch.start, MB), r2 = txn_end(t);
	MUST(r ? r : r2);
	MUST(txn_commit(c, COMMIT_SYNC));
	h2 = chunk_of(c, ch.start + MB);
	ok = true;
	for (int i = 0; i < 8; i++)
		ok &= extent_reads(c, l[i], MB / 2, 40u + (unsigned)i);
	CHECK("split turns stripes: cut after 128 rows, every extent reads back",
	      h2.start == ch.start + MB && ok);
	MUST(mount_close(c));
	c = NULL;
	CHECK_VFSCK("split turns stripes: fsck clean", &v);
	MUST(vol_open(&v, &c));
	ok = true;
	for (int i = 0; i < 8; i++)
		ok &= extent_reads(c, l[i], MB / 2, 40u + (unsigned)i);
	CHECK("split turns stripes: after a remount every extent reads back", ok);
out:
	vol_done(&v, c);
}

/* Chunks of a type and how many of them are no MiB multiple long. */
struct chunk_count { uint64_t type; int n, odd; };
static int count_chunks(const struct chunk *ch, void *arg)
{
	struct chunk_count *cc = arg;

	if (ch->type & cc->type) {
		cc->n++;
		cc->odd += (ch->length & ((1ull << 20) - 1)) != 0;
	}
	return 0;
}

/*
 * Issue 21: a raid5/6 data chunk packed with extents that cross every MiB
 * boundary (512 KiB, then 1 MiB ones, then what is left), converted to
 * dup, whose both copies fit on no device (four 64 MiB devices: a raid6
 * chunk of 32 MiB, 64 MiB of dup; a raid5 one of 30 MiB in 12 KiB rows): the
 * chunk must be split, and no MiB boundary is free.  Every chunk becomes
 * dup, cut between extents; every byte reads back, before and after a
 * remount; fsck is clean.  The cuts fall after a number of rows no
 * multiple of four: the rest's stripes must turn with the rows.
 */
static void packed_split_convert(const char *what, int ndev, uint64_t prof, uint64_t mib)
{
	struct vol v = { 0 };
	uint64_t sz[4] = { mib << 20, mib << 20, mib << 20, mib << 20 }, MB = 1ull << 20;
	uint64_t l[64], len[64], end;
	struct core *c = NULL;
	struct chunk_at ch;
	char name[200];
	int n = 0;
	bool ok = true;

	MUST(vol_up(&v, ndev, sz, prof, CORE_PROFILE_RAID1, &c));
	len[0] = MB / 2;
	MUST(put_extent(c, len[0], 1, &l[0]));
	ch = chunk_of(c, l[0]);
	end = ch.start + ch.len;
	uint64_t row = chunk_row_bytes(c, l[0]);	/* extents start on rows */
	/* the next row start after extent i, rows counted from the chunk's */
#define NEXT_ROW(i) (ch.start + (l[i] + len[i] - ch.start + row - 1) / row * row)
	for (n = 1; n < 64 && NEXT_ROW(n - 1) < end; n++) {
		uint64_t at = NEXT_ROW(n - 1);
		len[n] = end - at < MB + row ? end - at : MB;	/* the last: to the end */
		MUST(put_extent(c, len[n], (unsigned)n + 1, &l[n]));
		if (l[n] != at)
			printf("# extent %d of %llu bytes at +%llu, want +%llu\n", n,
			       (unsigned long long)len[n], (unsigned long long)(l[n] - ch.start),
			       (unsigned long long)(at - ch.start));
		ok &= l[n] == at;
	}
	CHECKF(what, "the data chunk packed from its start, end to end",
	      (ch.type & BG_PROFILE_MASK) == prof && l[0] == ch.start && ok &&
	      end - (l[n - 1] + len[n - 1]) < row);
	CHECKF(what, "extents cross every MiB boundary of the chunk",
	      chunk_split_point(c, ch.start, ch.len - 1, ch.len, MB) == 0);
	int r = balance_run(c, (int64_t)CORE_PROFILE_DUP, -1, what);
	struct chunk_count cc = { BG_DATA, 0, 0 };
	chunk_for_each(c, count_chunks, &cc);
	printf("# a %llu MiB chunk; %d data chunks after the conversion, %d of them no MiB "
	       "multiple long\n", (unsigned long long)(ch.len >> 20), cc.n, cc.odd);
	ok = true;
	for (int i = 0; i < n; i++)
		ok &= extent_reads(c, l[i], len[i], (unsigned)i + 1);
	CHECKF(what, "converts every data chunk to dup, split between extents",
	      r == 0 && profiles_ok(c, CORE_PROFILE_DUP, CORE_PROFILE_RAID1) && cc.n > 1);
	CHECKF(what, "every extent reads back after the conversion", ok);
	MUST(mount_close(c));
	c = NULL;
	snprintf(name, sizeof(name), "%s: fsck clean after the conversion", what);
	CHECK_VFSCK(name, &v);
	MUST(vol_open(&v, &c));
	ok = true;
	for (int i = 0; i < n; i++)
		ok &= extent_reads(c, l[i], len[i], (unsigned)i + 1);
	CHECKF(what, "after a remount every extent reads back", ok);
out:
	vol_done(&v, c);
}

/*
 * A file read across a chunk split to fit (test_powerloss's
 * convert_split, live): three 64 MiB devices, raid1 data; small files
 * then a 26 MiB one written in one go (1 MiB pieces from a sector no MiB
 * multiple, merged up to DATA_MERGE_GRID), fsync'd; a balance to dup
 * must split the first data chunk, between two of the file's extents
 * that lie back to back on disk.  A file read joins such extents into
 * one range (fs/items/file.c read_run) and reads it in 1 MiB pieces from
 * its start: a piece straddled the cut, and the read failed -EIO ("not
 * inside one chunk") until chunk_map_piece cut every profile's pieces at
 * the chunk's end.  Reads of 2 MiB every 256 KiB over the whole file
 * (one of them straddles any cut), before and after 20000 bytes
 * rewritten at 1 MiB (which moves where a read's run starts), and whole.
 */
/* Data chunks whose logical ranges touch: the end of one where another starts. */
struct touch { uint64_t end[64], start[64]; int ne, ns; };
static int note_data_chunk(const struct chunk *ch, void *arg)
{
	struct touch *t = arg;

	if ((ch->type & BG_DATA) && t->ne < 64) {
		t->end[t->ne++] = ch->logical + ch->length;
		t->start[t->ns++] = ch->logical;
	}
	return 0;
}

/* v opened, with the file operations (fsops) on top: the cases that
 * write files. */
static int vol_mount_fs(struct vol *v, struct core **c, struct fsctx **fs)
{
	struct core_opts o;
	int ret = vol_open(v, c);

	if (ret)
		return ret;
	core_opts_default(&o);
	o.commit_interval_s = 3600;
	return fsops_mount(*c, &o, fs);
}

/* Does file ino read back w's flen bytes, in 2 MiB reads every 256 KiB
 * (each across whatever boundary lies there) and whole (into b)?  The
 * first wrong 2 MiB read is printed after tag. */
static bool reads_across(struct fsctx *fs, uint64_t ino, const uint8_t *w, uint8_t *b, size_t flen,
			 const char *tag)
{
	const uint64_t MB = 1ull << 20;
	int bad = 0;

	for (uint64_t off = 0; off + 2 * MB <= flen; off += MB / 4) {
		ssize_t n = fsops_read(fs, ino, b, 2 * MB, off);
		if ((n != (ssize_t)(2 * MB) || memcmp(b, w + off, 2 * MB)) && !bad++)
			printf("# %s: 2 MiB at %llu: %zd\n", tag, (unsigned long long)off, n);
	}
	ssize_t n = fsops_read(fs, ino, b, flen, 0);
	return !bad && n == (ssize_t)flen && !memcmp(b, w, flen);
}

/* A file case's end: ino forgotten, *fs and *c closed, fsck clean over
 * v (CHECK fsck).  0, or mount_close's error. */
static int vol_unmount_fs(struct vol *v, struct core **c, struct fsctx **fs, uint64_t ino,
			  const char *fsck)
{
	int ret;

	fsops_forget(*fs, ino, 1);
	fsops_unmount(*fs);
	*fs = NULL;
	ret = mount_close(*c);
	*c = NULL;
	if (!ret)
		CHECK_VFSCK(fsck, v);
	return ret;
}

/*
 * The other way to touching chunks, with no split: a file written
 * sequentially until its data chunk is full goes on at the start of the
 * next one, which the allocator placed right after it.  Its extents lie
 * back to back on disk across the chunks' boundary; a read of them is
 * one run (file.c read_run), read in pieces that must stop at the
 * chunk's end (chunk_map_piece): before, a piece straddled it and the
 * read failed -EIO.  2 MiB reads every 256 KiB and the whole file.
 */
static void touching_chunks_read(void)
{
	struct vol v = { 0 };
	uint64_t MB = 1ull << 20, sz[1] = { 512 * MB };
	struct fsops_cred cr = { .uid = 0, .gid = 0, .umask = 022 };
	struct core *c = NULL;
	struct fsctx *fs = NULL;
	struct stat st;
	struct touch t = { .ne = 0 };
	size_t flen = 0;
	uint8_t *w = NULL, *b = NULL;
	uint64_t ino = 0;
	int touching = 0;

	MUST(vol_make(&v, 1, sz));
	MUST(vol_format(&v, CORE_PROFILE_SINGLE, CORE_PROFILE_DUP, NULL));
	MUST(vol_mount_fs(&v, &c, &fs));
	chunk_for_each(c, note_data_chunk, &t);
	MUST(t.ne == 1 ? 0 : -EINVAL);
	flen = (size_t)(t.end[0] - t.start[0]) + 24 * MB;	/* past the first chunk */
	w = malloc(flen);
	b = malloc(flen);
	MUST(w && b ? 0 : -ENOMEM);
	fill(w, flen, 11);
	MUST(fsops_mknod(fs, ROOT_DIR_INO, "t0", S_IFREG | 0644, 0, &cr, &st));
	ino = st.st_ino;
	for (size_t off = 0; off < flen; off += MB)
		MUST(fsops_write(fs, ino, w + off, MB, off) == (ssize_t)MB ? 0 : -EIO);
	MUST(txn_commit(c, COMMIT_SYNC));
	t.ne = t.ns = 0;
	chunk_for_each(c, note_data_chunk, &t);
	for (int i = 0; i < t.ne; i++)
		for (int j = 0; j < t.ns; j++)
			touching += t.end[i] == t.start[j];
	printf("# touching chunks: %d data chunks, %d boundaries where one ends and another starts\n",
	       t.ne, touching);
	CHECK("touching chunks: the file filled its chunk and went on in one right after it "
	      "(the premise)", t.ne >= 2 && touching >= 1);
	CHECK("touching chunks: every read across the boundary reads back",
	      reads_across(fs, ino, w, b, flen, "touching chunks"));
	MUST(vol_unmount_fs(&v, &c, &fs, ino, "touching chunks: fsck clean"));
out:
	if (fs)
		fsops_unmount(fs);
	vol_done(&v, c);
	free(w);
	free(b);
}

static void split_file_read(void)
{
	struct vol v = { 0 };
	uint64_t MB = 1ull << 20, sz[3] = { 64 * MB, 64 * MB, 64 * MB };
	size_t flen = 26 << 20, small[3] = { 300000, 70000, 2000 };
	struct fsops_cred cr = { .uid = 0, .gid = 0, .umask = 022 };
	struct core *c = NULL;
	struct fsctx *fs = NULL;
	struct stat st;
	uint8_t *w = malloc(flen), *b = malloc(flen);
	uint64_t ino = 0;
	bool ok = w && b;

	MUST(ok ? 0 : -ENOMEM);
	MUST(vol_make(&v, 3, sz));
	MUST(vol_format(&v, CORE_PROFILE_RAID1, CORE_PROFILE_RAID1, NULL));
	MUST(vol_mount_fs(&v, &c, &fs));
	for (int i = 0; i < 3; i++) {	/* the file after them: off the MiB grid */
		char name[8];
		snprintf(name, sizeof(name), "c%d", i);
		fill(w, small[i], (unsigned)i + 1);
		MUST(fsops_mknod(fs, ROOT_DIR_INO, name, S_IFREG | 0644, 0, &cr, &st));
		fsops_forget(fs, st.st_ino, 1);
		MUST(fsops_write(fs, st.st_ino, w, small[i], 0) == (ssize_t)small[i] ? 0 : -EIO);
	}
	MUST(txn_commit(c, COMMIT_SYNC));
	struct chunk_count before = { BG_DATA, 0, 0 }, after = { BG_DATA, 0, 0 };
	chunk_for_each(c, count_chunks, &before);
	MUST(fsops_mknod(fs, ROOT_DIR_INO, "s0", S_IFREG | 0644, 0, &cr, &st));
	ino = st.st_ino;
	fill(w, flen, 9);
	MUST(fsops_write(fs, ino, w, flen, 0) == (ssize_t)flen ? 0 : -EIO);
	MUST(fsops_fsync(fs, ino, 1));
	int r = balance_run(c, (int64_t)CORE_PROFILE_DUP, -1, "split file read: balance");
	chunk_for_each(c, count_chunks, &after);
	CHECK("split file read: the conversion to dup splits a data chunk",
	      r == 0 && after.n > before.n && profiles_ok(c, CORE_PROFILE_DUP, CORE_PROFILE_RAID1));
	for (int pass = 0; pass < 2; pass++) {
		CHECKF("split file read", pass ? "after a rewrite at 1 MiB, every read across the cut "
		       "reads back" : "every read across the cut reads back",
		       reads_across(fs, ino, w, b, flen, "split file read"));
		fill(w + MB, 20000, 10);	/* the run of a read from 0 starts after it */
		MUST(fsops_write(fs, ino, w + MB, 20000, MB) == 20000 ? 0 : -EIO);
		MUST(fsops_fsync(fs, ino, 0));
	}
	MUST(vol_unmount_fs(&v, &c, &fs, ino, "split file read: fsck clean"));
out:
	if (fs)
		fsops_unmount(fs);
	vol_done(&v, c);
	free(w);
	free(b);
}

/*
 * Device removal from a four-device raid5 volume: the chunks on it move
 * to raid5 rows on the other three, every extent reads back; a second
 * removal (two would be left) is refused with the profile named; the
 * three devices left mount alone, fsck clean.
 */
static void parity_remove(void)
{
	struct vol v = { 0 };
	struct pset *ps = calloc(1, sizeof(*ps));
	struct core *c = NULL;
	char msg[512];

	MUST(ps ? 0 : -ENOMEM);
	MUST(pset_vol(&v, 4, 4, 96, CORE_PROFILE_RAID5, CORE_PROFILE_RAID1, ps, 32, &c));
	struct on_dev od = { c->devs[3], BG_DATA, 0, false };
	chunk_for_each(c, note_on_dev, &od);
	CHECK("raid5 remove: data chunks have a stripe on the device to remove", od.n > 0);
	int r = volume_dev_remove(c, v.devs[3], msg, sizeof(msg));
	if (r)
		printf("# remove: %s\n", msg);
	CHECK("raid5 remove: removing one of four devices moves its raid5 chunks",
	      r == 0 && c->ndevs == 3 && profiles_ok(c, CORE_PROFILE_RAID5, CORE_PROFILE_RAID1));
	CHECK("raid5 remove: every extent reads back", pset_reads(ps) && verify_all_items(c));
	r = volume_dev_remove(c, v.devs[2], msg, sizeof(msg));
	CHECK("raid5 remove: a second removal (2 would be left) is refused, naming raid5",
	      r == -EINVAL && strstr(msg, "raid5") && c->ndevs == 3);
	MUST(pset_remount(&c, v.devs, 3, ps,
			  "raid5 remove: the three devices left mount alone, every extent reads back",
			  "raid5 remove: fsck clean on the three devices"));
out:
	v.n = 4;
	vol_done(&v, c);
	free(ps);
}

/*
 * The raid6 replace cases (the volume's data raid6, metadata raid1, on
 * devices 0-3 of v; 4 and up blank): a degraded open of the nleft
 * devices of left, every extent of ps read; device replace missing with
 * the next 4 - nleft devices of v; every extent and item read again; the
 * new set of four (left, then the added) mounted whole, fsck clean.
 * what[] names the checks, in that order, then the replace's error
 * message.  0, or -errno (the volume closed).
 */
static int replace_case(struct vol *v, struct pset *ps, const char **left, int nleft,
			const char *const what[6])
{
	struct core *c;
	int nadd = 4 - nleft;
	int ret = vol_open_degraded(left, nleft, &c);

	if (ret)
		return ret;
	ps->c = c;
	CHECK(what[0], pset_reads(ps));
	CHECK(what[1], replace_missing(c, &v->devs[4], nadd, what[5]) && c->ndevs == 4 &&
	      profiles_ok(c, CORE_PROFILE_RAID6, CORE_PROFILE_RAID1));
	CHECK(what[2], pset_reads(ps) && verify_all_items(c));
	for (int i = 0; i < nadd; i++)
		left[nleft + i] = v->devs[4 + i];
	ret = pset_remount(&c, left, 4, ps, what[3], what[4]);
	if (c)
		mount_close(c);
	return ret;
}

/*
 * Replace on a degraded raid6 mount: one device of four lost, mounted
 * degraded, a new device added and the missing one removed (glassctl
 * device replace missing NEW): every raid6 chunk has its four stripes
 * present again, every extent reads back, and the new set of four
 * devices mounts (not degraded) and passes fsck.
 */
static void parity_replace_missing(void)
{
	struct vol v = { 0 };
	struct pset *ps = calloc(1, sizeof(*ps));
	struct core *c = NULL;
	const char *left[4];

	MUST(ps ? 0 : -ENOMEM);
	MUST(pset_vol(&v, 5, 4, 96, CORE_PROFILE_RAID6, CORE_PROFILE_RAID1, ps, 24, &c));
	MUST(mount_close(c));
	c = NULL;
	left[0] = v.devs[0], left[1] = v.devs[1], left[2] = v.devs[3];
	MUST(replace_case(&v, ps, left, 3, (const char *const[6]){
		"raid6 replace: degraded (one of four missing), every extent reads back",
		"raid6 replace: add NEW, remove missing: no stripe left on the missing device",
		"raid6 replace: every extent reads back",
		"raid6 replace: the new set of four mounts (not degraded), every extent reads back",
		"raid6 replace: fsck clean on the new set",
		"replace missing" }));
out:
	v.n = 5;
	vol_done(&v, c);
	free(ps);
}

/*
 * Space counted with each profile's real ratio of device bytes to
 * logical bytes: raid5 on three devices 3/2, raid6 on four 2/1, raid10
 * on four 2/1 (filesystem usage's data ratio: the devices' data bytes
 * over the data block groups' size), and statfs's free space the
 * unallocated bytes times (n - p) / n for raid5/6, not a half.
 */
static void usage_ratio(void)
{
	static const struct { int n; uint64_t d; uint64_t num, den; const char *name; } cs[] = {
		{ 3, CORE_PROFILE_RAID5, 3, 2, "raid5 on 3 devices" },
		{ 4, CORE_PROFILE_RAID5, 4, 3, "raid5 on 4 devices" },
		{ 4, CORE_PROFILE_RAID6, 2, 1, "raid6 on 4 devices" },
		{ 4, CORE_PROFILE_RAID10, 2, 1, "raid10 on 4 devices" },
		{ 3, CORE_PROFILE_RAID1C3, 3, 1, "raid1c3 on 3 devices" },
		{ 4, CORE_PROFILE_RAID1C3, 3, 1, "raid1c3 on 4 devices" },
		{ 4, CORE_PROFILE_RAID1C4, 4, 1, "raid1c4 on 4 devices" },
	};
	uint64_t sz[4] = { 192ull << 20, 192ull << 20, 192ull << 20, 192ull << 20 };
	struct glassfs_ioc_fs_info *o = calloc(1, sizeof(*o));
	struct core *c = NULL;
	struct vol v = { 0 };
	char name[200];

	MUST(o ? 0 : -ENOMEM);
	for (size_t k = 0; k < sizeof(cs) / sizeof(cs[0]); k++) {
		uint64_t dalloc = 0, dsize = 0, dt, df, keep, unalloc, want;
		struct core_space sp;

		MUST(vol_make(&v, cs[k].n, sz));
		MUST(vol_format(&v, cs[k].d, CORE_PROFILE_RAID1, NULL));
		MUST(vol_open(&v, &c));
		MUST(volinfo_get(c, o, false));
		for (uint32_t i = 0; i < o->ndevs; i++)
			dalloc += o->dev[i].alloc[0];
		for (uint32_t i = 0; i < o->nspaces; i++)
			if (o->space[i].flags & BG_DATA)
				dsize += o->space[i].size;
		snprintf(name, sizeof(name), "%s: device data bytes / data size = %llu/%llu "
			 "(filesystem usage's data ratio)", cs[k].name, (unsigned long long)cs[k].num,
			 (unsigned long long)cs[k].den);
		CHECK(name, dsize > 0 && dalloc * cs[k].den == dsize * cs[k].num);
		mount_space(c, &sp);
		alloc_space(c, BG_DATA, &dt, &df);
		unalloc = chunk_unallocated(c);
		keep = chunk_default_size(c, BG_METADATA);
		want = df + (unalloc > keep ? unalloc - keep : 0) / cs[k].num * cs[k].den;
		snprintf(name, sizeof(name), "%s: statfs free = free data + unallocated * %llu/%llu",
			 cs[k].name, (unsigned long long)cs[k].den, (unsigned long long)cs[k].num);
		CHECK(name, sp.free_bytes == want);
		if (sp.free_bytes != want)
			printf("# free %llu, want %llu\n", (unsigned long long)sp.free_bytes,
			       (unsigned long long)want);
		MUST(mount_close(c));
		c = NULL;
		vol_rm(&v);
	}
out:
	if (c) {
		mount_close(c);
		vol_rm(&v);
	}
	free(o);
}

/*
 * Trim of a raid5 chunk converted from raid1, whose rows can hold the
 * ends of two extents: every other extent freed, trim discards the
 * whole free rows on every stripe (the images shrink) and leaves a row
 * with a live sector whole, so every live extent still reads back with
 * any one of the three devices missing (a rebuild from a punched column
 * would read zeros); fsck clean.
 */
static void parity_trim(void)
{
	static const uint64_t lens[] = { 5 * 4096, 3 * 4096, 256 << 10, 7 * 4096, (64 << 10) + 4096,
					  4096, 192 << 10, 9 * 4096 };
	uint64_t sz[3] = { 128ull << 20, 128ull << 20, 128ull << 20 }, trimmed = 0;
	uint64_t before = 0, after = 0, freed = 0;
	struct pset *ps = calloc(1, sizeof(*ps));
	struct core *c = NULL;
	struct txn *t;
	struct vol v = { 0 };

	MUST(ps ? 0 : -ENOMEM);
	MUST(vol_up(&v, 3, sz, CORE_PROFILE_RAID1, CORE_PROFILE_RAID1, &c));
	ps->c = c;
	for (int i = 0; i < 32; i++)
		MUST(pset_add(ps, lens[i % 8]));
	MUST(balance_run(c, (int64_t)CORE_PROFILE_RAID5, -1, "raid5 trim: balance"));
	CHECK("raid5 trim: the raid1 data converted to raid5, every extent reads back",
	      profiles_ok(c, CORE_PROFILE_RAID5, CORE_PROFILE_RAID1) && pset_reads(ps));
	/* a first trim punches what was free before (the old raid1 stripes
	 * among it): the second one's shrink is the freed extents' rows */
	MUST(trim_batch(c, 0, &trimmed));
	MUST(txn_join(c, 8, TXN_USE_RESERVE, &t));
	for (int i = 1; i < ps->n; i += 2) {
		MUST(data_ref(t, ps->l[i], ps->len[i], -1));
		freed += ps->len[i];
	}
	MUST(txn_end(t));
	MUST(txn_commit(c, COMMIT_SYNC));
	MUST(txn_commit(c, COMMIT_SYNC));
	for (int i = 0; i < 3; i++)
		before += disk_bytes(v.img[i]);
	int r = trim_batch(c, 0, &trimmed);
	for (int i = 0; i < 3; i++)
		after += disk_bytes(v.img[i]);
	printf("raid5 trim: %llu bytes trimmed, images %llu -> %llu bytes on disk (%llu logical freed)\n",
	       (unsigned long long)trimmed, (unsigned long long)before, (unsigned long long)after,
	       (unsigned long long)freed);
	CHECK("raid5 trim: the freed extents' whole rows are discarded on the stripes (images shrink)",
	      r == 0 && before >= after + freed);
	/* the live extents: every other one, now with free neighbours */
	struct pset live = { .c = c };
	for (int i = 0; i < ps->n; i += 2) {
		live.l[live.n] = ps->l[i];
		live.len[live.n] = ps->len[i];
		live.seed[live.n++] = ps->seed[i];
	}
	CHECK("raid5 trim: every live extent reads back", pset_reads(&live));
	MUST(mount_close(c));
	c = NULL;
	CHECK("raid5 trim: with any one device missing every live extent is rebuilt right (3 of 3)",
	      served_each_missing(&v, -1, pset_reads_on, &live) == 3);
	CHECK_VFSCK("raid5 trim: fsck clean after the trim", &v);
out:
	vol_done(&v, c);
	free(ps);
}

/*
 * raid6 with two of its four devices lost (two that leave a copy of the
 * raid1 metadata), mounted degraded: two new devices added and the
 * missing ones removed — every raid6 row rebuilt from two columns of
 * four and written whole onto four present devices; every extent reads
 * back, the new set mounts without degraded and passes fsck.
 */
static void parity_replace_two(void)
{
	struct vol v = { 0 };
	struct mirror_masks mm = { &v, { 0 }, 0 };
	struct pset *ps = calloc(1, sizeof(*ps));
	struct core *c = NULL;
	const char *left[4];
	unsigned lose = 0;

	MUST(ps ? 0 : -ENOMEM);
	MUST(pset_vol(&v, 6, 4, 96, CORE_PROFILE_RAID6, CORE_PROFILE_RAID1, ps, 24, &c));
	chunk_for_each(c, note_mirror, &mm);
	MUST(mount_close(c));
	c = NULL;
	for (unsigned m = 1; m < 16 && !lose; m++) {
		bool meta = __builtin_popcount(m) == 2;
		for (int i = 0; i < mm.n && meta; i++)
			meta = (mm.m[i] & ~m) != 0;
		if (meta)
			lose = m;
	}
	if (!lose) {
		printf("SKIP: raid6 replace two: every pair of devices holds a whole metadata chunk\n");
		goto out;
	}
	int n = 0;
	for (int k = 0; k < 4; k++)
		if (!(lose & (1u << k)))
			left[n++] = v.devs[k];
	MUST(replace_case(&v, ps, left, 2, (const char *const[6]){
		"raid6 replace two: two of four missing, every extent reads back",
		"raid6 replace two: add two, remove missing: every chunk on present devices, data raid6",
		"raid6 replace two: every extent and item reads back",
		"raid6 replace two: the new set of four mounts (not degraded), every extent reads back",
		"raid6 replace two: fsck clean on the new set",
		"replace two missing" }));
out:
	v.n = 6;
	vol_done(&v, c);
	free(ps);
}

/*
 * raid6 data with raid1c3 metadata on four devices survives any two of
 * them lost: every one of the six pairs missing, a read-only degraded
 * open serves every item and extent.  Then a writable degraded open
 * with two devices missing writes more; the full set mounts, resyncs
 * both returning devices, and again any two lost serve everything (the
 * new extents included, so the resynced copies are right); fsck clean.
 */
static void mirror3_two_lost(void)
{
	struct vol v = { 0 };
	uint64_t sz[4] = { 128ull << 20, 128ull << 20, 128ull << 20, 128ull << 20 };
	struct pset *ps = calloc(1, sizeof(*ps));
	struct core *c = NULL;
	struct core_stats st;
	const char *left[4];
	char name[200];

	MUST(ps ? 0 : -ENOMEM);
	MUST(vol_up(&v, 4, sz, CORE_PROFILE_RAID6, CORE_PROFILE_RAID1C3, &c));
	ps->c = c;
	CHECK("raid6 + raid1c3: new chunks have the profiles",
	      profiles_ok(c, CORE_PROFILE_RAID6, CORE_PROFILE_RAID1C3));
	MUST(t_insert_items(c, 0, NITEMS, 100));
	MUST(txn_commit(c, COMMIT_SYNC));
	MUST(pset_fill(ps, 24));
	MUST(mount_close(c));
	c = NULL;
	for (int round = 0; round < 2; round++) {
		int served = 0, opened = 0;
		for (int a = 0; a < 4; a++)
			for (int b = a + 1; b < 4; b++) {
				int n = 0;
				for (int k = 0; k < 4; k++)
					if (k != a && k != b)
						left[n++] = v.devs[k];
				if (vol_open_degraded_ro(left, 2, &c) == 0) {
					opened++;
					ps->c = c;
					served += pset_reads(ps) && verify_all_items(c);
					mount_close(c);
				}
				c = NULL;
			}
		snprintf(name, sizeof(name), "raid6 + raid1c3%s: each of the 6 pairs of devices missing: "
			 "mounts (%d) and every item and extent reads (%d)",
			 round ? " after the resync" : "", opened, served);
		CHECK(name, opened == 6 && served == 6);
		if (round)
			break;
		/* devices 0 and 1 away: write more, then they come back */
		left[0] = v.devs[2], left[1] = v.devs[3];
		MUST(vol_open_degraded(left, 2, &c));
		ps->c = c;
		CHECK("raid6 + raid1c3: a degraded open with two of four devices is writable",
		      !core_readonly(c));
		MUST(t_insert_items(c, NITEMS, 200, 100));
		MUST(txn_commit(c, COMMIT_SYNC));
		MUST(pset_fill(ps, 8));
		MUST(mount_close(c));
		c = NULL;
		MUST(vol_open(&v, &c));
		volume_resync_wait(c);
		mount_stats(c, &st);
		CHECK("raid6 + raid1c3: both returning devices are resynced",
		      !c->devs[0]->stale && !c->devs[1]->stale && st.resync_bytes > 0 && st.repaired == 2);
		/* chunks the degraded mount made with fewer copies go back */
		int r = balance_run(c, (int64_t)CORE_PROFILE_RAID6, (int64_t)CORE_PROFILE_RAID1C3,
				    "raid6 + raid1c3: balance");
		ps->c = c;
		CHECK("raid6 + raid1c3: a balance converts what the degraded mount wrote back",
		      r == 0 && profiles_ok(c, CORE_PROFILE_RAID6, CORE_PROFILE_RAID1C3) && pset_reads(ps));
		MUST(mount_close(c));
		c = NULL;
	}
	CHECK_VFSCK("raid6 + raid1c3: fsck clean over every device", &v);
out:
	vol_done(&v, c);
	free(ps);
}

/*
 * raid1c3 and raid1c4 conversions on four devices, each checked by the
 * chunks' profiles (a stripe per copy, each on its own device) and every
 * byte read back: raid1 -> raid1c3 -> raid1c4 -> raid6 data, raid1c3
 * metadata -> raid1 -> raid1c3.  Removing a device is refused below
 * the minimum (raid1c4 on four, then raid1c3 on three devices) and
 * moves the chunks when enough devices are left; fsck clean.
 */
static void mirror_convert(void)
{
	struct vol v = { 0 };
	uint64_t sz[4] = { 128ull << 20, 128ull << 20, 128ull << 20, 128ull << 20 }, ext[NEXT];
	static const struct { uint64_t d, m; const char *name; } steps[] = {
		{ CORE_PROFILE_RAID1C3, CORE_PROFILE_RAID1C3, "raid1 -> raid1c3" },
		{ CORE_PROFILE_RAID1C4, CORE_PROFILE_RAID1C4, "raid1c3 -> raid1c4" },
		{ CORE_PROFILE_RAID6, CORE_PROFILE_RAID1C3, "raid1c4 -> raid6 data, raid1c3 metadata" },
		{ CORE_PROFILE_RAID1, CORE_PROFILE_RAID1, "raid6/raid1c3 -> raid1" },
		{ CORE_PROFILE_SINGLE, CORE_PROFILE_RAID1C4, "raid1 -> single data, raid1c4 metadata" },
		{ CORE_PROFILE_RAID1C3, CORE_PROFILE_RAID1C3, "single/raid1c4 -> raid1c3" },
	};
	struct core *c = NULL;
	char msg[256];

	MUST(vol_up(&v, 4, sz, CORE_PROFILE_RAID1, CORE_PROFILE_RAID1, &c));
	MUST(populate(c, ext));
	for (size_t k = 0; k < sizeof(steps) / sizeof(steps[0]); k++) {
		convert_step(c, steps[k].d, steps[k].m, steps[k].name, ext);
		if (k == 1)
			CHECK("raid1c4: removing a device (3 would be left) is refused, naming raid1c4",
			      volume_dev_remove(c, v.devs[3], msg, sizeof(msg)) == -EINVAL &&
			      strstr(msg, "raid1c4") && c->ndevs == 4);
	}
	/* a conversion between mirrors keeps the copies it can: raid1c3 ->
	 * raid1 copies nothing, raid1 -> raid1c3 one copy of each chunk */
	struct core_stats s0, s1, s2;
	mount_stats(c, &s0);
	convert_step(c, CORE_PROFILE_RAID1, CORE_PROFILE_RAID1, "raid1c3 -> raid1 (two copies kept)", ext);
	mount_stats(c, &s1);
	convert_step(c, CORE_PROFILE_RAID1C3, CORE_PROFILE_RAID1C3, "raid1 -> raid1c3 (two copies kept)", ext);
	mount_stats(c, &s2);
	uint64_t used = 0, dt, df;
	alloc_space(c, BG_DATA, &dt, &df);
	used = dt - df;
	printf("mirror convert: raid1c3 -> raid1 wrote %llu bytes, raid1 -> raid1c3 %llu (data in use %llu)\n",
	       (unsigned long long)(s1.dev_write_bytes - s0.dev_write_bytes),
	       (unsigned long long)(s2.dev_write_bytes - s1.dev_write_bytes), (unsigned long long)used);
	CHECK("mirror convert: raid1c3 -> raid1 keeps two copies: it copies no chunk (< 4 MiB written)",
	      s1.dev_write_bytes - s0.dev_write_bytes < (4ull << 20));
	CHECK("raid1c3: removing one of four devices moves its copies",
	      volume_dev_remove(c, v.devs[3], msg, sizeof(msg)) == 0 && c->ndevs == 3 &&
	      profiles_ok(c, CORE_PROFILE_RAID1C3, CORE_PROFILE_RAID1C3) && verify_all(c, ext));
	CHECK("raid1c3: a second removal (2 would be left) is refused, naming raid1c3",
	      volume_dev_remove(c, v.devs[2], msg, sizeof(msg)) == -EINVAL && strstr(msg, "raid1c3"));
	CHECK("raid1c4 on three devices: the conversion is refused",
	      volume_balance_start(c, -1, (int64_t)CORE_PROFILE_RAID1C4, msg, sizeof(msg)) == -EINVAL);
	MUST(mount_close(c));
	c = NULL;
	v.n = 3;
	CHECK_VFSCK("raid1c3 conversions: fsck clean on the three devices left", &v);
out:
	v.n = 4;
	vol_done(&v, c);
}

/*
 * Batch trim on raid1c3: freed extents are punched on all three copies
 * (the images together lose at least 3 copies of them), and each device
 * alone still serves the live extent and every item (no live copy
 * punched); fsck clean.
 */
static void mirror_trim(void)
{
	struct vol v = { 0 };
	uint64_t sz[3] = { 64ull << 20, 64ull << 20, 64ull << 20 }, ext[NEXT], trimmed = 0;
	uint64_t before = 0, after = 0;
	struct core *c = NULL;
	struct core_opts o;
	int alone = 0;

	MUST(vol_up(&v, 3, sz, CORE_PROFILE_RAID1C3, CORE_PROFILE_RAID1C3, &c));
	MUST(populate(c, ext));
	MUST(free_but_last(c, ext));
	for (int i = 0; i < 3; i++)
		before += disk_bytes(v.img[i]);
	int r = trim_batch(c, 0, &trimmed);
	for (int i = 0; i < 3; i++)
		after += disk_bytes(v.img[i]);
	printf("raid1c3 trim: %llu bytes trimmed, images %llu -> %llu bytes on disk\n",
	       (unsigned long long)trimmed, (unsigned long long)before, (unsigned long long)after);
	CHECK("raid1c3 trim: the freed extents are punched on all three copies",
	      r == 0 && trimmed > 0 && after + 3ull * (NEXT - 1) * EXTLEN <= before);
	MUST(mount_close(c));
	c = NULL;
	core_opts_default(&o);
	o.degraded = true;
	o.readonly = true;
	for (int i = 0; i < 3; i++) {
		const char *one[1] = { v.devs[i] };
		uint8_t *b = malloc(EXTLEN), *w = malloc(EXTLEN);
		if (b && w && mount_open(one, 1, &o, &c) == 0) {
			fill(w, EXTLEN, NEXT);
			alone += data_read(c, ext[NEXT - 1], b, EXTLEN) == 0 && memcmp(b, w, EXTLEN) == 0 &&
				 verify_all_items(c);
			mount_close(c);
		}
		c = NULL;
		free(b);
		free(w);
	}
	CHECK("raid1c3 trim: each device alone serves the live extent and every item", alone == 3);
	CHECK_VFSCK("raid1c3 trim: fsck clean", &v);
out:
	vol_done(&v, c);
}

/* The copy of a mirrored logical byte a resync reads first (the last
 * present stripe of its chunk: volume_resync.c's choice). */
static uint64_t from_phys(struct core *c, uint64_t logical, char *path, size_t plen)
{
	struct chunk_geom g;
	int k = -1;

	if (chunk_map_geometry(c, logical, &g) || g.nparity)
		return 0;
	for (int i = 0; i < g.num_stripes; i++)
		if (g.stripes[i].dev)
			k = i;
	if (k < 0)
		return 0;
	snprintf(path, plen, "%s", g.stripes[k].dev->path);
	return g.stripes[k].physical + (logical - g.logical);
}

/*
 * The resync cases' setup: the volume written with its device at index
 * away missing — mounted degraded without it, write(c, arg), closed —
 * then opened read-only degraded in *c, to find what lies where.  left
 * gets the devices present, *n their count.
 */
static int away_write(struct vol *v, int away, const char **left, int *n,
		      int (*write)(struct core *c, void *arg), void *arg, struct core **c)
{
	int ret, cr;

	*n = vol_devs_but(v, away, left);
	ret = vol_open_degraded(left, *n, c);
	if (ret)
		return ret;
	ret = write(*c, arg);
	cr = mount_close(*c);
	*c = NULL;
	if (ret || cr)
		return ret ? ret : cr;
	return vol_open_degraded_ro(left, *n, c);
}

/* The full set of v mounted in *c, its resync of the returning device
 * done: *st the counters, the resync's printed after tag. */
static int resync_open(struct vol *v, const char *tag, struct core **c, struct core_stats *st)
{
	int ret = vol_open(v, c);

	if (ret)
		return ret;
	volume_resync_wait(*c);
	mount_stats(*c, st);
	printf("%s: resync: %llu rerouted, %llu mismatch\n", tag,
	       (unsigned long long)st->resync_rerouted, (unsigned long long)st->resync_mismatch);
	return 0;
}

/* away_write's write for resync_verify_case: one extent (seed 77). */
static int write_extent77(struct core *c, void *x)
{
	return put_extent(c, EXTLEN, 77, x);
}

/*
 * A resync verifies what it copies.  Written with the last device away,
 * then damage on the present ones, then the full set mounts and resyncs
 * it:
 * - raid1: a sector written before the device left, bad on the copy the
 *   resync reads: the device's own bytes verify and stay (rerouted); a
 *   sector written while it was away, bad there: no copy verifies, the
 *   device keeps its bytes and the mismatch is counted — the returning
 *   device alone then serves every older extent;
 * - raid1c3: a data sector and the fs root node, bad on the copy read
 *   first: taken from the other fresh copy — the returning device alone
 *   serves every item and extent;
 * - raid5: a data column of an old row bad on a present device: the row
 *   rebuilt for the returning device fails its checksums however rebuilt,
 *   so it keeps its own column (counted) — without the damaged device
 *   every extent still reads.
 * On the old code the bad bytes were copied: each last check fails.
 */
static void resync_verify_case(const char *tag, int ndev, uint64_t prof)
{
	struct vol v = { 0 };
	uint64_t sz[3] = { 96ull << 20, 96ull << 20, 96ull << 20 }, ext[NEXT], x = 0;
	struct core *c = NULL;
	struct core_stats st;
	const char *left[3];
	char name[200], p1[256] = "", p2[256] = "";
	uint64_t ph1 = 0, ph2 = 0;
	int away = ndev - 1, n = 0, served = 0;
#define N(s_) (snprintf(name, sizeof(name), "%s: %s", tag, s_), name)

	MUST(vol_up(&v, ndev, sz, prof, (prof & BG_PARITY) ? CORE_PROFILE_RAID1 : prof, &c));
	MUST(populate(c, ext));
	MUST(mount_close(c));
	c = NULL;
	MUST(away_write(&v, away, left, &n, write_extent77, &x, &c));
	if (prof == CORE_PROFILE_RAID1) {
		ph1 = from_phys(c, ext[1] + 5 * CORE_SECTORSIZE, p1, sizeof(p1));
		ph2 = from_phys(c, x + 3 * CORE_SECTORSIZE, p2, sizeof(p2));
	} else if (prof == CORE_PROFILE_RAID1C3) {
		ph1 = from_phys(c, x + 3 * CORE_SECTORSIZE, p1, sizeof(p1));
		ph2 = from_phys(c, subvol_root(c, FS_TREE_OBJECTID)->bytenr, p2, sizeof(p2));
	} else {
		for (uint64_t o2 = 0; o2 < EXTLEN && !ph1; o2 += CORE_SECTORSIZE) {
			const char *pp = NULL;
			uint64_t ph = parity_phys(c, ext[1] + o2, -1, &pp);
			if (ph && pp && !strcmp(pp, v.devs[0])) {
				ph1 = ph;
				snprintf(p1, sizeof(p1), "%s", pp);
			}
		}
	}
	MUST(mount_close(c));
	c = NULL;
	if (!ph1 || (prof != CORE_PROFILE_RAID5 && !ph2)) {
		printf("FAIL: %s: no copy found to damage\n", tag);
		fails++;
		goto out;
	}
	MUST(t_poke(p1, ph1 + 100, 0x42));
	if (ph2)
		MUST(t_poke(p2, ph2 + 300, 0x42));
	MUST(resync_open(&v, tag, &c, &st));
	if (prof == CORE_PROFILE_RAID1)
		CHECK(N("the resync counts a sector taken from the device itself and one bad everywhere"),
		      !c->devs[away]->stale && st.resync_rerouted == 1 && st.resync_mismatch == 1);
	else if (prof == CORE_PROFILE_RAID1C3)
		CHECK(N("the resync takes a bad sector and a bad node from the other fresh copy"),
		      !c->devs[away]->stale && st.resync_rerouted == 2 && st.resync_mismatch == 0);
	else
		CHECK(N("the resync counts the row that verifies no way"),
		      !c->devs[away]->stale && st.resync_mismatch >= 1);
	MUST(mount_close(c));
	c = NULL;
	/* the returning device, without the damaged copies where it can */
	n = 0;
	if (prof == CORE_PROFILE_RAID5)
		left[n++] = v.devs[1];
	left[n++] = v.devs[away];
	if (vol_open_degraded_ro(left, n, &c) == 0) {
		served = verify_all(c, ext) && (prof == CORE_PROFILE_RAID1 || extent_reads(c, x, EXTLEN, 77));
		mount_close(c);
	}
	c = NULL;
	CHECK(N("the returning device serves every read it holds (no bad copy spread to it)"), served);
out:
	vol_done(&v, c);
#undef N
}

/*
 * raid1c3 with two of the three copies of a node and of a data sector
 * damaged: reads are served by the third, scrub repairs both bad copies
 * from it, a second scrub finds nothing, fsck clean.
 */
static void mirror3_two_bad(void)
{
	struct vol v = { 0 };
	uint64_t sz[3] = { 64ull << 20, 64ull << 20, 64ull << 20 }, ext[NEXT];
	struct core *c = NULL;
	struct scrub_opts so = { 0 };
	struct scrub_progress sp;
	char path[4][256];
	uint64_t phys[4];
	int k = 0;

	MUST(vol_up(&v, 3, sz, CORE_PROFILE_RAID1C3, CORE_PROFILE_RAID1C3, &c));
	MUST(populate(c, ext));
	MUST(mount_close(c));
	c = NULL;
	MUST(vol_open(&v, &c));
	uint64_t node = subvol_root(c, FS_TREE_OBJECTID)->bytenr;
	for (int m = 0; m < 2; m++) {
		const char *p = NULL;
		phys[k] = copy_phys(c, node, c->nodesize, m, &p);
		snprintf(path[k++], sizeof(path[0]), "%s", p ? p : "");
		p = NULL;
		phys[k] = copy_phys(c, ext[2] + 3 * CORE_SECTORSIZE, CORE_SECTORSIZE, m, &p);
		snprintf(path[k++], sizeof(path[0]), "%s", p ? p : "");
	}
	MUST(mount_close(c));
	c = NULL;
	for (int i = 0; i < 4; i++)
		MUST(phys[i] ? t_poke(path[i], phys[i] + (i % 2 ? 17 : 300), 0x3c) : -EINVAL);
	MUST(vol_open(&v, &c));
	CHECK("raid1c3, two copies bad: every read is served by the third", verify_all(c, ext));
	MUST(scrub_run(c, &so, &sp));
	CHECK("raid1c3, two copies bad: scrub repairs both copies of the node and of the sector",
	      sp.meta_errors == 2 && sp.data_errors == 2 && sp.uncorrectable_bytes == 0 &&
	      sp.corrected_bytes == 2ull * c->nodesize + 2 * CORE_SECTORSIZE);
	MUST(scrub_run(c, &so, &sp));
	CHECK("raid1c3, two copies bad: a second scrub finds nothing",
	      sp.meta_errors == 0 && sp.data_errors == 0 && sp.corrected_bytes == 0);
	MUST(mount_close(c));
	c = NULL;
	CHECK_VFSCK("raid1c3, two copies bad: fsck clean after the scrub", &v);
out:
	vol_done(&v, c);
}

/* ---- raid5/6 metadata ------------------------------------------------------ */

#define MITEMS 6000	/* items the metadata cases insert: hundreds of 4 KiB nodes */

static int vol_format_ns(struct vol *v, uint64_t dprof, uint64_t mprof, uint32_t ns)
{
	struct format_opts o = { .label = "raid", .nodesize = ns, .force = true,
				 .data_profile = dprof, .meta_profile = mprof };
	return mount_format(v->devs, v->n, &o);
}

/* Every node of every tree, read from the devices: how many, how many bad,
 * and up to 64 of their addresses. */
struct node_walk {
	uint64_t n, bad, at[64];
	int nat;
};

static int walk_visit(const struct node_info *ni, void *arg)
{
	struct node_walk *w = arg;

	if (w->nat < 64)
		w->at[w->nat++] = ni->bytenr;
	w->n++;
	return 0;
}

static void walk_bad(uint64_t bytenr, int level, int err, void *arg)
{
	struct node_walk *w = arg;

	printf("# node %llu (level %d) unreadable: %s\n", (unsigned long long)bytenr, level,
	       strerror(-err));
	w->bad++;
}

static bool walk_all(struct core *c, struct node_walk *w)
{
	memset(w, 0, sizeof(*w));
	for (int t = 0; t < CT_NR; t++)
		if (btree_walk(&c->roots[t].r, walk_visit, walk_bad, w) < 0)
			w->bad++;
	return w->n > 0 && w->bad == 0;
}

/* Items [0, MITEMS) inserted in batches, one commit each. */
static int meta_fill(struct core *c, int commits)
{
	int ret = 0;

	for (int i = 0; i < commits && !ret; i++) {
		uint64_t per = MITEMS / (uint64_t)commits;
		ret = t_insert_items(c, (uint64_t)i * per, i + 1 == commits ? MITEMS - (uint64_t)i * per : per,
				     100);
		if (!ret)
			ret = txn_commit(c, COMMIT_SYNC);
	}
	return ret;
}

static bool meta_items_ok(struct core *c)
{
	int err;

	return t_count_items(c, 0, MITEMS, &err) == MITEMS && !err;
}

/* Does every metadata node block start a row of its raid5/6 chunk? */
static bool nodes_on_rows(struct core *c, const struct node_walk *w)
{
	for (int i = 0; i < w->nat; i++) {
		struct chunk_at a = chunk_of(c, w->at[i]);
		uint64_t row = chunk_row_bytes(c, w->at[i]);
		if (row <= CORE_SECTORSIZE || (w->at[i] - a.start) % row)
			return false;
	}
	return w->nat > 0;
}

/*
 * Metadata (and data) raid5 or raid6: mkfs, many commits, read back
 * after a remount, every way of losing one (raid5) / two (raid6) devices
 * walks every node of every tree; bit flips in data columns of nodes and
 * in a parity column of a node's row: reads good, scrub repairs, a second
 * scrub finds nothing, fsck reports before (exit 4) and is clean after.
 */
static void meta_parity_case(const char *tag, int ndev, uint64_t prof, uint32_t ns)
{
	struct vol v = { 0 };
	uint64_t sz[4] = { 96ull << 20, 112ull << 20, 96ull << 20, 104ull << 20 };
	struct core *c = NULL;
	struct scrub_opts so = { 0 };
	struct scrub_progress sp;
	struct core_stats st;
	struct core_opts o;
	struct node_walk w, w2;
	char name[200], path[8][256];
	uint64_t phys[8];
	int lose = prof == CORE_PROFILE_RAID6 ? 2 : 1, cases = 0, served = 0, nflip = 0;
#define N(s) (snprintf(name, sizeof(name), "%s: %s", tag, s), name)

	MUST(vol_make(&v, ndev, sz));
	int r = vol_format_ns(&v, prof, prof, ns);
	CHECK(N("mkfs -m raid5/6 is accepted"), r == 0);
	if (r)
		goto out;
	MUST(vol_open(&v, &c));
	CHECK(N("metadata and system chunks have the profile"), profiles_ok(c, prof, prof));
	r = meta_fill(c, 30);
	CHECK(N("30 commits of items on raid5/6 metadata"), r == 0);
	if (r)
		goto out;
	MUST(mount_close(c));
	c = NULL;
	MUST(vol_open(&v, &c));
	CHECK(N("every item reads back after a remount (no cache)"), meta_items_ok(c));
	CHECK(N("every node of every tree reads and verifies"), walk_all(c, &w));
	CHECK(N("node blocks start on rows of their raid5/6 chunk"), nodes_on_rows(c, &w));
	printf("%s: %llu nodes\n", tag, (unsigned long long)w.n);
	MUST(mount_close(c));
	c = NULL;
	CHECK_VFSCK(N("fsck clean (every node's rows against their parity)"), &v);

	core_opts_default(&o);
	o.degraded = true;
	o.readonly = true;
	for (unsigned mask = 1; mask < (1u << ndev); mask++) {
		const char *devs[4];
		int n = 0;
		if (__builtin_popcount(mask) != lose)
			continue;
		for (int k = 0; k < ndev; k++)
			if (!(mask & (1u << k)))
				devs[n++] = v.devs[k];
		cases++;
		r = mount_open(devs, n, &o, &c);
		if (!r) {
			served += walk_all(c, &w2) && w2.n == w.n && meta_items_ok(c);
			mount_close(c);
		} else {
			printf("%s: open without device mask %#x: %s\n", tag, mask, strerror(-r));
		}
		c = NULL;
	}
	printf("%s: %d of %d ways of losing %d device(s) walk every node\n", tag, served, cases, lose);
	CHECK(N("any device(s) parity covers missing: degraded open walks every node, items read"),
	      cases > 0 && served == cases);

	/* flips: one data column in each of 3 nodes (raid6: two columns of a
	 * fourth node, on two devices), the parity column of a fifth's row */
	MUST(vol_open(&v, &c));
	for (int i = 0; i < 5 && w.nat >= 6; i++) {
		const char *p = NULL;
		uint64_t at = w.at[i * (w.nat / 6)], sect = i == 3 ? 0 : (uint64_t)i % (ns / CORE_SECTORSIZE);
		phys[nflip] = parity_phys(c, at + sect * CORE_SECTORSIZE, i == 4 ? 0 : -1, &p);
		snprintf(path[nflip], sizeof(path[0]), "%s", p ? p : "");
		nflip += phys[nflip] != 0;
		if (i == 3 && lose == 2 && ns > CORE_SECTORSIZE) {
			/* the next sector: the same row, the next column */
			phys[nflip] = parity_phys(c, at + CORE_SECTORSIZE, -1, &p);
			snprintf(path[nflip], sizeof(path[0]), "%s", p ? p : "");
			nflip += phys[nflip] != 0;
		}
	}
	MUST(mount_close(c));
	c = NULL;
	CHECK(N("found metadata columns to damage"), nflip >= 5);
	for (int i = 0; i < nflip; i++)
		MUST(t_poke(path[i], phys[i] + 200 + (uint64_t)i * 16, 0x5a));
	vol_fsck_quiet = true;
	int fr = vol_fsck(&v);
	vol_fsck_quiet = false;
	if (fr >= 0)
		CHECK(N("fsck reports the damaged metadata columns (exit 4)"), fr == 4);
	MUST(vol_open(&v, &c));
	CHECK(N("with metadata columns damaged every node still reads and verifies"),
	      walk_all(c, &w2) && w2.n == w.n && meta_items_ok(c));
	mount_stats(c, &st);
	CHECK(N("the bad columns are counted (csum_errors)"), st.csum_errors >= 3);
	MUST(scrub_run(c, &so, &sp));
	printf("%s: scrub: %llu node errors, %llu parity errors, %llu bytes corrected, %llu uncorrectable\n",
	       tag, (unsigned long long)sp.meta_errors, (unsigned long long)sp.parity_errors,
	       (unsigned long long)sp.corrected_bytes, (unsigned long long)sp.uncorrectable_bytes);
	CHECK(N("scrub finds the bad node columns and the bad parity"),
	      sp.meta_errors >= 4 && sp.parity_errors >= 1);
	CHECK(N("scrub repairs them, nothing uncorrectable"),
	      sp.corrected_bytes >= (uint64_t)nflip * CORE_SECTORSIZE && sp.uncorrectable_bytes == 0);
	MUST(scrub_run(c, &so, &sp));
	CHECK(N("a second scrub finds nothing"), sp.meta_errors == 0 && sp.parity_errors == 0 &&
	      sp.corrected_bytes == 0 && sp.uncorrectable_bytes == 0 && sp.checked_bytes > 0);
	CHECK(N("scrub's expected total is the bytes it reads"), scrub_total_ok(c, tag));
	MUST(mount_close(c));
	c = NULL;
	CHECK_VFSCK(N("fsck clean after the repair"), &v);
out:
	vol_done(&v, c);
#undef N
}

/* Items inserted and committed beside a balance until *stop. */
struct meta_writer {
	struct core *c;
	const int *stop;
	uint64_t next;
	int err;
};

static void *meta_writer(void *arg)
{
	struct meta_writer *mw = arg;

	while (!__atomic_load_n(mw->stop, __ATOMIC_ACQUIRE) && !mw->err) {
		mw->err = t_insert_items(mw->c, MITEMS + mw->next, 40, 100);
		if (!mw->err)
			mw->err = txn_commit(mw->c, COMMIT_SYNC);
		if (!mw->err)
			mw->next += 40;
	}
	return NULL;
}

/*
 * Metadata moved to and from raid5/raid6 on four devices, the system
 * chunk with it, a writer inserting items and committing beside each
 * balance (and data extents written): raid1 -> raid5 -> raid6 -> raid10
 * -> raid6 -> dup -> raid5 -> raid1; after each step every metadata and
 * system chunk has the profile, every node walks, every item reads; a
 * remount and fsck at the end.
 */
static void meta_parity_convert(void)
{
	struct vol v = { 0 };
	uint64_t sz[4] = { 256ull << 20, 256ull << 20, 256ull << 20, 256ull << 20 };
	static const struct { uint64_t m; const char *name; } steps[] = {
		{ CORE_PROFILE_RAID5, "raid1 -> raid5" },
		{ CORE_PROFILE_RAID6, "raid5 -> raid6" },
		{ CORE_PROFILE_RAID10, "raid6 -> raid10" },
		{ CORE_PROFILE_RAID6, "raid10 -> raid6" },
		{ CORE_PROFILE_DUP, "raid6 -> dup" },
		{ CORE_PROFILE_RAID5, "dup -> raid5" },
		{ CORE_PROFILE_RAID1, "raid5 -> raid1" },
	};
	struct core *c = NULL;
	struct meta_writer mw = { 0 };
	struct node_walk w;
	char msg[256], name[300];
	int err;

	MUST(vol_make(&v, 4, sz));
	MUST(vol_format_ns(&v, CORE_PROFILE_RAID1, CORE_PROFILE_RAID1, 16384));
	MUST(vol_open(&v, &c));
	MUST(meta_fill(c, 10));
	mw.c = c;
	for (size_t k = 0; k < sizeof(steps) / sizeof(steps[0]); k++) {
		int stop = 0, r;
		pthread_t th;
		bool writer;

		mw.stop = &stop;
		writer = pthread_create(&th, NULL, meta_writer, &mw) == 0;
		r = volume_balance_start(c, -1, (int64_t)steps[k].m, msg, sizeof(msg));
		if (!r)
			r = balance_wait(c);
		__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
		if (writer)
			pthread_join(th, NULL);
		if (r || mw.err) {
			struct volume_balance_status bs;
			volume_balance_status(c, &bs);
			printf("# %s: %s (writer: %s)\n", steps[k].name, r ? bs.msg : "ok",
			       strerror(-mw.err));
		}
		/* chunks the writer made meanwhile: moved by a second balance */
		if (!r)
			r = volume_balance_start(c, -1, (int64_t)steps[k].m, msg, sizeof(msg));
		if (!r)
			r = balance_wait(c);
		snprintf(name, sizeof(name), "metadata %s beside a writer: every metadata and system "
			 "chunk converted, every node walks, every item reads (%llu written meanwhile)",
			 steps[k].name, (unsigned long long)mw.next);
		CHECK(name, r == 0 && !mw.err && profiles_ok(c, CORE_PROFILE_RAID1, steps[k].m) &&
		      walk_all(c, &w) && meta_items_ok(c) &&
		      t_count_items(c, MITEMS, mw.next, &err) == mw.next && !err);
	}
	MUST(mount_close(c));
	c = NULL;
	CHECK_VFSCK("metadata convert: fsck clean after every conversion", &v);
	MUST(vol_open(&v, &c));
	CHECK("metadata convert: after a remount every node walks, every item reads",
	      walk_all(c, &w) && meta_items_ok(c) && t_count_items(c, MITEMS, mw.next, &err) == mw.next);
out:
	vol_done(&v, c);
}

/*
 * Rows shared by two nodes: metadata converted from raid1 (16 KiB nodes
 * at 16 KiB multiples) to raid5 on four devices (3-sector rows), so a
 * node's last row holds the next node's first sector.  That sector's
 * column flipped: the scrub of the node before it must leave the row's
 * parity alone (it cannot tell which is wrong), so that the damaged
 * node's own scrub rebuilds it — nothing uncorrectable, a second scrub
 * clean, every node walks, fsck clean.
 */
static void meta_parity_shared_rows(void)
{
	struct vol v = { 0 };
	uint64_t sz[4] = { 96ull << 20, 96ull << 20, 96ull << 20, 96ull << 20 };
	struct core *c = NULL;
	struct node_walk w, w2;
	struct scrub_opts so = { 0 };
	struct scrub_progress sp;
	char msg[256], path[256] = "";
	uint64_t phys = 0, victim = 0;
	const char *p = NULL;

	MUST(vol_make(&v, 4, sz));
	MUST(vol_format_ns(&v, CORE_PROFILE_RAID1, CORE_PROFILE_RAID1, 16384));
	MUST(vol_open(&v, &c));
	MUST(meta_fill(c, 10));
	int r = volume_balance_start(c, -1, (int64_t)CORE_PROFILE_RAID5, msg, sizeof(msg));
	if (!r)
		r = balance_wait(c);
	CHECK("shared rows: metadata converted from raid1 to raid5 on four devices",
	      r == 0 && profiles_ok(c, CORE_PROFILE_RAID1, CORE_PROFILE_RAID5));
	CHECK("shared rows: every node walks", walk_all(c, &w));
	/* a node whose first sector lies in a row the node before it ends in */
	for (int i = 0; i < w.nat && !victim; i++)
		for (int j = 0; j < w.nat && !victim; j++) {
			uint64_t a = w.at[i], b = w.at[j], row = chunk_row_bytes(c, b), st;
			if (b <= a || b - a != c->nodesize || row <= CORE_SECTORSIZE ||
			    (st = chunk_of(c, b).start) != chunk_of(c, a).start)
				continue;
			if ((b - st) / row == (a + c->nodesize - 1 - st) / row)
				victim = b;
		}
	if (victim) {
		phys = parity_phys(c, victim, -1, &p);
		snprintf(path, sizeof(path), "%s", p ? p : "");
	}
	MUST(mount_close(c));
	c = NULL;
	CHECK("shared rows: a node starts in the last row of the node before it", victim && phys);
	if (!victim || !phys)
		goto out;
	MUST(t_poke(path, phys + 1000, 0x3c));
	MUST(vol_open(&v, &c));
	MUST(scrub_run(c, &so, &sp));
	printf("shared rows: scrub: %llu node errors, %llu parity errors, %llu corrected, %llu uncorrectable\n",
	       (unsigned long long)sp.meta_errors, (unsigned long long)sp.parity_errors,
	       (unsigned long long)sp.corrected_bytes, (unsigned long long)sp.uncorrectable_bytes);
	CHECK("shared rows: scrub repairs the damaged node, nothing uncorrectable",
	      sp.meta_errors >= 1 && sp.corrected_bytes >= CORE_SECTORSIZE && sp.uncorrectable_bytes == 0);
	MUST(scrub_run(c, &so, &sp));
	CHECK("shared rows: a second scrub finds nothing", sp.meta_errors == 0 && sp.parity_errors == 0 &&
	      sp.uncorrectable_bytes == 0);
	CHECK("shared rows: every node walks, every item reads", walk_all(c, &w2) && w2.n == w.n &&
	      meta_items_ok(c));
	MUST(mount_close(c));
	c = NULL;
	CHECK_VFSCK("shared rows: fsck clean", &v);
out:
	vol_done(&v, c);
}

/*
 * The resync of raid5/6 metadata rows verifies the nodes it rebuilds.
 * Items committed on all devices, more committed with the last device
 * away, then a column of a node from before (on the first device) flipped:
 * the rows rebuilt for the returning device from that column would be
 * garbage, so the resync keeps the device's own column there (counted in
 * resync_mismatch).  Every node still reads, with the damaged device
 * missing too; scrub repairs the column, a second scrub is clean, fsck
 * clean.  On the old code the rebuilt column was written unverified: two
 * bad columns in the node's row (raid5), the node unreadable.
 */
/* len bytes of the image file at path from off. */
static int dev_file_read(const char *path, uint64_t off, void *buf, uint64_t len)
{
	int fd = open(path, O_RDONLY);
	ssize_t r = fd < 0 ? -1 : pread(fd, buf, len, (off_t)off);

	if (fd >= 0)
		close(fd);
	return r == (ssize_t)len ? 0 : -EIO;
}

/* away_write's write for resync_meta_case: 400 items past MITEMS. */
static int write_items_away(struct core *c, void *arg)
{
	int ret = t_insert_items(c, MITEMS, 400, 100);

	(void)arg;
	return ret ? ret : txn_commit(c, COMMIT_SYNC);
}

static void resync_meta_case(const char *tag, int ndev, uint64_t prof)
{
	struct vol v = { 0 };
	uint64_t sz[4] = { 96ull << 20, 96ull << 20, 96ull << 20, 96ull << 20 }, ph = 0, gen0, at = 0;
	uint64_t aph = 0, alen = 0;	/* the returning device's columns of the node's rows */
	struct core *c = NULL;
	struct core_stats st;
	struct scrub_opts so = { 0 };
	struct scrub_progress sp;
	struct node_walk w, w2;
	const char *left[4];
	char name[200], path[256] = "";
	int away = ndev - 1, n = 0, served = 0;
	uint32_t ns = 16384;
	uint8_t *nb = aligned_alloc(4096, ns);
#define N(s_) (snprintf(name, sizeof(name), "%s: %s", tag, s_), name)

	MUST(nb ? 0 : -ENOMEM);
	MUST(vol_make(&v, ndev, sz));
	MUST(vol_format_ns(&v, prof, prof, ns));
	MUST(vol_open(&v, &c));
	MUST(meta_fill(c, 10));
	gen0 = c->generation;
	CHECK(N("every node walks before"), walk_all(c, &w));
	/* the candidates: the fs tree's nodes (the early leaves keep their
	 * keys while more items go to the last one) */
	memset(&w, 0, sizeof(w));
	MUST(btree_walk(&c->roots[CT_FS].r, walk_visit, walk_bad, &w) < 0 ? -EIO : 0);
	MUST(mount_close(c));
	c = NULL;
	MUST(away_write(&v, away, left, &n, write_items_away, NULL, &c));
	CHECK(N("every node walks with the device away"), walk_all(c, &w2));
	memset(&w2, 0, sizeof(w2));
	MUST(btree_walk(&c->roots[CT_FS].r, walk_visit, walk_bad, &w2) < 0 ? -EIO : 0);
	/* a node from before the device left, still live, in a raid5/6 chunk,
	 * with a data column on the first device in a row the returning
	 * device holds */
	for (int i = 0; i < w.nat && !ph; i++) {
		struct node_expect e = { ns, w.at[i], c->sb.fsid, 0, -1, 0, 0 };
		struct chunk_geom g;
		bool live = false;
		for (int j = 0; j < w2.nat; j++)
			live |= w2.at[j] == w.at[i];
		if (!live || chunk_map_geometry(c, w.at[i], &g) || !g.nparity ||
		    parity_read_verified(c, w.at[i], ns, nb, node_verify_quiet, &e) ||
		    nb_generation(nb) > gen0)
			continue;
		for (uint64_t o2 = 0; o2 < ns && !ph; o2 += CORE_SECTORSIZE) {
			const char *pp = NULL;
			uint64_t p = parity_phys(c, w.at[i] + o2, -1, &pp);
			if (p && pp && !strcmp(pp, v.devs[0])) {
				ph = p;
				at = w.at[i];
				snprintf(path, sizeof(path), "%s", pp);
				uint64_t s0 = (at - g.logical) / CORE_SECTORSIZE, k = (uint64_t)g.ndata;
				aph = g.stripes[away].physical + s0 / k * CORE_SECTORSIZE;
				alen = ((s0 + ns / CORE_SECTORSIZE + k - 1) / k - s0 / k) * CORE_SECTORSIZE;
			}
		}
	}
	MUST(mount_close(c));
	c = NULL;
	CHECK(N("found an old node with a column on a present device"), ph != 0);
	if (!ph)
		goto out;
	printf("%s: damaging node %llu\n", tag, (unsigned long long)at);
	MUST(t_poke(path, ph + 200, 0x5a));
	uint8_t before[64 << 10], after[64 << 10];
	MUST(alen <= sizeof(before) && dev_file_read(v.devs[away], aph, before, alen) == 0 ? 0 : -EIO);
	MUST(resync_open(&v, tag, &c, &st));
	if (prof == CORE_PROFILE_RAID5)
		CHECK(N("the resync ends and counts the row rebuilt from the bad column"),
		      !c->devs[away]->stale && st.resync_mismatch >= 1);
	else	/* raid6: Q gets past the bad column, the rebuild verifies */
		CHECK(N("the resync ends; the rows rebuilt past the bad column verify"),
		      !c->devs[away]->stale && st.resync_mismatch == 0);
	MUST(dev_file_read(v.devs[away], aph, after, alen));
	CHECK(N("the returning device's columns of the damaged node's rows are as they were"),
	      !memcmp(before, after, alen));
	CHECK(N("every node reads after the resync"), walk_all(c, &w2) && meta_items_ok(c));
	MUST(mount_close(c));
	c = NULL;
	/* the returning device's columns, without the damaged device */
	if (prof != CORE_PROFILE_RAID5)
		goto scrub;	/* raid6: raid1 chunks of the degraded writes may need two */
	n = 0;
	for (int k = 1; k < ndev; k++)
		left[n++] = v.devs[k];
	if (vol_open_degraded_ro(left, n, &c) == 0) {
		served = walk_all(c, &w2) && meta_items_ok(c);
		mount_close(c);
	}
	c = NULL;
	CHECK(N("without the damaged device every node reads (no rebuilt garbage resynced)"), served);
scrub:
	MUST(vol_open(&v, &c));
	MUST(scrub_run(c, &so, &sp));
	printf("%s: scrub: %llu node errors, %llu parity errors, %llu corrected, %llu uncorrectable\n",
	       tag, (unsigned long long)sp.meta_errors, (unsigned long long)sp.parity_errors,
	       (unsigned long long)sp.corrected_bytes, (unsigned long long)sp.uncorrectable_bytes);
	CHECK(N("scrub repairs the damaged column"), sp.corrected_bytes >= CORE_SECTORSIZE &&
	      sp.uncorrectable_bytes == 0);
	MUST(scrub_run(c, &so, &sp));
	CHECK(N("a second scrub finds nothing"), sp.meta_errors == 0 && sp.parity_errors == 0 &&
	      sp.corrected_bytes == 0 && sp.uncorrectable_bytes == 0);
	MUST(mount_close(c));
	c = NULL;
	CHECK_VFSCK(N("fsck clean"), &v);
out:
	vol_done(&v, c);
	free(nb);
#undef N
}

int main(void)
{
	t_seed_init();
	if (getenv("RAID_CASE") && !strcmp(getenv("RAID_CASE"), "resync_meta")) {
		/* one case alone, while working on it */
		resync_meta_case("resync verify raid5 metadata", 3, CORE_PROFILE_RAID5);
		resync_meta_case("resync verify raid6 metadata", 4, CORE_PROFILE_RAID6);
		return fails ? 1 : 0;
	}
	if (getenv("RAID_CASE") && !strcmp(getenv("RAID_CASE"), "split")) {
		chunk_split_case();
		split_file_read();
		touching_chunks_read();
		return fails ? 1 : 0;
	}
	if (getenv("RAID_CASE") && !strcmp(getenv("RAID_CASE"), "keep")) {
		keep_cases();
		remove_lost_case(true);
		remove_lost_case(false);
		return fails ? 1 : 0;
	}
	if (getenv("RAID_CASE") && !strcmp(getenv("RAID_CASE"), "resync_beside")) {
		resync_writes_beside();
		striped_resync_writes("raid5 rebuild beside writes", 3, CORE_PROFILE_RAID5, 1, 0);
		striped_resync_writes("raid6 rebuild beside writes", 4, CORE_PROFILE_RAID6, 0, 2);
		return fails ? 1 : 0;
	}
	mkfs_errors();
	profile_case("dup/dup one device", 1, CORE_PROFILE_DUP, CORE_PROFILE_DUP);
	profile_case("raid1/raid1 two devices", 2, CORE_PROFILE_RAID1, CORE_PROFILE_RAID1);
	profile_case("raid1 data, dup metadata", 2, CORE_PROFILE_RAID1, CORE_PROFILE_DUP);
	profile_case("raid10/raid10 four devices", 4, CORE_PROFILE_RAID10, CORE_PROFILE_RAID10);
	profile_case("raid10 data, raid1 metadata", 4, CORE_PROFILE_RAID10, CORE_PROFILE_RAID1);
	profile_case("raid1c3/raid1c3 three devices", 3, CORE_PROFILE_RAID1C3, CORE_PROFILE_RAID1C3);
	profile_case("raid1c4/raid1c4 four devices", 4, CORE_PROFILE_RAID1C4, CORE_PROFILE_RAID1C4);
	parallel_flush();
	failing_device();
	rotational();
	opts_fields();
	async_discard_frees_at_once();
	async_discard_queue_full();
	chunk_split_case();
	trim_case();
	missing_device();
	raid10_missing();
	parity_case("raid5 data on three devices", 3, CORE_PROFILE_RAID5);
	parity_case("raid6 data on four devices", 4, CORE_PROFILE_RAID6);
	failing_supers();
	stale_device();
	resync_writes_beside();
	striped_resync_writes("raid5 rebuild beside writes", 3, CORE_PROFILE_RAID5, 1, 0);
	striped_resync_writes("raid6 rebuild beside writes", 4, CORE_PROFILE_RAID6, 0, 2);
	stale_striped("raid10 resync", 4, CORE_PROFILE_RAID10, CORE_PROFILE_RAID10, 1);
	stale_striped("raid5 resync", 3, CORE_PROFILE_RAID5, CORE_PROFILE_RAID1, 1);
	stale_striped("raid6 resync", 4, CORE_PROFILE_RAID6, CORE_PROFILE_RAID1, 0);
	stale_striped("raid1c3 resync", 3, CORE_PROFILE_RAID1C3, CORE_PROFILE_RAID1C3, 2);
	volume_ops();
	raid10_convert();
	keep_cases();
	remove_lost_case(true);
	remove_lost_case(false);
	parity_convert();
	split_turns_stripes();
	packed_split_convert("packed raid6 -> dup", 4, CORE_PROFILE_RAID6, 64);
	packed_split_convert("packed raid5 -> dup", 4, CORE_PROFILE_RAID5, 64);
	split_file_read();
	touching_chunks_read();
	parity_remove();
	parity_replace_missing();
	parity_replace_two();
	usage_ratio();
	parity_trim();
	mirror3_two_lost();
	mirror_convert();
	mirror_trim();
	mirror3_two_bad();
	resync_verify_case("resync verify raid1", 2, CORE_PROFILE_RAID1);
	resync_verify_case("resync verify raid1c3", 3, CORE_PROFILE_RAID1C3);
	resync_verify_case("resync verify raid5", 3, CORE_PROFILE_RAID5);
	meta_parity_case("raid5 metadata, three devices, 4 KiB nodes", 3, CORE_PROFILE_RAID5, 4096);
	meta_parity_case("raid5 metadata, four devices, 16 KiB nodes", 4, CORE_PROFILE_RAID5, 16384);
	meta_parity_case("raid6 metadata, four devices, 16 KiB nodes", 4, CORE_PROFILE_RAID6, 16384);
	meta_parity_convert();
	meta_parity_shared_rows();
	stale_striped("raid5 data+metadata resync", 3, CORE_PROFILE_RAID5, CORE_PROFILE_RAID5, 1);
	stale_striped("raid6 data+metadata resync", 4, CORE_PROFILE_RAID6, CORE_PROFILE_RAID6, 0);
	resync_meta_case("resync verify raid5 metadata", 3, CORE_PROFILE_RAID5);
	resync_meta_case("resync verify raid6 metadata", 4, CORE_PROFILE_RAID6);
	return fails ? 1 : 0;
}
