/*
 * agg_load.c — load generator for tests/bench/aggregator.bench.
 *
 *   agg_load gen DB HOSTS WINDOWS STACKS   write a fleet straight through the
 *        SQLite store (HOSTS x WINDOWS 10 s windows ending now, STACKS
 *        stacks each from a pool); prints "gen windows=N stacks=N secs=S".
 *   agg_load ingest URL TOKEN AGENTS WINDOWS STACKS   AGENTS threads, each
 *        POSTing WINDOWS gzip'ed agent-format windows of STACKS stacks
 *        over one keep-alive connection; prints
 *        "ingest windows=N stacks=N secs=S errors=N".
 */
#include "aggregator/store.h"

#include <pthread.h>
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

static int gen(const char *db, int hosts, int windows, int stacks)
{
	struct store *st;
	char msg[256], stk[512];
	int64_t end = (int64_t)time(NULL) * 1000000000LL;
	double t0 = now_s();
	long nst = 0;

	if (store_sqlite_open(db, &st, msg, sizeof(msg))) {
		fprintf(stderr, "agg_load: %s\n", msg);
		return 1;
	}
	for (int w = 0; w < windows; w++)
		for (int h = 0; h < hosts; h++) {
			struct agg_window win = { 0 };
			char id[64], host[32];
			int dup;

			snprintf(id, sizeof(id), "gen-%d-%d", h, w);
			snprintf(host, sizeof(host), "host%04d", h);
			win.window_id = id;
			win.host = host;
			win.start_ns = end - (int64_t)(windows - w) * 10000000000LL;
			win.end_ns = win.start_ns + 10000000000LL;
			win.commit_p99_ns = 1000000 + h;
			win.commit_count = 10;
			win.trim_stall_ns = 0;
			agg_labels_set(&win.labels, "host", host);
			agg_labels_set(&win.labels, "rack", h % 10 ? "r1" : "r2");
			win.prof[0].type = PT_OFFCPU;
			win.prof[0].set = folded_set_new();
			win.nprof = 1;
			for (int s = 0; s < stacks; s++) {
				pool_stack(stk, sizeof(stk), (unsigned)((h * 7 + s * 13 + w) % 500));
				folded_set_add(win.prof[0].set, stk, strlen(stk), 1000 + s * 10 + h % 17);
			}
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
	if (argc == 7 && !strcmp(argv[1], "ingest"))
		return ingest(argv[2], argv[3], atoi(argv[4]), atoi(argv[5]), atoi(argv[6]));
	fprintf(stderr, "usage: agg_load gen DB HOSTS WINDOWS STACKS | ingest URL TOKEN AGENTS WINDOWS STACKS\n");
	return 2;
}
