/*
 * metrics.c — /metrics in the Prometheus text exposition format.  Counters
 * are atomics bumped by the request threads; rendering reads them without
 * locks (each value is individually consistent, which is all Prometheus
 * asks of a scrape).
 */
#include "aggregator/aggd.h"

#include <stdio.h>
#include <stdlib.h>

/* Latency bucket bounds in microseconds. */
static const uint64_t bounds_us[LAT_NBUCKETS] = {
	100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 1000000,
};

static const char *const reasons[REJ_NREASONS] = {
	"unauthorized", "bad_json", "bad_folded", "invalid", "too_large",
	"bad_encoding", "bad_method", "store_error",
};

const char *metrics_reason_name(int r)
{
	return r >= 0 && r < REJ_NREASONS ? reasons[r] : "other";
}

void metrics_observe(struct lat_hist *h, int64_t ns)
{
	uint64_t us = ns > 0 ? (uint64_t)ns / 1000 : 0;
	int i;

	for (i = 0; i < LAT_NBUCKETS && us > bounds_us[i]; i++)
		;
	atomic_fetch_add(&h->b[i], 1);
	atomic_fetch_add(&h->count, 1);
	atomic_fetch_add(&h->sum_us, us);
}

static void hist(FILE *f, const char *op, struct lat_hist *h)
{
	uint64_t cum = 0;

	for (int i = 0; i <= LAT_NBUCKETS; i++) {
		cum += atomic_load(&h->b[i]);
		if (i < LAT_NBUCKETS)
			fprintf(f, "glass_aggd_store_seconds_bucket{op=\"%s\",le=\"%g\"} %llu\n", op,
				bounds_us[i] / 1e6, (unsigned long long)cum);
		else
			fprintf(f, "glass_aggd_store_seconds_bucket{op=\"%s\",le=\"+Inf\"} %llu\n", op,
				(unsigned long long)cum);
	}
	fprintf(f, "glass_aggd_store_seconds_sum{op=\"%s\"} %g\n", op, atomic_load(&h->sum_us) / 1e6);
	fprintf(f, "glass_aggd_store_seconds_count{op=\"%s\"} %llu\n", op,
		(unsigned long long)atomic_load(&h->count));
}

char *metrics_render(struct aggd *d, size_t *len)
{
	struct aggd_metrics *m = &d->m;
	struct store_stats st = { 0 };
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);

	if (!f)
		return NULL;
	d->store->ops->stats(d->store, &st);
#define C(name, help, val) \
	fprintf(f, "# HELP " name " " help "\n# TYPE " name " counter\n" name " %llu\n", \
		(unsigned long long)(val))
#define G(name, help, val) \
	fprintf(f, "# HELP " name " " help "\n# TYPE " name " gauge\n" name " %lld\n", \
		(long long)(val))
	fprintf(f, "# HELP glass_aggd_ingest_requests_total Accepted ingest requests by format.\n"
		   "# TYPE glass_aggd_ingest_requests_total counter\n");
	fprintf(f, "glass_aggd_ingest_requests_total{format=\"agent\"} %llu\n",
		(unsigned long long)atomic_load(&m->ingest_requests[0]));
	fprintf(f, "glass_aggd_ingest_requests_total{format=\"pyroscope\"} %llu\n",
		(unsigned long long)atomic_load(&m->ingest_requests[1]));
	C("glass_aggd_ingest_windows_total", "Windows stored.", atomic_load(&m->ingest_windows));
	C("glass_aggd_ingest_stacks_total", "Distinct stacks per window stored, summed over windows.",
	  atomic_load(&m->ingest_stacks));
	C("glass_aggd_ingest_duplicates_total", "Windows received again and not stored twice.",
	  atomic_load(&m->ingest_duplicates));
	fprintf(f, "# HELP glass_aggd_rejected_requests_total Rejected requests by reason.\n"
		   "# TYPE glass_aggd_rejected_requests_total counter\n");
	for (int i = 0; i < REJ_NREASONS; i++)
		fprintf(f, "glass_aggd_rejected_requests_total{reason=\"%s\"} %llu\n", reasons[i],
			(unsigned long long)atomic_load(&m->rejected[i]));
	C("glass_aggd_queries_total", "Query API requests.", atomic_load(&m->queries));
	fprintf(f, "# HELP glass_aggd_store_seconds Store latency by operation.\n"
		   "# TYPE glass_aggd_store_seconds histogram\n");
	hist(f, "write", &m->store_write);
	hist(f, "query", &m->store_query);
	G("glass_aggd_inflight_requests", "Requests being handled now.", atomic_load(&m->inflight));
	G("glass_aggd_queue_depth", "Ingest requests waiting for or holding the store writer.",
	  atomic_load(&m->write_waiters));
	G("glass_aggd_store_windows", "Windows in the store.", st.windows);
	G("glass_aggd_store_stacks", "Distinct stacks in the store (highest id).", st.stacks);
	G("glass_aggd_store_labelsets", "Distinct label sets in the store.", st.labelsets);
	G("glass_aggd_store_bytes", "Size of the store's main file.", st.bytes);
	G("glass_aggd_start_time_seconds", "Start time of the process.", m->start_ns / 1000000000);
#undef C
#undef G
	fleetm_render(&d->fm, f);
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}
