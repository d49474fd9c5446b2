/*
 * http.c — glass-aggd's HTTP front: routing, bearer-token auth, body
 * limits, content encodings, static files.  libmicrohttpd runs an epoll
 * internal thread pool; each request is handled on one pool thread.
 *
 * A POST body is collected in the connection's state up to max_body bytes;
 * past that the rest is drained and the request answered 413 (a declared
 * Content-Length over the limit is refused before any body is read).
 */
#include "aggregator/aggd.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <jansson.h>
#include <microhttpd.h>

struct req {
	char *body;
	size_t len, cap;
	int too_large;
	int counted;
};

static enum MHD_Result send_buf(struct MHD_Connection *c, int status, const char *ctype,
				char *body, size_t len, int owned)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body,
		owned ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ret;

	if (!r) {
		if (owned)
			free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", ctype);
	MHD_add_response_header(r, "Cache-Control", "no-store");
	if (status == 401)
		MHD_add_response_header(r, "WWW-Authenticate", "Bearer realm=\"glass-aggd\"");
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result send_json_error(struct MHD_Connection *c, int status, const char *msg)
{
	json_t *o = json_pack("{s:s, s:i}", "error", msg, "status", status);
	char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;

	json_decref(o);
	if (!s)
		return MHD_NO;
	return send_buf(c, status, "application/json", s, strlen(s), 1);
}

static enum MHD_Result reject(struct aggd *d, struct MHD_Connection *c, int reason,
			      int status, const char *msg)
{
	atomic_fetch_add(&d->m.rejected[reason], 1);
	return send_json_error(c, status, msg);
}

/* ---- static files ------------------------------------------------------------ */

static const char *ctype_of(const char *path)
{
	static const struct { const char *ext, *type; } types[] = {
		{ ".html", "text/html; charset=utf-8" }, { ".htm", "text/html; charset=utf-8" },
		{ ".js", "text/javascript; charset=utf-8" }, { ".mjs", "text/javascript; charset=utf-8" },
		{ ".css", "text/css; charset=utf-8" }, { ".json", "application/json" },
		{ ".svg", "image/svg+xml" }, { ".png", "image/png" }, { ".ico", "image/x-icon" },
		{ ".txt", "text/plain; charset=utf-8" }, { ".map", "application/json" },
		{ ".woff2", "font/woff2" }, { ".wasm", "application/wasm" },
	};
	const char *dot = strrchr(path, '.');

	for (size_t i = 0; dot && i < sizeof(types) / sizeof(types[0]); i++)
		if (!strcasecmp(dot, types[i].ext))
			return types[i].type;
	return "application/octet-stream";
}

static enum MHD_Result serve_static(struct aggd *d, struct MHD_Connection *c, const char *url)
{
	char path[PATH_MAX], real[PATH_MAX], root[PATH_MAX];
	struct MHD_Response *r;
	struct stat st;
	enum MHD_Result ret;
	int fd;

	if (!d->cfg.ui || !realpath(d->cfg.ui, root))
		return send_json_error(c, 404, "no UI directory (--ui DIR)");
	/* No "..", no backslashes, no NUL: then resolve and check the prefix. */
	if (strstr(url, "..") || strchr(url, '\\') || url[0] != '/')
		return send_json_error(c, 404, "not found");
	if (snprintf(path, sizeof(path), "%s%s", root, url) >= (int)sizeof(path))
		return send_json_error(c, 404, "not found");
	if (!stat(path, &st) && S_ISDIR(st.st_mode))
		strncat(path, path[strlen(path) - 1] == '/' ? "index.html" : "/index.html",
			sizeof(path) - strlen(path) - 1);
	if (!realpath(path, real) || strncmp(real, root, strlen(root)) ||
	    (real[strlen(root)] != '/' && real[strlen(root)] != 0))
		return send_json_error(c, 404, "not found");
	if ((fd = open(real, O_RDONLY | O_CLOEXEC)) < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		if (fd >= 0)
			close(fd);
		return send_json_error(c, 404, "not found");
	}
	if (!(r = MHD_create_response_from_fd((uint64_t)st.st_size, fd))) {
		close(fd);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", ctype_of(real));
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	ret = MHD_queue_response(c, 200, r);
	MHD_destroy_response(r);
	return ret;
}

/* ---- auth ------------------------------------------------------------------- */

static int authorized(struct aggd *d, struct MHD_Connection *c)
{
	const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");

	if (d->cfg.no_auth)
		return 1;
	if (!h || strncasecmp(h, "Bearer ", 7))
		return 0;
	h += 7;
	while (*h == ' ')
		h++;
	return aggd_token_ok(d, h);
}

/* ---- ingest ----------------------------------------------------------------- */

static const char *arg(struct MHD_Connection *c, const char *k)
{
	return MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, k);
}

static int classify(const char *msg)
{
	if (!strncmp(msg, "malformed JSON", 14))
		return REJ_BAD_JSON;
	if (strstr(msg, ": line "))
		return REJ_BAD_FOLDED;
	return REJ_INVALID;
}

static enum MHD_Result handle_ingest(struct aggd *d, struct MHD_Connection *c, struct req *rq,
				     int pyroscope)
{
	const char *enc = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Encoding");
	char msg[512], *body = rq->body, *plain = NULL;
	size_t len = rq->len;
	struct agg_window w;
	int rc, dup;

	if (!authorized(d, c))
		return reject(d, c, REJ_UNAUTHORIZED, 401, "unknown or missing bearer token");
	if (rq->too_large) {
		snprintf(msg, sizeof(msg), "body exceeds %zu bytes", d->cfg.lim.max_body);
		return reject(d, c, REJ_TOO_LARGE, 413, msg);
	}
	if (enc && *enc && strcasecmp(enc, "identity")) {
		if (strcasecmp(enc, "gzip") && strcasecmp(enc, "x-gzip"))
			return reject(d, c, REJ_BAD_ENCODING, 415,
				      "Content-Encoding: only gzip or identity are accepted");
		rc = ingest_gunzip(rq->body, rq->len, d->cfg.lim.max_decoded, &plain, &len,
				   msg, sizeof(msg));
		if (rc == -E2BIG)
			return reject(d, c, REJ_TOO_LARGE, 413, msg);
		if (rc == -ENOMEM)
			return send_json_error(c, 503, "out of memory");
		if (rc)
			return reject(d, c, REJ_BAD_ENCODING, 400, msg);
		body = plain;
	} else if (len > d->cfg.lim.max_decoded) {
		snprintf(msg, sizeof(msg), "body exceeds %zu bytes", d->cfg.lim.max_decoded);
		return reject(d, c, REJ_TOO_LARGE, 413, msg);
	}
	if (!body)
		body = "";
	if (pyroscope) {
		struct pyro_params p = {
			.name = arg(c, "name"), .from = arg(c, "from"), .until = arg(c, "until"),
			.format = arg(c, "format"), .units = arg(c, "units"),
			.aggregation = arg(c, "aggregationType"), .sample_rate = arg(c, "sampleRate"),
			.spy = arg(c, "spyName"), .sample_type = arg(c, "sampleType"),
			.content_type = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type"),
		};
		rc = ingest_pyroscope(&p, body, len, &d->cfg.lim, &w, msg, sizeof(msg));
	} else
		rc = ingest_agent_json(body, len, &d->cfg.lim, &w, msg, sizeof(msg));
	free(plain);
	if (rc == -ENOMEM)
		return send_json_error(c, 503, "out of memory");
	if (rc == -E2BIG)	/* a gzip'ed pprof inside past --max-decoded: as Content-Encoding */
		return reject(d, c, REJ_TOO_LARGE, 413, msg);
	if (rc)
		return reject(d, c, classify(msg), 400, msg);

	int64_t t0 = agg_now_ns();
	size_t nstacks = 0;

	for (size_t i = 0; i < w.nprof; i++)
		nstacks += folded_set_size(w.prof[i].set);
	atomic_fetch_add(&d->m.write_waiters, 1);
	rc = d->store->ops->put(d->store, &w, &dup);
	atomic_fetch_sub(&d->m.write_waiters, 1);
	metrics_observe(&d->m.store_write, agg_now_ns() - t0);
	if (rc) {
		agg_window_free(&w);
		return reject(d, c, REJ_STORE, 503, "store write failed; retry later");
	}
	atomic_fetch_add(&d->m.ingest_requests[pyroscope], 1);
	if (dup)
		atomic_fetch_add(&d->m.ingest_duplicates, 1);
	else {
		atomic_fetch_add(&d->m.ingest_windows, 1);
		atomic_fetch_add(&d->m.ingest_stacks, nstacks);
		fleetm_observe(&d->fm, &w);
	}
	json_t *o = json_pack("{s:s, s:s, s:I}", "status", dup ? "duplicate" : "stored",
			      "window_id", w.window_id, "stacks", (json_int_t)nstacks);
	char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;

	json_decref(o);
	agg_window_free(&w);
	if (!s)
		return MHD_NO;
	return send_buf(c, 200, "application/json", s, strlen(s), 1);
}

/* ---- dispatch --------------------------------------------------------------- */

static const char *qget(void *ctx, const char *k)
{
	return MHD_lookup_connection_value(ctx, MHD_GET_ARGUMENT_KIND, k);
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url,
			       const char *method, const char *version, const char *upload,
			       size_t *upload_size, void **con_cls)
{
	struct aggd *d = cls;
	struct req *rq = *con_cls;
	int post = !strcmp(method, "POST"), get = !strcmp(method, "GET") || !strcmp(method, "HEAD");
	int ingest = !strcmp(url, "/api/v1/ingest") || !strcmp(url, "/ingest");

	(void)version;
	if (!rq) {
		if (!(rq = calloc(1, sizeof(*rq))))
			return MHD_NO;
		*con_cls = rq;
		atomic_fetch_add(&d->m.inflight, 1);
		rq->counted = 1;
		if (post && ingest) {
			const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");

			if (cl && strtoull(cl, NULL, 10) > d->cfg.lim.max_body) {
				char msg[128];

				snprintf(msg, sizeof(msg), "body exceeds %zu bytes", d->cfg.lim.max_body);
				return reject(d, c, REJ_TOO_LARGE, 413, msg);
			}
		}
		return MHD_YES;
	}
	if (*upload_size) {
		if (!rq->too_large && rq->len + *upload_size > d->cfg.lim.max_body) {
			rq->too_large = 1;
			free(rq->body);
			rq->body = NULL;
			rq->len = rq->cap = 0;
		}
		if (!rq->too_large) {
			if (rq->len + *upload_size + 1 > rq->cap) {
				size_t nc = rq->cap ? rq->cap : 65536;
				char *nb;

				while (nc < rq->len + *upload_size + 1)
					nc *= 2;
				if (!(nb = realloc(rq->body, nc)))
					return MHD_NO;
				rq->body = nb;
				rq->cap = nc;
			}
			memcpy(rq->body + rq->len, upload, *upload_size);
			rq->len += *upload_size;
			rq->body[rq->len] = 0;
		}
		*upload_size = 0;
		return MHD_YES;
	}
	if (post && ingest)
		return handle_ingest(d, c, rq, !strcmp(url, "/ingest"));
	if (ingest)
		return reject(d, c, REJ_BAD_METHOD, 405, "ingest takes POST");
	if (!get)
		return reject(d, c, REJ_BAD_METHOD, 405, "method not allowed");
	if (!strcmp(url, "/healthz")) {
		struct store_stats st;

		if (d->store->ops->stats(d->store, &st))
			return send_buf(c, 503, "text/plain", "store unavailable\n", 18, 0);
		return send_buf(c, 200, "text/plain", "ok\n", 3, 0);
	}
	if (!strcmp(url, "/metrics")) {
		size_t len;
		char *m = metrics_render(d, &len);

		if (!m)
			return send_json_error(c, 500, "out of memory");
		return send_buf(c, 200, "text/plain; version=0.0.4", m, len, 1);
	}
	if (!strncmp(url, "/api/", 5)) {
		struct qresult r;

		if (query_dispatch(d, url, qget, c, &r) == -ENOENT)
			return send_json_error(c, 404, "no such API endpoint");
		if (!r.body)
			return send_json_error(c, 500, "out of memory");
		return send_buf(c, r.status, r.ctype, r.body, r.len, 1);
	}
	return serve_static(d, c, url);
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
		      enum MHD_RequestTerminationCode toe)
{
	struct aggd *d = cls;
	struct req *rq = *con_cls;

	(void)c;
	(void)toe;
	if (!rq)
		return;
	if (rq->counted)
		atomic_fetch_sub(&d->m.inflight, 1);
	free(rq->body);
	free(rq);
	*con_cls = NULL;
}

struct MHD_Daemon *http_start(struct aggd *d, char *msg, size_t msglen)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	char host[256];
	const char *colon = strrchr(d->cfg.listen, ':');
	struct MHD_Daemon *md;
	long port;
	char *e;

	if (!colon || (size_t)(colon - d->cfg.listen) >= sizeof(host)) {
		snprintf(msg, msglen, "--listen %s: want HOST:PORT", d->cfg.listen);
		return NULL;
	}
	memcpy(host, d->cfg.listen, colon - d->cfg.listen);
	host[colon - d->cfg.listen] = 0;
	port = strtol(colon + 1, &e, 10);
	if (*e || port < 0 || port > 65535 ||
	    inet_pton(AF_INET, *host ? host : "0.0.0.0", &sa.sin_addr) != 1) {
		snprintf(msg, msglen, "--listen %s: want IPv4-ADDRESS:PORT", d->cfg.listen);
		return NULL;
	}
	sa.sin_port = htons((uint16_t)port);
	/* No SO_REUSEPORT (MHD_OPTION_LISTENING_ADDRESS_REUSE): with it a
	 * second glass-aggd on the same address starts and the kernel splits
	 * the ingests between two stores.  Bind once ourselves, so "address
	 * in use" is this errno and not a guess after the fact. */
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 128)) {
		int e = errno;

		if (fd >= 0)
			close(fd);
		snprintf(msg, msglen, "cannot listen on %s: %s%s", d->cfg.listen, strerror(e),
			 e == EADDRINUSE ? " (another glass-aggd, or another program, listens there)" : "");
		return NULL;
	}
	md = MHD_start_daemon(MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG,
			      (uint16_t)port, NULL, NULL, handler, d,
			      MHD_OPTION_LISTEN_SOCKET, fd,
			      MHD_OPTION_THREAD_POOL_SIZE, (unsigned)d->cfg.threads,
			      MHD_OPTION_CONNECTION_TIMEOUT, 30U,
			      MHD_OPTION_CONNECTION_LIMIT, 1000U,
			      MHD_OPTION_NOTIFY_COMPLETED, completed, d,
			      MHD_OPTION_END);
	if (!md) {
		snprintf(msg, msglen, "cannot listen on %s: %s", d->cfg.listen, strerror(errno));
		close(fd);
	}
	return md;
}
