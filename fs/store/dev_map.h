/* SPDX-License-Identifier: MIT */
/*
 * dev_map.h — checksums of a device's sectors computed over a read-only
 * mapping of the device, without copying them (the zero-copy read path:
 * fs/trees/data_span.c verifies what the kernel then splices to the
 * reader straight from the device's page cache).
 *
 * The whole device is mapped once (MAP_SHARED, PROT_READ) at the first
 * call and unmapped by dev_close.  The mapping and the device fd see the
 * same page cache (devices are never opened O_DIRECT), so the bytes
 * checked are the bytes a later splice of the fd reads, as long as
 * nothing writes them in between (the caller's business: data_span.c).
 *
 * A fault the kernel cannot serve (an I/O error under a page, an image
 * file truncated behind our back) raises SIGBUS: a handler installed at
 * the first mapping turns it into -EIO for the thread inside
 * dev_map_crc, and leaves any other SIGBUS to the disposition there was.
 */
#ifndef GLASSFS_DEV_MAP_H
#define GLASSFS_DEV_MAP_H

#include <stdbool.h>
#include <stdint.h>
#include "fs/store/dev_types.h"

/*
 * crc32c of n sectors (CORE_SECTORSIZE) from device offset off (sector
 * aligned) into out[0..n), n <= DEV_MAP_MAX_SECTS.  Counted and probed as
 * a device read.  -EOPNOTSUPP, for the caller to read the ordinary way,
 * when the device cannot be mapped, plays the latency or error model
 * (dev.h: dev_read applies them), or has pages of the range outside the
 * page cache (a cold read goes faster through pread and the kernel's
 * read-ahead than faulted in page by page); -EIO when a page could not
 * be read (not counted in dev_errors: the caller's ordinary read meets
 * the error and counts it); -EINVAL for a range outside the device.
 */
#define DEV_MAP_MAX_SECTS 64	/* n, at most */
int dev_map_crc(struct dev *d, uint64_t off, uint32_t n, uint32_t *out);
/* Sum cold ranges too, faulting their pages in (tests: a fault that
 * raises SIGBUS then comes before any check can see it). */
void dev_map_set_cold(struct dev *d, bool on);
/* dev_close: drop the mapping. */
void dev_map_release(struct dev *d);

#endif
