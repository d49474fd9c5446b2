/*
 * hist_test.c — unit tests of the percentile helpers: tools/lib/hist.c
 * (glass-lockstat's WAIT_P99) and svgchart_quantile() (glass-report's
 * tables).  A percentile is the upper bound of its log2 bucket, which can
 * lie far above every value seen: both cap it at the observed maximum, so
 * no percentile is ever printed above the max beside it.  Seeded random
 * histograms check p50 <= p90 <= p99 <= max.
 *
 * Usage: hist_test [SEED]
 */
#include "tools/lib/hist.h"
#include "tools/lib/svgchart.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static int fails;
#define CHECK(name, cond) do { \
	if (cond) printf("PASS: %s\n", name); \
	else { printf("FAIL: %s: %s:%d: %s\n", name, __FILE__, __LINE__, #cond); fails++; } \
} while (0)

int main(int argc, char **argv)
{
	unsigned seed = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : (unsigned)time(NULL);
	__u64 slots[HIST_SLOTS];
	struct hist_bucket b[HIST_SLOTS];
	int ok = 1;

	printf("seed: %u\n", seed);
	srand(seed);

	/* The case: every wait in [524288, 1048575] ns, the longest
	 * 620.5 us: p99 is 620.5 us, not the bucket's 1048.6 us. */
	memset(slots, 0, sizeof(slots));
	slots[hist__slot(620500)] = 10;
	CHECK("p99 capped at the max (620500, not 1048575)",
	      hist__percentile(slots, HIST_SLOTS, 99, 620500) == 620500);
	CHECK("p99 without a known max is the bucket's upper bound",
	      hist__percentile(slots, HIST_SLOTS, 99, 0) == 1048575);
	CHECK("empty histogram: 0", hist__percentile((__u64[HIST_SLOTS]){ 0 }, HIST_SLOTS, 99, 5) == 0);
	slots[hist__slot(3)] = 1000;	/* most waits short: p50 below the max */
	CHECK("p50 of a skewed histogram is the short bucket's bound",
	      hist__percentile(slots, HIST_SLOTS, 50, 620500) == 3);

	b[0] = (struct hist_bucket){ 262144, 524287, 4 };
	CHECK("svgchart_quantile capped at the max",
	      svgchart_quantile(b, 1, 0.99, 300000) == 300000);
	CHECK("svgchart_quantile without a max: the bucket's bound",
	      svgchart_quantile(b, 1, 0.99, 0) == 524287);

	for (int round = 0; round < 1000; round++) {
		uint64_t max = 0, v;
		unsigned n = 1 + rand() % 200;

		memset(slots, 0, sizeof(slots));
		for (unsigned i = 0; i < n; i++) {
			v = (uint64_t)rand() >> (rand() % 31);
			slots[hist__slot(v)]++;
			if (v > max)
				max = v;
		}
		uint64_t p50 = hist__percentile(slots, HIST_SLOTS, 50, max);
		uint64_t p90 = hist__percentile(slots, HIST_SLOTS, 90, max);
		uint64_t p99 = hist__percentile(slots, HIST_SLOTS, 99, max);
		for (unsigned i = 0; i < HIST_SLOTS; i++)
			b[i] = (struct hist_bucket){ i ? 1ULL << (i - 1) : 0,
						     i ? (1ULL << i) - 1 : 0, slots[i] };
		double q99 = svgchart_quantile(b, HIST_SLOTS, 0.99, (double)max);
		if (!(p50 <= p90 && p90 <= p99 && p99 <= max && q99 <= (double)max &&
		      q99 == (double)p99)) {
			printf("round %d: p50 %llu p90 %llu p99 %llu q99 %.0f max %llu\n", round,
			       (unsigned long long)p50, (unsigned long long)p90,
			       (unsigned long long)p99, q99, (unsigned long long)max);
			ok = 0;
			break;
		}
	}
	CHECK("random histograms: p50 <= p90 <= p99 <= max, both helpers agree", ok);
	return fails ? 1 : 0;
}
