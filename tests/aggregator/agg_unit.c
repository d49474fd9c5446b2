/*
 * agg_unit.c — unit tests of glass-aggd's pieces under ASan/UBSan:
 * selectors and time syntax, agent-format and Pyroscope validation, gzip,
 * and merge/top/diff/outliers arithmetic through a real SQLite store
 * (query_dispatch with random windows, checked against sums computed
 * here).  SEED=n replays a run.
 */
#include "aggregator/aggd.h"
#include "aggregator/profile.pb-c.h"

#include <errno.h>
#include <stdio.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <jansson.h>
#include <zlib.h>

static int fails;
#define CHECK(name, cond) do { \
	if (cond) printf("PASS: %s\n", name); \
	else { printf("FAIL: %s: %s:%d: %s\n", name, __FILE__, __LINE__, #cond); fails++; } \
} while (0)

static const struct agg_limits lim = {
	.max_body = 1 << 20, .max_decoded = 1 << 20, .max_depth = 8, .max_frame_len = 32,
	.max_labels = 4, .max_stacks = 1000, .max_profiles = 4,
};

static void test_selectors(void)
{
	struct selector s;
	struct agg_labels l = { 0 };
	char msg[200];
	int64_t t;

	CHECK("selector parses", !sel_parse("offcpu{host=\"h1\", rack!=\"r2\",dc=~\"eu-.*\",env!~\"te(st|mp)\"}", &s, msg, sizeof(msg)));
	CHECK("selector metric", s.metric && !strcmp(s.metric, "offcpu"));
	CHECK("selector 4 matchers", s.n == 4 && s.m[1].op == SEL_NE && s.m[2].op == SEL_RE && s.m[3].op == SEL_NRE);
	agg_labels_set(&l, "host", "h1");
	agg_labels_set(&l, "dc", "eu-west");
	agg_labels_set(&l, "env", "prod");
	CHECK("selector matches", sel_match(&s, &l));
	agg_labels_set(&l, "env", "test");
	CHECK("selector !~ excludes", !sel_match(&s, &l));
	agg_labels_set(&l, "env", "prod");
	agg_labels_set(&l, "dc", "xeu-west");
	CHECK("regex is anchored", !sel_match(&s, &l));
	sel_free(&s);
	CHECK("missing label matches empty", !sel_parse("{absent=\"\"}", &s, msg, sizeof(msg)) && sel_match(&s, &l));
	sel_free(&s);
	CHECK("escapes in values", !sel_parse("{k=\"a\\\"b\\\\\"}", &s, msg, sizeof(msg)) && !strcmp(s.m[0].value, "a\"b\\"));
	sel_free(&s);
	CHECK("bare values (Pyroscope names)", !sel_parse("app.cpu{env=prod,region=eu}", &s, msg, sizeof(msg)) &&
	      s.n == 2 && !strcmp(s.m[1].value, "eu") && !strcmp(s.metric, "app.cpu"));
	sel_free(&s);
	CHECK("empty selector", !sel_parse("", &s, msg, sizeof(msg)) && !s.metric && !s.n);
	sel_free(&s);
	CHECK("unterminated brace refused", sel_parse("offcpu{host=\"h\"", &s, msg, sizeof(msg)) == -EINVAL);
	CHECK("unterminated quote refused", sel_parse("{host=\"h}", &s, msg, sizeof(msg)) == -EINVAL && strstr(msg, "unterminated"));
	CHECK("bad regex refused", sel_parse("{h=~\"(\"}", &s, msg, sizeof(msg)) == -EINVAL && strstr(msg, "regular expression"));
	{	/* issue 16: RE2, bounded in length and memory, the limit named */
		struct agg_limits rl = { .max_regex_len = 64, .max_regex_mem = 64 << 10 };
		char longre[200];

		snprintf(longre, sizeof(longre), "{h=~\"%0100d\"}", 0);
		CHECK("regex longer than the bound refused", sel_parse_lim(longre, &rl, &s, msg, sizeof(msg)) == -EINVAL &&
		      strstr(msg, "--max-regex-len"));
		CHECK("regex over the memory budget (default 1 MiB) refused",
		      sel_parse_lim("{h=~\"\\\\pL{1000}\"}", NULL, &s, msg, sizeof(msg)) == -EINVAL &&
		      strstr(msg, "--max-regex-mem"));
		CHECK("nested counted repetition refused, not expanded",
		      sel_parse("{h=~\"(((a{1,100}){1,100}){1,100}){1,100}\"}", &s, msg, sizeof(msg)) == -EINVAL);
		CHECK("catastrophic backtracking pattern compiles", !sel_parse("{h=~\"(a+)+$\"}", &s, msg, sizeof(msg)));
		struct agg_labels al = { 0 };
		char text[4096];

		memset(text, 'a', sizeof(text) - 2);
		text[sizeof(text) - 2] = 'b';
		text[sizeof(text) - 1] = 0;
		agg_labels_set(&al, "h", text);
		CHECK("(a+)+$ against a^4094 b: no match, linear time", !sel_match(&s, &al));
		agg_labels_free(&al);
		sel_free(&s);
	}
	CHECK("bad operator refused", sel_parse("{h>\"1\"}", &s, msg, sizeof(msg)) == -EINVAL);
	CHECK("trailing junk refused", sel_parse("offcpu{} x", &s, msg, sizeof(msg)) == -EINVAL);
	agg_labels_free(&l);

	int64_t now = 1700000000LL * 1000000000LL;
	CHECK("time now", !sel_time("now", now, &t) && t == now);
	CHECK("time now-1h", !sel_time("now-1h", now, &t) && t == now - 3600LL * 1000000000LL);
	CHECK("time now+5m", !sel_time("now+5m", now, &t) && t == now + 300LL * 1000000000LL);
	CHECK("time unix s", !sel_time("1700000000", now, &t) && t == now);
	CHECK("time unix ms", !sel_time("1700000000123", now, &t) && t == now + 123000000);
	CHECK("time unix ns", !sel_time("1700000000000000001", now, &t) && t == now + 1);
	CHECK("time junk refused", sel_time("yesterday", now, &t) && sel_time("now-1y", now, &t) &&
	      sel_time("", now, &t) && sel_time("99999999999999999999999", now, &t));
}

static void test_ingest(void)
{
	struct agg_window w;
	char msg[512];
	const char *ok = "{\"window_id\":\"h-u-1\",\"host\":\"h\",\"start_ns\":10,\"end_ns\":20,"
		"\"labels\":{\"a\":\"1\"},\"profiles\":[{\"type\":\"offcpu\",\"folded\":\"x;y 1000000000000000000\\n\"}],"
		"\"summaries\":{\"commit_p99_ns\":1000000000000000000,\"lock_wait_ns\":{\"root\":5}}}";

	CHECK("agent json ok", !ingest_agent_json(ok, strlen(ok), &lim, &w, msg, sizeof(msg)));
	CHECK("count at the bound exact", w.nprof == 1 && folded_set_get(w.prof[0].set, 0)->count == AGG_MAX_COUNT);
	CHECK("summary at the bound exact", w.commit_p99_ns == (int64_t)AGG_MAX_COUNT && w.nlocks == 1 && w.locks[0].ns == 5);
	CHECK("host label added", !strcmp(agg_labels_get(&w.labels, "host"), "h"));
	char *canon = agg_labels_canon(&w.labels);
	CHECK("canonical labels sorted", canon && !strcmp(canon, "{\"a\":\"1\",\"host\":\"h\"}"));
	free(canon);
	agg_window_free(&w);

	static const struct { const char *body, *want; } bad[] = {
		{ "{", "malformed JSON" },
		{ "[]", "JSON object" },
		{ "{\"host\":\"h\",\"start_ns\":1,\"end_ns\":2}", "window_id: missing" },
		{ "{\"window_id\":\"a b\",\"host\":\"h\",\"start_ns\":1,\"end_ns\":2}", "window_id" },
		{ "{\"window_id\":\"a\",\"host\":\"h\",\"start_ns\":3,\"end_ns\":2,\"profiles\":[]}", "before start_ns" },
		{ "{\"window_id\":\"a\",\"host\":\"h\",\"start_ns\":-1,\"end_ns\":2}", "start_ns" },
		{ "{\"window_id\":\"a\",\"host\":\"h\",\"start_ns\":1,\"end_ns\":2,\"x\":1}", "unknown key" },
		{ "{\"window_id\":\"a\",\"host\":\"h\",\"start_ns\":1,\"end_ns\":2,\"profiles\":[{\"type\":\"cpu\",\"folded\":\"a 1\"}]}", "profiles[0].type" },
		{ "{\"window_id\":\"a\",\"host\":\"h\",\"start_ns\":1,\"end_ns\":2,\"profiles\":[{\"type\":\"offcpu\",\"folded\":\"a;b;c;d;e;f;g;h;i 1\"}]}", "line 1" },
		{ "{\"window_id\":\"a\",\"host\":\"h\",\"start_ns\":1,\"end_ns\":2,\"profiles\":[{\"type\":\"offcpu\",\"folded\":\"a 1\\nxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx 1\"}]}", "line 2" },
		{ "{\"window_id\":\"a\",\"host\":\"h\",\"start_ns\":1,\"end_ns\":2,\"profiles\":[{\"type\":\"offcpu\",\"folded\":\"\"}]}", "profiles[0] (offcpu)" },
		{ "{\"window_id\":\"a\",\"host\":\"h\",\"start_ns\":1,\"end_ns\":2,\"labels\":{\"a\":\"1\",\"b\":\"1\",\"c\":\"1\",\"d\":\"1\",\"e\":\"1\"},\"summaries\":{}}", "labels" },
		{ "{\"window_id\":\"a\",\"host\":\"h\",\"start_ns\":1,\"end_ns\":2,\"labels\":{\"host\":\"other\"},\"summaries\":{}}", "labels.host" },
		{ "{\"window_id\":\"a\",\"host\":\"h\",\"start_ns\":1,\"end_ns\":2,\"summaries\":{\"commit_p99_ns\":1.5}}", "commit_p99_ns" },
		{ "{\"window_id\":\"a\",\"host\":\"h\",\"start_ns\":1,\"end_ns\":2}", "neither" },
		{ "{\"window_id\":\"a\",\"window_id\":\"b\",\"host\":\"h\",\"start_ns\":1,\"end_ns\":2}", "malformed JSON" },
		/* issue 16: counts above AGG_MAX_COUNT, one or summed, are refused */
		{ "{\"window_id\":\"a\",\"host\":\"h\",\"start_ns\":1,\"end_ns\":2,\"profiles\":[{\"type\":\"offcpu\",\"folded\":\"a 9223372036854775808\"}]}", "over the bound" },
		{ "{\"window_id\":\"a\",\"host\":\"h\",\"start_ns\":1,\"end_ns\":2,\"profiles\":[{\"type\":\"offcpu\",\"folded\":\"a 900000000000000000\\nb 900000000000000000\"}]}", "sum to" },
		{ "{\"window_id\":\"a\",\"host\":\"h\",\"start_ns\":1,\"end_ns\":2,\"summaries\":{\"trim_stall_ns\":9223372036854775807}}", "trim_stall_ns" },
		/* a frame that is not UTF-8: JSON itself refuses it (jansson checks) */
		{ "{\"window_id\":\"a\",\"host\":\"h\",\"start_ns\":1,\"end_ns\":2,\"profiles\":[{\"type\":\"offcpu\",\"folded\":\"a 1\\nb;\xff 1\"}]}", "malformed JSON" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char name[96];
		int rc = ingest_agent_json(bad[i].body, strlen(bad[i].body), &lim, &w, msg, sizeof(msg));

		snprintf(name, sizeof(name), "agent json refused #%zu (%s)", i, bad[i].want);
		CHECK(name, rc == -EINVAL && strstr(msg, bad[i].want));
		if (rc != -EINVAL || !strstr(msg, bad[i].want))
			printf("  got rc=%d msg=%s\n", rc, msg);
	}

	struct pyro_params p = { .name = "svc.offcpu{env=prod,host=ph}", .from = "1700000000",
				 .until = "1700000010", .format = "folded" };
	const char *body = "a;b 3\na;c 4\n";
	CHECK("pyroscope ok", !ingest_pyroscope(&p, body, strlen(body), &lim, &w, msg, sizeof(msg)));
	CHECK("pyroscope type from name", w.nprof == 1 && w.prof[0].type == PT_OFFCPU);
	CHECK("pyroscope labels", !strcmp(agg_labels_get(&w.labels, "service_name"), "svc") &&
	      !strcmp(w.host, "ph") && w.start_ns == 1700000000LL * 1000000000LL);
	char id1[64];
	snprintf(id1, sizeof(id1), "%s", w.window_id);
	agg_window_free(&w);
	CHECK("pyroscope id stable", !ingest_pyroscope(&p, body, strlen(body), &lim, &w, msg, sizeof(msg)) &&
	      !strcmp(id1, w.window_id));
	agg_window_free(&w);
	p.format = "pprof";
	CHECK("pyroscope other format refused", ingest_pyroscope(&p, body, strlen(body), &lim, &w, msg, sizeof(msg)) == -EINVAL);
	p.format = "folded";
	{	/* issue 16: the count of labels is said before it is freed */
		char nm[600];
		size_t o = (size_t)snprintf(nm, sizeof(nm), "svc{");

		for (int i = 0; i < 40; i++)
			o += (size_t)snprintf(nm + o, sizeof(nm) - o, "k%d=v,", i);
		nm[o - 1] = '}';
		p.name = nm;
		CHECK("pyroscope: 40 labels said as 40", ingest_pyroscope(&p, body, strlen(body), &lim, &w, msg, sizeof(msg)) == -EINVAL &&
		      strstr(msg, "40 labels"));
		p.name = "svc{k=\"\xff\xfe\"}";
		CHECK("pyroscope: label not UTF-8 named", ingest_pyroscope(&p, body, strlen(body), &lim, &w, msg, sizeof(msg)) == -EINVAL &&
		      strstr(msg, "label k") && strstr(msg, "UTF-8"));
		p.name = "svc.offcpu{}";
		const char *bad8 = "a;\xc3\x28 1\n";
		CHECK("pyroscope: frame not UTF-8 named", ingest_pyroscope(&p, bad8, strlen(bad8), &lim, &w, msg, sizeof(msg)) == -EINVAL &&
		      strstr(msg, "line 1") && strstr(msg, "UTF-8"));
	}
	p.format = NULL;
	p.name = "{x=1}";
	CHECK("pyroscope name needs app", ingest_pyroscope(&p, body, strlen(body), &lim, &w, msg, sizeof(msg)) == -EINVAL);

	/* gzip: round trip, truncated, bomb */
	unsigned char gz[256];
	z_stream zs = { 0 };
	const char *text = "hello hello hello hello";
	char *out;
	size_t outlen;

	deflateInit2(&zs, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY);
	zs.next_in = (Bytef *)text;
	zs.avail_in = strlen(text);
	zs.next_out = gz;
	zs.avail_out = sizeof(gz);
	deflate(&zs, Z_FINISH);
	size_t gzlen = sizeof(gz) - zs.avail_out;
	deflateEnd(&zs);
	CHECK("gunzip round trip", !ingest_gunzip(gz, gzlen, 100, &out, &outlen, msg, sizeof(msg)) &&
	      outlen == strlen(text) && !memcmp(out, text, outlen));
	free(out);
	CHECK("gunzip truncated", ingest_gunzip(gz, gzlen - 5, 100, &out, &outlen, msg, sizeof(msg)) == -EINVAL &&
	      strstr(msg, "truncated"));
	CHECK("gunzip over max", ingest_gunzip(gz, gzlen, 10, &out, &outlen, msg, sizeof(msg)) == -E2BIG);
	CHECK("gunzip garbage", ingest_gunzip("notgzip", 7, 100, &out, &outlen, msg, sizeof(msg)) == -EINVAL);
}

/* ---- multipart/form-data (Pyroscope SDKs) ---------------------------------- */

/* A multipart body as Go's mime/multipart writes it: parts "name:data"
 * separated by ',' in SPEC (data "@" = the pprof buffer), boundary B. */
static size_t mp_body(char *out, size_t cap, const char *b, const char *spec,
		      const unsigned char *pb, size_t pblen, int close)
{
	char tmp[512], *save = NULL, *tok;
	size_t n = 0;

	snprintf(tmp, sizeof(tmp), "%s", spec);
	n += snprintf(out + n, cap - n, "preamble to ignore\r\n");
	for (tok = strtok_r(tmp, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *colon = strchr(tok, ':');

		*colon = 0;
		n += snprintf(out + n, cap - n, "--%s\r\nContent-Disposition: form-data; name=\"%s\"; "
			      "filename=\"%s.pprof\"\r\nContent-Type: application/octet-stream\r\n\r\n",
			      b, tok, tok);
		if (!strcmp(colon + 1, "@")) {
			memcpy(out + n, pb, pblen);
			n += pblen;
		} else
			n += snprintf(out + n, cap - n, "%s", colon + 1);
		n += snprintf(out + n, cap - n, "\r\n");
	}
	if (close)
		n += snprintf(out + n, cap - n, "--%s--\r\n", b);
	return n;
}

static void test_multipart(const unsigned char *pb, size_t pblen)
{
	static char body[8192];
	char msg[256], ct[128], *id1 = NULL;
	struct agg_window w;
	struct pyro_params pp = { .name = "svc.offcpu{host=mp}", .from = "1700000000",
				  .until = "1700000010", .content_type = ct };
	size_t n;
	int rc;

	snprintf(ct, sizeof(ct), "multipart/form-data; boundary=abc123XYZ");
	n = mp_body(body, sizeof(body), "abc123XYZ", "profile:@,sample_type_config:{\"cpu\":{\"units\":\"samples\"}},prev_profile:", pb, pblen, 1);
	rc = ingest_pyroscope(&pp, body, n, &lim, &w, msg, sizeof(msg));
	CHECK("multipart: profile part ingested as pprof", !rc && w.nprof == 1 &&
	      folded_set_total(w.prof[0].set) == 600 && w.prof[0].type == PT_OFFCPU);
	if (!rc) {
		id1 = strdup(w.window_id);
		agg_window_free(&w);
	} else
		printf("  %s\n", msg);
	/* the same profile under another (quoted) boundary: the same window id */
	snprintf(ct, sizeof(ct), "multipart/form-data; charset=x; boundary=\"other-b\"");
	n = mp_body(body, sizeof(body), "other-b", "profile:@", pb, pblen, 1);
	rc = ingest_pyroscope(&pp, body, n, &lim, &w, msg, sizeof(msg));
	CHECK("multipart: quoted boundary; retry with a new boundary = same window id",
	      !rc && id1 && !strcmp(id1, w.window_id));
	if (!rc)
		agg_window_free(&w);
	free(id1);
	struct { const char *what, *ct, *b, *spec, *format, *want; int close; } bad[] = {
		{ "no boundary", "multipart/form-data", "b1", "profile:@", NULL, "boundary", 1 },
		{ "not closed", "multipart/form-data; boundary=b1", "b1", "profile:@", NULL, "not closed", 0 },
		{ "no profile part", "multipart/form-data; boundary=b1", "b1", "sample_type_config:{}", NULL, "no \"profile\"", 1 },
		{ "unknown part", "multipart/form-data; boundary=b1", "b1", "profile:@,junk:1", NULL, "unknown part", 1 },
		{ "part twice", "multipart/form-data; boundary=b1", "b1", "profile:@,profile:@", NULL, "twice", 1 },
		{ "cumulative", "multipart/form-data; boundary=b1", "b1", "profile:@,prev_profile:@", NULL, "cumulative", 1 },
		{ "bad config", "multipart/form-data; boundary=b1", "b1", "profile:@,sample_type_config:[1]", NULL, "JSON object", 1 },
		{ "empty profile", "multipart/form-data; boundary=b1", "b1", "profile:", NULL, "empty", 1 },
		{ "format=folded", "multipart/form-data; boundary=b1", "b1", "profile:@", "folded", "carries pprof", 1 },
		{ "wrong boundary", "multipart/form-data; boundary=zz", "b1", "profile:@", NULL, "delimiter", 1 },
		{ "garbage profile", "multipart/form-data; boundary=b1", "b1", "profile:notpprof", NULL, "pprof", 1 },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char name[96];

		snprintf(ct, sizeof(ct), "%s", bad[i].ct);
		pp.format = bad[i].format;
		n = mp_body(body, sizeof(body), bad[i].b, bad[i].spec, pb, pblen, bad[i].close);
		rc = ingest_pyroscope(&pp, body, n, &lim, &w, msg, sizeof(msg));
		snprintf(name, sizeof(name), "multipart refused: %s", bad[i].what);
		CHECK(name, rc == -EINVAL && strstr(msg, bad[i].want));
		if (!rc)
			agg_window_free(&w);
		else if (rc != -EINVAL || !strstr(msg, bad[i].want))
			printf("  got %d: %s\n", rc, msg);
	}
	/* every prefix of a valid body is refused, never crashes */
	snprintf(ct, sizeof(ct), "multipart/form-data; boundary=b1");
	pp.format = NULL;
	n = mp_body(body, sizeof(body), "b1", "profile:@", pb, pblen, 1);
	int prefixes_ok = 1;
	for (size_t k = 0; k + 4 < n; k++) {	/* up to the close delimiter's "--" */
		rc = ingest_pyroscope(&pp, body, k, &lim, &w, msg, sizeof(msg));
		if (!rc)
			agg_window_free(&w);
		prefixes_ok &= rc == -EINVAL;
	}
	CHECK("multipart: every truncation refused", prefixes_ok);
}

/* ---- pprof -------------------------------------------------------------------- */

static void test_pprof(void)
{
	/* strings: 0 "", 1 samples, 2 count, 3 cpu, 4 nanoseconds, 5 main, 6 work, 7 inl, 8 sleep */
	char *strs[] = { "", "samples", "count", "cpu", "nanoseconds", "main", "work", "inl", "sleep" };
	Perftools__Profiles__Profile p = PERFTOOLS__PROFILES__PROFILE__INIT;
	Perftools__Profiles__ValueType vt[2] = { PERFTOOLS__PROFILES__VALUE_TYPE__INIT,
						 PERFTOOLS__PROFILES__VALUE_TYPE__INIT };
	Perftools__Profiles__ValueType *vtp[2] = { &vt[0], &vt[1] };
	Perftools__Profiles__Function fn[4];
	Perftools__Profiles__Function *fnp[4];
	Perftools__Profiles__Line ln[4], *lnp[4];
	Perftools__Profiles__Location loc[3], *locp[3];
	Perftools__Profiles__Sample smp[3], *smpp[3];
	uint64_t ids0[] = { 2, 1 }, ids1[] = { 3, 1 }, ids2[] = { 2, 1 };
	int64_t v0[] = { 5, 500 }, v1[] = { 1, 70 }, v2[] = { 2, 30 };
	struct agg_window w;
	char msg[256];

	vt[0].type = 1; vt[0].unit = 2;
	vt[1].type = 3; vt[1].unit = 4;
	for (int i = 0; i < 4; i++) {
		perftools__profiles__function__init(&fn[i]);
		fn[i].id = i + 1;
		fn[i].name = 5 + i;	/* main, work, inl, sleep */
		fnp[i] = &fn[i];
		perftools__profiles__line__init(&ln[i]);
		ln[i].function_id = i + 1;
		lnp[i] = &ln[i];
	}
	for (int i = 0; i < 3; i++) {
		perftools__profiles__location__init(&loc[i]);
		loc[i].id = i + 1;
		locp[i] = &loc[i];
	}
	Perftools__Profiles__Line *l2[] = { &ln[2], &ln[1] };	/* inl inlined into work */
	loc[0].n_line = 1; loc[0].line = &lnp[0];		/* main */
	loc[1].n_line = 2; loc[1].line = l2;			/* work <- inl */
	loc[2].n_line = 1; loc[2].line = &lnp[3];		/* sleep */
	uint64_t *ids[] = { ids0, ids1, ids2 };
	int64_t *vals[] = { v0, v1, v2 };
	for (int i = 0; i < 3; i++) {
		perftools__profiles__sample__init(&smp[i]);
		smp[i].n_location_id = 2; smp[i].location_id = ids[i];
		smp[i].n_value = 2; smp[i].value = vals[i];
		smpp[i] = &smp[i];
	}
	p.n_sample_type = 2; p.sample_type = vtp;
	p.n_sample = 3; p.sample = smpp;
	p.n_location = 3; p.location = locp;
	p.n_function = 4; p.function = fnp;
	p.n_string_table = 9; p.string_table = strs;
	size_t len = perftools__profiles__profile__get_packed_size(&p);
	unsigned char *buf = malloc(len);
	perftools__profiles__profile__pack(&p, buf);

	struct pyro_params pp = { .name = "svc.offcpu{host=pp}", .from = "1700000000",
				  .until = "1700000010", .format = "pprof" };
	int rc = ingest_pyroscope(&pp, (char *)buf, len, &lim, &w, msg, sizeof(msg));
	CHECK("pprof ingest", !rc);
	if (!rc) {
		const struct folded_stack *a = folded_set_find(w.prof[0].set, "main;work;inl", 13);
		const struct folded_stack *b = folded_set_find(w.prof[0].set, "main;sleep", 10);

		CHECK("pprof: nanoseconds column, inlined frames, stacks summed",
		      a && a->count == 530 && b && b->count == 70 && folded_set_size(w.prof[0].set) == 2);
		agg_window_free(&w);
	} else
		printf("  %s\n", msg);
	pp.sample_type = "samples";
	rc = ingest_pyroscope(&pp, (char *)buf, len, &lim, &w, msg, sizeof(msg));
	CHECK("pprof: sampleType picks the column", !rc && folded_set_total(w.prof[0].set) == 8);
	if (!rc)
		agg_window_free(&w);
	pp.sample_type = "bogus";
	CHECK("pprof: unknown sampleType refused",
	      ingest_pyroscope(&pp, (char *)buf, len, &lim, &w, msg, sizeof(msg)) == -EINVAL && strstr(msg, "bogus"));
	pp.sample_type = NULL;
	CHECK("pprof: garbage refused",
	      ingest_pyroscope(&pp, "\xff\xff\xff", 3, &lim, &w, msg, sizeof(msg)) == -EINVAL && strstr(msg, "pprof"));
	test_multipart(buf, len);
	free(buf);
}

/* ---- merge/diff arithmetic through a real store ------------------------------- */

struct kv { const char *k, *v; };
static const char *getp(void *ctx, const char *k)
{
	for (struct kv *p = ctx; p->k; p++)
		if (!strcmp(p->k, k))
			return p->v;
	return NULL;
}

static json_t *run(struct aggd *d, const char *path, struct kv *params, int *status)
{
	struct qresult r;
	json_t *j;

	if (query_dispatch(d, path, getp, params, &r))
		return NULL;
	*status = r.status;
	j = json_loadb(r.body, r.len, 0, NULL);
	free(r.body);
	return j;
}

/* issue 16: one bucket whose sums pass INT64_MAX must not stop SQLite's
 * downsampling (sum() raised "integer overflow" on every pass): it
 * saturates, and merge says so. */
static void test_sat_downsample(void)
{
	char path[] = "/tmp/agg_unit.XXXXXX", msg[256];
	int fd = mkstemp(path), st;
	struct aggd d = { 0 };

	close(fd);
	CHECK("store opens (saturation)", !store_sqlite_open(path, &d.store, msg, sizeof(msg)));
	if (!d.store)
		return;
	for (int w = 0; w < 11; w++) {
		struct agg_window win = { 0 };
		char id[32];
		int dup;

		snprintf(id, sizeof(id), "sat-%d", w);
		win.window_id = strdup(id);
		win.host = strdup("s");
		win.start_ns = (1000 + w * 10) * 1000000000LL;
		win.end_ns = win.start_ns + 10000000000LL;
		win.commit_p99_ns = win.commit_count = -1;
		win.trim_stall_ns = (int64_t)AGG_MAX_COUNT;
		win.has_summary = 1;
		agg_labels_set(&win.labels, "host", "s");
		win.prof[0].type = PT_OFFCPU;
		win.prof[0].set = folded_set_new();
		win.nprof = 1;
		folded_set_add(win.prof[0].set, "a;b", 3, 900000000000000000ULL);
		CHECK("saturating window stored", !d.store->ops->put(d.store, &win, &dup) && !dup);
		agg_window_free(&win);
	}
	CHECK("downsampling a bucket past INT64_MAX runs",
	      !d.store->ops->retain(d.store, 0, &(struct store_tier){ 3000LL * 1000000000LL, 300 }, 1));
	struct kv all[] = { { "query", "offcpu{}" }, { "from", "0" }, { "until", "3000" }, { 0 } };
	json_t *j = run(&d, "/api/v1/merge", all, &st);
	CHECK("downsampled bucket saturates at INT64_MAX, flagged", j && st == 200 &&
	      json_integer_value(json_object_get(j, "total")) == INT64_MAX &&
	      json_is_true(json_object_get(j, "saturated")));
	json_decref(j);
	struct kv hs[] = { { "from", "0" }, { "until", "3000" }, { 0 } };
	j = run(&d, "/api/v1/hosts", hs, &st);
	CHECK("one coarse window, trim stall saturated", j && json_array_size(j) == 1 &&
	      json_integer_value(json_object_get(json_array_get(j, 0), "windows")) == 1 &&
	      json_integer_value(json_object_get(json_array_get(j, 0), "trim_stall_ns")) == INT64_MAX);
	json_decref(j);
	d.store->ops->close(d.store);
	unlink(path);
	char wal[64];
	snprintf(wal, sizeof(wal), "%s-wal", path);
	unlink(wal);
	snprintf(wal, sizeof(wal), "%s-shm", path);
	unlink(wal);
}

#define NH 5
#define NW 6
#define NS 7

static void test_arith(unsigned seed)
{
	char path[] = "/tmp/agg_unit.XXXXXX", msg[256];
	int fd = mkstemp(path), st;
	struct aggd d = { 0 };
	uint64_t want[NH][NS] = { { 0 } }, host_total[NH] = { 0 };
	char stacks[NS][64];

	close(fd);
	CHECK("store opens", !store_sqlite_open(path, &d.store, msg, sizeof(msg)));
	if (!d.store)
		return;
	srand(seed);
	for (int s = 0; s < NS; s++)
		snprintf(stacks[s], sizeof(stacks[s]), "main;%s;f%d", s % 2 ? "btree_lock" : "io", s);
	for (int h = 0; h < NH; h++)
		for (int w = 0; w < NW; w++) {
			struct agg_window win = { 0 };
			char id[32], host[8];
			int dup;

			snprintf(id, sizeof(id), "h%d-%d", h, w);
			snprintf(host, sizeof(host), "h%d", h);
			win.window_id = strdup(id);
			win.host = strdup(host);
			win.start_ns = (1000 + w * 10) * 1000000000LL;
			win.end_ns = win.start_ns + 10000000000LL;
			win.commit_p99_ns = win.commit_count = win.trim_stall_ns = -1;
			agg_labels_set(&win.labels, "host", host);
			agg_labels_set(&win.labels, "grp", h % 2 ? "odd" : "even");
			win.prof[0].type = PT_OFFCPU;
			win.prof[0].set = folded_set_new();
			win.nprof = 1;
			for (int s = 0; s < NS; s++) {
				uint64_t c = (uint64_t)(rand() % 1000) + (h == 3 && s % 2 ? 5000 : 0);

				if (!c)
					continue;
				folded_set_add(win.prof[0].set, stacks[s], strlen(stacks[s]), c);
				want[h][s] += c;
				host_total[h] += c;
			}
			if (d.store->ops->put(d.store, &win, &dup) || dup)
				fails++, printf("FAIL: put %s\n", id);
			agg_window_free(&win);
		}

	/* merge over everything and over one group */
	struct kv all[] = { { "query", "offcpu{}" }, { "from", "1000" }, { "until", "2000" }, { 0 } };
	json_t *j = run(&d, "/api/v1/merge", all, &st);
	uint64_t total = 0, odd = 0;
	for (int h = 0; h < NH; h++) {
		total += host_total[h];
		if (h % 2)
			odd += host_total[h];
	}
	CHECK("merge total = sum of all windows", j && st == 200 &&
	      (uint64_t)json_integer_value(json_object_get(j, "total")) == total);
	int per_stack_ok = 1;
	size_t i;
	json_t *e;
	json_array_foreach(json_object_get(j, "stacks"), i, e) {
		const char *sname = json_string_value(json_object_get(e, "stack"));
		uint64_t sum = 0;

		for (int s = 0; s < NS; s++)
			if (!strcmp(sname, stacks[s]))
				for (int h = 0; h < NH; h++)
					sum += want[h][s];
		per_stack_ok &= sum == (uint64_t)json_integer_value(json_object_get(e, "count"));
	}
	CHECK("merge per-stack sums", per_stack_ok && json_array_size(json_object_get(j, "stacks")) == NS);
	json_decref(j);
	struct kv grp[] = { { "query", "offcpu{grp=\"odd\"}" }, { "from", "1000" }, { "until", "2000" }, { 0 } };
	j = run(&d, "/api/v1/merge", grp, &st);
	CHECK("merge by label", j && (uint64_t)json_integer_value(json_object_get(j, "total")) == odd);
	json_decref(j);
	struct kv win2[] = { { "query", "offcpu{}" }, { "from", "1000" }, { "until", "1020" }, { 0 } };
	j = run(&d, "/api/v1/merge", win2, &st);
	CHECK("merge time range is [from, until)", j && json_integer_value(json_object_get(j, "total")) > 0 &&
	      (uint64_t)json_integer_value(json_object_get(j, "total")) < total);
	json_decref(j);

	/* diff: h0 vs h3, shares and deltas */
	struct kv df[] = { { "left", "offcpu{host=\"h0\"}" }, { "right", "offcpu{host=\"h3\"}" },
			   { "from", "1000" }, { "until", "2000" }, { 0 } };
	j = run(&d, "/api/v1/diff", df, &st);
	int diff_ok = j && st == 200 &&
		(uint64_t)json_integer_value(json_object_get(j, "left_total")) == host_total[0] &&
		(uint64_t)json_integer_value(json_object_get(j, "right_total")) == host_total[3];
	double prev = 1e9;
	json_array_foreach(json_object_get(j, "stacks"), i, e) {
		const char *sname = json_string_value(json_object_get(e, "stack"));
		int s;

		for (s = 0; s < NS && strcmp(sname, stacks[s]); s++)
			;
		double l = (double)want[0][s] / host_total[0], r = (double)want[3][s] / host_total[3];
		double delta = json_real_value(json_object_get(e, "delta"));

		diff_ok &= (uint64_t)json_integer_value(json_object_get(e, "left")) == want[0][s];
		diff_ok &= (uint64_t)json_integer_value(json_object_get(e, "right")) == want[3][s];
		diff_ok &= delta > r - l - 1e-9 && delta < r - l + 1e-9;
		diff_ok &= delta * delta <= prev + 1e-12;	/* sorted by |delta| desc */
		prev = delta * delta;
	}
	CHECK("diff counts, shares, deltas, order", diff_ok);
	json_decref(j);

	/* outliers: h3 has much more btree_lock */
	struct kv ol[] = { { "query", "offcpu{}" }, { "pattern", "btree_lock" }, { "threshold", "1.5" }, { "from", "1000" },
			   { "until", "2000" }, { 0 } };
	j = run(&d, "/api/v1/outliers", ol, &st);
	if (getenv("V")) { char *x = json_dumps(j, 0); printf("%s\n", x); free(x); }
	json_t *hs = json_object_get(j, "hosts");
	int nout = 0;
	json_array_foreach(hs, i, e)
		nout += json_is_true(json_object_get(e, "outlier"));
	uint64_t m3 = 0;
	for (int s = 1; s < NS; s += 2)
		m3 += want[3][s];
	json_t *h0 = json_array_get(hs, 0);
	CHECK("outliers: h3 first and only outlier", h0 && !strcmp(json_string_value(json_object_get(h0, "host")), "h3") &&
	      nout == 1 && (uint64_t)json_integer_value(json_object_get(h0, "matched")) == m3);
	json_decref(j);
	/* min_share: a share must also exceed the median by that much */
	struct kv ol2[] = { { "query", "offcpu{}" }, { "pattern", "btree_lock" }, { "threshold", "1.5" },
			    { "min_share", "0.99" }, { "from", "1000" }, { "until", "2000" }, { 0 } };
	j = run(&d, "/api/v1/outliers", ol2, &st);
	nout = 0;
	json_array_foreach(json_object_get(j, "hosts"), i, e)
		nout += json_is_true(json_object_get(e, "outlier"));
	CHECK("outliers: min_share=0.99 flags nobody", st == 200 && nout == 0 &&
	      json_array_size(json_object_get(j, "hosts")) == NH);
	json_decref(j);
	struct kv ol3[] = { { "query", "offcpu{}" }, { "pattern", "btree_lock" }, { "min_share", "2" }, { 0 } };
	j = run(&d, "/api/v1/outliers", ol3, &st);
	CHECK("outliers: min_share=2 is a 400", st == 400);
	json_decref(j);

	/* top: self of leaf frames equals the per-stack sums */
	struct kv tp[] = { { "query", "offcpu{}" }, { "by", "total" }, { "n", "3" }, { "from", "1000" },
			   { "until", "2000" }, { 0 } };
	j = run(&d, "/api/v1/top", tp, &st);
	json_t *f0 = json_array_get(json_object_get(j, "frames"), 0);
	CHECK("top by total: root frame = total", f0 && !strcmp(json_string_value(json_object_get(f0, "frame")), "main") &&
	      (uint64_t)json_integer_value(json_object_get(f0, "total")) == total &&
	      json_array_size(json_object_get(j, "frames")) == 3);
	json_decref(j);

	/* errors */
	struct kv bad[] = { { "query", "offcpu{" }, { 0 } };
	j = run(&d, "/api/v1/merge", bad, &st);
	CHECK("bad selector is 400", j && st == 400);
	json_decref(j);
	struct qresult r;
	CHECK("unknown endpoint", query_dispatch(&d, "/api/v1/nope", getp, bad, &r) == -ENOENT);

	/* issue 16: the query budget, rows and time, each named when it cuts */
	struct kv budq[] = { { "query", "offcpu{}" }, { "from", "0" }, { "until", "3000" }, { 0 } };
	struct qresult qr;
	d.cfg.max_query_rows = 5;
	CHECK("query over --max-query-samples: 422 naming it", !query_dispatch(&d, "/api/v1/merge", getp, budq, &qr) &&
	      qr.status == 422 && qr.body && strstr(qr.body, "--max-query-samples"));
	free(qr.body);
	d.cfg.max_query_rows = 0;
	d.cfg.max_query_ns = 1;
	CHECK("query over --max-query-time: 503 naming it", !query_dispatch(&d, "/api/v1/merge", getp, budq, &qr) &&
	      qr.status == 503 && qr.body && strstr(qr.body, "--max-query-time"));
	free(qr.body);
	d.cfg.max_query_ns = 0;

	/* downsampling keeps the sums */
	CHECK("retain/downsample runs", !d.store->ops->retain(d.store, 0, &(struct store_tier){ 3000LL * 1000000000LL, 300 }, 1));
	/* coarse windows start at their bucket (900 s here): widen the range */
	struct kv wide[] = { { "query", "offcpu{}" }, { "from", "0" }, { "until", "3000" }, { 0 } };
	j = run(&d, "/api/v1/merge", wide, &st);
	CHECK("downsampled merge total unchanged", j &&
	      (uint64_t)json_integer_value(json_object_get(j, "total")) == total);
	json_decref(j);
	/* the second tier folds the 5-minute windows again into 15-minute ones */
	struct store_tier two[2] = { { 3000LL * 1000000000LL, 300 }, { 3000LL * 1000000000LL, 900 } };
	CHECK("retain/second tier runs", !d.store->ops->retain(d.store, 0, two, 2));
	j = run(&d, "/api/v1/merge", wide, &st);
	CHECK("second tier: merge total unchanged", j &&
	      (uint64_t)json_integer_value(json_object_get(j, "total")) == total);
	json_decref(j);
	{
		sqlite3 *db;
		sqlite3_stmt *q;
		long long lv = -1, nw = -1;

		if (sqlite3_open(path, &db) == SQLITE_OK &&
		    sqlite3_prepare_v2(db, "SELECT min(coarse), count(*) FROM windows", -1, &q, NULL) == SQLITE_OK) {
			if (sqlite3_step(q) == SQLITE_ROW) {
				lv = sqlite3_column_int64(q, 0);
				nw = sqlite3_column_int64(q, 1);
			}
			sqlite3_finalize(q);
		}
		sqlite3_close(db);
		CHECK("second tier: every window at level 2", lv == 2 && nw > 0);
	}
	CHECK("retain drop", !d.store->ops->retain(d.store, 3000LL * 1000000000LL, NULL, 0));
	j = run(&d, "/api/v1/merge", wide, &st);
	CHECK("dropped windows are gone", j && json_integer_value(json_object_get(j, "total")) == 0);
	json_decref(j);
	d.store->ops->close(d.store);
	unlink(path);
	char wal[64];
	snprintf(wal, sizeof(wal), "%s-wal", path);
	unlink(wal);
	snprintf(wal, sizeof(wal), "%s-shm", path);
	unlink(wal);
}

/* The lock detail (aggregator/locks.c): parsed whole, frames root first and
 * sanitised; any bad row refuses the window (ASan checks the partial
 * parses free what they took). */
static void test_locks(void)
{
	struct agg_limits lim = { .max_depth = 4, .max_frame_len = 16, .max_labels = 4, .max_stacks = 10,
				  .max_profiles = 4 };
	struct agg_window w;
	char msg[512];
	const char *ok = "{\"window_id\":\"l1\",\"host\":\"h\",\"start_ns\":10,\"end_ns\":20,\"locks\":{"
		"\"mode\":\"contended\",\"classes\":[{\"class\":\"root\",\"level\":2,\"mode\":\"write\",\"acquired\":9,\"contended\":3,\"acquired_counted\":true,"
		"\"wait_ns\":9223372036854775807,\"wait_max_ns\":5,\"hold_ns\":1,\"holds\":9,\"hold_max_ns\":1},"
		"{\"class\":\"txn\",\"mode\":\"read\",\"acquired\":1,\"contended\":0,\"wait_ns\":0,\"wait_max_ns\":0,"
		"\"hold_ns\":0,\"holds\":1,\"hold_max_ns\":0}],"
		"\"instances\":[{\"addr\":\"0xffffffffffffffff\",\"class\":\"node\",\"tree\":5,\"level\":0,\"group\":3,"
		"\"acquired\":1,\"contended\":1,\"wait_ns\":7,\"wait_max_ns\":7}],"
		"\"stacks\":[{\"class\":\"root\",\"level\":2,\"wait_ns\":40,\"count\":2,\"frames\":[\"leaf\",\"mid;x\",\"main\"]}]}}";

	CHECK("locks ok", !ingest_agent_json(ok, strlen(ok), &lim, &w, msg, sizeof(msg)));
	if (!w.has_lk)
		printf("  msg=%s\n", msg);
	CHECK("locks: rows kept", w.has_lk && w.lk.ncls == 2 && w.lk.ninst == 1 && w.lk.nstk == 1);
	CHECK("locks: 64-bit wait exact, mode", w.lk.ncls == 2 && w.lk.cls[0].wait_ns == INT64_MAX && w.lk.cls[0].mode == 1 &&
	      w.lk.cls[1].mode == 0);
	CHECK("locks: level defaults to -1", w.lk.ncls == 2 && w.lk.cls[1].level == -1 && w.lk.cls[0].level == 2);
	CHECK("locks: 64-bit address, group", w.lk.ninst == 1 && w.lk.inst[0].addr == UINT64_MAX && w.lk.inst[0].group == 3);
	CHECK("locks: frames root first, ';' sanitised",
	      w.lk.nstk == 1 && !strcmp(w.lk.stk[0].fs.stack, "main;mid:x;leaf") &&
	      w.lk.stk[0].fs.hash == folded_hash("main;mid:x;leaf", 15) && w.lk.stk[0].fs.count == 40);
	agg_window_free(&w);

#define LW(x) "{\"window_id\":\"l\",\"host\":\"h\",\"start_ns\":1,\"end_ns\":2,\"locks\":" x "}"
#define STK(fr) LW("{\"stacks\":[{\"class\":\"root\",\"level\":1,\"wait_ns\":1,\"count\":1,\"frames\":" fr "}]}")
	static const struct { const char *body, *want; } bad[] = {
		{ LW("[]"), "locks: must be an object" },
		{ LW("{\"classes\":{}}"), "locks.classes: must be an array" },
		{ LW("{\"mode\":\"some\"}"), "locks.mode" },
		{ LW("{\"instances\":[{\"addr\":\"0x10\",\"class\":\"node\",\"tree\":1,\"acquired\":3,\"acquired_counted\":false,"
		     "\"contended\":1,\"wait_ns\":1,\"wait_max_ns\":1}]}"), "must be 0 when acquired_counted is false" },
		{ LW("{\"instances\":[{\"addr\":\"0x10\",\"class\":\"node\",\"tree\":1,\"acquired\":0,\"acquired_counted\":1,"
		     "\"contended\":1,\"wait_ns\":1,\"wait_max_ns\":1}]}"), "acquired_counted: must be true or false" },
		{ LW("{\"classes\":[{\"class\":\"root\",\"mode\":\"write\",\"acquired\":1,\"contended\":1,\"wait_ns\":1,"
		     "\"wait_max_ns\":1,\"hold_ns\":1,\"holds\":1}]}"), "hold_max_ns: missing" },
		{ LW("{\"classes\":[{\"class\":\"root\",\"mode\":\"write\",\"acquired\":1.5}]}"), "acquired: must be an integer" },
		{ LW("{\"classes\":[{\"class\":\"root\",\"level\":-2,\"mode\":\"write\"}]}"), "level: must be an integer in -1" },
		{ LW("{\"instances\":[{\"addr\":\"0x1ffffffffffffffff\",\"class\":\"node\",\"tree\":1,\"acquired\":1,"
		     "\"contended\":1,\"wait_ns\":1,\"wait_max_ns\":1}]}"), "addr" },
		{ LW("{\"instances\":[{\"addr\":\"0x10\",\"class\":\"9node\",\"tree\":1,\"acquired\":1,"
		     "\"contended\":1,\"wait_ns\":1,\"wait_max_ns\":1}]}"), "instances[0].class" },
		{ STK("[\"a\",\"b\",\"c\",\"d\",\"e\"]"), "5 frames, at most 4" },
		{ STK("[\"aaaaaaaaaaaaaaaaa\"]"), "frames[0]: longer than 16" },
		{ STK("[\"a\",\"\"]"), "frames[1]: must be a non-empty string" },
		{ STK("[]"), "frames: must be a non-empty array" },
		{ LW("{\"stacks\":[{\"class\":\"root\",\"wait_ns\":1,\"count\":1,\"frames\":[\"a\"],\"x\":1}]}"), "unknown key \"x\"" },
	};
#undef STK
#undef LW
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char name[96];
		int rc = ingest_agent_json(bad[i].body, strlen(bad[i].body), &lim, &w, msg, sizeof(msg));

		snprintf(name, sizeof(name), "locks refused #%zu (%s)", i, bad[i].want);
		CHECK(name, rc == -EINVAL && strstr(msg, bad[i].want));
		if (rc != -EINVAL || !strstr(msg, bad[i].want))
			printf("  got rc=%d msg=%s\n", rc, msg);
	}
}

int main(int argc, char **argv)
{
	const char *e = getenv("SEED");
	unsigned seed = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10)
		      : e ? (unsigned)strtoul(e, NULL, 10) : (unsigned)getpid();

	printf("seed: %u\n", seed);
	test_selectors();
	test_ingest();
	test_locks();
	test_pprof();
	test_arith(seed);
	test_sat_downsample();
	return fails ? 1 : 0;
}
