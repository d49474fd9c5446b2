/*
 * store.c — the parts of the storage interface both engines share:
 * choosing an engine by URI, a window's per-type sums, and the crash
 * points the downsampling tests kill glass-aggd at (a test hook).
 */
#include "aggregator/store.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void store_window_sums(const struct agg_window *w, int64_t tot[PT_NTYPES], int *units,
		       int64_t *locksum)
{
	memset(tot, 0, PT_NTYPES * sizeof(*tot));
	*units = 0;
	*locksum = -1;
	for (size_t i = 0; i < w->nprof; i++) {
		tot[w->prof[i].type] = (int64_t)folded_set_total(w->prof[i].set);
		if (w->prof[i].units == UNITS_SAMPLES)
			*units |= 1 << w->prof[i].type;
	}
	for (size_t i = 0; i < w->nlocks; i++)
		*locksum = (*locksum < 0 ? 0 : *locksum) + w->locks[i].ns;
}

static _Thread_local int64_t deadline;

void store_set_deadline(int64_t deadline_ns)
{
	deadline = deadline_ns;
}

int64_t store_deadline(void)
{
	return deadline;
}

static const char *crash_at;	/* set once, before any thread starts */

void store_test_crash_at(const char *point)
{
	crash_at = point;
}

void store_crashpoint(const char *point)
{
	if (!crash_at || strcmp(crash_at, point))
		return;
	fprintf(stderr, "glass-aggd: --test-crash-at %s: killing myself\n", point);
	kill(getpid(), SIGKILL);
	pause();
}

int store_open(const char *uri, struct store **out, char *msg, size_t msglen)
{
	if (!strncmp(uri, "sqlite:", 7))
		return store_sqlite_open(uri + 7, out, msg, msglen);
	if (!strncmp(uri, "clickhouse://", 13))
		return store_clickhouse_open(uri, out, msg, msglen);
	if (strstr(uri, "://")) {
		snprintf(msg, msglen, "store %s: unsupported engine (sqlite:PATH or clickhouse://HOST:PORT/DB)", uri);
		return -EINVAL;
	}
	return store_sqlite_open(uri, out, msg, msglen);
}
