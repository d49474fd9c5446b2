/*
 * glass-report — one self-contained HTML file from a profiling run.
 *
 *   glass-report RUNDIR [-o report.html]
 *   glass-report RUNDIR --baseline EARLIER_RUNDIR      (adds a diff graph)
 *   glass-report [--offcpu F] [--wakeup F] [--lockstat F] [--commitlat F]
 *                [--trimstat F] [--meta F] [--title T] [-o report.html]
 *   glass-report --experiments DIR [--title T] [-o report.html]
 *                (every experiment of the talk on one page: see
 *                 "--experiments" below for DIR's contents)
 *
 * A run directory holds (every file optional, flags override):
 *
 *   meta.json       {"host": "...", "kernel": "...", "mount_options": "...",
 *                    "workload": "...", "duration_s": 60, ...any more keys}
 *                   optional "finding": the run's result in one sentence,
 *                   shown first, above everything else.
 *                   optional "offcpu_unit"/"wakeup_unit" (default "us") name
 *                   the unit of the folded counts.
 *   offcpu.folded   off-CPU stacks, folded (tools/lib/folded.h); an
 *                   empty file means no samples
 *   wakeup.folded   wakeup stacks, folded
 *   wall.folded     the wall-clock view (glass-profile --wall -f): each
 *                   stack under "[oncpu]", "[runqueue]" or "[offcpu]"
 *                   (the last two the off-CPU half); drawn with both
 *                   halves coloured, and tabled per thread group (FUSE
 *                   workers, commit thread, cleaner, ...); optional
 *                   "wall_unit" in meta.json (default "us")
 *   lockstat.json   glass-lockstat -j output as it is, or
 *                   {"unit": "ns", "locks": [{"name": "...",
 *                    "acquisitions": N, "contended": N, "wait_total": N,
 *                    "wait_max": N, "hist": [HIST...]}, ...]}
 *   commitlat.json  {"unit": "us", "series": [{"name": "commit",
 *   trimstat.json    "hist": [HIST...], "max": N}, ...]}   (or one top-level "hist",
 *                   or glass-commitlat -j / glass-trimstat -j output as it is)
 *
 *   HIST = {"lo": N, "hi": N, "count": N}: COUNT events with a value in
 *   [lo, hi] of the file's unit (log2 slots or any other buckets).  A
 *   percentile is the upper bound of its bucket, capped at the largest
 *   value seen ("max", "wait_max") when the input gives it; what was not
 *   measured (acquisitions without glass-lockstat -a, a series with no
 *   events) shows as "-".
 *
 * The HTML fetches nothing: flame graphs and charts are inline SVG, the
 * styles and the flame-graph script are embedded.  The output is a
 * well-formed XML document as well (tests parse it with xmllint) and is
 * deterministic: no clock is read.  Bad input is reported as FILE: where:
 * why (FILE:LINE:COL for JSON syntax) and exits 1; usage errors exit 2.
 */
#include "tools/lib/flamegraph.h"
#include "tools/lib/folded.h"
#include "tools/lib/outfile.h"
#include "tools/lib/svgchart.h"
#include "tools/lib/xmlesc.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *prog = "glass-report";

enum { IN_META, IN_OFFCPU, IN_WAKEUP, IN_LOCKSTAT, IN_COMMITLAT, IN_TRIMSTAT,
       IN_WALL, IN_MAX };
static const char *const in_files[IN_MAX] = {
	"meta.json", "offcpu.folded", "wakeup.folded", "lockstat.json",
	"commitlat.json", "trimstat.json", "wall.folded",
};

struct report {
	char *path[IN_MAX];	/* NULL: absent */
	const char *title;
	json_t *meta, *lockstat, *commitlat, *trimstat;
	struct folded_set *offcpu, *wakeup, *wall;
	char *baseline_path;	/* --baseline: an earlier run's off-CPU stacks */
	struct folded_set *baseline;
};

/* ---- loading ----------------------------------------------------------- */

static int load_json(const char *path, json_t **out)
{
	json_error_t e;

	*out = json_load_file(path, JSON_REJECT_DUPLICATES, &e);
	if (!*out) {
		if (e.line > 0)
			fprintf(stderr, "%s: %s:%d:%d: %s\n", prog, path, e.line,
				e.column, e.text);
		else
			fprintf(stderr, "%s: %s: %s\n", prog, path, e.text);
		return -1;
	}
	if (!json_is_object(*out)) {
		fprintf(stderr, "%s: %s: the top level must be an object\n",
			prog, path);
		return -1;
	}
	return 0;
}

static int load_folded(const char *path, struct folded_set **out)
{
	struct folded_error e = { 0 };
	FILE *f = fopen(path, "rb");
	int r;

	if (!f) {
		fprintf(stderr, "%s: %s: %s\n", prog, path, strerror(errno));
		return -1;
	}
	*out = folded_set_new();
	r = *out ? folded_parse_file(*out, f, NULL, &e) : -ENOMEM;
	fclose(f);
	/* A profiler that saw nothing writes an empty file: in a report that
	 * is "no samples", not an error (glass-flamegraph refuses it). */
	if (r == -EINVAL && !e.line && !folded_set_size(*out))
		r = 0;
	if (r) {
		if (e.line)
			fprintf(stderr, "%s: %s:%lu: %s\n", prog, path, e.line, e.msg);
		else
			fprintf(stderr, "%s: %s: %s\n", prog, path,
				r == -ENOMEM ? "out of memory" : e.msg);
		return -1;
	}
	return 0;
}

/* A JSON number that is a non-negative integer. */
static int get_count(json_t *v, uint64_t *out)
{
	if (json_is_integer(v) && json_integer_value(v) >= 0) {
		*out = (uint64_t)json_integer_value(v);
		return 0;
	}
	return -1;
}

static int get_number(json_t *v, double *out)
{
	if (!json_is_number(v))
		return -1;
	*out = json_number_value(v);
	return 0;
}

/* Validate and convert a HIST array.  WHERE names it in messages. */
static int parse_hist(const char *file, const char *where, json_t *arr,
		      struct hist_bucket **out, size_t *n)
{
	size_t i;
	json_t *b;

	*out = NULL;
	*n = 0;
	if (!arr)
		return 0;
	if (!json_is_array(arr)) {
		fprintf(stderr, "%s: %s: %s: must be an array of "
			"{\"lo\", \"hi\", \"count\"}\n", prog, file, where);
		return -1;
	}
	*out = calloc(json_array_size(arr) + 1, sizeof(**out));
	if (!*out)
		return -1;
	json_array_foreach(arr, i, b) {
		struct hist_bucket *h = &(*out)[i];

		if (!json_is_object(b) ||
		    get_number(json_object_get(b, "lo"), &h->lo) ||
		    get_number(json_object_get(b, "hi"), &h->hi) ||
		    get_count(json_object_get(b, "count"), &h->count) ||
		    h->lo > h->hi) {
			fprintf(stderr, "%s: %s: %s[%zu]: want {\"lo\": N, \"hi\": N, "
				"\"count\": N} with lo <= hi and an integer count >= 0\n",
				prog, file, where, i);
			free(*out);
			*out = NULL;
			return -1;
		}
	}
	*n = json_array_size(arr);
	return 0;
}

/* ---- HTML pieces ------------------------------------------------------- */

static const char *unit_of(json_t *o, const char *key, const char *def)
{
	json_t *u = o ? json_object_get(o, key) : NULL;

	return json_is_string(u) ? json_string_value(u) : def;
}

static void put_json_value(FILE *f, json_t *v)
{
	char *s;

	if (json_is_string(v)) {
		xml_escape(f, json_string_value(v), json_string_length(v),
			   SIZE_MAX);
		return;
	}
	s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_SORT_KEYS);
	xml_puts(f, s ? s : "?");
	free(s);
}

/* The run's result first, as its maker stated it (meta.json "finding"). */
static void put_finding(FILE *f, json_t *meta)
{
	json_t *v = meta ? json_object_get(meta, "finding") : NULL;

	if (!json_is_string(v))
		return;
	fputs("<p class=\"finding\" id=\"finding\"><b>Finding:</b> ", f);
	xml_puts(f, json_string_value(v));
	fputs("</p>\n", f);
}

static void put_meta(FILE *f, json_t *meta)
{
	static const char *const known[] = {
		"host", "kernel", "mount_options", "workload", "duration_s",
		"started", "ended", "tool",
	};
	static const char *const label[] = {
		"Host", "Kernel", "Mount options", "Workload", "Duration",
		"Started", "Ended", "Tool",
	};
	const char **keys;
	const char *k;
	json_t *v;
	size_t i, j, n = 0;
	char buf[64];

	fputs("<section id=\"meta\"><h2>Run</h2>\n", f);
	if (!meta || !json_object_size(meta)) {
		fputs("<p class=\"absent\">No meta.json in this run.</p></section>\n", f);
		return;
	}
	fputs("<table class=\"meta\">\n", f);
	for (i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		v = json_object_get(meta, known[i]);
		if (!v)
			continue;
		fputs("<tr><th>", f);
		fputs(label[i], f);
		fputs("</th><td>", f);
		if (!strcmp(known[i], "duration_s") && json_is_number(v))
			xml_puts(f, svgchart_fmt(buf, sizeof(buf),
						 json_number_value(v), "s"));
		else
			put_json_value(f, v);
		fputs("</td></tr>\n", f);
	}
	/* The rest, sorted by key so the output is deterministic. */
	keys = calloc(json_object_size(meta), sizeof(*keys));
	json_object_foreach(meta, k, v) {
		for (i = 0; i < sizeof(known) / sizeof(known[0]); i++)
			if (!strcmp(k, known[i]))
				break;
		if (i == sizeof(known) / sizeof(known[0]) && keys &&
		    strcmp(k, "title") &&	/* already the page's title */
		    strcmp(k, "finding"))	/* already at the top */
			keys[n++] = k;
	}
	for (i = 1; i < n; i++)
		for (j = i; j > 0 && strcmp(keys[j - 1], keys[j]) > 0; j--) {
			const char *t = keys[j];

			keys[j] = keys[j - 1];
			keys[j - 1] = t;
		}
	for (i = 0; i < n; i++) {
		fputs("<tr><th>", f);
		xml_puts(f, keys[i]);
		fputs("</th><td>", f);
		put_json_value(f, json_object_get(meta, keys[i]));
		fputs("</td></tr>\n", f);
	}
	free(keys);
	fputs("</table></section>\n", f);
}

/* An inline flame graph: the renderer's SVG minus the XML declaration and
 * the namespace attribute (HTML needs neither). */
static int put_flamegraph_h(FILE *f, int level, const char *id,
			    const char *heading, struct folded_set *before,
			    struct folded_set *set, const struct fg_options *o,
			    const char *absent)
{
	static const char ns[] = " xmlns=\"http://www.w3.org/2000/svg\"";
	char *svg = NULL, *p, *q;
	size_t len;
	int r;

	fprintf(f, "<section id=\"%s\"><h%d>", id, level);
	xml_puts(f, heading);
	fprintf(f, "</h%d>\n", level);
	if (!set) {
		fprintf(f, "<p class=\"absent\">%s</p></section>\n", absent);
		return 0;
	}
	r = fg_render_mem(&svg, &len, before, set, o);
	if (r == -ENODATA) {
		fputs("<p class=\"absent\">No samples (all counts are zero).</p></section>\n", f);
		return 0;
	}
	if (r) {
		fprintf(stderr, "%s: %s flame graph: %s\n", prog, id, fg_strerror(r));
		return -1;
	}
	p = svg;
	if (!strncmp(p, "<?xml", 5) && (q = strstr(p, "?>\n")))
		p = q + 3;
	fputs("<div class=\"fg\">", f);
	q = strstr(p, ns);
	if (q) {
		fwrite(p, 1, (size_t)(q - p), f);
		p = q + sizeof(ns) - 1;
	}
	fputs(p, f);
	fputs("</div></section>\n", f);
	free(svg);
	return 0;
}

static int put_flamegraph(FILE *f, const char *id, const char *heading,
			  struct folded_set *before, struct folded_set *set,
			  const struct fg_options *o, const char *absent)
{
	return put_flamegraph_h(f, 2, id, heading, before, set, o, absent);
}

static void put_num(FILE *f, uint64_t v)
{
	fprintf(f, "%llu", (unsigned long long)v);
}

/*
 * The wall-clock view per thread group.  The daemon's threads share one
 * comm, so a stack's group comes from its frames: the thread function
 * (commit_thread, cleaner_thread, discard_thread, balance/scrub/resync),
 * else FUSE (libfuse's loop, fs/fuse's ops, the kernel's fuse_dev_read),
 * else its root frame.  Its half is the "[oncpu]" frame, or the
 * "[offcpu]" or "[runqueue]" frame (off a CPU: blocked, or runnable).
 */
static const struct { const char *frame, *group; } wall_groups[] = {
	{ "commit_thread", "commit thread" },
	{ "cleaner_thread", "cleaner" },
	{ "discard_thread", "discard thread" },
	{ "balance_thread", "balance" },
	{ "scrub_thread", "scrub" },
	{ "resync_thread", "resync" },
};

struct wall_row {
	char group[64];
	uint64_t on, off;
};

static void wall_classify(const struct folded_stack *fs, char *group,
			  size_t glen, int *half)
{
	struct folded_iter it;
	const char *fr, *root = NULL;
	size_t n, rlen = 0;
	int fuse = 0;

	*half = 0;
	group[0] = 0;
	folded_iter_init(&it, fs->stack, fs->len);
	while (folded_iter_next(&it, &fr, &n)) {
		if (!root) {
			root = fr;
			rlen = n;
		}
		if (n == 7 && !memcmp(fr, "[oncpu]", 7))
			*half = 1;
		else if ((n == 8 && !memcmp(fr, "[offcpu]", 8)) ||
			 (n == 10 && !memcmp(fr, "[runqueue]", 10)))
			*half = 2;
		for (size_t i = 0; !group[0] && i < sizeof(wall_groups) / sizeof(wall_groups[0]); i++)
			if (n == strlen(wall_groups[i].frame) &&
			    !memcmp(fr, wall_groups[i].frame, n))
				snprintf(group, glen, "%s", wall_groups[i].group);
		fuse |= n > 5 && !memcmp(fr, "fuse_", 5);
	}
	if (!group[0])
		snprintf(group, glen, fuse ? "FUSE workers" : "other: %.*s",
			 (int)(rlen > 40 ? 40 : rlen), root ? root : "");
}

static int put_wall(FILE *f, struct folded_set *set, const struct fg_options *o)
{
	struct wall_row *rows = NULL;
	size_t nrows = 0;
	uint64_t on = 0, off = 0;

	if (put_flamegraph(f, "wall", "Wall-clock time: on-CPU and off-CPU", NULL,
			   set, o, ""))
		return -1;
	for (size_t i = 0; i < folded_set_size(set); i++) {
		const struct folded_stack *fs = folded_set_get(set, i);
		char g[64];
		int half;
		size_t j;

		wall_classify(fs, g, sizeof(g), &half);
		for (j = 0; j < nrows && strcmp(rows[j].group, g); j++)
			;
		if (j == nrows) {
			struct wall_row *nr = realloc(rows, (nrows + 1) * sizeof(*rows));

			if (!nr) {
				free(rows);
				fprintf(stderr, "%s: out of memory\n", prog);
				return -1;
			}
			rows = nr;
			memset(&rows[nrows], 0, sizeof(*rows));
			snprintf(rows[nrows++].group, sizeof(rows->group), "%s", g);
		}
		if (half == 1)
			rows[j].on += fs->count, on += fs->count;
		else
			rows[j].off += fs->count, off += fs->count;
	}
	fputs("<section id=\"wall-groups\"><h3>Wall-clock time per thread group</h3>\n"
	      "<table><tr><th>thread group</th><th>on-CPU</th><th>off-CPU</th>"
	      "<th>total</th><th>on-CPU share</th></tr>\n", f);
	for (size_t j = 0; j <= nrows; j++) {
		const char *g = j < nrows ? rows[j].group : "all";
		uint64_t a = j < nrows ? rows[j].on : on, b = j < nrows ? rows[j].off : off;

		fputs("<tr><td>", f);
		xml_puts(f, g);
		fputs("</td><td>", f);
		put_num(f, a);
		fputs("</td><td>", f);
		put_num(f, b);
		fputs("</td><td>", f);
		put_num(f, a + b);
		fprintf(f, "</td><td>%.1f%%</td></tr>\n", a + b ? 100.0 * (double)a / (double)(a + b) : 0.0);
	}
	fprintf(f, "</table><p class=\"hint\">%s; a group's total is the wall-clock time of its threads over the window.</p></section>\n",
		o->countname);
	free(rows);
	return 0;
}

struct lockrow {
	const char *name;
	uint64_t acq, cont, wait_total, wait_max;
	int has_max;
	int counted;	/* acquisitions counted (glass-lockstat -a), else "-" */
	struct hist_bucket *hist;
	size_t nhist;
};

static int cmp_lockrow(const void *a, const void *b)
{
	const struct lockrow *x = a, *y = b;

	if (x->wait_total != y->wait_total)
		return x->wait_total < y->wait_total ? 1 : -1;
	return strcmp(x->name, y->name);
}

/* glass-lockstat -j writes {"classes": [{"class", "level", "mode",
 * "acquired", "contended", "wait_ns", "wait_max_ns", "hold_ns",
 * "hold_max_ns", "wait_hist", "hold_hist"}], "instances": [...],
 * "stacks": [{"class", "level", "wait_ns", "count", "frames": [leaf..]}]}.
 * Turn its classes into this report's "locks" (unit ns) so one table
 * serves both; instances and stacks are shown by put_lock_extras(). */
static void lockstat_normalize(json_t *ls)
{
	static const char *const map[][2] = {
		{ "acquired", "acquisitions" }, { "contended", "contended" },
		{ "wait_ns", "wait_total" }, { "wait_max_ns", "wait_max" },
		{ "wait_hist", "hist" }, { "hold_ns", "hold_total" },
		{ "hold_max_ns", "hold_max" }, { "acquired_counted", "acquired_counted" },
	};
	json_t *classes = json_object_get(ls, "classes"), *c, *locks;
	size_t i, k;

	if (json_object_get(ls, "locks") || !json_is_array(classes))
		return;
	locks = json_array();
	json_array_foreach(classes, i, c) {
		json_t *o = json_object(), *cls = json_object_get(c, "class");
		json_t *lvl = json_object_get(c, "level"), *mode = json_object_get(c, "mode");
		char name[160];

		size_t nl;

		snprintf(name, sizeof(name), "%s",
			 json_is_string(cls) ? json_string_value(cls) : "?");
		nl = strlen(name);
		if (json_is_integer(lvl))
			nl += (size_t)snprintf(name + nl, sizeof(name) - nl, " level %lld",
					       (long long)json_integer_value(lvl));
		if (json_is_string(mode) && nl < sizeof(name))
			snprintf(name + nl, sizeof(name) - nl, " %s", json_string_value(mode));
		json_object_set_new(o, "name", json_string_nocheck(name));
		for (k = 0; k < sizeof(map) / sizeof(map[0]); k++) {
			json_t *v = json_is_object(c) ? json_object_get(c, map[k][0]) : NULL;

			if (v)
				json_object_set(o, map[k][1], v);
		}
		json_array_append_new(locks, o);
	}
	json_object_set_new(ls, "locks", locks);
	json_object_set_new(ls, "from_glass_lockstat", json_true());
	if (!json_object_get(ls, "unit"))
		json_object_set_new(ls, "unit", json_string("ns"));
}

/* glass-lockstat's top contended instances and waiter stacks (its -s),
 * the latter as a flame graph weighted by wait time. */
static int put_lock_extras(FILE *f, json_t *ls)
{
	json_t *insts = json_object_get(ls, "instances");
	json_t *stacks = json_object_get(ls, "stacks"), *v;
	struct folded_set *set = NULL;
	size_t i, k;
	char b1[32], b2[32];
	int r = 0;

	if (json_is_array(insts) && json_array_size(insts)) {
		static const char *const cols[] = { "addr", "class", "tree", "level",
			"group", "acquired", "contended" };

		fputs("<h3>Top contended lock instances</h3>\n<table class=\"locks\">\n"
		      "<tr><th>Address</th><th>Class</th><th>Tree</th><th>Level</th>"
		      "<th>Group</th><th>Acquired</th><th>Contended</th>"
		      "<th>Total wait</th><th>Max wait</th></tr>\n", f);
		json_array_foreach(insts, i, v) {
			uint64_t w = 0, m = 0;

			fputs("<tr>", f);
			for (k = 0; k < sizeof(cols) / sizeof(cols[0]); k++) {
				json_t *c = json_object_get(v, cols[k]);

				fputs(k < 2 ? "<td class=\"name\">" : "<td>", f);
				if (!strcmp(cols[k], "acquired") &&
				    json_is_false(json_object_get(v, "acquired_counted")))
					fputs("-", f);
				else if (c)
					put_json_value(f, c);
				fputs("</td>", f);
			}
			get_count(json_object_get(v, "wait_ns"), &w);
			get_count(json_object_get(v, "wait_max_ns"), &m);
			fputs("<td>", f);
			xml_puts(f, svgchart_fmt(b1, sizeof(b1), (double)w, "ns"));
			fputs("</td><td>", f);
			xml_puts(f, svgchart_fmt(b2, sizeof(b2), (double)m, "ns"));
			fputs("</td></tr>\n", f);
		}
		fputs("</table>\n", f);
	}
	if (!json_is_array(stacks) || !json_array_size(stacks))
		return 0;
	set = folded_set_new();
	if (!set)
		return -1;
	json_array_foreach(stacks, i, v) {
		json_t *frames = json_object_get(v, "frames"), *fr;
		json_t *cls = json_object_get(v, "class"), *lvl = json_object_get(v, "level");
		uint64_t w = 0;
		char *line = NULL, name[512];
		size_t len = 0, n;
		FILE *m;

		if (!json_is_array(frames) || get_count(json_object_get(v, "wait_ns"), &w) || !w)
			continue;
		m = open_memstream(&line, &len);
		if (!m)
			break;
		n = json_array_size(frames);
		for (k = n; k > 0; k--) {	/* leaf first in the JSON */
			fr = json_array_get(frames, k - 1);
			folded_sanitize_frame(name, sizeof(name),
					      json_is_string(fr) ? json_string_value(fr) : NULL);
			fprintf(m, "%s%s", k == n ? "" : ";", name);
		}
		snprintf(name, sizeof(name), "[%s lock%s%lld wait]",
			 json_is_string(cls) ? json_string_value(cls) : "?",
			 json_is_integer(lvl) ? " L" : "",
			 json_is_integer(lvl) ? (long long)json_integer_value(lvl) : 0LL);
		if (!json_is_integer(lvl))
			snprintf(name, sizeof(name), "[%s lock wait]",
				 json_is_string(cls) ? json_string_value(cls) : "?");
		fprintf(m, "%s", n ? ";" : "");
		fputs(name, m);
		fclose(m);
		if (folded_set_add(set, line, len, w)) {
			free(line);
			r = -1;
			break;
		}
		free(line);
	}
	if (!r && folded_set_total(set)) {
		struct fg_options o;

		fg_options_init(&o);
		o.palette = FG_PALETTE_OFFCPU;
		o.hash = 1;
		o.title = "Lock Waiter Stacks";
		o.countname = "ns";
		r = put_flamegraph(f, "lockwaiters", "Lock waiter stacks", NULL, set, &o, "");
	}
	folded_set_free(set);
	return r;
}

static int put_locks(FILE *f, json_t *ls, const char *file)
{
	const char *unit = unit_of(ls, "unit", "ns");
	json_t *locks = ls ? json_object_get(ls, "locks") : NULL, *l;
	struct lockrow *rows;
	size_t i, n, nh = 0;
	char b1[32], b2[32], b3[32], b4[32], where[64];
	int r = 0;

	fputs("<section id=\"locks\"><h2>Lock waits</h2>\n", f);
	if (!ls) {
		fputs("<p class=\"absent\">No lockstat.json in this run.</p></section>\n", f);
		return 0;
	}
	if (!json_is_array(locks)) {
		fprintf(stderr, "%s: %s: want \"locks\": [...] (or glass-lockstat -j "
			"output with \"classes\": [...])\n", prog, file);
		return -1;
	}
	n = json_array_size(locks);
	rows = calloc(n + 1, sizeof(*rows));
	if (!rows)
		return -1;
	json_array_foreach(locks, i, l) {
		struct lockrow *w = &rows[i];
		json_t *nm = json_object_get(l, "name");

		snprintf(where, sizeof(where), "%s[%zu]",
			 json_object_get(ls, "from_glass_lockstat") ? "classes" : "locks", i);
		if (!json_is_object(l) || !json_is_string(nm) ||
		    get_count(json_object_get(l, "acquisitions"), &w->acq) ||
		    get_count(json_object_get(l, "contended"), &w->cont) ||
		    get_count(json_object_get(l, "wait_total"), &w->wait_total) ||
		    (json_object_get(l, "wait_max") &&
		     get_count(json_object_get(l, "wait_max"), &w->wait_max))) {
			fprintf(stderr, "%s: %s: %s: want {\"name\": \"...\", "
				"\"acquisitions\": N, \"contended\": N, \"wait_total\": N"
				"[, \"wait_max\": N, \"hist\": [...]]} with integers >= 0\n",
				prog, file, where);
			r = -1;
			goto out;
		}
		w->name = json_string_value(nm);
		w->has_max = json_object_get(l, "wait_max") != NULL;
		w->counted = !json_is_false(json_object_get(l, "acquired_counted"));
		strncat(where, ".hist", sizeof(where) - strlen(where) - 1);
		if (parse_hist(file, where, json_object_get(l, "hist"),
			       &w->hist, &w->nhist)) {
			r = -1;
			goto out;
		}
	}
	qsort(rows, n, sizeof(*rows), cmp_lockrow);
	if (!n) {
		fputs("<p class=\"absent\">No locks recorded.</p></section>\n", f);
		goto out;
	}
	fputs("<table class=\"locks\">\n<tr><th>Lock</th><th>Acquisitions</th>"
	      "<th>Contended</th><th>Contended %</th><th>Total wait</th>"
	      "<th>Mean wait</th><th>p99 wait</th><th>Max wait</th></tr>\n", f);
	for (i = 0; i < n; i++) {
		struct lockrow *w = &rows[i];

		fputs("<tr><td class=\"name\">", f);
		xml_puts(f, w->name);
		fputs("</td><td>", f);
		/* Not counted (glass-lockstat without -a) is "-", not 0. */
		if (w->counted)
			put_num(f, w->acq);
		else
			fputs("-", f);
		fputs("</td><td>", f);
		put_num(f, w->cont);
		if (w->counted && w->acq)
			fprintf(f, "</td><td>%.1f%%</td><td>",
				100.0 * (double)w->cont / (double)w->acq);
		else
			fputs("</td><td>-</td><td>", f);
		xml_puts(f, svgchart_fmt(b1, sizeof(b1), (double)w->wait_total, unit));
		fputs("</td><td>", f);
		xml_puts(f, w->cont ? svgchart_fmt(b2, sizeof(b2),
			(double)w->wait_total / (double)w->cont, unit) : "-");
		fputs("</td><td>", f);
		xml_puts(f, w->nhist ? svgchart_fmt(b3, sizeof(b3),
			svgchart_quantile(w->hist, w->nhist, 0.99,
					  w->has_max ? (double)w->wait_max : 0), unit) : "-");
		fputs("</td><td>", f);
		xml_puts(f, w->has_max ?
			 svgchart_fmt(b4, sizeof(b4), (double)w->wait_max, unit) : "-");
		fputs("</td></tr>\n", f);
	}
	fputs("</table>\n<div class=\"charts\">\n", f);
	/* Histograms of the ten locks that waited longest. */
	for (i = 0; i < n && nh < 10; i++) {
		char title[160];

		if (!rows[i].nhist)
			continue;
		snprintf(title, sizeof(title), "%s: wait time", rows[i].name);
		svgchart_hist(f, title, unit, rows[i].hist, rows[i].nhist,
			      560, 220, 1);
		nh++;
	}
	fputs("</div>\n", f);
	r = put_lock_extras(f, ls);
	fputs("</section>\n", f);
out:
	for (i = 0; i < n; i++)
		free(rows[i].hist);
	free(rows);
	return r;
}

/* One series {"name", "hist"[, "max"]} from a tool's -j object, whose
 * largest value is "max_ns" or "max" (ns). */
static json_t *series_of(const char *name, json_t *o)
{
	json_t *s = json_pack("{s:s,s:O}", "name", name, "hist", json_object_get(o, "hist"));
	json_t *m = json_object_get(o, "max_ns");

	if (!m)
		m = json_object_get(o, "max");
	if (json_is_integer(m))
		json_object_set(s, "max", m);
	return s;
}

/*
 * The native -j output of glass-commitlat and glass-trimstat, turned into
 * series so a run directory can hold the tools' output as it is:
 * commitlat: latency_ns, each phase, blocked; trimstat: done, stalls.
 * Returns a new array (unit ns), or NULL when js is not such output.
 */
static json_t *tool_series(json_t *js)
{
	static const struct { const char *key, *name; } keys[] = {
		{ "latency_ns", "commit latency" }, { "blocked", "blocked behind a commit" },
		{ "done", "discard latency" }, { "stalls", "stalls caused by discards" },
	};
	json_t *out, *o, *ph;
	size_t i;

	if (!json_object_get(js, "latency_ns") &&
	    !(json_object_get(js, "done") && json_object_get(js, "stalls")))
		return NULL;
	out = json_array();
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		o = json_object_get(js, keys[i].key);
		if (json_is_object(o) && json_object_get(o, "hist"))
			json_array_append_new(out, series_of(keys[i].name, o));
	}
	json_array_foreach(json_object_get(js, "phases"), i, ph) {
		const char *name = json_string_value(json_object_get(ph, "phase"));
		char buf[96];

		if (!name || !json_object_get(ph, "hist"))
			continue;
		snprintf(buf, sizeof(buf), "phase: %s", name);
		json_array_append_new(out, series_of(buf, ph));
	}
	return out;
}

/* commitlat.json / trimstat.json: stats table + one chart per series. */
static int put_latency(FILE *f, json_t *js, const char *file, const char *id,
		       const char *heading, const char *defname)
{
	const char *unit = unit_of(js, "unit", "us");
	json_t *series, *s, *one = NULL;
	size_t i, n;
	int r = 0;

	fprintf(f, "<section id=\"%s\"><h2>%s</h2>\n", id, heading);
	if (!js) {
		fprintf(f, "<p class=\"absent\">Not measured in this run%s%s%s.</p></section>\n",
			file ? " (no " : "", file ? file : "", file ? ")" : "");
		return 0;
	}
	series = json_object_get(js, "series");
	if (!series && (one = tool_series(js))) {
		series = one;
		unit = "ns";
	} else if (!series && json_object_get(js, "hist")) {
		/* One unnamed series: {"unit": ..., "hist": [...]} */
		one = json_array();
		json_array_append_new(one, json_pack("{s:s,s:O}", "name", defname,
			"hist", json_object_get(js, "hist")));
		series = one;
	}
	if (!json_is_array(series)) {
		fprintf(stderr, "%s: %s: want \"series\": [{\"name\": \"...\", "
			"\"hist\": [...]}] or a top-level \"hist\"\n", prog, file);
		json_decref(one);
		return -1;
	}
	n = json_array_size(series);
	fputs("<table class=\"lat\">\n<tr><th>Series</th><th>Count</th>"
	      "<th>p50</th><th>p90</th><th>p99</th><th>Max</th></tr>\n", f);
	/* Validate everything first: a bad series fails the whole report. */
	for (i = 0; i < n; i++) {
		struct hist_bucket *h;
		size_t nb, k;
		uint64_t cnt = 0;
		char where[48], b[4][32];
		json_t *nm, *mx;
		double max = 0;

		s = json_array_get(series, i);
		nm = json_object_get(s, "name");
		snprintf(where, sizeof(where), "series[%zu].hist", i);
		if (!json_is_object(s) || !json_is_string(nm)) {
			fprintf(stderr, "%s: %s: series[%zu]: want {\"name\": \"...\", "
				"\"hist\": [...]}\n", prog, file, i);
			r = -1;
			break;
		}
		if (parse_hist(file, where, json_object_get(s, "hist"), &h, &nb)) {
			r = -1;
			break;
		}
		for (k = 0; k < nb; k++)
			cnt += h[k].count;
		/* "max": the largest value seen (the series' unit); without it
		 * the top bucket's upper bound is all that is known. */
		mx = json_object_get(s, "max");
		if (json_is_number(mx))
			max = json_number_value(mx);
		fputs("<tr><td class=\"name\">", f);
		xml_puts(f, json_string_value(nm));
		fprintf(f, "</td><td>%llu</td>", (unsigned long long)cnt);
		for (k = 0; k < 3; k++) {
			static const double qs[] = { 0.5, 0.9, 0.99 };

			fputs("<td>", f);
			xml_puts(f, cnt ? svgchart_fmt(b[k], sizeof(b[k]),
				svgchart_quantile(h, nb, qs[k], max), unit) : "-");
			fputs("</td>", f);
		}
		fputs("<td>", f);
		for (k = nb; k > 0 && !h[k - 1].count; k--)
			;
		if (k && max <= 0)
			fputs("&#8804; ", f);	/* an upper bound, not a value */
		xml_puts(f, !k ? "-" : svgchart_fmt(b[3], sizeof(b[3]),
						    max > 0 ? max : h[k - 1].hi, unit));
		fputs("</td></tr>\n", f);
		free(h);
	}
	fputs("</table>\n<div class=\"charts\">\n", f);
	for (i = 0; !r && i < n; i++) {
		struct hist_bucket *h;
		size_t nb;
		char where[48];

		s = json_array_get(series, i);
		snprintf(where, sizeof(where), "series[%zu].hist", i);
		parse_hist(file, where, json_object_get(s, "hist"), &h, &nb);
		svgchart_hist(f, json_string_value(json_object_get(s, "name")),
			      unit, h, nb, 560, 220, 1);
		free(h);
	}
	fputs("</div></section>\n", f);
	json_decref(one);
	return r;
}

static const char css[] =
"body { font-family: Verdana, sans-serif; margin: 1.5em; color: rgb(30,30,30); }\n"
"h1 { font-size: 1.5em; } h2 { font-size: 1.2em; border-bottom: 1px solid rgb(200,200,200); }\n"
"table { border-collapse: collapse; margin: 0.5em 0; font-size: 0.85em; }\n"
"th, td { border: 1px solid rgb(210,210,210); padding: 0.25em 0.6em; text-align: right; }\n"
"th { background: rgb(240,240,240); } td.name, table.meta td, table.meta th { text-align: left; }\n"
".absent { color: rgb(120,120,120); font-style: italic; }\n"
".charts svg { margin: 0.4em; }\n"
".fg { overflow-x: auto; }\n"
"p.finding { font-size: 1.05em; } pre { background: rgb(245,245,245); padding: 0.5em; overflow-x: auto; }\n"
"section.exp { margin-bottom: 2.5em; } table.summary th { text-align: left; }\n"
"footer { margin-top: 2em; font-size: 0.75em; color: rgb(120,120,120); }\n";

/* Both reports open the same way: doctype, head with the title and the
 * stylesheet, and the title again as the page heading. */
static void html_open(FILE *f, const char *title)
{
	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n"
	      "<meta name=\"generator\" content=\"glass-report\"/>\n<title>", f);
	xml_puts(f, title);
	fputs("</title>\n<style>\n", f);
	fputs(css, f);
	fputs("</style>\n</head>\n<body>\n<h1>", f);
	xml_puts(f, title);
	fputs("</h1>\n", f);
}

static int write_report(FILE *f, struct report *R)
{
	struct fg_options o;
	json_t *t = R->meta ? json_object_get(R->meta, "title") : NULL;
	const char *title = R->title ? R->title :
		json_is_string(t) ? json_string_value(t) : "glassfs profiling report";
	char sub[512];
	json_t *host = R->meta ? json_object_get(R->meta, "host") : NULL;
	json_t *wl = R->meta ? json_object_get(R->meta, "workload") : NULL;

	html_open(f, title);
	put_finding(f, R->meta);
	put_meta(f, R->meta);

	snprintf(sub, sizeof(sub), "%s%s%s",
		 json_is_string(host) ? json_string_value(host) : "",
		 json_is_string(host) && json_is_string(wl) ? " \xe2\x80\x94 " : "",
		 json_is_string(wl) ? json_string_value(wl) : "");
	fg_options_init(&o);
	o.palette = FG_PALETTE_OFFCPU;
	o.hash = 1;
	o.title = "Off-CPU Time Flame Graph";
	o.subtitle = sub[0] ? sub : NULL;
	o.countname = unit_of(R->meta, "offcpu_unit", "us");
	if (put_flamegraph(f, "offcpu", "Off-CPU time", NULL, R->offcpu, &o,
			   "No offcpu.folded in this run."))
		return -1;
	if (R->baseline) {
		struct fg_options d = o;

		d.title = "Off-CPU Time: Change Against the Baseline";
		d.subtitle = "red grew, blue shrank; the baseline is scaled to this run's total";
		d.normalize = 1;
		if (put_flamegraph(f, "offcpu-diff", "Off-CPU change against the baseline",
				   R->baseline, R->offcpu, &d,
				   "No offcpu.folded in this run to compare with the baseline."))
			return -1;
	}
	if (R->wall) {
		struct fg_options w = o;

		w.palette = FG_PALETTE_HOT;
		w.title = "Wall-Clock Flame Graph: on-CPU red-yellow (kernel aqua), off-CPU blue (kernel violet)";
		w.countname = unit_of(R->meta, "wall_unit", "us");
		if (put_wall(f, R->wall, &w))
			return -1;
	}
	if (R->wakeup) {
		o.palette = FG_PALETTE_WAKEUP;
		o.title = "Wakeup Flame Graph";
		o.countname = unit_of(R->meta, "wakeup_unit", "us");
		if (put_flamegraph(f, "wakeup", "Wakeups", NULL, R->wakeup, &o, ""))
			return -1;
	}
	if (R->lockstat)
		lockstat_normalize(R->lockstat);
	if (put_locks(f, R->lockstat, R->path[IN_LOCKSTAT]))
		return -1;
	if (put_latency(f, R->commitlat, R->path[IN_COMMITLAT], "commit",
			"Commit latency", "commit"))
		return -1;
	if (put_latency(f, R->trimstat, R->path[IN_TRIMSTAT], "trim",
			"Trim latency", "trim"))
		return -1;
	/* Inline SVG in HTML: onload may not fire, start the scripts here. */
	fputs("<footer>Generated by glass-report. Click a frame to zoom, "
	      "Search to highlight by regular expression.</footer>\n"
	      "<script>\nif (typeof fginit === \"function\")\n"
	      "\tArray.prototype.forEach.call(document.querySelectorAll(\"svg.flamegraph\"), "
	      "function (s) { fginit(s); });\n</script>\n</body>\n</html>\n", f);
	return ferror(f) ? -1 : 0;
}

/* ---- --experiments: one page of the talk's experiments ----------------- */

/*
 * glass-report --experiments DIR reads every DIR/NAME.json written by a bench
 * (tests/bench/NAME.bench with BENCH_OUT=DIR), the contract of the common
 * brief:
 *
 *   {"experiment": 0..7, "title": "...", "what": "...",
 *    "commands": ["...", ...],
 *    "table": {"columns": ["...", ...], "rows": [[CELL, ...], ...]},
 *    "finding": "...",
 *    "charts": [{"title": "...", "kind": "bar"|"line", "unit": "...",
 *                "xlabel": "...", "series": [{"name": "...",
 *                "points": [[X, Y], ...]}]}],              (optional)
 *    "flamegraphs": [{"title": "...", "folded": "FILE.folded"
 *                     [, "unit": "us"]}]}                   (optional)
 *
 * CELL is a string, a number or null ("-"); X a string or a number (the
 * categories of the x axis, in first-seen order); Y a number or null.
 * "folded" is relative to DIR and may not leave it.  Every field is
 * checked; an unknown key is an error (a typo would otherwise vanish).
 * Experiments 1-7 are shown in order, each absent one as "not run" with
 * the reason from DIR/NAME.notrun (written by `make bench-report` from
 * the bench's SKIPPED line) when there is one; experiment 0 (any other
 * bench) follows, by file name.
 */
static const struct {
	const char *bench, *title;
} talk_exp[8] = {
	{ NULL, NULL },
	{ "lockschemes", "B-tree lock schemes: creates/s by scheme, threads and lock type" },
	{ "io-per-file", "Device bytes and write I/Os per created file" },
	{ "discard", "Commit latency with discard off, sync and async" },
	{ "fstsize", "Commit latency vs filesystem size (free-space tree)" },
	{ "metafast", "Metadata-op latency with metadata on the fast device" },
	{ "fsync", "fsync latency: log tree vs full commits" },
	{ "fleet", "The fleet view: finding the host with the slow device" },
};

struct experiment {
	char *file;		/* DIR/NAME.json */
	json_t *js;
	int num;
	struct folded_set **fg;	/* one per "flamegraphs" entry */
	size_t nfg;
};

static int exp_bad(const char *file, const char *field, const char *why)
{
	fprintf(stderr, "%s: %s: %s: %s\n", prog, file, field, why);
	return -1;
}

static int exp_string(const char *file, json_t *o, const char *key,
		      int required, int nonempty)
{
	json_t *v = json_object_get(o, key);

	if (!v)
		return required ? exp_bad(file, key, "missing (a string)") : 0;
	if (!json_is_string(v))
		return exp_bad(file, key, "must be a string");
	if (nonempty && !json_string_length(v))
		return exp_bad(file, key, "must not be empty");
	return 0;
}

/* Every key of O must be in the NULL-terminated KEYS. */
static int exp_keys(const char *file, const char *where, json_t *o,
		    const char *const *keys)
{
	const char *k, *const *p;
	json_t *v;
	char field[160];

	json_object_foreach(o, k, v) {
		for (p = keys; *p && strcmp(*p, k); p++)
			;
		if (!*p) {
			snprintf(field, sizeof(field), "%s%s%s", where,
				 *where ? "." : "", k);
			return exp_bad(file, field, "unknown key (see the bench "
				       "JSON contract in tools/glass-report.c)");
		}
	}
	return 0;
}

static int exp_validate_chart(const char *file, size_t ci, json_t *c)
{
	static const char *const keys[] = { "title", "kind", "unit", "xlabel",
					    "series", NULL };
	json_t *kind, *series, *s, *pts, *pt;
	char w[160];
	size_t si, pi;

	snprintf(w, sizeof(w), "charts[%zu]", ci);
	if (!json_is_object(c))
		return exp_bad(file, w, "must be an object");
	if (exp_keys(file, w, c, keys))
		return -1;
	snprintf(w, sizeof(w), "charts[%zu].title", ci);
	if (!json_is_string(json_object_get(c, "title")))
		return exp_bad(file, w, "missing or not a string");
	kind = json_object_get(c, "kind");
	snprintf(w, sizeof(w), "charts[%zu].kind", ci);
	if (!json_is_string(kind) || (strcmp(json_string_value(kind), "bar") &&
				      strcmp(json_string_value(kind), "line")))
		return exp_bad(file, w, "must be \"bar\" or \"line\"");
	snprintf(w, sizeof(w), "charts[%zu].unit", ci);
	if (json_object_get(c, "unit") && !json_is_string(json_object_get(c, "unit")))
		return exp_bad(file, w, "must be a string");
	snprintf(w, sizeof(w), "charts[%zu].xlabel", ci);
	if (json_object_get(c, "xlabel") && !json_is_string(json_object_get(c, "xlabel")))
		return exp_bad(file, w, "must be a string");
	series = json_object_get(c, "series");
	snprintf(w, sizeof(w), "charts[%zu].series", ci);
	if (!json_is_array(series) || !json_array_size(series))
		return exp_bad(file, w, "must be a non-empty array of "
			       "{\"name\", \"points\"}");
	json_array_foreach(series, si, s) {
		static const char *const skeys[] = { "name", "points", NULL };

		snprintf(w, sizeof(w), "charts[%zu].series[%zu]", ci, si);
		if (!json_is_object(s))
			return exp_bad(file, w, "must be an object");
		if (exp_keys(file, w, s, skeys))
			return -1;
		if (!json_is_string(json_object_get(s, "name")))
			return exp_bad(file, w, "\"name\" missing or not a string");
		pts = json_object_get(s, "points");
		if (!json_is_array(pts))
			return exp_bad(file, w, "\"points\" missing or not an array");
		json_array_foreach(pts, pi, pt) {
			json_t *x = json_array_get(pt, 0), *y = json_array_get(pt, 1);

			snprintf(w, sizeof(w), "charts[%zu].series[%zu].points[%zu]",
				 ci, si, pi);
			if (!json_is_array(pt) || json_array_size(pt) != 2 ||
			    !(json_is_string(x) || json_is_number(x)) ||
			    !(json_is_number(y) || json_is_null(y)))
				return exp_bad(file, w, "want [X, Y]: X a string or "
					       "a number, Y a number or null");
			if (json_is_number(y) && !isfinite(json_number_value(y)))
				return exp_bad(file, w, "Y must be finite");
		}
	}
	return 0;
}

/* Check the whole document; names file and field on the first problem. */
static int exp_validate(const char *file, json_t *js)
{
	static const char *const keys[] = { "experiment", "title", "what",
		"commands", "table", "finding", "charts", "flamegraphs", NULL };
	json_t *v, *cols, *rows, *row, *cell, *fg;
	size_t i, j, ncol;
	char w[160];

	if (exp_keys(file, "", js, keys))
		return -1;
	v = json_object_get(js, "experiment");
	if (!v)
		return exp_bad(file, "experiment", "missing (an integer 0..7)");
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    json_integer_value(v) > 7)
		return exp_bad(file, "experiment", "must be an integer 0..7");
	if (exp_string(file, js, "title", 1, 1) ||
	    exp_string(file, js, "what", 1, 1) ||
	    exp_string(file, js, "finding", 1, 1))
		return -1;
	v = json_object_get(js, "commands");
	if (!json_is_array(v) || !json_array_size(v))
		return exp_bad(file, "commands", "must be a non-empty array of strings");
	json_array_foreach(v, i, cell) {
		snprintf(w, sizeof(w), "commands[%zu]", i);
		if (!json_is_string(cell))
			return exp_bad(file, w, "must be a string");
	}
	v = json_object_get(js, "table");
	if (!json_is_object(v))
		return exp_bad(file, "table", "missing or not an object "
			       "{\"columns\": [...], \"rows\": [[...], ...]}");
	{
		static const char *const tkeys[] = { "columns", "rows", NULL };

		if (exp_keys(file, "table", v, tkeys))
			return -1;
	}
	cols = json_object_get(v, "columns");
	rows = json_object_get(v, "rows");
	if (!json_is_array(cols) || !(ncol = json_array_size(cols)))
		return exp_bad(file, "table.columns", "must be a non-empty array of strings");
	json_array_foreach(cols, i, cell) {
		snprintf(w, sizeof(w), "table.columns[%zu]", i);
		if (!json_is_string(cell))
			return exp_bad(file, w, "must be a string");
	}
	if (!json_is_array(rows))
		return exp_bad(file, "table.rows", "must be an array of rows");
	json_array_foreach(rows, i, row) {
		snprintf(w, sizeof(w), "table.rows[%zu]", i);
		if (!json_is_array(row) || json_array_size(row) != ncol) {
			char why[96];

			snprintf(why, sizeof(why), "must be an array of %zu cells "
				 "(one per column)", ncol);
			return exp_bad(file, w, why);
		}
		json_array_foreach(row, j, cell) {
			snprintf(w, sizeof(w), "table.rows[%zu][%zu]", i, j);
			if (!json_is_string(cell) && !json_is_null(cell) &&
			    !(json_is_number(cell) && isfinite(json_number_value(cell))))
				return exp_bad(file, w, "must be a string, a finite "
					       "number or null");
		}
	}
	v = json_object_get(js, "charts");
	if (v && !json_is_array(v))
		return exp_bad(file, "charts", "must be an array");
	json_array_foreach(v, i, cell)
		if (exp_validate_chart(file, i, cell))
			return -1;
	v = json_object_get(js, "flamegraphs");
	if (v && !json_is_array(v))
		return exp_bad(file, "flamegraphs", "must be an array");
	json_array_foreach(v, i, fg) {
		static const char *const fkeys[] = { "title", "folded", "unit", NULL };
		json_t *p = json_object_get(fg, "folded");
		const char *ps;

		snprintf(w, sizeof(w), "flamegraphs[%zu]", i);
		if (!json_is_object(fg))
			return exp_bad(file, w, "must be an object {\"title\", \"folded\"}");
		if (exp_keys(file, w, fg, fkeys))
			return -1;
		if (!json_is_string(json_object_get(fg, "title")))
			return exp_bad(file, w, "\"title\" missing or not a string");
		if (json_object_get(fg, "unit") && !json_is_string(json_object_get(fg, "unit")))
			return exp_bad(file, w, "\"unit\" must be a string");
		snprintf(w, sizeof(w), "flamegraphs[%zu].folded", i);
		if (!json_is_string(p) || !*(ps = json_string_value(p)))
			return exp_bad(file, w, "missing or not a file name");
		if (ps[0] == '/' || !strcmp(ps, "..") || !strncmp(ps, "../", 3) ||
		    strstr(ps, "/../") || (strlen(ps) >= 3 &&
					   !strcmp(ps + strlen(ps) - 3, "/..")))
			return exp_bad(file, w, "must be a path inside the "
				       "experiments directory (relative, no \"..\")");
	}
	return 0;
}

static void exp_cell(FILE *f, json_t *c)
{
	char buf[48];

	if (json_is_string(c))
		xml_puts(f, json_string_value(c));
	else if (json_is_integer(c))
		fprintf(f, "%lld", (long long)json_integer_value(c));
	else if (json_is_real(c)) {
		double v = json_real_value(c);

		/* three significant digits, kept: 1.00, 0.720, 7.55, 0.0200 */
		snprintf(buf, sizeof(buf), fabs(v) >= 100 ? "%.0f" : "%#.3g", v);
		fputs(buf, f);
	} else
		fputs("-", f);
}

/* X of a point as a category label. */
static const char *exp_xlabel(json_t *x, char *buf, size_t len)
{
	if (json_is_string(x))
		return json_string_value(x);
	snprintf(buf, len, "%.6g", json_number_value(x));
	return buf;
}

static int exp_chart(FILE *f, json_t *c)
{
	json_t *series = json_object_get(c, "series"), *s, *pt;
	const char *kind = json_string_value(json_object_get(c, "kind"));
	char **xl = NULL, buf[64];
	struct svgchart_series *ss = NULL;
	double *ys = NULL;
	size_t nx = 0, cap = 0, ns = json_array_size(series), i, j, k;
	int r = -1;

	/* the categories: every X, in first-seen order */
	json_array_foreach(series, i, s)
		json_array_foreach(json_object_get(s, "points"), j, pt) {
			const char *l = exp_xlabel(json_array_get(pt, 0), buf, sizeof(buf));

			for (k = 0; k < nx && strcmp(xl[k], l); k++)
				;
			if (k < nx)
				continue;
			if (nx == cap) {
				char **n = realloc(xl, (cap = cap ? 2 * cap : 16) * sizeof(*xl));

				if (!n)
					goto out;
				xl = n;
			}
			if (!(xl[nx] = strdup(l)))
				goto out;
			nx++;
		}
	ss = calloc(ns + 1, sizeof(*ss));
	ys = malloc((ns * nx + 1) * sizeof(*ys));
	if (!ss || !ys)
		goto out;
	for (i = 0; i < ns * nx; i++)
		ys[i] = NAN;
	json_array_foreach(series, i, s) {
		ss[i].name = json_string_value(json_object_get(s, "name"));
		ss[i].y = ys + i * nx;
		json_array_foreach(json_object_get(s, "points"), j, pt) {
			const char *l = exp_xlabel(json_array_get(pt, 0), buf, sizeof(buf));
			json_t *y = json_array_get(pt, 1);

			for (k = 0; strcmp(xl[k], l); k++)
				;
			ys[i * nx + k] = json_is_number(y) ? json_number_value(y) : NAN;
		}
	}
	r = svgchart_series(f, !strcmp(kind, "line") ? SVGCHART_LINE : SVGCHART_BAR,
			    json_string_value(json_object_get(c, "title")),
			    unit_of(c, "unit", ""), unit_of(c, "xlabel", ""),
			    (const char *const *)xl, nx, ss, ns, 580, 300, 1);
out:
	for (i = 0; i < nx; i++)
		free(xl[i]);
	free(xl);
	free(ss);
	free(ys);
	return r;
}

static int exp_section(FILE *f, struct experiment *e)
{
	json_t *js = e->js, *t = json_object_get(js, "table"), *v, *row, *c;
	size_t i, j;
	char id[32];

	if (e->num)
		fprintf(f, "<section class=\"exp\" id=\"exp%d\"><h2>%d. ", e->num, e->num);
	else
		fputs("<section class=\"exp\"><h2>", f);
	xml_puts(f, json_string_value(json_object_get(js, "title")));
	fputs("</h2>\n<p class=\"finding\"><b>Finding:</b> ", f);
	xml_puts(f, json_string_value(json_object_get(js, "finding")));
	fputs("</p>\n<p class=\"what\">", f);
	xml_puts(f, json_string_value(json_object_get(js, "what")));
	fputs("</p>\n<details open=\"open\"><summary>Commands</summary><pre>", f);
	json_array_foreach(json_object_get(js, "commands"), i, v) {
		xml_puts(f, json_string_value(v));
		fputs("\n", f);
	}
	fputs("</pre></details>\n<table class=\"exp\">\n<tr>", f);
	json_array_foreach(json_object_get(t, "columns"), i, v) {
		fputs("<th>", f);
		xml_puts(f, json_string_value(v));
		fputs("</th>", f);
	}
	fputs("</tr>\n", f);
	json_array_foreach(json_object_get(t, "rows"), i, row) {
		fputs("<tr>", f);
		json_array_foreach(row, j, c) {
			fputs(json_is_string(c) ? "<td class=\"name\">" : "<td>", f);
			exp_cell(f, c);
			fputs("</td>", f);
		}
		fputs("</tr>\n", f);
	}
	fputs("</table>\n", f);
	v = json_object_get(js, "charts");
	if (json_array_size(v)) {
		fputs("<div class=\"charts\">\n", f);
		json_array_foreach(v, i, c)
			if (exp_chart(f, c))
				return -1;
		fputs("</div>\n", f);
	}
	json_array_foreach(json_object_get(js, "flamegraphs"), i, v) {
		struct fg_options o;
		const char *title = json_string_value(json_object_get(v, "title"));

		fg_options_init(&o);
		o.palette = FG_PALETTE_OFFCPU;
		o.hash = 1;
		o.title = title;
		o.countname = unit_of(v, "unit", "us");
		snprintf(id, sizeof(id), "exp%d-fg%zu", e->num, i);
		if (put_flamegraph_h(f, 3, id, title, NULL, e->fg[i], &o, ""))
			return -1;
	}
	fputs("</section>\n", f);
	return ferror(f) ? -1 : 0;
}

static void exp_notrun(const char *dir, int n, char *reason, size_t len)
{
	char *p = NULL;
	FILE *r;

	snprintf(reason, len, "no %s.json in %s", talk_exp[n].bench, dir);
	if (asprintf(&p, "%s/%s.notrun", dir, talk_exp[n].bench) < 0)
		return;
	r = fopen(p, "r");
	free(p);
	if (!r)
		return;
	if (fgets(reason, (int)len, r))
		reason[strcspn(reason, "\r\n")] = 0;
	if (!*reason)
		snprintf(reason, len, "%s.bench did not say why", talk_exp[n].bench);
	fclose(r);
}

static int exp_is_json(const struct dirent *d)
{
	size_t n = strlen(d->d_name);

	return n > 5 && d->d_name[0] != '.' && !strcmp(d->d_name + n - 5, ".json");
}

static int write_experiments(FILE *f, const char *dir, const char *title,
			     struct experiment *ex, size_t nex)
{
	struct experiment *by[8] = { 0 };
	char reason[512];
	size_t i;
	int n;

	for (i = 0; i < nex; i++)
		if (ex[i].num)
			by[ex[i].num] = &ex[i];
	html_open(f, title);
	fputs("<section id=\"summary\"><h2>Summary</h2>\n"
	      "<table class=\"summary\">\n<tr><th>#</th><th>Experiment</th>"
	      "<th>Finding</th></tr>\n", f);
	for (n = 1; n <= 7; n++) {
		fprintf(f, "<tr><td>%d</td><td class=\"name\"><a href=\"#exp%d\">", n, n);
		xml_puts(f, by[n] ? json_string_value(json_object_get(by[n]->js, "title"))
			 : talk_exp[n].title);
		fputs("</a></td><td class=\"name\">", f);
		if (by[n]) {
			xml_puts(f, json_string_value(json_object_get(by[n]->js, "finding")));
		} else {
			exp_notrun(dir, n, reason, sizeof(reason));
			fputs("<span class=\"absent\">not run: ", f);
			xml_puts(f, reason);
			fputs("</span>", f);
		}
		fputs("</td></tr>\n", f);
	}
	fputs("</table></section>\n", f);
	for (n = 1; n <= 7; n++) {
		if (by[n]) {
			if (exp_section(f, by[n]))
				return -1;
			continue;
		}
		exp_notrun(dir, n, reason, sizeof(reason));
		fprintf(f, "<section class=\"exp\" id=\"exp%d\"><h2>%d. ", n, n);
		xml_puts(f, talk_exp[n].title);
		fputs("</h2>\n<p class=\"absent\">not run: ", f);
		xml_puts(f, reason);
		fputs("</p></section>\n", f);
	}
	for (i = 0; i < nex; i++)
		if (!ex[i].num && exp_section(f, &ex[i]))
			return -1;
	fputs("<footer>Generated by glass-report --experiments from the benches' "
	      "JSON (tests/bench/*.bench, BENCH_OUT). Click a flame-graph frame "
	      "to zoom.</footer>\n"
	      "<script>\nif (typeof fginit === \"function\")\n"
	      "\tArray.prototype.forEach.call(document.querySelectorAll(\"svg.flamegraph\"), "
	      "function (s) { fginit(s); });\n</script>\n</body>\n</html>\n", f);
	return ferror(f) ? -1 : 0;
}

/* Load and check every DIR/NAME.json and its flame graphs (the page is
 * written only when all of them are good). */
static int experiments_load(const char *dir, struct experiment **out, size_t *nout)
{
	struct dirent **names = NULL;
	struct experiment *ex;
	int nn, i, r = -1;
	size_t k, nex = 0;

	nn = scandir(dir, &names, exp_is_json, alphasort);
	if (nn < 0) {
		fprintf(stderr, "%s: %s: %s\n", prog, dir, strerror(errno));
		return -1;
	}
	ex = calloc((size_t)nn + 1, sizeof(*ex));
	if (!ex)
		goto out;
	for (i = 0; i < nn; i++) {
		struct experiment *e = &ex[nex++];
		json_t *fgs;

		if (asprintf(&e->file, "%s/%s", dir, names[i]->d_name) < 0) {
			e->file = NULL;
			goto out;
		}
		if (load_json(e->file, &e->js) || exp_validate(e->file, e->js))
			goto out;
		e->num = (int)json_integer_value(json_object_get(e->js, "experiment"));
		for (k = 0; e->num && k + 1 < nex; k++)
			if (ex[k].num == e->num) {
				fprintf(stderr, "%s: %s: experiment: %d is also %s's\n",
					prog, e->file, e->num, ex[k].file);
				goto out;
			}
		fgs = json_object_get(e->js, "flamegraphs");
		e->nfg = json_array_size(fgs);
		e->fg = calloc(e->nfg + 1, sizeof(*e->fg));
		if (!e->fg)
			goto out;
		for (k = 0; k < e->nfg; k++) {
			char *p;
			int bad;

			if (asprintf(&p, "%s/%s", dir, json_string_value(json_object_get(
					json_array_get(fgs, k), "folded"))) < 0)
				goto out;
			bad = load_folded(p, &e->fg[k]);
			if (bad)
				fprintf(stderr, "%s: %s: flamegraphs[%zu].folded: "
					"cannot use %s\n", prog, e->file, k, p);
			free(p);
			if (bad)
				goto out;
		}
	}
	r = 0;
out:
	for (i = 0; i < nn; i++)
		free(names[i]);
	free(names);
	*out = ex;
	*nout = nex;
	return r;
}

static void experiments_free(struct experiment *ex, size_t n)
{
	size_t i, k;

	for (i = 0; ex && i < n; i++) {
		for (k = 0; ex[i].fg && k < ex[i].nfg; k++)
			folded_set_free(ex[i].fg[k]);
		free(ex[i].fg);
		json_decref(ex[i].js);
		free(ex[i].file);
	}
	free(ex);
}

static void usage(FILE *f)
{
	fprintf(f,
"Usage: %s [RUNDIR] [OPTIONS]\n"
"Write one self-contained HTML report of a profiling run.\n"
"RUNDIR may hold meta.json, offcpu.folded, wakeup.folded, lockstat.json,\n"
"commitlat.json, trimstat.json, wall.folded (see the top of\n"
"tools/glass-report.c).\n"
"\n"
"  --meta F, --offcpu F, --wakeup F, --lockstat F, --commitlat F,\n"
"  --trimstat F, --wall F  take that input from F (must exist)\n"
"  --title TEXT       report title (default: meta.json \"title\")\n"
"  --baseline PATH    add a differential off-CPU graph against an earlier\n"
"                     run (its directory, or its offcpu.folded)\n"
"  --experiments DIR  instead: one page of the talk's experiments from the\n"
"                     benches' DIR/*.json (BENCH_OUT; `make bench-report`)\n"
"  -o, --output FILE  write there (default: standard output)\n"
"  -h, --help         this text\n", prog);
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "--version")) {
		printf("glass-report %s\n", GLASSFS_VERSION);
		return 0;
	}
	static const struct option lopts[] = {
		{ "meta", required_argument, 0, 256 + IN_META },
		{ "offcpu", required_argument, 0, 256 + IN_OFFCPU },
		{ "wakeup", required_argument, 0, 256 + IN_WAKEUP },
		{ "lockstat", required_argument, 0, 256 + IN_LOCKSTAT },
		{ "commitlat", required_argument, 0, 256 + IN_COMMITLAT },
		{ "trimstat", required_argument, 0, 256 + IN_TRIMSTAT },
		{ "wall", required_argument, 0, 256 + IN_WALL },
		{ "title", required_argument, 0, 'T' },
		{ "baseline", required_argument, 0, 'B' },
		{ "experiments", required_argument, 0, 'E' },
		{ "output", required_argument, 0, 'o' },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 }
	};
	struct report R = { 0 };
	const char *output = NULL, *dir = NULL, *expdir = NULL;
	struct experiment *ex = NULL;
	size_t nex = 0;
	char *buf = NULL;
	size_t len = 0;
	FILE *m = NULL;
	int c, i, rc = 1, any = 0;

	while ((c = getopt_long(argc, argv, "ho:", lopts, NULL)) != -1) {
		if (c >= 256 && c < 256 + IN_MAX) {
			free(R.path[c - 256]);
			R.path[c - 256] = strdup(optarg);
			continue;
		}
		switch (c) {
		case 'T': R.title = optarg; break;
		case 'B': {
			struct stat st;

			free(R.baseline_path);
			if (!stat(optarg, &st) && S_ISDIR(st.st_mode)) {
				if (asprintf(&R.baseline_path, "%s/offcpu.folded", optarg) < 0)
					return 1;
			} else {
				R.baseline_path = strdup(optarg);
			}
			break;
		}
		case 'E': expdir = optarg; break;
		case 'o': output = optarg; break;
		case 'h': usage(stdout); return 0;
		default:
			fprintf(stderr, "Try '%s --help'.\n", prog);
			return 2;
		}
	}
	if (argc - optind > 1) {
		fprintf(stderr, "%s: one run directory at most\n", prog);
		return 2;
	}
	if (optind < argc)
		dir = argv[optind];
	if (expdir) {
		for (i = 0; i < IN_MAX; i++)
			any |= R.path[i] != NULL;
		if (dir || any || R.baseline_path) {
			fprintf(stderr, "%s: --experiments takes no run directory, "
				"input flags or --baseline\n", prog);
			return 2;
		}
		if (experiments_load(expdir, &ex, &nex))
			goto out;
		m = open_memstream(&buf, &len);
		if (!m || write_experiments(m, expdir, R.title ? R.title :
				"glassfs: the talk's experiments, re-run", ex, nex)) {
			if (m)
				fclose(m);
			m = NULL;
			goto out;
		}
		fclose(m);
		m = NULL;
		goto emit;
	}
	if (dir && access(dir, R_OK | X_OK)) {
		fprintf(stderr, "%s: %s: %s\n", prog, dir, strerror(errno));
		return 1;
	}
	for (i = 0; i < IN_MAX; i++) {
		if (!R.path[i] && dir) {
			if (asprintf(&R.path[i], "%s/%s", dir, in_files[i]) < 0)
				goto out;
			if (access(R.path[i], F_OK)) {
				free(R.path[i]);
				R.path[i] = NULL;
			}
		}
		any |= R.path[i] != NULL;
	}
	if (!any) {
		fprintf(stderr, "%s: nothing to report: %s\n", prog,
			dir ? "the run directory holds none of meta.json, "
			"offcpu.folded, wakeup.folded, lockstat.json, "
			"commitlat.json, trimstat.json, wall.folded" : "give a run directory or input flags");
		rc = dir ? 1 : 2;
		goto out;
	}
	if ((R.path[IN_META] && load_json(R.path[IN_META], &R.meta)) ||
	    (R.path[IN_OFFCPU] && load_folded(R.path[IN_OFFCPU], &R.offcpu)) ||
	    (R.path[IN_WAKEUP] && load_folded(R.path[IN_WAKEUP], &R.wakeup)) ||
	    (R.path[IN_WALL] && load_folded(R.path[IN_WALL], &R.wall)) ||
	    (R.path[IN_LOCKSTAT] && load_json(R.path[IN_LOCKSTAT], &R.lockstat)) ||
	    (R.path[IN_COMMITLAT] && load_json(R.path[IN_COMMITLAT], &R.commitlat)) ||
	    (R.path[IN_TRIMSTAT] && load_json(R.path[IN_TRIMSTAT], &R.trimstat)) ||
	    (R.baseline_path && load_folded(R.baseline_path, &R.baseline)))
		goto out;

	/* Into memory first: nothing is written unless all of it worked. */
	m = open_memstream(&buf, &len);
	if (!m || write_report(m, &R)) {
		if (m)
			fclose(m);
		m = NULL;
		goto out;
	}
	fclose(m);
	m = NULL;
emit:
	if (out_write_whole(prog, output, buf, len))
		goto out;
	rc = 0;
out:
	free(buf);
	experiments_free(ex, nex);
	for (i = 0; i < IN_MAX; i++)
		free(R.path[i]);
	json_decref(R.meta);
	json_decref(R.lockstat);
	json_decref(R.commitlat);
	json_decref(R.trimstat);
	folded_set_free(R.offcpu);
	folded_set_free(R.wakeup);
	folded_set_free(R.wall);
	folded_set_free(R.baseline);
	free(R.baseline_path);
	return rc;
}
