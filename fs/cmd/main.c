// SPDX-License-Identifier: MIT
/*
 * main.c — the glassfs daemon.
 *
 *   glassfs DEV[:DEV...] MOUNTPOINT [-o opts] [-f] [-d]
 *
 * Also the program behind `mount -t fuse.glassfs DEV MNT -o opts` and
 * fstab entries (mount.fuse3 runs "glassfs DEV MNT -o opts").  Options
 * are parsed in one place (parse_opt): the engine's own, FUSE mount
 * options forwarded to the kernel, and mount(8)'s bookkeeping options,
 * which are ignored.  Root's mounts get allow_other unless noallow_other.
 *
 * The daemon holds every device for the mount's life (dev.h: an OFD lock,
 * which follows the open file description, not the process that took it):
 * a second mount of a device fails in mount_open with who holds it.
 *
 * Start-up order matters: the daemon forks (unless -f) BEFORE opening the
 * volume, because the core starts threads; the parent waits on a pipe for
 * the child's verdict so `glassfs` and `mount` exit non-zero with a clear
 * message when the image is bad or the mount fails.  Unmounting
 * (fusermount3 -u, umount, SIGTERM/SIGINT) ends the session loop, then
 * mount_close() writes the final commit: nothing acknowledged is lost.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/ops/mount.h"
#include "fs/fuse/fuse_ops.h"
#include "fs/core/core.h"
#include "fs/base/lock.h"
#include "fs/store/dev_writelog.h"

#define MAX_DEVS 16

/* threads=: the most FUSE workers; every one may hold a glock, so the
 * cap stays below what a lock's reader count holds (lock.h), with room
 * for the daemon's own threads (commit, cleaner, scrub, write-behind) */
#define THREADS_MAX 100000
#define STR_(x) #x
#define STR(x) STR_(x)
_Static_assert(THREADS_MAX + 1024 < GLOCK_MAX_HOLDERS, "threads= could fill a lock's reader count");

struct options {
	struct core_opts core;
	const char *devspec, *mnt;
	const char *devs[MAX_DEVS];
	int ndevs;
	int foreground, debug;
	bool noallow_other;	/* noallow_other: only the mounter, even as root */
	unsigned threads;
	double entry_timeout, attr_timeout, neg_timeout;
	bool writeback;		/* writeback_cache=on|off (default on: docs/mount-options.md) */
	bool splice;		/* splice=on|off (docs/mount-options.md) */
	unsigned max_read;	/* max_read=BYTES forwarded, or set for splice (main) */
	unsigned readahead_kb;	/* readahead_kb=N (docs/mount-options.md) */
	char fuse_opts[4096];	/* forwarded to libfuse, comma-separated */
	const char *log;	/* log=FILE: daemon messages in the background */
	const char *writelog;	/* writelog=FILE: the devices' write log (tests) */
	int lat_target;		/* parse_opt: the dev_latency option being continued */
};
#define LAT_NONE (-2)		/* lat_target: none; -1 = every device; N = device N */

static void usage(FILE *f)
{
	fprintf(f,
"usage: glassfs DEV[:DEV...] MOUNTPOINT [-o opt[,opt...]] [-f] [-d]\n"
"  -f                 stay in the foreground\n"
"  -d                 foreground + FUSE debug output\n"
"glassfs options:\n"
"  commit=SECONDS     periodic commit interval (default 30)\n"
"  locking=node|groups:N   B-tree lock scheme (default node; N: power of two, 1-64)\n"
"  locktype=rwlock|mutex|spin   lock primitive (default rwlock)\n"
"  cowlock=leaf|path  a B-tree change write-locks the levels it changes (leaf,\n"
"                     default) or every level from the root (path: the baseline)\n"
"  cache=SIZE         node cache budget, e.g. 256M (default 256 MiB)\n"
"  dirty=SIZE         commit early past this much dirty metadata\n"
"  fsync=log|commit   fsync through the fsync log (default) or a full commit\n"
"  inode_spread=on|off  each directory numbers its children from a block of its\n"
"                     own (on) or every inode takes the next number (off, default)\n"
"  threads=N          maximum FUSE worker threads, 1 to " STR(THREADS_MAX) " (default 16)\n"
"  log=FILE           messages of a background daemon go to FILE (default: dropped)\n"
"  writelog=FILE      record every device write (with its bytes), discard and\n"
"                     flush, in order, to FILE, for power-loss replay tests\n"
"  entry_timeout=S attr_timeout=S negative_timeout=S   kernel cache times\n"
"  writeback_cache=on|off  the kernel's writeback cache for file data (default\n"
"                     on: writes land in the page cache and reach the daemon in\n"
"                     large requests; off: every write is a round trip)\n"
"  splice=on|off      reads replied by splicing the verified device bytes to the\n"
"                     kernel, one copy instead of two (default on)\n"
"  readahead_kb=N     the kernel's read-ahead window for the mount, in KiB\n"
"                     (default 0: the kernel's own, 128; 2048 for cached reads; needs root)\n"
"  ro | rw            read-only / read-write\n"
"  discard=off|sync|async  discard freed extents: never (default), inside the\n"
"                     commit, or queued in the background; bare 'discard' = sync\n"
"  nodiscard          same as discard=off\n"
"  discard_iops=N     async discard rate limit, discards per second (0 = none)\n"
"  discard_bps=SIZE   async discard rate limit, bytes per second, e.g. 64M (0 = none)\n"
"  degraded           mount with devices missing when every chunk keeps a copy\n"
"                     (writable; a returning device is resynced at its next mount)\n"
"  dev_latency=read:US,write:US,flush:US,discard:US   device latency model in\n"
"                     microseconds per operation (any subset, e.g. discard:50000)\n"
"  dev_latency.N=read:US,...   the same for device N only (0-based, the order of\n"
"                     DEV:DEV...; overrides dev_latency= for the operations it names)\n"
"  noallow_other      serve only the user who mounts (root's mounts serve every\n"
"                     user by default, as a kernel filesystem does: allow_other)\n"
"FUSE options forwarded: allow_other, allow_root, default_permissions (always on),\n"
"  fsname=, subtype=, max_read=, [no]suid, [no]dev, [no]exec, [no]atime, ...\n"
"  atime: relatime (default), strictatime (= norelatime), noatime; lazytime ignored\n"
"mount(8) options ignored: defaults, auto, noauto, user, users, nouser, nofail, _netdev, x-*\n");
}

static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (*s < '0' || *s > '9')	/* strtoull takes "-5" as a huge number */
		return -EINVAL;
	v = strtoull(s, &end, 10);
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	case 't': case 'T': v <<= 40; end++; break;
	}
	if (*end == 'i' || *end == 'B')
		end++;
	if (*end == 'B')
		end++;
	if (*end)
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_uint(const char *s, unsigned *out)
{
	char *end;
	unsigned long v;

	if (*s < '0' || *s > '9')	/* strtoul takes "-1" as a huge number */
		return -EINVAL;
	v = strtoul(s, &end, 10);
	if (*end || v > 1000000)
		return -EINVAL;
	*out = (unsigned)v;
	return 0;
}

static int parse_double(const char *s, double *out)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || *end || v < 0)
		return -EINVAL;
	*out = v;
	return 0;
}

/*
 * "read:US,write:US,flush:US,discard:US" (any subset) -> lat[4]; bit op of
 * *set for each operation named.
 */
static int parse_dev_latency(const char *s, uint64_t lat[4], uint8_t *set)
{
	static const char *const names[4] = { "read", "write", "flush", "discard" };
	char *dup = strdup(s), *save = NULL, *tok;
	int ret = *s ? 0 : -EINVAL;

	if (!dup)
		return -ENOMEM;
	for (tok = strtok_r(dup, ",", &save); tok && !ret; tok = strtok_r(NULL, ",", &save)) {
		char *colon = strchr(tok, ':'), *end;
		unsigned long long us;
		int i;

		if (!colon) {
			ret = -EINVAL;
			break;
		}
		*colon = 0;
		for (i = 0; i < 4 && strcmp(tok, names[i]); i++)
			;
		errno = 0;
		us = strtoull(colon + 1, &end, 10);
		if (i == 4 || end == colon + 1 || *end || errno || colon[1] == '-' ||
		    us > 10000000ULL) {
			ret = -EINVAL;
		} else {
			lat[i] = us;
			*set |= (uint8_t)(1u << i);
		}
	}
	free(dup);
	return ret;
}

/* A "read:US"-style token: the rest of a dev_latency list that -o split at its commas. */
static bool is_latency_item(const char *tok)
{
	static const char *const names[4] = { "read:", "write:", "flush:", "discard:" };

	for (int i = 0; i < 4; i++)
		if (strncmp(tok, names[i], strlen(names[i])) == 0)
			return true;
	return false;
}

static void add_fuse_opt(struct options *o, const char *opt)
{
	size_t n = strlen(o->fuse_opts);

	snprintf(o->fuse_opts + n, sizeof(o->fuse_opts) - n, "%s%s", n ? "," : "", opt);
}

/* Was FUSE option opt (a whole word) forwarded? */
static bool has_fuse_opt(const struct options *o, const char *opt)
{
	size_t n = strlen(opt);

	for (const char *s = o->fuse_opts; (s = strstr(s, opt)); s += n)
		if ((s == o->fuse_opts || s[-1] == ',') && (s[n] == ',' || s[n] == 0))
			return true;
	return false;
}

static bool has_prefix(const char *s, const char *p)
{
	return strncmp(s, p, strlen(p)) == 0;
}

/* What a valid value of the option opt ("name=value") is, for its error. */
static const char *opt_range(const char *opt)
{
	static const char *const r[][2] = {
		{ "commit=", "commit=SECONDS, 1 to 1000000" },
		{ "cache=", "cache=SIZE, at least 1M, e.g. 256M" },
		{ "dirty=", "dirty=SIZE, e.g. 64M; 0: commit only on time and sync" },
		{ "threads=", "threads=N, 1 to " STR(THREADS_MAX) },
		{ "locktype=", "locktype=rwlock, mutex or spin" },
		{ "discard_iops=", "discard_iops=N per second, 0 for no limit" },
		{ "discard_bps=", "discard_bps=SIZE per second, e.g. 64M, 0 for no limit" },
		{ "log=", "log=FILE" },
		{ "writelog=", "writelog=FILE" },
		{ "entry_timeout=", "seconds, 0 or more, e.g. 1.5" },
		{ "attr_timeout=", "seconds, 0 or more, e.g. 1.5" },
		{ "negative_timeout=", "seconds, 0 or more, e.g. 1.5" },
	};

	for (size_t i = 0; i < sizeof(r) / sizeof(r[0]); i++)
		if (has_prefix(opt, r[i][0]))
			return r[i][1];
	return "see glassfs -h";
}

/* The one option parser.  0, or -EINVAL after printing why. */
static int parse_opt(struct options *o, const char *opt)
{
	static const char *const forward[] = {
		"allow_other", "allow_root", "auto_unmount", "suid", "nosuid", "dev", "nodev",
		"exec", "noexec", "async", "sync", "dirsync", "atime", "noatime", NULL,
	};
	static const char *const ignore[] = {
		"defaults", "auto", "noauto", "user", "users", "nouser", "owner", "group",
		"nofail", "_netdev", "default_permissions", "silent", "loud", NULL,
	};
	const char *v = strchr(opt, '=');
	v = v ? v + 1 : NULL;

	if (!*opt)
		return 0;
	if (o->lat_target != LAT_NONE && !v && is_latency_item(opt)) {
		/* "-o dev_latency=read:10,write:20": the comma split it */
		uint8_t set = 0;
		int n = o->lat_target;

		if (parse_dev_latency(opt, n < 0 ? o->core.dev_lat_us : o->core.dev_lat_dev_us[n],
				      n < 0 ? &set : &o->core.dev_lat_dev_set[n]) == 0)
			return 0;
		fprintf(stderr, "glassfs: bad value in option '%s' "
			"(dev_latency=read:US,write:US,flush:US,discard:US)\n", opt);
		return -EINVAL;
	}
	o->lat_target = LAT_NONE;
	/* atime updates are the daemon's (libfuse knows only [no]atime) */
	if (!strcmp(opt, "relatime") || !strcmp(opt, "nostrictatime")) {
		o->core.atime = CORE_ATIME_RELATIME;
		return 0;
	}
	if (!strcmp(opt, "strictatime") || !strcmp(opt, "norelatime")) {
		o->core.atime = CORE_ATIME_STRICT;
		return 0;
	}
	if (!strcmp(opt, "lazytime") || !strcmp(opt, "nolazytime"))
		return 0;	/* atimes are written with the next commit anyway */
	if (!strcmp(opt, "noallow_other")) {
		o->noallow_other = true;
		return 0;
	}
	for (int i = 0; forward[i]; i++)
		if (!strcmp(opt, forward[i])) {
			if (!strcmp(opt, "noatime"))
				o->core.atime = CORE_ATIME_NONE;
			else if (!strcmp(opt, "atime"))
				o->core.atime = CORE_ATIME_RELATIME;
			add_fuse_opt(o, opt);
			return 0;
		}
	for (int i = 0; ignore[i]; i++)
		if (!strcmp(opt, ignore[i]))
			return 0;
	if (has_prefix(opt, "x-") || has_prefix(opt, "comment="))
		return 0;
	if (!strcmp(opt, "ro")) {
		o->core.readonly = true;
		add_fuse_opt(o, "ro");
		return 0;
	}
	if (!strcmp(opt, "rw")) {
		o->core.readonly = false;
		return 0;
	}
	if (v && has_prefix(opt, "max_read=")) {
		uint64_t n;	/* bytes, plain digits: the kernel parses it too */
		if (parse_size(v, &n) != 0 || !strspn(v, "0123456789") || v[strspn(v, "0123456789")] ||
		    n > UINT32_MAX) {
			fprintf(stderr, "glassfs: bad value in option '%s' (max_read=BYTES)\n", opt);
			return -EINVAL;
		}
		o->max_read = (unsigned)n;
		add_fuse_opt(o, opt);
		return 0;
	}
	if (has_prefix(opt, "fsname=") || has_prefix(opt, "subtype=") ||
	    has_prefix(opt, "blksize=") ||
	    has_prefix(opt, "context=") || has_prefix(opt, "fscontext=") ||
	    has_prefix(opt, "defcontext=") || has_prefix(opt, "rootcontext=")) {
		add_fuse_opt(o, opt);
		return 0;
	}
	if (!strcmp(opt, "nodiscard")) {
		o->core.discard = CORE_DISCARD_OFF;
		return 0;
	}
	if (!strcmp(opt, "discard")) {
		o->core.discard = CORE_DISCARD_SYNC;
		return 0;
	}
	if (!strcmp(opt, "degraded")) {
		o->core.degraded = true;
		return 0;
	}
	if (v && has_prefix(opt, "discard=")) {
		int d = core_discard_parse(v);

		if (d > 0) {
			o->core.discard = d;
			return 0;
		}
		fprintf(stderr, "glassfs: bad value in option '%s' (discard=off|sync|async)\n", opt);
		return -EINVAL;
	} else if (v && has_prefix(opt, "discard_iops=")) {
		if (v[0] != '-' && parse_size(v, &o->core.discard_iops) == 0)
			return 0;
	} else if (v && has_prefix(opt, "discard_bps=")) {
		if (v[0] != '-' && parse_size(v, &o->core.discard_bytes_per_s) == 0)
			return 0;
	} else if (v && has_prefix(opt, "dev_latency=")) {
		uint8_t set = 0;

		o->lat_target = -1;
		if (parse_dev_latency(v, o->core.dev_lat_us, &set) == 0)
			return 0;
		fprintf(stderr, "glassfs: bad value in option '%s' "
			"(dev_latency=read:US,write:US,flush:US,discard:US)\n", opt);
		return -EINVAL;
	} else if (v && has_prefix(opt, "dev_latency.")) {
		char *end;
		unsigned long n;

		errno = 0;
		n = strtoul(opt + 12, &end, 10);
		if (end == opt + 12 || *end != '=' || errno || n >= CORE_OPTS_MAX_DEVS) {
			fprintf(stderr, "glassfs: bad device index in option '%s' "
				"(dev_latency.N=read:US,...; N from 0 to %d, the order of the devices)\n",
				opt, CORE_OPTS_MAX_DEVS - 1);
			return -EINVAL;
		}
		o->lat_target = (int)n;
		if (parse_dev_latency(v, o->core.dev_lat_dev_us[n], &o->core.dev_lat_dev_set[n]) == 0)
			return 0;
		fprintf(stderr, "glassfs: bad value in option '%s' "
			"(dev_latency.N=read:US,write:US,flush:US,discard:US)\n", opt);
		return -EINVAL;
	} else if (v && has_prefix(opt, "commit=")) {
		if (parse_uint(v, &o->core.commit_interval_s) == 0 && o->core.commit_interval_s > 0)
			return 0;
	} else if (v && has_prefix(opt, "locking=")) {
		if (!strcmp(v, "node")) {
			o->core.lock_groups = 0;
			return 0;
		}
		if (has_prefix(v, "groups:") && parse_uint(v + 7, &o->core.lock_groups) == 0 &&
		    o->core.lock_groups >= 1 && o->core.lock_groups <= 64 &&
		    !(o->core.lock_groups & (o->core.lock_groups - 1)))
			return 0;
		fprintf(stderr, "glassfs: bad value in option '%s' (locking=node or "
			"locking=groups:N, N a power of two from 1 to 64)\n", opt);
		return -EINVAL;
	} else if (v && has_prefix(opt, "locktype=")) {
		if (glock_type_parse(v, &o->core.locktype) == 0)
			return 0;
	} else if (v && has_prefix(opt, "cowlock=")) {
		if (!strcmp(v, "leaf") || !strcmp(v, "path")) {
			o->core.cow_lock_path = !strcmp(v, "path");
			return 0;
		}
		fprintf(stderr, "glassfs: bad value in option '%s' (cowlock=leaf or cowlock=path)\n", opt);
		return -EINVAL;
	} else if (v && has_prefix(opt, "inode_spread=")) {
		if (!strcmp(v, "on") || !strcmp(v, "off")) {
			o->core.inode_spread = !strcmp(v, "on");
			return 0;
		}
		fprintf(stderr, "glassfs: bad value in option '%s' (inode_spread=on or inode_spread=off)\n", opt);
		return -EINVAL;
	} else if (v && has_prefix(opt, "fsync=")) {
		if (!strcmp(v, "log")) {
			o->core.fsync_mode = CORE_FSYNC_LOG;
			return 0;
		}
		if (!strcmp(v, "commit")) {
			o->core.fsync_mode = CORE_FSYNC_COMMIT;
			return 0;
		}
		fprintf(stderr, "glassfs: bad value in option '%s' (fsync=log|commit)\n", opt);
		return -EINVAL;
	} else if (v && has_prefix(opt, "cache=")) {
		if (parse_size(v, &o->core.cache_bytes) == 0 && o->core.cache_bytes >= (1u << 20))
			return 0;
	} else if (v && has_prefix(opt, "dirty=")) {
		if (parse_size(v, &o->core.dirty_thresh_bytes) == 0)
			return 0;
	} else if (v && has_prefix(opt, "log=")) {
		if (*v) {
			o->log = strdup(v);
			return 0;
		}
	} else if (v && has_prefix(opt, "writelog=")) {
		if (*v) {
			free((char *)o->writelog);
			o->writelog = strdup(v);
			return 0;
		}
	} else if (v && has_prefix(opt, "threads=")) {
		/* at most 100,000 workers, each a thread with its stack: more
		 * than the kernel's FUSE queue keeps busy (a typo's million
		 * was accepted); the lock module copes with any number of
		 * waiters (fs/base/lock.c) */
		if (parse_uint(v, &o->threads) == 0 && o->threads >= 1 && o->threads <= THREADS_MAX)
			return 0;
	} else if (v && has_prefix(opt, "entry_timeout=")) {
		if (parse_double(v, &o->entry_timeout) == 0)
			return 0;
	} else if (v && has_prefix(opt, "attr_timeout=")) {
		if (parse_double(v, &o->attr_timeout) == 0)
			return 0;
	} else if (v && has_prefix(opt, "writeback_cache=")) {
		if (!strcmp(v, "on") || !strcmp(v, "off")) {
			o->writeback = !strcmp(v, "on");
			return 0;
		}
		fprintf(stderr, "glassfs: bad value in option '%s' (writeback_cache=on|off)\n", opt);
		return -EINVAL;
	} else if (v && has_prefix(opt, "splice=")) {
		if (!strcmp(v, "on") || !strcmp(v, "off")) {
			o->splice = !strcmp(v, "on");
			return 0;
		}
		fprintf(stderr, "glassfs: bad value in option '%s' (splice=on|off)\n", opt);
		return -EINVAL;
	} else if (v && has_prefix(opt, "readahead_kb=")) {
		char *end;
		unsigned long n = strtoul(v, &end, 10);
		if (*v >= '0' && *v <= '9' && !*end && n <= 1u << 20) {	/* 1 GiB: sysfs's own bound is higher */
			o->readahead_kb = (unsigned)n;
			return 0;
		}
		fprintf(stderr, "glassfs: bad value in option '%s' (readahead_kb=0..1048576)\n", opt);
		return -EINVAL;
	} else if (v && has_prefix(opt, "negative_timeout=")) {
		if (parse_double(v, &o->neg_timeout) == 0)
			return 0;
	} else {
		fprintf(stderr, "glassfs: unknown option '%s'\n", opt);
		return -EINVAL;
	}
	fprintf(stderr, "glassfs: bad value in option '%s' (%s)\n", opt, opt_range(opt));
	return -EINVAL;
}

static int parse_opts(struct options *o, const char *list)
{
	char *dup = strdup(list), *save = NULL;
	int ret = 0;

	if (!dup)
		return -ENOMEM;
	for (char *tok = strtok_r(dup, ",", &save); tok && !ret; tok = strtok_r(NULL, ",", &save))
		ret = parse_opt(o, tok);
	free(dup);
	return ret;
}

static int parse_args(struct options *o, int argc, char **argv)
{
	const char *pos[2];
	int npos = 0;

	memset(o, 0, sizeof(*o));
	o->lat_target = LAT_NONE;
	core_opts_default(&o->core);
	o->threads = 16;
	o->entry_timeout = o->attr_timeout = o->neg_timeout = 10.0;
	o->writeback = true;
	o->splice = true;
	o->readahead_kb = 0;		/* the kernel's: why, fs/fuse/fuse_readahead.h */
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			exit(0);
		} else if (!strcmp(a, "-f")) {
			o->foreground = 1;
		} else if (!strcmp(a, "-d")) {
			o->foreground = o->debug = 1;
		} else if (!strcmp(a, "-s")) {
			o->threads = 1;
		} else if (!strcmp(a, "-o")) {
			if (++i >= argc) {
				fprintf(stderr, "glassfs: -o needs an argument\n");
				return -EINVAL;
			}
			if (parse_opts(o, argv[i]))
				return -EINVAL;
		} else if (has_prefix(a, "-o")) {
			if (parse_opts(o, a + 2))
				return -EINVAL;
		} else if (a[0] == '-' && a[1]) {
			fprintf(stderr, "glassfs: unknown flag '%s'\n", a);
			return -EINVAL;
		} else if (npos < 2) {
			pos[npos++] = a;
		} else {
			fprintf(stderr, "glassfs: unexpected argument '%s'\n", a);
			return -EINVAL;
		}
	}
	if (npos != 2) {
		usage(stderr);
		return -EINVAL;
	}
	/*
	 * A volume root mounts (fstab, mount -t fuse.glassfs) serves every
	 * user by their permissions, as a kernel filesystem does: without
	 * allow_other the kernel's FUSE layer answers EACCES to every uid but
	 * the mounter's, stat included.  Safe because default_permissions is
	 * always on: the kernel checks modes and ACLs.  allow_root and
	 * allow_other exclude each other (libfuse).
	 */
	if (geteuid() == 0 && !o->noallow_other && !has_fuse_opt(o, "allow_other") &&
	    !has_fuse_opt(o, "allow_root"))
		add_fuse_opt(o, "allow_other");
	o->devspec = pos[0];
	o->mnt = pos[1];

	char *spec = strdup(o->devspec), *save = NULL;
	if (!spec)
		return -ENOMEM;
	for (char *d = strtok_r(spec, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		if (o->ndevs == MAX_DEVS) {
			fprintf(stderr, "glassfs: at most %d devices\n", MAX_DEVS);
			free(spec);
			return -EINVAL;
		}
		char *rp = realpath(d, NULL);
		if (!rp) {
			fprintf(stderr, "glassfs: %s: %s\n", d, strerror(errno));
			free(spec);
			return -ENOENT;
		}
		o->devs[o->ndevs++] = rp;
	}
	free(spec);
	if (o->ndevs == 0) {
		fprintf(stderr, "glassfs: no device given\n");
		return -EINVAL;
	}
	struct stat st;
	if (stat(o->mnt, &st) < 0 || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "glassfs: mount point %s: %s%s%s\n", o->mnt,
			errno ? strerror(errno) : "not a directory",
			errno == ENOTCONN ? "; the daemon that served it died: unmount it first, "
			"fusermount3 -u " : "", errno == ENOTCONN ? o->mnt : "");
		return -ENOTDIR;
	}
	return 0;
}

/* Tell the waiting parent how start-up went (bg mode); no-op with -1. */
static void report(int fd, unsigned char status)
{
	if (fd >= 0) {
		ssize_t r = write(fd, &status, 1);
		(void)r;
		close(fd);
	}
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "--version")) {
		printf("glassfs %s\n", GLASSFS_VERSION);
		return 0;
	}
	struct options o;
	struct glassfs_daemon d;
	struct core *core = NULL;
	struct fsctx *fs = NULL;
	struct fuse_session *se = NULL;
	struct fuse_loop_config *lc = NULL;
	struct dev_writelog *wlog = NULL;
	int notify = -1, ret;

	/* FUSE requests carry up to 1 MiB (gl_read's reply buffer, the
	 * engine's copies): glibc would map each such buffer fresh and unmap
	 * it on free, a page fault per 4 KiB on every request.  Keep them in
	 * the heap, and let each arena keep what it freed. */
	mallopt(M_MMAP_THRESHOLD, 4 << 20);
	mallopt(M_TRIM_THRESHOLD, 16 << 20);

	if (parse_args(&o, argc, argv) < 0)
		return 1;

	if (!o.foreground) {
		int pfd[2];
		if (pipe(pfd) < 0) {
			perror("glassfs: pipe");
			return 1;
		}
		pid_t pid = fork();
		if (pid < 0) {
			perror("glassfs: fork");
			return 1;
		}
		if (pid > 0) {
			unsigned char st = 1;
			close(pfd[1]);
			if (read(pfd[0], &st, 1) != 1)
				st = 1;
			return st;
		}
		close(pfd[0]);
		notify = pfd[1];
		setsid();
	}

	if (o.writelog) {	/* before mount_open: the recorder sees every write */
		ret = dev_writelog_open(o.writelog, o.devs, o.ndevs, &wlog);
		if (ret < 0) {
			fprintf(stderr, "glassfs: write log %s: %s\n", o.writelog, strerror(-ret));
			report(notify, 1);
			return 1;
		}
		o.core.dev_recorder = dev_writelog_record;
		o.core.dev_recorder_arg = wlog;
	}
	ret = mount_open(o.devs, o.ndevs, &o.core, &core);
	if (ret < 0) {
		if (!core_failure_reported())
			fprintf(stderr, "glassfs: cannot open %s: %s\n", o.devspec, strerror(-ret));
		report(notify, 1);
		for (int i = 0; i < o.ndevs; i++)
			free((char *)o.devs[i]);
		dev_writelog_close(wlog);
		return 1;
	}
	ret = fsops_mount(core, &o.core, &fs);
	if (ret < 0) {
		fprintf(stderr, "glassfs: cannot mount %s: %s\n", o.devspec, strerror(-ret));
		goto close_core;
	}

	/*
	 * Spliced reads (splice=on) need a pipe as big as the reply and some
	 * pages: a 1 MiB READ (O_DIRECT readers; the kernel's FUSE limit)
	 * wants 2 MiB, past /proc/sys/fs/pipe-max-size (1 MiB by default)
	 * without CAP_SYS_RESOURCE, and was copied whole.  Capped to what the
	 * pipe takes (1008 KiB then), it comes as two READs, both spliced.
	 * Buffered reads (the kernel's read-ahead, 128-256 KiB) do not change.
	 */
	if (o.splice && !o.max_read) {
		size_t m = fuse_ops_splice_max_read();
		if (m >= 64 * 1024 && m < (1u << 20)) {
			char mr[32];
			o.max_read = (unsigned)m;
			snprintf(mr, sizeof(mr), "max_read=%u", o.max_read);
			add_fuse_opt(&o, mr);
		}
	}

	char fsname[PATH_MAX + 16];
	snprintf(fsname, sizeof(fsname), "fsname=%s", o.devspec);
	char *fargv[8];
	int fargc = 0;
	fargv[fargc++] = argv[0];
	if (o.debug)
		fargv[fargc++] = "-d";
	fargv[fargc++] = "-o";
	char optstr[sizeof(o.fuse_opts) + PATH_MAX + 64];
	snprintf(optstr, sizeof(optstr), "default_permissions,subtype=glassfs%s%s%s%s",
		 strstr(o.fuse_opts, "fsname=") ? "" : ",", strstr(o.fuse_opts, "fsname=") ? "" : fsname,
		 o.fuse_opts[0] ? "," : "", o.fuse_opts);
	fargv[fargc++] = optstr;
	fargv[fargc] = NULL;
	struct fuse_args args = FUSE_ARGS_INIT(fargc, fargv);

	memset(&d, 0, sizeof(d));
	d.core = core;
	d.fs = fs;
	d.entry_timeout = o.entry_timeout;
	d.attr_timeout = o.attr_timeout;
	d.neg_timeout = o.neg_timeout;
	d.writeback = o.writeback;
	d.splice = o.splice;
	d.max_read = o.max_read;
	d.threads = o.threads;
	d.mountpoint = realpath(o.mnt, NULL);	/* freed at exit */
	d.ra.mountpoint = d.mountpoint;
	d.ra.kb = o.readahead_kb;
	se = fuse_session_new(&args, &fuse_ll_ops, sizeof(fuse_ll_ops), &d);
	if (!se) {
		fprintf(stderr, "glassfs: cannot start a FUSE session (options: %s)\n", optstr);
		ret = -EINVAL;
		goto unmount_fs;
	}
	d.se = se;
	if (fuse_set_signal_handlers(se) != 0) {
		ret = -EIO;
		goto destroy;
	}
	if (fuse_session_mount(se, o.mnt) != 0) {
		fprintf(stderr, "glassfs: cannot mount on %s\n", o.mnt);
		ret = -EIO;
		goto signals;
	}
	/* the INIT reply's FUSE_HANDLE_KILLPRIV_V2 (fs/fuse/fuse_wire.c);
	 * without the tap the volume works as before, only slower */
	if (fuse_wire_tap(se) != 0)
		fprintf(stderr, "glassfs: no custom FUSE I/O: buffered writes ask for "
			"security.capability each\n");

	if (notify >= 0) {
		int nul = open("/dev/null", O_RDWR);
		report(notify, 0);
		notify = -1;
		int logfd = o.log ? open(o.log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644) : -1;
		if (nul >= 0) {
			dup2(nul, 0);
			dup2(nul, 1);
			dup2(logfd >= 0 ? logfd : nul, 2);
			if (nul > 2)
				close(nul);
		}
		if (logfd > 2)
			close(logfd);
	}
	if (chdir("/") < 0)
		perror("glassfs: chdir /");

	lc = fuse_loop_cfg_create();
	if (!lc) {
		ret = -ENOMEM;
	} else {
		fuse_loop_cfg_set_clone_fd(lc, 0);
		fuse_loop_cfg_set_max_threads(lc, o.threads);
		fuse_loop_cfg_set_idle_threads(lc, o.threads < 10 ? o.threads : 10);
		ret = fuse_session_loop_mt(se, lc);
		fuse_loop_cfg_destroy(lc);
		ret = ret < 0 ? ret : 0;
	}
	fuse_session_unmount(se);
signals:
	fuse_remove_signal_handlers(se);
destroy:
	fuse_session_destroy(se);
	fuse_opt_free_args(&args);
unmount_fs:
	fsops_unmount(fs);
close_core: {
		int r = mount_close(core);
		if (r < 0) {
			fprintf(stderr, "glassfs: final commit of %s failed: %s\n", o.devspec,
				strerror(-r));
			if (ret == 0)
				ret = r;
		}
	}
	report(notify, ret < 0 ? 1 : 0);
	for (int i = 0; i < o.ndevs; i++)
		free((char *)o.devs[i]);
	free((char *)o.log);
	dev_writelog_close(wlog);	/* after mount_close: its last commit is logged */
	free((char *)o.writelog);
	return ret < 0 ? 1 : 0;
}
