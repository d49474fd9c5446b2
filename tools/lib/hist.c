// SPDX-License-Identifier: MIT
/* hist.c — log2 histogram printing.  See hist.h. */
#include "tools/lib/hist.h"

#include <string.h>

unsigned hist__slot(uint64_t v)
{
	unsigned s = 0;

	while (v) {
		v >>= 1;
		s++;
	}
	return s < HIST_SLOTS ? s : HIST_SLOTS - 1;
}

static uint64_t slot_lo(unsigned i) { return i ? 1ULL << (i - 1) : 0; }
static uint64_t slot_hi(unsigned i) { return i ? (1ULL << i) - 1 : 0; }

static void stars(FILE *f, uint64_t val, uint64_t max, int width)
{
	int n = max ? (int)(val * width / max) : 0;

	for (int i = 0; i < width; i++)
		fputc(i < n ? '*' : ' ', f);
	if (val > max)
		fputc('+', f);
}

void hist__print_log2(FILE *f, const __u64 *slots, unsigned nslots,
		      const char *unit)
{
	unsigned first = nslots, last = 0;
	uint64_t max = 0;

	for (unsigned i = 0; i < nslots; i++) {
		if (!slots[i])
			continue;
		if (first == nslots)
			first = i;
		last = i;
		if (slots[i] > max)
			max = slots[i];
	}
	if (first == nslots) {
		fprintf(f, "     (no samples)\n");
		return;
	}
	fprintf(f, "%24s%-7s : count    distribution\n", "", unit);
	for (unsigned i = first; i <= last; i++) {
		fprintf(f, "%14llu -> %-14llu: %-8llu |",
			(unsigned long long)slot_lo(i),
			(unsigned long long)slot_hi(i),
			(unsigned long long)slots[i]);
		stars(f, slots[i], max, 40);
		fputs("|\n", f);
	}
}

void hist__print_json(FILE *f, const __u64 *slots, unsigned nslots)
{
	int first = 1;

	fputc('[', f);
	for (unsigned i = 0; i < nslots; i++) {
		if (!slots[i])
			continue;
		fprintf(f, "%s{\"lo\":%llu,\"hi\":%llu,\"count\":%llu}",
			first ? "" : ",", (unsigned long long)slot_lo(i),
			(unsigned long long)slot_hi(i),
			(unsigned long long)slots[i]);
		first = 0;
	}
	fputc(']', f);
}

uint64_t hist__count(const __u64 *slots, unsigned nslots)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < nslots; i++)
		n += slots[i];
	return n;
}

uint64_t hist__percentile(const __u64 *slots, unsigned nslots, double p,
			  uint64_t max)
{
	uint64_t total = hist__count(slots, nslots), acc = 0, v;
	unsigned i;

	if (!total || !nslots)
		return 0;
	for (i = 0; i < nslots - 1; i++) {
		acc += slots[i];
		if ((double)acc >= total * p / 100.0)
			break;
	}
	v = slot_hi(i);
	return max && v > max ? max : v;
}
