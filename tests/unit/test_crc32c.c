// SPDX-License-Identifier: MIT
/*
 * test_crc32c.c — CRC-32C test vectors (RFC 3720 B.4), crc32c == the table
 * version on random data, chaining.  crc32c's speed against the code ISA-L
 * replaced is tests/bench/crc32c.bench's, not a unit test's.
 */
#include "fs/base/crc32c.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"


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
	return fails ? 1 : 0;
}
