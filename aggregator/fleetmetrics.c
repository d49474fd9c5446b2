/*
 * fleetmetrics.c — the fleet's own series on glass-aggd's /metrics, one
 * per host (label host=...), so Prometheus and Grafana see the hosts the
 * way the web UI does:
 *
 *   glass_host_windows_total{host}                       windows stored
 *   glass_host_last_window_timestamp_seconds{host}       end of the newest
 *   glass_host_offcpu_seconds_total{host}                off-CPU time (ns profiles)
 *   glass_host_lock_wait_seconds_total{host,class}       summaries.lock_wait_ns
 *   glass_host_lock_level_wait_seconds_total{host,class,level}
 *   glass_host_lock_contended_total{host,class,level}    the lock detail (level
 *                                                        -1: not a node lock)
 *   glass_host_commit_p99_seconds{host}                  newest window's p99
 *   glass_host_commits_total{host}
 *   glass_host_trim_stall_seconds_total{host}
 *   glass_host_series_dropped_total                      refused by the bounds
 *
 * Counted when a window is stored (never for a duplicate), in memory: the
 * counters restart at zero with glass-aggd, which Prometheus's rate()
 * expects.  Bounds: FM_MAX_HOSTS hosts, FM_MAX_LOCKS lock series a host;
 * past them a series is dropped and counted.  Work per window: one scan
 * of the host list (strcmp) and of that host's lock series.
 */
#include "aggregator/aggd.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define FM_MAX_HOSTS	10000
#define FM_MAX_LOCKS	256
#define NO_LEVEL	INT_MIN		/* a summaries.lock_wait_ns series */

struct fm_lock {
	char *cls;
	int level;
	uint64_t wait_ns, contended;
};

struct fleetm_host {
	char *host;
	uint64_t windows, offcpu_ns, commits, trim_ns;
	int64_t p99_ns, last_end_ns;	/* -1: never reported */
	struct fm_lock *lk;
	size_t nlk;
};

static struct fleetm_host *host_get(struct fleetm *fm, const char *host)
{
	struct fleetm_host *h;

	for (size_t i = 0; i < fm->n; i++)
		if (!strcmp(fm->v[i].host, host))
			return &fm->v[i];
	if (fm->n >= FM_MAX_HOSTS)
		return NULL;
	if (fm->n == fm->cap) {
		size_t nc = fm->cap ? fm->cap * 2 : 16;
		struct fleetm_host *nv = realloc(fm->v, nc * sizeof(*nv));

		if (!nv)
			return NULL;
		fm->v = nv;
		fm->cap = nc;
	}
	h = &fm->v[fm->n];
	memset(h, 0, sizeof(*h));
	if (!(h->host = strdup(host)))
		return NULL;
	h->p99_ns = -1;
	fm->n++;
	return h;
}

static struct fm_lock *lock_get(struct fleetm_host *h, const char *cls, int level)
{
	struct fm_lock *nv;

	for (size_t i = 0; i < h->nlk; i++)
		if (h->lk[i].level == level && !strcmp(h->lk[i].cls, cls))
			return &h->lk[i];
	if (h->nlk >= FM_MAX_LOCKS || !(nv = realloc(h->lk, (h->nlk + 1) * sizeof(*nv))))
		return NULL;
	h->lk = nv;
	memset(&nv[h->nlk], 0, sizeof(*nv));
	if (!(nv[h->nlk].cls = strdup(cls)))
		return NULL;
	nv[h->nlk].level = level;
	return &h->lk[h->nlk++];
}

void fleetm_observe(struct fleetm *fm, const struct agg_window *w)
{
	struct fleetm_host *h;

	pthread_mutex_lock(&fm->lock);
	if (!(h = host_get(fm, w->host))) {
		fm->dropped++;
		goto out;
	}
	h->windows++;
	if (w->end_ns > h->last_end_ns)
		h->last_end_ns = w->end_ns;
	for (size_t i = 0; i < w->nprof; i++)
		if (w->prof[i].type == PT_OFFCPU && w->prof[i].units == UNITS_NS)
			h->offcpu_ns += folded_set_total(w->prof[i].set);
	if (w->commit_p99_ns >= 0 && w->end_ns >= h->last_end_ns)
		h->p99_ns = w->commit_p99_ns;
	if (w->commit_count > 0)
		h->commits += (uint64_t)w->commit_count;
	if (w->trim_stall_ns > 0)
		h->trim_ns += (uint64_t)w->trim_stall_ns;
	for (size_t i = 0; i < w->nlocks; i++) {
		struct fm_lock *l = lock_get(h, w->locks[i].cls, NO_LEVEL);

		if (l)
			l->wait_ns += (uint64_t)w->locks[i].ns;
		else
			fm->dropped++;
	}
	for (size_t i = 0; i < w->lk.ncls; i++) {
		const struct agg_lockclass *c = &w->lk.cls[i];
		struct fm_lock *l = lock_get(h, c->cls, c->level);

		if (!l) {
			fm->dropped++;
			continue;
		}
		l->wait_ns += (uint64_t)c->wait_ns;
		l->contended += (uint64_t)c->contended;
	}
out:
	pthread_mutex_unlock(&fm->lock);
}

/* A label value in the text format: \ " and newline escaped. */
static void label(FILE *f, const char *v)
{
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			fprintf(f, "\\%c", *v);
		else if (*v == '\n')
			fputs("\\n", f);
		else
			fputc(*v, f);
	}
}

static void head(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void series(FILE *f, const char *name, const struct fleetm_host *h)
{
	fprintf(f, "%s{host=\"", name);
	label(f, h->host);
	fputs("\"", f);
}

void fleetm_render(struct fleetm *fm, FILE *f)
{
	pthread_mutex_lock(&fm->lock);
	head(f, "glass_host_windows_total", "counter", "Profile windows stored per host since glass-aggd started.");
	for (size_t i = 0; i < fm->n; i++) {
		series(f, "glass_host_windows_total", &fm->v[i]);
		fprintf(f, "} %llu\n", (unsigned long long)fm->v[i].windows);
	}
	head(f, "glass_host_last_window_timestamp_seconds", "gauge", "End of the newest window stored per host.");
	for (size_t i = 0; i < fm->n; i++) {
		series(f, "glass_host_last_window_timestamp_seconds", &fm->v[i]);
		fprintf(f, "} %.3f\n", fm->v[i].last_end_ns / 1e9);
	}
	head(f, "glass_host_offcpu_seconds_total", "counter", "Off-CPU time of profiled threads per host.");
	for (size_t i = 0; i < fm->n; i++) {
		series(f, "glass_host_offcpu_seconds_total", &fm->v[i]);
		fprintf(f, "} %.9f\n", fm->v[i].offcpu_ns / 1e9);
	}
	head(f, "glass_host_lock_wait_seconds_total", "counter", "Time waited for glassfs locks per host and lock class (window summaries).");
	for (size_t i = 0; i < fm->n; i++)
		for (size_t j = 0; j < fm->v[i].nlk; j++) {
			const struct fm_lock *l = &fm->v[i].lk[j];

			if (l->level != NO_LEVEL)
				continue;
			series(f, "glass_host_lock_wait_seconds_total", &fm->v[i]);
			fputs(",class=\"", f);
			label(f, l->cls);
			fprintf(f, "\"} %.9f\n", l->wait_ns / 1e9);
		}
	head(f, "glass_host_lock_level_wait_seconds_total", "counter",
	     "Time waited for glassfs locks per host, lock class and B-tree level (lock detail; level -1: not a node lock).");
	for (size_t i = 0; i < fm->n; i++)
		for (size_t j = 0; j < fm->v[i].nlk; j++) {
			const struct fm_lock *l = &fm->v[i].lk[j];

			if (l->level == NO_LEVEL)
				continue;
			series(f, "glass_host_lock_level_wait_seconds_total", &fm->v[i]);
			fputs(",class=\"", f);
			label(f, l->cls);
			fprintf(f, "\",level=\"%d\"} %.9f\n", l->level, l->wait_ns / 1e9);
		}
	head(f, "glass_host_lock_contended_total", "counter",
	     "Contended acquisitions of glassfs locks per host, lock class and B-tree level (lock detail).");
	for (size_t i = 0; i < fm->n; i++)
		for (size_t j = 0; j < fm->v[i].nlk; j++) {
			const struct fm_lock *l = &fm->v[i].lk[j];

			if (l->level == NO_LEVEL)
				continue;
			series(f, "glass_host_lock_contended_total", &fm->v[i]);
			fputs(",class=\"", f);
			label(f, l->cls);
			fprintf(f, "\",level=\"%d\"} %llu\n", l->level, (unsigned long long)l->contended);
		}
	head(f, "glass_host_commit_p99_seconds", "gauge", "Commit latency p99 of the newest window that reported one, per host.");
	for (size_t i = 0; i < fm->n; i++) {
		if (fm->v[i].p99_ns < 0)
			continue;
		series(f, "glass_host_commit_p99_seconds", &fm->v[i]);
		fprintf(f, "} %.9f\n", fm->v[i].p99_ns / 1e9);
	}
	head(f, "glass_host_commits_total", "counter", "Transaction commits per host.");
	for (size_t i = 0; i < fm->n; i++) {
		series(f, "glass_host_commits_total", &fm->v[i]);
		fprintf(f, "} %llu\n", (unsigned long long)fm->v[i].commits);
	}
	head(f, "glass_host_trim_stall_seconds_total", "counter", "Commit time spent waiting for discards per host.");
	for (size_t i = 0; i < fm->n; i++) {
		series(f, "glass_host_trim_stall_seconds_total", &fm->v[i]);
		fprintf(f, "} %.9f\n", fm->v[i].trim_ns / 1e9);
	}
	head(f, "glass_host_series_dropped_total", "counter", "Per-host series not kept (more than 10000 hosts or 256 lock series a host).");
	fprintf(f, "glass_host_series_dropped_total %llu\n", (unsigned long long)fm->dropped);
	pthread_mutex_unlock(&fm->lock);
}

void fleetm_free(struct fleetm *fm)
{
	for (size_t i = 0; i < fm->n; i++) {
		for (size_t j = 0; j < fm->v[i].nlk; j++)
			free(fm->v[i].lk[j].cls);
		free(fm->v[i].lk);
		free(fm->v[i].host);
	}
	free(fm->v);
	fm->v = NULL;
	fm->n = fm->cap = 0;
}
