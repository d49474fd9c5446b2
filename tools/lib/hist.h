/* SPDX-License-Identifier: MIT */
/*
 * hist.h — log2 histograms: slot i counts values v with 2^(i-1) <= v < 2^i
 * (slot 0 counts v == 0).  Printed as bcc's print_log2_hist does, or as a
 * JSON array of {"lo","hi","count"} objects.
 */
#ifndef GLASS_HIST_H
#define GLASS_HIST_H

#include <linux/types.h>	/* __u64: the type BPF maps share */
#include <stdint.h>
#include <stdio.h>

#define HIST_SLOTS 64

/* The slot of v (what BPF code computes with its own log2). */
unsigned hist__slot(uint64_t v);
void hist__print_log2(FILE *f, const __u64 *slots, unsigned nslots,
		      const char *unit);
void hist__print_json(FILE *f, const __u64 *slots, unsigned nslots);
/* Summary figures from the slots: total count, and the p-th percentile
 * (0 < p <= 100): the upper bound of the slot holding it, capped at max,
 * the largest value observed (0: not known), so that a percentile is
 * never printed above the maximum beside it. */
uint64_t hist__count(const __u64 *slots, unsigned nslots);
uint64_t hist__percentile(const __u64 *slots, unsigned nslots, double p,
			  uint64_t max);

#endif
