/* SPDX-License-Identifier: MIT */
/*
 * crc32c.h — CRC-32C (Castagnoli, polynomial 0x1EDC6F41, reflected 0x82F63B78),
 * the checksum of every superblock, metadata node and 4 KiB data block.
 *
 * crc32c(0, buf, len) is the standard CRC-32C of buf ("123456789" gives
 * 0xE3069283).  Chaining works: crc32c(crc32c(0, a, n), b, m) equals the
 * CRC of a followed by b.  The pre/post inversion is done inside, so the
 * value stored on disk is exactly what crc32c(0, ...) returns.
 *
 * ISA-L computes it (crc32_iscsi: the fastest of its versions the CPU
 * runs, chosen once by ISA-L); crc32c_sw is a slicing-by-8 table the
 * tests compare it with.
 */
#ifndef GLASSFS_CRC32C_H
#define GLASSFS_CRC32C_H

#include <stddef.h>
#include <stdint.h>

uint32_t crc32c(uint32_t crc, const void *buf, size_t len);
/* The portable table version, exported so tests can compare both paths. */
uint32_t crc32c_sw(uint32_t crc, const void *buf, size_t len);
/* 1 if the CPU has the SSE4.2 crc32 instruction (ISA-L then uses it). */
int crc32c_hw_available(void);

#endif
