// SPDX-License-Identifier: MIT
/*
 * crcspeed.c — crc32c (fs/base/crc32c.c, ISA-L's crc32_iscsi) against one
 * stream of the SSE4.2 crc32 instruction (the code ISA-L replaced) on
 * 4 KiB blocks, the size the engine checksums: interleaved, best of 7
 * rounds, so a loaded machine slows both alike.  Prints both rates and
 * their ratio (crc32c.bench); never pass/fail on speed.
 */
#include "fs/base/crc32c.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__)
/* One stream of the crc32 instruction, 8 bytes a step: the reference speed. */
__attribute__((target("sse4.2")))
static uint32_t one_stream(uint32_t crc, const uint8_t *p, size_t len)
{
	uint64_t c = ~crc;

	for (; len >= 8; p += 8, len -= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		c = __builtin_ia32_crc32di(c, w);
	}
	for (; len; len--)
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
	return ~(uint32_t)c;
}

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* crc32c's time and one_stream's over 4 MiB of 4 KiB blocks: best of 7. */
static void speed(double *fast, double *one)
{
	static uint8_t big[4 << 20];
	volatile uint32_t sink = 0;

	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)(i * 131 + 7);
	*fast = *one = 1e9;
	for (int r = 0; r < 7; r++) {
		double t0 = now_s(), t1, t2;
		for (size_t o = 0; o < sizeof(big); o += 4096)
			sink += crc32c(0, big + o, 4096);
		t1 = now_s();
		for (size_t o = 0; o < sizeof(big); o += 4096)
			sink += one_stream(0, big + o, 4096);
		t2 = now_s();
		if (t1 - t0 < *fast)
			*fast = t1 - t0;
		if (t2 - t1 < *one)
			*one = t2 - t1;
	}
	(void)sink;
}
#endif

int main(void)
{
#if defined(__x86_64__)
	double fast, one;

	if (!crc32c_hw_available()) {
		printf("crc32c: no SSE4.2 on this CPU\n");
		return 77;
	}
	{	/* the reference must compute the same function */
		static uint8_t p[4096 + 3];

		for (size_t i = 0; i < sizeof(p); i++)
			p[i] = (uint8_t)(i * 7919 + 13);
		if (one_stream(0, p + 3, 4096) != crc32c(0, p + 3, 4096)) {
			printf("crc32c: one crc32 stream and crc32c disagree\n");
			return 1;
		}
	}
	speed(&fast, &one);
	printf("4 KiB blocks: crc32c %.2f GB/s, one crc32 stream %.2f GB/s, ratio %.2f\n",
	       4.194304e-3 / fast, 4.194304e-3 / one, one / fast);
	return 0;
#else
	printf("crc32c: the reference stream is x86-64 only\n");
	return 77;
#endif
}
