/*
 * agent.c — glass-agent: profiles its host in windows and pushes them to
 * glass-aggd.
 *
 *   glass-agent --server http://127.0.0.1:7470 --token-file /etc/glass/token
 *               [--interval 10] [--profiler-cmd CMD] [--summary-cmd CMD]
 *               [--label k=v ...] [--spool DIR --spool-max-bytes N]
 *               [--lock-cmd CMD | --no-locks]
 *
 * Two threads.  The profiler thread runs the profiler command once per
 * window ("{interval}" in CMD becomes the interval in seconds), validates
 * its folded output with the project's parser, builds the window JSON,
 * gzips it and puts it in the spool.  The sender thread drains the spool
 * oldest first: 2xx (stored or duplicate) removes the window; 400/413/415
 * move it to DIR/rejected/; anything else (connection refused, 5xx, 401)
 * keeps it and retries after an exponential backoff with full jitter.  So
 * a window is sent until the aggregator has it, and its window id
 * (HOST-UUID-SEQ) makes a repeat harmless: every window arrives once.
 *
 * Lock detail: while the profiler runs, a second command (--lock-cmd; by
 * default "glass-lockstat -p {pid} -d {interval} -s -j" when the default
 * profiler runs and the daemon of the glassfs mount is found) prints glass-lockstat's
 * JSON for the same window.  It becomes the window's "locks" (classes,
 * instances, waiters' stacks; aggregator/locks.c validates it here as
 * glass-aggd will), its per-class summaries.lock_wait_ns when the summary
 * command gave none, and a lockwait profile (waiter stacks ending in
 * lock:CLASS) when the profiler itself is not a lock-wait one.
 *
 * SIGTERM/SIGINT: the running profiler gets SIGINT (so it prints what it
 * has), that last window is spooled, the sender gets --flush-timeout
 * seconds to deliver, and what remains stays spooled for the next start.
 */
#include "aggregator/ingest.h"
#include "aggregator/spool.h"
#include "tools/lib/folded.h"
#include "tools/lib/glassmount.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <curl/curl.h>
#include <jansson.h>
#include <zlib.h>

struct agent {
	char *server, *token, *profiler_cmd, *summary_cmd, *host, *type, *units, *spool_dir;
	char *lock_cmd;		/* NULL: none (or the default, see lock_cmd_default) */
	int lock_default;	/* run glass-lockstat when a glassfs daemon runs */
	int commit_default;	/* no --summary-cmd: glass-commitlat gives the commit summaries */
	char *mount;		/* --mount: the glassfs mount described (NULL = first) */
	char *wakeup_cmd;	/* --wakeup-cmd: a second profile (type wakeup) per window */
	char *oncpu_cmd;	/* --oncpu-cmd: an on-CPU profile (samples) per window */
	char *wall_cmd;		/* --wall-cmd: a wall-clock profile (us, sent as ns) per window */
	long glassfs_pid;	/* its daemon, for "{pid}" (0 = not found) */
	int us_to_ns;		/* profiler counts microseconds: send ns */
	json_t *labels;
	long interval, count, flush_timeout, max_backoff, http_timeout;
	uint64_t spool_max;
	char uuid[40];
	uint64_t seq;
	struct spool sp;
	pthread_mutex_t lock;		/* guards sp, producing_done */
	pthread_cond_t cond;
	int producing_done;
	uint64_t sent, duplicates, rejected;
};

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

static int64_t now_ns(int clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* ---- running commands --------------------------------------------------------- */

/* Run CMD under sh; collect stdout into *out.  A profiler (INTERRUPT set):
 * when stop_flag rises, the process group gets SIGINT (then SIGKILL after
 * 5 s).  A summary command runs to its end even then -- it is what the
 * last window's summaries come from -- but gets SIGKILL after 10 s once
 * stop_flag is up.  Returns the exit status (0 = success), or -errno. */
static int run_cmd_opt(const char *cmd, char **out, size_t *outlen, int interrupt)
{
	int pfd[2], status = 0;
	pid_t pid;
	char *buf = NULL;
	size_t len = 0, cap = 0;
	int signalled = 0;
	int64_t kill_at = 0;

	*out = NULL;
	*outlen = 0;
	if (pipe2(pfd, O_CLOEXEC))
		return -errno;
	if ((pid = fork()) < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return -errno;
	}
	if (pid == 0) {
		setpgid(0, 0);
		dup2(pfd[1], 1);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	setpgid(pid, pid);
	close(pfd[1]);
	for (;;) {
		struct pollfd p = { .fd = pfd[0], .events = POLLIN };
		int r = poll(&p, 1, 200);

		if (stop_flag && !signalled) {
			if (interrupt)
				kill(-pid, SIGINT);
			signalled = 1;
			kill_at = now_ns(CLOCK_MONOTONIC) + (interrupt ? 5000000000LL : 10000000000LL);
		}
		if (signalled && now_ns(CLOCK_MONOTONIC) > kill_at) {
			kill(-pid, SIGKILL);
			kill_at = INT64_MAX;
		}
		if (r < 0 && errno != EINTR)
			break;
		if (r <= 0)
			continue;
		if (len + 65536 > cap) {
			char *nb = realloc(buf, cap = cap ? cap * 2 : 131072);

			if (!nb)
				break;
			buf = nb;
		}
		ssize_t n = read(pfd[0], buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += n;
	}
	close(pfd[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (buf)
		buf[len] = 0;
	*out = buf;
	*outlen = len;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	/* Killed by the SIGINT we sent: its output still counts. */
	return interrupt && signalled && WIFSIGNALED(status) && WTERMSIG(status) == SIGINT ? 0 : 128;
}

static int run_cmd(const char *cmd, char **out, size_t *outlen)
{
	return run_cmd_opt(cmd, out, outlen, 1);
}

/* ---- building a window ---------------------------------------------------------- */

static int gzip_buf(const char *in, size_t len, unsigned char **out, size_t *outlen)
{
	z_stream zs = { 0 };
	size_t cap = compressBound(len) + 64;
	unsigned char *buf = malloc(cap);

	if (!buf || deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		free(buf);
		return -ENOMEM;
	}
	zs.next_in = (Bytef *)in;
	zs.avail_in = len;
	zs.next_out = buf;
	zs.avail_out = cap;
	if (deflate(&zs, Z_FINISH) != Z_STREAM_END) {
		deflateEnd(&zs);
		free(buf);
		return -EIO;
	}
	*outlen = cap - zs.avail_out;
	deflateEnd(&zs);
	*out = buf;
	return 0;
}

/* The glassfs mount the windows describe: --mount DIR, else the first
 * glassfs mount in /proc/mounts.  Its daemon is the glassfs process whose
 * command line names that mount point; the daemon's -o options become the
 * "mount_opts" label (/proc/mounts shows only FUSE's generic options, and
 * the point is locking=, dev_latency=, ...), and its pid replaces "{pid}"
 * in --profiler-cmd and --summary-cmd, so several glassfs mounts on one
 * machine (or one per network namespace, tests/aggregator/fleet-lib.sh)
 * each get their own agent.  Returns 0, or -ENOENT when no such mount. */
static int find_glassfs(const char *want, char *mnt, size_t mntlen, long *pid,
			char *opts, size_t optlen)
{
	char o[2048];

	*pid = 0;
	if (glassmount__find(want, mnt, mntlen, opts, optlen))
		return -ENOENT;
	*pid = glassmount__daemon(mnt, NULL, o, sizeof(o));
	if (*o)
		snprintf(opts, optlen, "%s", o);
	return 0;
}

/* Copy SRC to DST replacing "{interval}" and "{pid}". */
static void expand_cmd(const struct agent *a, const char *src, char *dst, size_t cap)
{
	size_t n = 0;

	while (*src && n + 32 < cap) {
		if (!strncmp(src, "{interval}", 10)) {
			n += snprintf(dst + n, cap - n, "%ld", a->interval);
			src += 10;
		} else if (!strncmp(src, "{pid}", 5)) {
			n += snprintf(dst + n, cap - n, "%ld", a->glassfs_pid);
			src += 5;
		} else
			dst[n++] = *src++;
	}
	dst[n] = 0;
}

/* Re-resolve the mount's daemon (it may have been restarted) and label
 * the window's options.  Keeps the last known values if it is gone. */
static void refresh_glassfs(struct agent *a)
{
	char mnt[4096], opts[2048];
	long pid;

	if (find_glassfs(a->mount, mnt, sizeof(mnt), &pid, opts, sizeof(opts)))
		return;
	if (pid)
		a->glassfs_pid = pid;
	json_object_set_new(a->labels, "mount_opts", json_string(opts));
}

/* Validate a command's output with the project's parser (the line is
 * named when it is bad): folded stacks, or `perf script` output, which is
 * collapsed to folded (so perf captures reach the aggregator too).
 * Convert microseconds to ns when us_to_ns, and append it as a profile of
 * TYPE in UNITS.  Takes OUT (frees it). */
static void add_profile(json_t *profiles, const char *type, const char *units,
			int us_to_ns, char *out, size_t outlen, const char *what)
{
	struct folded_set *set = folded_set_new();
	struct folded_error fe = { 0 };
	int perf = folded_is_perf_script(out, outlen);
	int prc = set ? folded_parse_any_buf(set, out, outlen, NULL, &fe) : -ENOMEM;

	if (prc == 0 && (us_to_ns || perf)) {
		/* glass-offcputime -f counts microseconds; the wire says ns */
		char *conv = NULL;
		size_t clen = 0;
		FILE *f = open_memstream(&conv, &clen);
		uint64_t mul = us_to_ns ? 1000 : 1;

		for (size_t i = 0; f && i < folded_set_size(set); i++) {
			const struct folded_stack *fs = folded_set_get(set, i);
			uint64_t c = fs->count > UINT64_MAX / mul ? UINT64_MAX : fs->count * mul;

			fprintf(f, "%s %llu\n", fs->stack, (unsigned long long)c);
		}
		if (f && !fclose(f)) {
			free(out);
			out = conv;
			outlen = clen;
		} else {
			free(conv);
			prc = -ENOMEM;
		}
	}
	folded_set_free(set);
	if (prc == 0)
		json_array_append_new(profiles, json_pack("{s:s, s:s, s:s#}", "type", type,
					"units", units, "folded", out, outlen));
	else if (fe.line)
		fprintf(stderr, "glass-agent: %s output line %lu: %s (profile dropped)\n",
			what, fe.line, fe.msg);
	free(out);
}

/* The wakeup command runs on its own thread, alongside the profiler. */
/* A side command (wakeup, lock, commit, on-CPU, wall-clock) run in its own
 * thread over the same window as the profiler. */
struct side_run {
	const char *cmd;	/* NULL: not running */
	char buf[4096];
	pthread_t th;
	char *out;
	size_t outlen;
	int rc;
};

static void *side_thread(void *arg)
{
	struct side_run *w = arg;

	w->rc = run_cmd(w->cmd, &w->out, &w->outlen);
	return NULL;
}

static void side_start(struct agent *a, struct side_run *r, const char *fmt)
{
	expand_cmd(a, fmt, r->buf, sizeof(r->buf));
	r->cmd = r->buf;
	if (pthread_create(&r->th, NULL, side_thread, r))
		r->cmd = NULL;
}

/* Wait for a side command: 0 when it exited 0, else says so (WHAT: its
 * name in the message) and returns its status. */
static int side_join(struct side_run *r, const char *what)
{
	pthread_join(r->th, NULL);
	if (r->rc)
		fprintf(stderr, "glass-agent: %s command exited with status %d: %s\n", what, r->rc, r->cmd);
	return r->rc;
}

/* Wait for a side command whose output is a profile: added to profiles as
 * TYPE in UNITS (us_to_ns: it prints microseconds), or dropped. */
static void side_join_profile(struct side_run *r, const char *what, json_t *profiles,
			      const char *type, const char *units, int us_to_ns)
{
	char label[64];

	snprintf(label, sizeof(label), "%s command", what);
	if (!side_join(r, what) && r->out && r->outlen)
		add_profile(profiles, type, units, us_to_ns, r->out, r->outlen, label);
	else
		free(r->out);
}

/* glass-lockstat -j output -> the window's "locks" (histograms dropped),
 * validated as glass-aggd validates it; also fills summaries.lock_wait_ns
 * per class when absent and adds a lockwait profile of the waiters'
 * stacks when there is none.  Invalid output is logged and ignored. */
static void add_locks(struct agent *a, json_t *w, json_t *profiles, json_t **summaries,
		      const char *out, size_t len)
{
	struct agg_limits lim = { .max_depth = 1024, .max_frame_len = 1024 };
	struct agg_window tmp = { 0 };
	json_error_t je;
	json_t *root = json_loadb(out, len, 0, &je), *c;
	char msg[256];
	size_t i;

	if (!json_is_object(root)) {
		fprintf(stderr, "glass-agent: lock command output is not a JSON object (line %d: %s)\n",
			je.line, je.text);
		json_decref(root);
		return;
	}
	json_array_foreach(json_object_get(root, "classes"), i, c) {
		json_object_del(c, "wait_hist");
		json_object_del(c, "hold_hist");
	}
	if (locks_parse(&tmp, root, &lim, msg, sizeof(msg))) {
		fprintf(stderr, "glass-agent: lock command output refused: %s\n", msg);
		agg_window_free(&tmp);
		json_decref(root);
		return;
	}
	if (tmp.lk.ncls && !(*summaries && json_object_get(*summaries, "lock_wait_ns"))) {
		json_t *by = json_object();

		for (i = 0; i < tmp.lk.ncls; i++) {
			json_t *v = json_object_get(by, tmp.lk.cls[i].cls);
			json_int_t sum = (v ? json_integer_value(v) : 0) + tmp.lk.cls[i].wait_ns;

			json_object_set_new(by, tmp.lk.cls[i].cls, json_integer(sum));
		}
		if (!*summaries)
			*summaries = json_object();
		json_object_set_new(*summaries, "lock_wait_ns", by);
	}
	if (tmp.lk.nstk && strcmp(a->type, "lockwait")) {
		char *buf = NULL;
		size_t blen = 0;
		FILE *f = open_memstream(&buf, &blen);

		for (i = 0; f && i < tmp.lk.nstk; i++)
			if (tmp.lk.stk[i].wait_ns > 0)
				fprintf(f, "%s;lock:%s %lld\n", tmp.lk.stk[i].fs.stack, tmp.lk.stk[i].cls,
					(long long)tmp.lk.stk[i].wait_ns);
		if (f && !fclose(f) && blen)
			json_array_append_new(profiles, json_pack("{s:s, s:s, s:s#}", "type", "lockwait",
						"units", "ns", "folded", buf, blen));
		free(buf);
	}
	json_object_set_new(w, "locks", root);
	agg_window_free(&tmp);
}

/* glass-commitlat -j's output as the window's summaries: commit_count, and
 * commit_p99_ns from its log2 histogram, capped at the largest commit seen
 * (a bucket's upper bound can lie far above it). */
static void add_commits(json_t **summaries, const char *out, size_t outlen)
{
	json_t *js = json_loadb(out, outlen, 0, NULL), *lat, *b;
	json_int_t n, total = 0, acc = 0, p99 = 0, max;
	size_t i;

	lat = json_object_get(js, "latency_ns");
	if (!json_is_integer(json_object_get(js, "commits")) || !json_is_object(lat)) {
		fprintf(stderr, "glass-agent: commit command output is not glass-commitlat -j's\n");
		json_decref(js);
		return;
	}
	n = json_integer_value(json_object_get(js, "commits"));
	max = json_integer_value(json_object_get(lat, "max"));
	json_array_foreach(json_object_get(lat, "hist"), i, b)
		total += json_integer_value(json_object_get(b, "count"));
	json_array_foreach(json_object_get(lat, "hist"), i, b) {
		acc += json_integer_value(json_object_get(b, "count"));
		p99 = json_integer_value(json_object_get(b, "hi"));
		if (total && acc * 100 >= total * 99)
			break;
	}
	if (max > 0 && p99 > max)
		p99 = max;
	if (!*summaries)
		*summaries = json_object();
	if (!json_object_get(*summaries, "commit_count"))
		json_object_set_new(*summaries, "commit_count", json_integer(n));
	if (total && !json_object_get(*summaries, "commit_p99_ns"))
		json_object_set_new(*summaries, "commit_p99_ns", json_integer(p99));
	json_decref(js);
}

/* Take one window: run the profiler (and the summary command), spool it.
 * Returns 0, or -1 when the window was empty or invalid (logged). */
static int take_window(struct agent *a)
{
	char cmd[4096], *out = NULL, *sum = NULL, *p;
	size_t outlen = 0, sumlen = 0;
	int64_t start = now_ns(CLOCK_REALTIME), t0 = now_ns(CLOCK_MONOTONIC), end;
	json_t *w, *profiles = json_array(), *summaries = NULL;
	int rc;

	/* the side commands: wakeup, lock, commit, on-CPU, wall-clock */
	struct side_run wk = { 0 }, lr = { 0 }, cr = { 0 }, oc = { 0 }, wl = { 0 };

	refresh_glassfs(a);
	/* The lock command watches the same window, alongside the profiler. */
	{
		const char *lc = a->lock_cmd;

		if (!lc && a->lock_default && a->glassfs_pid)
			lc = "glass-lockstat -p {pid} -d {interval} -s -j -n 20";
		if (lc && (a->glassfs_pid || !strstr(lc, "{pid}")))
			side_start(a, &lr, lc);
	}
	if (a->commit_default && a->glassfs_pid)
		side_start(a, &cr, "glass-commitlat -p {pid} -d {interval} -j");
	expand_cmd(a, a->profiler_cmd, cmd, sizeof(cmd));
	if (a->wakeup_cmd)
		side_start(a, &wk, a->wakeup_cmd);
	if (a->oncpu_cmd && (a->glassfs_pid || !strstr(a->oncpu_cmd, "{pid}")))
		side_start(a, &oc, a->oncpu_cmd);
	if (a->wall_cmd && (a->glassfs_pid || !strstr(a->wall_cmd, "{pid}")))
		side_start(a, &wl, a->wall_cmd);
	rc = run_cmd(cmd, &out, &outlen);
	if (rc)
		fprintf(stderr, "glass-agent: profiler command exited with status %d: %s\n", rc, cmd);
	/* Pace the windows: a command that returns early (recorded input)
	 * still yields one window per interval. */
	while (!stop_flag && now_ns(CLOCK_MONOTONIC) - t0 < a->interval * 1000000000LL)
		usleep(50000);
	end = now_ns(CLOCK_REALTIME);
	if (a->summary_cmd) {
		json_error_t je;

		expand_cmd(a, a->summary_cmd, cmd, sizeof(cmd));
		if (run_cmd_opt(cmd, &sum, &sumlen, 0) == 0 && sum) {
			summaries = json_loadb(sum, sumlen, 0, &je);
			if (!json_is_object(summaries)) {
				fprintf(stderr, "glass-agent: summary command output is not a JSON object\n");
				json_decref(summaries);
				summaries = NULL;
			}
		}
		free(sum);
	}
	if (cr.cmd) {
		if (!side_join(&cr, "commit") && cr.out && cr.outlen)
			add_commits(&summaries, cr.out, cr.outlen);
		free(cr.out);
	}
	if (lr.cmd)
		side_join(&lr, "lock");
	if (rc == 0 && out && outlen) {
		add_profile(profiles, a->type, a->units, a->us_to_ns, out, outlen, "profiler");
		out = NULL;	/* add_profile took it */
	}
	if (wk.cmd)
		side_join_profile(&wk, "wakeup", profiles, "wakeup", a->units, a->us_to_ns);
	if (oc.cmd)
		side_join_profile(&oc, "on-CPU", profiles, "oncpu", "samples", 0);
	/* glass-profile --wall prints microseconds: the wall type is ns */
	if (wl.cmd)
		side_join_profile(&wl, "wall-clock", profiles, "wall", "ns", 1);
	free(out);
	json_t *lk = json_object();	/* holds "locks" until w exists */

	if (lr.cmd && lr.rc == 0 && lr.out && lr.outlen)
		add_locks(a, lk, profiles, &summaries, lr.out, lr.outlen);
	free(lr.out);
	if (!json_array_size(profiles) && !summaries && !json_object_size(lk)) {
		json_decref(profiles);
		json_decref(lk);
		fprintf(stderr, "glass-agent: empty window, nothing to send\n");
		return -1;
	}
	a->seq++;
	char id[128];
	snprintf(id, sizeof(id), "%s-%s-%llu", a->host, a->uuid, (unsigned long long)a->seq);
	for (p = id; *p; p++)
		if (!(*p >= 'a' && *p <= 'z') && !(*p >= 'A' && *p <= 'Z') &&
		    !(*p >= '0' && *p <= '9') && !strchr("-_.:", *p))
			*p = '_';
	w = json_pack("{s:s, s:s, s:I, s:I, s:O, s:o}", "window_id", id, "host", a->host,
		      "start_ns", (json_int_t)start, "end_ns", (json_int_t)end,
		      "labels", a->labels, "profiles", profiles);
	if (summaries)
		json_object_set_new(w, "summaries", summaries);
	json_object_update(w, lk);
	json_decref(lk);
	char *body = json_dumps(w, JSON_COMPACT);
	unsigned char *gz = NULL;
	size_t gzlen = 0;

	json_decref(w);
	if (!body || gzip_buf(body, strlen(body), &gz, &gzlen)) {
		free(body);
		fprintf(stderr, "glass-agent: out of memory building a window\n");
		return -1;
	}
	free(body);
	pthread_mutex_lock(&a->lock);
	rc = spool_put(&a->sp, start, a->seq, gz, gzlen);
	pthread_cond_signal(&a->cond);
	pthread_mutex_unlock(&a->lock);
	free(gz);
	if (rc) {
		fprintf(stderr, "glass-agent: spool: %s (window %s lost)\n", strerror(-rc), id);
		return -1;
	}
	return 0;
}

/* ---- sending ---------------------------------------------------------------- */

static size_t sink(char *p, size_t sz, size_t n, void *arg)
{
	(void)p;
	(void)arg;
	return sz * n;
}

static int read_file(const char *path, char **buf, size_t *len)
{
	FILE *f = fopen(path, "rb");
	long n;

	if (!f)
		return -errno;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	*buf = malloc(n + 1);
	if (!*buf || fread(*buf, 1, n, f) != (size_t)n) {
		free(*buf);
		fclose(f);
		return -EIO;
	}
	fclose(f);
	*len = n;
	return 0;
}

/* POST one spooled window; returns the HTTP status or 0 on transport error. */
static long post(struct agent *a, CURL *c, const char *body, size_t len)
{
	struct curl_slist *h = NULL;
	char url[2048], auth[1100];
	long code = 0;

	snprintf(url, sizeof(url), "%s/api/v1/ingest", a->server);
	snprintf(auth, sizeof(auth), "Authorization: Bearer %s", a->token ? a->token : "");
	h = curl_slist_append(h, "Content-Type: application/json");
	h = curl_slist_append(h, "Content-Encoding: gzip");
	h = curl_slist_append(h, auth);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)len);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, a->http_timeout);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 5L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	curl_slist_free_all(h);
	return code;
}

static void *sender(void *arg)
{
	struct agent *a = arg;
	CURL *c = curl_easy_init();
	double backoff = 0;
	int64_t deadline = 0;
	unsigned seed = (unsigned)now_ns(CLOCK_MONOTONIC);

	for (;;) {
		char path[4096], *body = NULL;
		size_t len = 0;
		int rc;

		pthread_mutex_lock(&a->lock);
		rc = spool_oldest(&a->sp, path, sizeof(path));
		if (rc == -ENOENT && a->producing_done) {
			pthread_mutex_unlock(&a->lock);
			break;
		}
		if (rc) {
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 200000000;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			pthread_cond_timedwait(&a->cond, &a->lock, &ts);
			pthread_mutex_unlock(&a->lock);
			continue;
		}
		pthread_mutex_unlock(&a->lock);
		if (a->producing_done && !deadline)
			deadline = now_ns(CLOCK_MONOTONIC) + a->flush_timeout * 1000000000LL;
		if (deadline && now_ns(CLOCK_MONOTONIC) > deadline) {
			fprintf(stderr, "glass-agent: flush timeout: %zu windows stay spooled\n", a->sp.files);
			break;
		}
		if (read_file(path, &body, &len))
			continue;	/* removed meanwhile */
		long code = post(a, c, body, len);
		free(body);
		pthread_mutex_lock(&a->lock);
		if (code >= 200 && code < 300) {
			spool_remove(&a->sp, path);
			a->sent++;
			backoff = 0;
		} else if (code == 400 || code == 413 || code == 415) {
			fprintf(stderr, "glass-agent: aggregator refused %s (HTTP %ld): moved to rejected/\n",
				path, code);
			spool_reject(&a->sp, path);
			a->rejected++;
		} else {
			backoff = backoff ? backoff * 2 : 0.2;
			if (backoff > a->max_backoff)
				backoff = a->max_backoff;
		}
		pthread_mutex_unlock(&a->lock);
		if (backoff && !(code >= 200 && code < 300)) {
			/* full jitter: sleep uniformly in [backoff/2, backoff] */
			double s = backoff / 2 + (backoff / 2) * (rand_r(&seed) / (double)RAND_MAX);
			int64_t until = now_ns(CLOCK_MONOTONIC) + (int64_t)(s * 1e9);

			if (code)
				fprintf(stderr, "glass-agent: aggregator answered HTTP %ld; retry in %.1fs\n", code, s);
			else
				fprintf(stderr, "glass-agent: aggregator unreachable; retry in %.1fs (%zu spooled)\n",
					s, a->sp.files);
			while (now_ns(CLOCK_MONOTONIC) < until &&
			       !(deadline && now_ns(CLOCK_MONOTONIC) > deadline))
				usleep(20000);
		}
	}
	curl_easy_cleanup(c);
	return NULL;
}

/* ---- main ------------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
"usage: glass-agent [options]\n"
"  --server URL            aggregator (default http://127.0.0.1:7470)\n"
"  --token-file FILE       bearer token (first line)\n"
"  --interval SECONDS      window length (default 10)\n"
"  --profiler-cmd CMD      folded-stack producer; {interval} is replaced, and\n"
"                          {pid} by the pid of the glassfs daemon of --mount\n"
"                          (default with a glassfs daemon found:\n"
"                          \"glass-offcputime -f --no-idle -p {pid} -d {interval}\",\n"
"                          else \"glass-offcputime -f -d {interval}\": every process)\n"
"  --profile-type TYPE     offcpu|wakeup|lockwait|oncpu|wall (default offcpu)\n"
"  --wakeup-cmd CMD        also run CMD (same substitutions, same units) alongside\n"
"                          the profiler; its folded output is the window's wakeup\n"
"                          profile (e.g. glass-offcputime --wakeup -f -d {interval})\n"
"  --oncpu-cmd CMD         also run CMD alongside the profiler; its folded output\n"
"                          (samples) is the window's oncpu profile, e.g.\n"
"                          \"glass-profile -f -p {pid} -d {interval}\"\n"
"  --wall-cmd CMD          also run CMD alongside the profiler; its folded output\n"
"                          (microseconds, sent as ns) is the window's wall\n"
"                          profile, e.g.\n"
"                          \"glass-profile --wall -f -p {pid} -d {interval}\"\n"
"  --units ns|us|samples   units of the profiler's counts; us is sent as ns\n"
"                          (default us for the default command, else ns)\n"
"  --summary-cmd CMD       prints a JSON object for \"summaries\" ({interval} and\n"
"                          {pid} are replaced).  Default with the default\n"
"                          profiler and a glassfs daemon found:\n"
"                          commit_count and commit_p99_ns from\n"
"                          \"glass-commitlat -p {pid} -d {interval} -j\",\n"
"                          run alongside the profiler\n"
"  --mount DIR             the glassfs mount this agent describes (default: the\n"
"                          first one): its daemon's -o options label windows\n"
"                          as mount_opts, its pid is {pid}\n"
"  --lock-cmd CMD          prints glass-lockstat -j JSON for the window, run\n"
"                          alongside the profiler ({interval} and {pid} are\n"
"                          replaced).  Default with the default profiler and\n"
"                          a glassfs daemon found:\n"
"                          \"glass-lockstat -p {pid} -d {interval} -s -j -n 20\"\n"
"  --no-locks              no lock command\n"
"  --host NAME             host label (default: hostname)\n"
"  --label K=V             extra label (repeatable)\n"
"  --spool DIR             on-disk queue (default /var/lib/glass-agent/spool)\n"
"  --spool-max-bytes N     bound of the queue (default 67108864)\n"
"  --count N               stop after N windows (default 0 = run forever)\n"
"  --flush-timeout SECONDS delivery time allowed at shutdown (default 5)\n"
"  --max-backoff SECONDS   longest retry delay (default 60)\n");
}

static char *read_token(const char *path)
{
	FILE *f = fopen(path, "r");
	char line[1024];

	if (!f)
		return NULL;
	if (!fgets(line, sizeof(line), f)) {
		fclose(f);
		return NULL;
	}
	fclose(f);
	line[strcspn(line, "\r\n")] = 0;
	return strdup(line);
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "--version")) {
		printf("glass-agent %s\n", GLASSFS_VERSION);
		return 0;
	}
	static const struct option lo[] = {
		{ "server", 1, 0, 's' }, { "token-file", 1, 0, 't' }, { "interval", 1, 0, 'i' },
		{ "profiler-cmd", 1, 0, 'p' }, { "profile-type", 1, 0, 'T' }, { "units", 1, 0, 'u' },
		{ "summary-cmd", 1, 0, 'S' }, { "host", 1, 0, 'H' }, { "label", 1, 0, 'l' },
		{ "spool", 1, 0, 'd' }, { "spool-max-bytes", 1, 0, 'm' }, { "count", 1, 0, 'c' },
		{ "flush-timeout", 1, 0, 'f' }, { "max-backoff", 1, 0, 'b' }, { "mount", 1, 0, 'M' },
		{ "wakeup-cmd", 1, 0, 'W' }, { "oncpu-cmd", 1, 0, 'O' }, { "wall-cmd", 1, 0, 'A' }, { "lock-cmd", 1, 0, 'L' }, { "no-locks", 0, 0, 'N' },
		{ "help", 0, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	struct agent a = {
		.server = "http://127.0.0.1:7470", .interval = 10,
		.profiler_cmd = "glass-offcputime -f -d {interval}", .type = "offcpu", .units = "ns",
		.spool_dir = "/var/lib/glass-agent/spool", .spool_max = 64ULL << 20,
		.flush_timeout = 5, .max_backoff = 60, .http_timeout = 30,
	};
	char hostname[256], *tokfile = NULL, *e;
	int custom_cmd = 0, units_given = 0, no_locks = 0;
	struct utsname un;
	pthread_t th;
	int ch, rc;

	a.labels = json_object();
	while ((ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (ch) {
		case 's': a.server = optarg; break;
		case 't': tokfile = optarg; break;
		case 'i': a.interval = strtol(optarg, &e, 10);
			if (*e || a.interval < 1) { fprintf(stderr, "glass-agent: --interval: want seconds >= 1\n"); return 2; }
			break;
		case 'p': a.profiler_cmd = optarg; custom_cmd = 1; break;
		case 'T': a.type = optarg;
			if (strcmp(a.type, "offcpu") && strcmp(a.type, "wakeup") && strcmp(a.type, "lockwait") && strcmp(a.type, "oncpu") &&
			    strcmp(a.type, "wall")) {
				fprintf(stderr, "glass-agent: --profile-type: offcpu, wakeup, lockwait, oncpu or wall\n");
				return 2;
			}
			break;
		case 'u': a.units = optarg; units_given = 1;
			if (strcmp(a.units, "ns") && strcmp(a.units, "us") && strcmp(a.units, "samples")) {
				fprintf(stderr, "glass-agent: --units: ns, us or samples\n");
				return 2;
			}
			break;
		case 'S': a.summary_cmd = optarg; break;
		case 'L': a.lock_cmd = optarg; no_locks = 0; break;
		case 'N': no_locks = 1; a.lock_cmd = NULL; break;
		case 'M': a.mount = optarg; break;
		case 'W': a.wakeup_cmd = optarg; break;
		case 'O': a.oncpu_cmd = optarg; break;
		case 'A': a.wall_cmd = optarg; break;
		case 'H': a.host = optarg; break;
		case 'l': {
			char *eq = strchr(optarg, '=');

			if (!eq || eq == optarg) {
				fprintf(stderr, "glass-agent: --label %s: want KEY=VALUE\n", optarg);
				return 2;
			}
			*eq = 0;
			json_object_set_new(a.labels, optarg, json_string(eq + 1));
			break;
		}
		case 'd': a.spool_dir = optarg; break;
		case 'm': a.spool_max = strtoull(optarg, &e, 10);
			if (*e || !a.spool_max) { fprintf(stderr, "glass-agent: --spool-max-bytes: want bytes\n"); return 2; }
			break;
		case 'c': a.count = strtol(optarg, &e, 10);
			if (*e || a.count < 0) { fprintf(stderr, "glass-agent: --count: want N >= 0\n"); return 2; }
			break;
		case 'f': a.flush_timeout = strtol(optarg, &e, 10);
			if (*e || a.flush_timeout < 0) { fprintf(stderr, "glass-agent: --flush-timeout: want seconds\n"); return 2; }
			break;
		case 'b': a.max_backoff = strtol(optarg, &e, 10);
			if (*e || a.max_backoff < 1) { fprintf(stderr, "glass-agent: --max-backoff: want seconds >= 1\n"); return 2; }
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (a.wakeup_cmd && !strcmp(a.type, "wakeup")) {
		fprintf(stderr, "glass-agent: --wakeup-cmd adds the wakeup profile: --profile-type must not be wakeup too\n");
		return 2;
	}
	if (a.oncpu_cmd && !strcmp(a.type, "oncpu")) {
		fprintf(stderr, "glass-agent: --oncpu-cmd adds the oncpu profile: --profile-type must not be oncpu too\n");
		return 2;
	}
	if (a.wall_cmd && !strcmp(a.type, "wall")) {
		fprintf(stderr, "glass-agent: --wall-cmd adds the wall profile: --profile-type must not be wall too\n");
		return 2;
	}
	/* glass-offcputime -f prints microseconds; other commands say their units. */
	if (!custom_cmd && !strcmp(a.units, "ns") && !units_given)
		a.units = "us";
	a.lock_default = !custom_cmd && !no_locks && !a.lock_cmd;
	a.commit_default = !custom_cmd && !a.summary_cmd;
	if (!strcmp(a.units, "us")) {
		a.us_to_ns = 1;
		a.units = "ns";
	}
	if (optind < argc) {
		fprintf(stderr, "glass-agent: unexpected argument \"%s\"\n", argv[optind]);
		return 2;
	}
	if (tokfile && !(a.token = read_token(tokfile))) {
		fprintf(stderr, "glass-agent: --token-file %s: cannot read a token\n", tokfile);
		return 1;
	}
	if (!a.host) {
		if (gethostname(hostname, sizeof(hostname)))
			strcpy(hostname, "unknown");
		hostname[sizeof(hostname) - 1] = 0;
		a.host = hostname;
	}
	json_object_set_new(a.labels, "host", json_string(a.host));
	if (!uname(&un) && !json_object_get(a.labels, "kernel"))
		json_object_set_new(a.labels, "kernel", json_string(un.release));
	{
		char mnt[4096], opts[2048];

		if (find_glassfs(a.mount, mnt, sizeof(mnt), &a.glassfs_pid, opts, sizeof(opts)) == 0)
			json_object_set_new(a.labels, "mount_opts", json_string(opts));
		else if (a.mount) {
			fprintf(stderr, "glass-agent: --mount %s: not a mounted glassfs\n", a.mount);
			return 1;
		}
		/* The default profiles the glassfs daemon when there is one
		 * (its stacks are what the dashboards read), else every process. */
		if (!custom_cmd && a.glassfs_pid)
			a.profiler_cmd = "glass-offcputime -f --no-idle -p {pid} -d {interval}";
		else if (!custom_cmd)
			fprintf(stderr, "glass-agent: no glassfs mount found: profiling every process\n");
		if (!a.glassfs_pid && (strstr(a.profiler_cmd, "{pid}") ||
				       (a.summary_cmd && strstr(a.summary_cmd, "{pid}")) ||
				       (a.lock_cmd && strstr(a.lock_cmd, "{pid}")))) {
			fprintf(stderr, "glass-agent: {pid} in a command, but no glassfs daemon %s%s found\n",
				a.mount ? "for " : "", a.mount ? a.mount : "");
			return 1;
		}
	}
	{
		FILE *u = fopen("/proc/sys/kernel/random/uuid", "r");

		if (!u || !fgets(a.uuid, sizeof(a.uuid), u))
			snprintf(a.uuid, sizeof(a.uuid), "%llx%x", (unsigned long long)now_ns(CLOCK_REALTIME),
				 (unsigned)getpid());
		if (u)
			fclose(u);
		a.uuid[strcspn(a.uuid, "\n")] = 0;
	}
	if ((rc = spool_open(&a.sp, a.spool_dir, a.spool_max))) {
		fprintf(stderr, "glass-agent: --spool %s: %s\n", a.spool_dir, strerror(-rc));
		return 1;
	}
	if (a.sp.files)
		fprintf(stderr, "glass-agent: %zu windows waiting in %s\n", a.sp.files, a.spool_dir);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	pthread_mutex_init(&a.lock, NULL);
	pthread_cond_init(&a.cond, NULL);
	if (pthread_create(&th, NULL, sender, &a)) {
		fprintf(stderr, "glass-agent: cannot start the sender thread\n");
		return 1;
	}
	for (long n = 0; !stop_flag && (!a.count || n < a.count); n++)
		take_window(&a);
	pthread_mutex_lock(&a.lock);
	a.producing_done = 1;
	pthread_cond_signal(&a.cond);
	pthread_mutex_unlock(&a.lock);
	pthread_join(th, NULL);
	fprintf(stderr, "glass-agent: %llu windows delivered (%llu rejected), %zu still spooled, %llu dropped\n",
		(unsigned long long)a.sent, (unsigned long long)a.rejected, a.sp.files,
		(unsigned long long)a.sp.dropped);
	spool_close(&a.sp);
	json_decref(a.labels);
	free(a.token);
	curl_global_cleanup();
	return 0;
}
