/*
 * aggd.c — glass-aggd: configuration (flags and one config file, same
 * keys, one parser), token file, signals, retention timer, main.
 *
 *   glass-aggd --listen 127.0.0.1:7470 --store sqlite:/var/lib/glass/agg.db
 *              --tokens /etc/glass/tokens [--config FILE] [--retain 7d] ...
 *
 * Config file: "key = value" lines, '#' comments, keys are the long flag
 * names without "--".  Flags given on the command line win over the file
 * (the file is read first, then the flags again).
 */
#include "aggregator/aggd.h"
#include "aggregator/regex.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <microhttpd.h>

static void usage(FILE *f)
{
	fprintf(f,
"usage: glass-aggd [options]\n"
"  --listen ADDR:PORT      listen address (default 127.0.0.1:7470; port 0 = any free)\n"
"  --store URI             sqlite:PATH (default sqlite:glass-agg.db)\n"
"  --tokens FILE           bearer tokens, one per line (reloaded on SIGHUP)\n"
"  --no-auth               accept ingest without a token (tests, loopback only)\n"
"  --ui DIR                static files (default: the installed dashboards,\n"
"                          PREFIX/share/glassfs/dashboards/web beside the\n"
"                          program; from a build tree, its dashboards/web)\n"
"  --threads N             HTTP thread pool size (default 4)\n"
"  --retain DUR            drop windows older than DUR (e.g. 7d; 0 = keep)\n"
"  --downsample-after DUR  merge windows older than DUR into coarser ones (default 1d; 0 = off)\n"
"  --downsample-step DUR   size of a coarse window (default 5m)\n"
"  --downsample2-after DUR second tier: merge windows older than DUR again (default 7d; 0 = off)\n"
"  --downsample2-step DUR  size of a second-tier window (default 1h)\n"
"  --retention-every DUR   how often retention runs (default 10m)\n"
"  --max-body BYTES        request body limit on the wire (default 16M)\n"
"  --max-decoded BYTES     limit after gunzip (default 64M)\n"
"  --max-depth N           frames per stack (default 1024)\n"
"  --max-frame-len N       bytes per frame (default 1024)\n"
"  --max-labels N          labels per request (default 32)\n"
"  --max-stacks N          distinct stacks per profile (default 200000)\n"
"  --max-regex-len N       bytes per regular expression (default 1024)\n"
"  --max-regex-mem BYTES   RE2 memory per compiled expression (default 1M)\n"
"  --max-query-samples N   rows one query may scan (default 50M)\n"
"  --max-query-time DUR    time one query may take (default 30s)\n"
"  --port-file FILE        write the bound port here once listening\n"
"  --test-crash-at POINT   tests only: die by SIGKILL at a store crash point\n"
"  --config FILE           read \"key = value\" lines (keys = flag names)\n");
}

static int parse_dur(const char *s, int64_t *out)
{
	char *e;
	long long v = strtoll(s, &e, 10);
	int64_t m = 1;

	if (e == s || v < 0)
		return -EINVAL;
	if (!*e || !strcmp(e, "s")) m = 1;
	else if (!strcmp(e, "m")) m = 60;
	else if (!strcmp(e, "h")) m = 3600;
	else if (!strcmp(e, "d")) m = 86400;
	else if (!strcmp(e, "w")) m = 7 * 86400;
	else return -EINVAL;
	*out = v * m;
	return 0;
}

static int parse_size(const char *s, size_t *out)
{
	char *e;
	unsigned long long v = strtoull(s, &e, 10);

	if (e == s)
		return -EINVAL;
	if (*e == 'k' || *e == 'K') { v <<= 10; e++; }
	else if (*e == 'M') { v <<= 20; e++; }
	else if (*e == 'G') { v <<= 30; e++; }
	if (*e || !v)
		return -EINVAL;
	*out = v;
	return 0;
}

struct opts {
	struct aggd_config *c;
	char *port_file, *config;
	char *crash_at;		/* --test-crash-at (store_test_crash_at) */
};

/* The one configuration parser: flags and config-file lines both land here. */
static int config_set(struct opts *o, const char *k, const char *v)
{
	struct aggd_config *c = o->c;
	char **sp = NULL;
	size_t *zp = NULL;
	int64_t *dp = NULL;

	if (!strcmp(k, "listen")) sp = &c->listen;
	else if (!strcmp(k, "store")) sp = &c->store;
	else if (!strcmp(k, "tokens")) sp = &c->tokens;
	else if (!strcmp(k, "ui")) sp = &c->ui;
	else if (!strcmp(k, "port-file")) sp = &o->port_file;
	else if (!strcmp(k, "test-crash-at")) sp = &o->crash_at;
	else if (!strcmp(k, "no-auth")) {
		c->no_auth = !v || !*v || !strcmp(v, "1") || !strcmp(v, "true") || !strcmp(v, "yes");
		return 0;
	} else if (!strcmp(k, "threads")) {
		int n = atoi(v ? v : "");

		if (n < 1 || n > 256)
			return -EINVAL;
		c->threads = n;
		return 0;
	} else if (!strcmp(k, "retain")) dp = &c->retain_s;
	else if (!strcmp(k, "downsample-after")) dp = &c->coarse_after_s;
	else if (!strcmp(k, "downsample-step")) dp = &c->coarse_bucket_s;
	else if (!strcmp(k, "downsample2-after")) dp = &c->coarse2_after_s;
	else if (!strcmp(k, "downsample2-step")) dp = &c->coarse2_bucket_s;
	else if (!strcmp(k, "retention-every")) dp = &c->retention_every_s;
	else if (!strcmp(k, "max-body")) zp = &c->lim.max_body;
	else if (!strcmp(k, "max-decoded")) zp = &c->lim.max_decoded;
	else if (!strcmp(k, "max-depth")) zp = &c->lim.max_depth;
	else if (!strcmp(k, "max-frame-len")) zp = &c->lim.max_frame_len;
	else if (!strcmp(k, "max-labels")) zp = &c->lim.max_labels;
	else if (!strcmp(k, "max-stacks")) zp = &c->lim.max_stacks;
	else if (!strcmp(k, "max-regex-len")) zp = &c->lim.max_regex_len;
	else if (!strcmp(k, "max-regex-mem") || !strcmp(k, "max-query-samples")) {
		size_t z;
		int rc = v ? parse_size(v, &z) : -EINVAL;

		if (rc || z > (size_t)INT64_MAX)
			return -EINVAL;
		if (!strcmp(k, "max-regex-mem"))
			c->lim.max_regex_mem = (int64_t)z;
		else
			c->max_query_rows = z;
		return 0;
	} else if (!strcmp(k, "max-query-time")) {
		int64_t sec;

		if (!v || parse_dur(v, &sec) || !sec || sec > 86400)
			return -EINVAL;
		c->max_query_ns = sec * 1000000000LL;
		return 0;
	} else
		return -ENOENT;
	if (!v)
		return -EINVAL;
	if (sp) {
		free(*sp);
		return (*sp = strdup(v)) ? 0 : -ENOMEM;
	}
	if (zp)
		return parse_size(v, zp);
	return parse_dur(v, dp);
}

static int config_file(struct opts *o, const char *path)
{
	FILE *f = fopen(path, "r");
	char line[4096];
	int ln = 0;

	if (!f) {
		fprintf(stderr, "glass-aggd: %s: %s\n", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		char *k = line, *v, *e;
		int rc;

		ln++;
		if ((e = strchr(line, '#')))
			*e = 0;
		while (isspace((unsigned char)*k))
			k++;
		e = k + strlen(k);
		while (e > k && isspace((unsigned char)e[-1]))
			*--e = 0;
		if (!*k)
			continue;
		v = strchr(k, '=');
		if (v) {
			*v++ = 0;
			while (isspace((unsigned char)*v))
				v++;
			for (e = k + strlen(k); e > k && isspace((unsigned char)e[-1]);)
				*--e = 0;
		}
		if (!strcmp(k, "config")) {
			fprintf(stderr, "glass-aggd: %s:%d: config files do not nest\n", path, ln);
			fclose(f);
			return -1;
		}
		if ((rc = config_set(o, k, v))) {
			fprintf(stderr, "glass-aggd: %s:%d: %s%s%s\n", path, ln,
				rc == -ENOENT ? "unknown key " : "bad value for ", k,
				rc == -ENOENT ? "" : (v ? "" : " (missing '= value')"));
			fclose(f);
			return -1;
		}
	}
	fclose(f);
	return 0;
}

static const struct option longopts[] = {
	{ "listen", 1, 0, 0 }, { "store", 1, 0, 0 }, { "tokens", 1, 0, 0 }, { "ui", 1, 0, 0 },
	{ "no-auth", 0, 0, 0 }, { "threads", 1, 0, 0 }, { "retain", 1, 0, 0 },
	{ "downsample-after", 1, 0, 0 }, { "downsample-step", 1, 0, 0 },
	{ "downsample2-after", 1, 0, 0 }, { "downsample2-step", 1, 0, 0 },
	{ "retention-every", 1, 0, 0 }, { "max-body", 1, 0, 0 }, { "max-decoded", 1, 0, 0 },
	{ "max-depth", 1, 0, 0 }, { "max-frame-len", 1, 0, 0 }, { "max-labels", 1, 0, 0 },
	{ "max-stacks", 1, 0, 0 }, { "max-regex-len", 1, 0, 0 }, { "max-regex-mem", 1, 0, 0 },
	{ "max-query-samples", 1, 0, 0 }, { "max-query-time", 1, 0, 0 }, { "port-file", 1, 0, 0 }, { "config", 1, 0, 0 },
	{ "test-crash-at", 1, 0, 0 },
	{ "help", 0, 0, 'h' }, { 0, 0, 0, 0 },
};

/* Pass 1 finds --config; pass 2 applies every flag (so flags win). */
static int parse_args(struct opts *o, int argc, char **argv, int pass)
{
	int idx, ch;

	optind = 1;
	opterr = pass == 2;
	while ((ch = getopt_long(argc, argv, "h", longopts, &idx)) != -1) {
		if (ch == 'h') {
			usage(stdout);
			exit(0);
		}
		if (ch != 0) {
			if (pass == 2) {
				usage(stderr);
				return -1;
			}
			continue;
		}
		const char *k = longopts[idx].name;

		if (!strcmp(k, "config")) {
			if (pass == 1 && config_file(o, optarg))
				return -1;
			continue;
		}
		if (pass == 2 && config_set(o, k, optarg)) {
			fprintf(stderr, "glass-aggd: --%s: bad value \"%s\"\n", k, optarg ? optarg : "");
			return -1;
		}
	}
	if (pass == 2 && optind < argc) {
		fprintf(stderr, "glass-aggd: unexpected argument \"%s\"\n", argv[optind]);
		return -1;
	}
	return 0;
}

/* ---- main ------------------------------------------------------------------- */

static void run_retention(struct aggd *d)
{
	int64_t now = agg_now_ns();
	int64_t drop = d->cfg.retain_s ? now - d->cfg.retain_s * 1000000000LL : 0;
	struct store_tier t[2] = {
		{ d->cfg.coarse_after_s ? now - d->cfg.coarse_after_s * 1000000000LL : 0, d->cfg.coarse_bucket_s },
		{ d->cfg.coarse2_after_s ? now - d->cfg.coarse2_after_s * 1000000000LL : 0, d->cfg.coarse2_bucket_s },
	};

	/* Called even with nothing to drop or fold: an engine finishes here
	 * what a crashed pass left (ClickHouse's journal). */
	d->store->ops->retain(d->store, drop, t, 2);
}

/* Does dir hold the web UI? */
static int ui_present(const char *dir)
{
	char p[4200];

	snprintf(p, sizeof(p), "%s/index.html", dir ? dir : "");
	return dir && access(p, R_OK) == 0;
}

/* The dashboards beside the program: installed (BIN/../share/glassfs/
 * dashboards/web), or in the build tree it runs from (OUT/bin/../../
 * dashboards/web); else dashboards/web of the working directory. */
static char *default_ui(void)
{
	static const char *const rel[] = { "../share/glassfs/dashboards/web",
					   "../../dashboards/web" };
	char exe[4096], p[4200], *slash;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n > 0) {
		exe[n] = 0;
		if ((slash = strrchr(exe, '/')))
			*slash = 0;
		for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
			snprintf(p, sizeof(p), "%s/%s", exe, rel[i]);
			if (ui_present(p))
				return strdup(p);
		}
	}
	return strdup("dashboards/web");
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "--version")) {
		printf("glass-aggd %s\n", GLASSFS_VERSION);
		return 0;
	}
	struct aggd d = { 0 };
	struct opts o = { .c = &d.cfg };
	struct MHD_Daemon *md;
	char msg[512];
	sigset_t set;
	int rc = 1;

	d.cfg.listen = strdup("127.0.0.1:7470");
	d.cfg.store = strdup("sqlite:glass-agg.db");
	d.cfg.ui = NULL;	/* default_ui() after the flags and the config file */
	d.cfg.threads = 4;
	d.cfg.coarse_after_s = 86400;
	d.cfg.coarse_bucket_s = 300;
	d.cfg.coarse2_after_s = 7 * 86400;
	d.cfg.coarse2_bucket_s = 3600;
	d.cfg.retention_every_s = 600;
	d.cfg.lim = (struct agg_limits){
		.max_body = 16 << 20, .max_decoded = 64 << 20, .max_depth = 1024,
		.max_frame_len = 1024, .max_labels = 32, .max_stacks = 200000,
		.max_profiles = PT_NTYPES, .max_regex_len = AGG_RE_MAX_LEN_DEFAULT,
		.max_regex_mem = AGG_RE_MAX_MEM_DEFAULT,
	};
	d.cfg.max_query_rows = 50000000;
	d.cfg.max_query_ns = 30 * 1000000000LL;
	if (parse_args(&o, argc, argv, 1) || parse_args(&o, argc, argv, 2))
		return 2;
	if (!d.cfg.tokens && !d.cfg.no_auth) {
		fprintf(stderr, "glass-aggd: --tokens FILE is required (or --no-auth for tests)\n");
		return 2;
	}
	if (!d.cfg.ui)
		d.cfg.ui = default_ui();
	if (!ui_present(d.cfg.ui))
		fprintf(stderr, "glass-aggd: no dashboards in %s (no index.html): the web UI "
			"answers 404, the API works; --ui DIR names them\n", d.cfg.ui ? d.cfg.ui : "?");
	if (d.cfg.coarse_after_s && d.cfg.retain_s && d.cfg.coarse_after_s >= d.cfg.retain_s)
		d.cfg.coarse_after_s = 0;	/* nothing would live long enough to coarsen */
	if (d.cfg.coarse2_after_s && d.cfg.retain_s && d.cfg.coarse2_after_s >= d.cfg.retain_s)
		d.cfg.coarse2_after_s = 0;
	if (d.cfg.coarse2_after_s && d.cfg.coarse_after_s && d.cfg.coarse2_after_s <= d.cfg.coarse_after_s) {
		fprintf(stderr, "glass-aggd: --downsample2-after must be longer than --downsample-after\n");
		return 2;
	}
	if (d.cfg.coarse2_after_s && d.cfg.coarse_after_s && d.cfg.coarse2_bucket_s <= d.cfg.coarse_bucket_s) {
		fprintf(stderr, "glass-aggd: --downsample2-step must be longer than --downsample-step\n");
		return 2;
	}
	pthread_rwlock_init(&d.tok_lock, NULL);
	pthread_mutex_init(&d.fm.lock, NULL);
	if (aggd_tokens_load(&d, msg, sizeof(msg))) {
		fprintf(stderr, "glass-aggd: tokens: %s\n", msg);
		return 1;
	}
	store_test_crash_at(o.crash_at);
	if (store_open(d.cfg.store, &d.store, msg, sizeof(msg))) {
		fprintf(stderr, "glass-aggd: %s\n", msg);
		return 1;
	}
	d.m.start_ns = agg_now_ns();
	/* Signals are taken synchronously by this thread only. */
	sigemptyset(&set);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (!(md = http_start(&d, msg, sizeof(msg)))) {
		fprintf(stderr, "glass-aggd: %s\n", msg);
		goto out;
	}
	const union MHD_DaemonInfo *di = MHD_get_daemon_info(md, MHD_DAEMON_INFO_BIND_PORT);
	unsigned port = di ? di->port : 0;
	fprintf(stderr, "glass-aggd: listening on port %u, store %s (%s)\n", port, d.cfg.store,
		d.store->ops->name);
	if (o.port_file) {
		char tmp[4096];
		FILE *pf;

		snprintf(tmp, sizeof(tmp), "%s.tmp", o.port_file);
		if (!(pf = fopen(tmp, "w")) || fprintf(pf, "%u\n", port) < 0 || fclose(pf) ||
		    rename(tmp, o.port_file)) {
			fprintf(stderr, "glass-aggd: --port-file %s: %s\n", o.port_file, strerror(errno));
			MHD_stop_daemon(md);
			goto out;
		}
	}
	run_retention(&d);
	for (;;) {
		struct timespec ts = { .tv_sec = d.cfg.retention_every_s > 0 ? d.cfg.retention_every_s : 600 };
		int sig = sigtimedwait(&set, NULL, &ts);

		if (sig == SIGHUP) {
			if (aggd_tokens_load(&d, msg, sizeof(msg)))
				fprintf(stderr, "glass-aggd: SIGHUP: tokens not reloaded: %s\n", msg);
			else
				fprintf(stderr, "glass-aggd: SIGHUP: %zu tokens loaded\n", d.ntokens);
		} else if (sig == SIGTERM || sig == SIGINT)
			break;
		else if (sig < 0 && errno == EAGAIN)
			run_retention(&d);
	}
	fprintf(stderr, "glass-aggd: shutting down\n");
	MHD_stop_daemon(md);
	rc = 0;
out:
	d.store->ops->close(d.store);
	fleetm_free(&d.fm);
	for (size_t i = 0; i < d.ntokens; i++)
		free(d.tokens[i]);
	free(d.tokens);
	free(d.cfg.listen);
	free(d.cfg.store);
	free(d.cfg.tokens);
	free(d.cfg.ui);
	free(o.port_file);
	free(o.crash_at);
	return rc;
}
