// SPDX-License-Identifier: MIT
/*
 * test_crc32c.c — CRC-32C test vectors (RFC 3720 B.4), crc32c == the table
 * version on random data, and equal to one stream of the SSE4.2 crc32
 * instruction (the code ISA-L replaced; the speed of the two is
 * tests/bench/crc32c.bench's, not a unit test's).
 */
#include "fs/base/crc32c.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

#if defined(__x86_64__)
/* One stream of the crc32 instruction, 8 bytes a step: the code ISA-L
 * replaced (its speed against crc32c: tests/bench/crc32c.bench). */
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
#endif

int main(void)
{
	const char *e = getenv("SEED");
	unsigned seed = e ? (unsigned)strtoul(e, NULL, 0) : (unsigned)(time(NULL) ^ getpid());
	uint8_t buf[4096 + 64];

	printf("seed: %u (hw crc32: %d)\n", seed, crc32c_hw_available());
	srand(seed);
	CHECK("123456789", crc32c(0, "123456789", 9) == 0xE3069283u);
	CHECK("123456789 sw", crc32c_sw(0, "123456789", 9) == 0xE3069283u);
	memset(buf, 0, 32);
	CHECK("32 zeros", crc32c(0, buf, 32) == 0x8A9136AAu);
	memset(buf, 0xff, 32);
	CHECK("32 ones", crc32c(0, buf, 32) == 0x62A8AB43u);
	for (int i = 0; i < 32; i++)
		buf[i] = (uint8_t)i;
	CHECK("32 incrementing", crc32c(0, buf, 32) == 0x46DD794Eu);
	CHECK("empty", crc32c(0, buf, 0) == 0);

	int ok = 1, chain = 1;
	for (int r = 0; r < 200; r++) {
		size_t off = (size_t)(rand() % 8), len = (size_t)(rand() % 4096);
		for (size_t i = 0; i < len + off; i++)
			buf[i] = (uint8_t)rand();
		uint32_t a = crc32c(0, buf + off, len), b = crc32c_sw(0, buf + off, len);
		if (a != b)
			ok = 0;
		size_t cut = len ? (size_t)rand() % len : 0;
		if (crc32c(crc32c(0, buf + off, cut), buf + off + cut, len - cut) != a)
			chain = 0;
	}
	CHECK("hw equals sw on random buffers", ok);
	CHECK("chaining", chain);
#if defined(__x86_64__)
	if (crc32c_hw_available()) {
		uint8_t *p = buf + 3;
		for (int i = 0; i < 4096; i++)
			p[i] = (uint8_t)rand();
		CHECK("one stream equals crc32c", one_stream(0, p, 4096) == crc32c(0, p, 4096));
	}
#endif
	return fails ? 1 : 0;
}
