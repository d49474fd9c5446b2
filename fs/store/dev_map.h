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

#include <stdint.h>
#include "fs/store/dev_types.h"

/*
 * crc32c of n sectors (CORE_SECTORSIZE) from device offset off into
 * out[0..n).  Counted and probed as a device read.  -EOPNOTSUPP when the
 * device cannot be mapped or plays the latency or error model (dev.h:
 * the caller reads the ordinary way, so the model applies), -EIO when a
 * page could not be read (not counted in dev_errors: the caller's
 * ordinary read of it meets the error and counts it), -EINVAL outside the
 * device.
 */
int dev_map_crc(struct dev *d, uint64_t off, uint32_t n, uint32_t *out);
/* dev_close: drop the mapping. */
void dev_map_release(struct dev *d);

#endif
