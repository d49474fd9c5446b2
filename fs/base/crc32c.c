// SPDX-License-Identifier: MIT
/*
 * crc32c.c — CRC-32C by ISA-L, and a slicing-by-8 table for the tests.
 * See crc32c.h for the contract.
 *
 * Why ISA-L: it picks at run time the fastest code the CPU has — three
 * crc32 instruction streams at once, joined by carry-less multiplication
 * (PCLMULQDQ), or VPCLMULQDQ folding — where one stream of the SSE4.2
 * instruction waits for each result before the next (latency 3 cycles).
 * On 4 KiB blocks (a data sector) 4-9x the one stream this file had,
 * across runs on a loaded machine (test_crc32c prints both speeds;
 * docs/benchmarks.md).  The daemon checksums every sector it reads or
 * writes: 15 % of its CPU in a cold sequential read.
 */
#include "fs/base/crc32c.h"

#include <isa-l/crc.h>
#include <limits.h>
#include <pthread.h>
#include <string.h>

#define CRC32C_POLY 0x82F63B78u	/* reflected Castagnoli polynomial */

static uint32_t crc_table[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;
static int crc_hw;

static void crc32c_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (CRC32C_POLY & (0u - (c & 1)));
		crc_table[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^
					  crc_table[0][crc_table[t - 1][i] & 0xff];
#if defined(__x86_64__)
	__builtin_cpu_init();
	crc_hw = !!__builtin_cpu_supports("sse4.2");
#endif
}

/* Operates on the inverted register; callers invert before and after. */
static uint32_t crc_sw_raw(uint32_t c, const uint8_t *p, size_t len)
{
	while (len && ((uintptr_t)p & 7)) {
		c = crc_table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
		len--;
	}
	while (len >= 8) {
		uint64_t w;
		memcpy(&w, p, 8);	/* little-endian hosts only (x86-64, arm64) */
		uint32_t lo = (uint32_t)w ^ c, hi = (uint32_t)(w >> 32);
		c = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^
		    crc_table[5][(lo >> 16) & 0xff] ^ crc_table[4][lo >> 24] ^
		    crc_table[3][hi & 0xff] ^ crc_table[2][(hi >> 8) & 0xff] ^
		    crc_table[1][(hi >> 16) & 0xff] ^ crc_table[0][hi >> 24];
		p += 8;
		len -= 8;
	}
	while (len--)
		c = crc_table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
	return c;
}

uint32_t crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
	pthread_once(&crc_once, crc32c_init);
	return ~crc_sw_raw(~crc, buf, len);
}

uint32_t crc32c(uint32_t crc, const void *buf, size_t len)
{
	const unsigned char *p = buf;
	uint32_t c = ~crc;	/* ISA-L's crc32_iscsi neither inverts before nor after */

	while (len) {		/* its length is an int */
		int n = len > (size_t)INT_MAX ? INT_MAX & ~63 : (int)len;

		c = crc32_iscsi((unsigned char *)p, n, c);
		p += n;
		len -= (size_t)n;
	}
	return ~c;
}

int crc32c_hw_available(void)
{
	pthread_once(&crc_once, crc32c_init);
	return crc_hw;
}
