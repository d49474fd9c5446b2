/*
 * agg_load.c — load generator for tests/bench/aggregator.bench.
 *
 *   agg_load gen DB HOSTS WINDOWS STACKS   write a fleet straight through the
 *        SQLite store (HOSTS x WINDOWS 10 s windows ending now, STACKS
 *        stacks each from a pool); prints "gen windows=N stacks=N secs=S".
 *   agg_load chgen clickhouse://HOST:PORT/DB HOSTS WINDOWS STACKS   the same
 *        fleet into a ClickHouse store (tables created by the engine, rows
 *        in big TSV INSERTs with the engine's ids); prints "chgen ...".
 *   agg_load ingest URL TOKEN AGENTS WINDOWS STACKS   AGENTS threads, each
 *        POSTing WINDOWS gzip'ed agent-format windows of STACKS stacks
 *        over one keep-alive connection; prints
 *        "ingest windows=N stacks=N secs=S errors=N".
 */
#include "aggregator/store.h"
#include "aggregator/hmap.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <curl/curl.h>
#include <zlib.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Stack i of a pool: depth 8-20, B-tree/commit/io flavoured frames. */
static void pool_stack(char *buf, size_t len, unsigned i)
{
	static const char *const f[] = { "fuse_loop", "glassfs_write", "txn_join", "btree_search",
		"btree_lock_root", "btree_lock_node", "node_read", "dev_pread", "commit_phase",
		"alloc_extent", "free_space_find", "schedule", "io_schedule", "futex_wait" };
	unsigned s = i * 2654435761u + 12345, depth = 8 + i % 13;
	size_t n = snprintf(buf, len, "main;worker");

	for (unsigned d = 0; d < depth && n < len; d++) {
		s = s * 1103515245u + 12345;
		n += snprintf(buf + n, len - n, ";%s", f[(s >> 16) % 14]);
	}
	snprintf(buf + n, len - n, ";leaf_%u", i);
}

/* Window W of host H of the generated fleet (ending at END ns). */
static void gen_window(struct agg_window *win, char *id, size_t idlen, char *host, size_t hostlen,
		       int h, int w, int windows, int stacks, int64_t end)
{
	char stk[512];

	memset(win, 0, sizeof(*win));
	snprintf(id, idlen, "gen-%d-%d", h, w);
	snprintf(host, hostlen, "host%04d", h);
	win->window_id = id;
	win->host = host;
	win->start_ns = end - (int64_t)(windows - w) * 10000000000LL;
	win->end_ns = win->start_ns + 10000000000LL;
	win->commit_p99_ns = 1000000 + h;
	win->commit_count = 10;
	win->trim_stall_ns = 0;
	agg_labels_set(&win->labels, "host", host);
	agg_labels_set(&win->labels, "rack", h % 10 ? "r1" : "r2");
	win->prof[0].type = PT_OFFCPU;
	win->prof[0].set = folded_set_new();
	win->nprof = 1;
	for (int s = 0; s < stacks; s++) {
		pool_stack(stk, sizeof(stk), (unsigned)((h * 7 + s * 13 + w) % 500));
		folded_set_add(win->prof[0].set, stk, strlen(stk), 1000 + s * 10 + h % 17);
	}
}

/* ---- chgen: the same fleet into a ClickHouse store, in big TSV batches ---- */

struct chbuf { char *p; size_t n, cap; const char *url; int err; };

static size_t ch_sink(char *p, size_t sz, size_t n, void *arg)
{
	(void)p;
	(void)arg;
	return sz * n;
}

static void ch_flush(struct chbuf *b, const char *head)
{
	CURL *c;
	long code = 0;

	if (b->n <= strlen(head))
		return;
	c = curl_easy_init();
	curl_easy_setopt(c, CURLOPT_URL, b->url);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, b->p);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)b->n);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, ch_sink);
	if (curl_easy_perform(c) != CURLE_OK ||
	    (curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code), code != 200))
		b->err = 1;
	curl_easy_cleanup(c);
	b->n = 0;
	b->p[0] = 0;
}

static void ch_add(struct chbuf *b, const char *head, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void ch_add(struct chbuf *b, const char *head, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->n + 4096 > b->cap) {
		if (b->n > (32u << 20))
			ch_flush(b, head);
		if (b->n + 4096 > b->cap) {
			b->cap = b->cap ? b->cap * 2 : (1u << 20);
			b->p = realloc(b->p, b->cap);
		}
	}
	if (!b->n)
		b->n = (size_t)sprintf(b->p, "%s", head);
	va_start(ap, fmt);
	n = vsnprintf(b->p + b->n, b->cap - b->n, fmt, ap);
	va_end(ap);
	b->n += n;
}

static int chgen(const char *uri, int hosts, int windows, int stacks)
{
	/* column lists: the engine's tables have more (pass, default 0) */
	static const char *const H_SM = "INSERT INTO samples (type, ls, t, win, stack, count) FORMAT TabSeparated\n",
		*H_W = "INSERT INTO windows (id, wkey, host, ls, start_ns, end_ns, recv_ns, commit_p99_ns,"
		       " commit_count, trim_stall_ns, lock_wait_ns, tot0, tot1, tot2, tot3, units) FORMAT TabSeparated\n",
		*H_ST = "INSERT INTO stacks FORMAT TabSeparated\n",
		*H_LS = "INSERT INTO labelsets FORMAT TabSeparated\n";
	struct store *st;
	char msg[256], url[512], id[64], host[32];
	int64_t end = (int64_t)time(NULL) * 1000000000LL;
	double t0 = now_s();
	long nst = 0;
	const char *p = uri + strlen("clickhouse://"), *slash = strchr(p, '/');
	struct chbuf sm = { 0 }, wb = { 0 }, sb = { 0 }, lb = { 0 };
	struct hmap seen = { 0 };

	/* glass-aggd's engine creates the database and the tables */
	if (!slash || store_clickhouse_open(uri, &st, msg, sizeof(msg))) {
		fprintf(stderr, "agg_load: %s\n", slash ? msg : "want clickhouse://HOST:PORT/DB");
		return 1;
	}
	st->ops->close(st);
	snprintf(url, sizeof(url), "http://%.*s/?database=%s", (int)(slash - p), p, slash + 1);
	sm.url = wb.url = sb.url = lb.url = url;
	for (int h = 0; h < hosts; h++) {
		struct agg_window win;
		char *canon;

		gen_window(&win, id, sizeof(id), host, sizeof(host), h, 0, windows, stacks, end);
		canon = agg_labels_canon(&win.labels);
		ch_add(&lb, H_LS, "%llu\t%s\t%s\n", (unsigned long long)folded_hash(canon, strlen(canon)),
		       canon, host);	/* canonical JSON of plain labels: no TSV escapes needed */
		free(canon);
		win.window_id = win.host = NULL;
		agg_window_free(&win);
	}
	ch_flush(&lb, H_LS);
	for (int w = 0; w < windows; w++)
		for (int h = 0; h < hosts; h++) {
			struct agg_window win;
			uint64_t ls, wid, tot = 0;
			char *canon;

			gen_window(&win, id, sizeof(id), host, sizeof(host), h, w, windows, stacks, end);
			canon = agg_labels_canon(&win.labels);
			ls = folded_hash(canon, strlen(canon));
			free(canon);
			wid = folded_hash(id, strlen(id));
			for (size_t i = 0; i < folded_set_size(win.prof[0].set); i++) {
				const struct folded_stack *fs = folded_set_get(win.prof[0].set, i);
				ch_add(&sm, H_SM, "0\t%llu\t%lld\t%llu\t%llu\t%llu\n", (unsigned long long)ls,
				       (long long)win.start_ns, (unsigned long long)wid,
				       (unsigned long long)fs->hash, (unsigned long long)fs->count);
				tot += fs->count;
			}
			for (size_t i = 0; i < folded_set_size(win.prof[0].set); i++) {
				const struct folded_stack *fs = folded_set_get(win.prof[0].set, i);
				uint64_t *v = hmap_slot(&seen, fs->hash | 1);

				/* each distinct stack once (the pool has 500) */
				if (v && !*v) {
					*v = 1;
					ch_add(&sb, H_ST, "%llu\t%s\n", (unsigned long long)fs->hash, fs->stack);
				}
			}
			nst += folded_set_size(win.prof[0].set);
			ch_add(&wb, H_W, "%llu\t%s\t%s\t%llu\t%lld\t%lld\t%lld\t%lld\t10\t0\t-1\t%llu\t0\t0\t0\t0\n",
			       (unsigned long long)wid, id, host, (unsigned long long)ls,
			       (long long)win.start_ns, (long long)win.end_ns, (long long)end,
			       (long long)win.commit_p99_ns, (unsigned long long)tot);
			win.window_id = win.host = NULL;
			agg_window_free(&win);
		}
	ch_flush(&sb, H_ST);
	ch_flush(&sm, H_SM);
	ch_flush(&wb, H_W);
	free(sm.p); free(wb.p); free(sb.p); free(lb.p);
	hmap_free(&seen);
	if (sm.err || wb.err || sb.err || lb.err) {
		fprintf(stderr, "agg_load: a ClickHouse INSERT failed\n");
		return 1;
	}
	printf("chgen windows=%d stacks=%ld secs=%.3f\n", hosts * windows, nst, now_s() - t0);
	return 0;
}

static int gen(const char *db, int hosts, int windows, int stacks)
{
	struct store *st;
	char msg[256];
	int64_t end = (int64_t)time(NULL) * 1000000000LL;
	double t0 = now_s();
	long nst = 0;

	if (store_sqlite_open(db, &st, msg, sizeof(msg))) {
		fprintf(stderr, "agg_load: %s\n", msg);
		return 1;
	}
	for (int w = 0; w < windows; w++)
		for (int h = 0; h < hosts; h++) {
			struct agg_window win;
			char id[64], host[32];
			int dup;

			gen_window(&win, id, sizeof(id), host, sizeof(host), h, w, windows, stacks, end);
			nst += folded_set_size(win.prof[0].set);
			if (st->ops->put(st, &win, &dup)) {
				fprintf(stderr, "agg_load: put failed\n");
				return 1;
			}
			win.window_id = win.host = NULL;
			agg_window_free(&win);
		}
	st->ops->close(st);
	printf("gen windows=%d stacks=%ld secs=%.3f\n", hosts * windows, nst, now_s() - t0);
	return 0;
}

struct agent_arg {
	const char *url, *token;
	int id, windows, stacks, errors;
};

static size_t sink(char *p, size_t s, size_t n, void *a)
{
	(void)p; (void)a;
	return s * n;
}

static void *agent(void *arg)
{
	struct agent_arg *a = arg;
	CURL *c = curl_easy_init();
	struct curl_slist *h = NULL;
	char auth[512], url[512], stk[512];
	size_t cap = (size_t)a->stacks * 300 + 4096;
	char *json = malloc(cap);
	unsigned char *gz = malloc(compressBound(cap));
	int64_t end = (int64_t)time(NULL) * 1000000000LL;

	snprintf(auth, sizeof(auth), "Authorization: Bearer %s", a->token);
	snprintf(url, sizeof(url), "%s/api/v1/ingest", a->url);
	h = curl_slist_append(h, auth);
	h = curl_slist_append(h, "Content-Encoding: gzip");
	h = curl_slist_append(h, "Content-Type: application/json");
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	for (int w = 0; w < a->windows; w++) {
		size_t n = snprintf(json, cap, "{\"window_id\":\"load-%d-%d-%ld\",\"host\":\"load%03d\","
				    "\"start_ns\":%lld,\"end_ns\":%lld,\"labels\":{\"bench\":\"1\"},"
				    "\"profiles\":[{\"type\":\"offcpu\",\"units\":\"ns\",\"folded\":\"",
				    a->id, w, (long)end, a->id,
				    (long long)(end - (int64_t)(a->windows - w) * 10000000000LL),
				    (long long)(end - (int64_t)(a->windows - w - 1) * 10000000000LL));
		for (int s = 0; s < a->stacks; s++) {
			pool_stack(stk, sizeof(stk), (unsigned)((a->id * 31 + s * 7 + w) % 2000));
			n += snprintf(json + n, cap - n, "%s %d\\n", stk, 100 + s);
		}
		n += snprintf(json + n, cap - n, "\"}]}");
		uLongf gl = compressBound(cap);
		z_stream zs = { 0 };

		deflateInit2(&zs, 1, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY);
		zs.next_in = (Bytef *)json;
		zs.avail_in = n;
		zs.next_out = gz;
		zs.avail_out = gl;
		deflate(&zs, Z_FINISH);
		gl -= zs.avail_out;
		deflateEnd(&zs);
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, gz);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)gl);
		long code = 0;
		if (curl_easy_perform(c) == CURLE_OK)
			curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
		if (code != 200)
			a->errors++;
	}
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	free(json);
	free(gz);
	return NULL;
}

static int ingest(const char *url, const char *token, int agents, int windows, int stacks)
{
	pthread_t th[256];
	struct agent_arg args[256];
	double t0;
	int errors = 0;

	if (agents > 256)
		agents = 256;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	t0 = now_s();
	for (int i = 0; i < agents; i++) {
		args[i] = (struct agent_arg){ url, token, i, windows, stacks, 0 };
		pthread_create(&th[i], NULL, agent, &args[i]);
	}
	for (int i = 0; i < agents; i++) {
		pthread_join(th[i], NULL);
		errors += args[i].errors;
	}
	printf("ingest windows=%d stacks=%ld secs=%.3f errors=%d\n", agents * windows,
	       (long)agents * windows * stacks, now_s() - t0, errors);
	curl_global_cleanup();
	return errors ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc == 6 && !strcmp(argv[1], "gen"))
		return gen(argv[2], atoi(argv[3]), atoi(argv[4]), atoi(argv[5]));
	if (argc == 6 && !strcmp(argv[1], "chgen"))
		return chgen(argv[2], atoi(argv[3]), atoi(argv[4]), atoi(argv[5]));
	if (argc == 7 && !strcmp(argv[1], "ingest"))
		return ingest(argv[2], argv[3], atoi(argv[4]), atoi(argv[5]), atoi(argv[6]));
	fprintf(stderr, "usage: agg_load gen DB HOSTS WINDOWS STACKS | chgen clickhouse://H:P/DB HOSTS WINDOWS STACKS | ingest URL TOKEN AGENTS WINDOWS STACKS\n");
	return 2;
}
