/* SPDX-License-Identifier: MIT */
/*
 * probe.h — include this to fire glassfs USDT probes.
 *
 * The macros come from build/gen/probes.h, generated from fs/base/probes.d:
 *   GLASSFS_COMMIT_END(transid, dur_ns, nodes, bytes);
 *   if (GLASSFS_COMMIT_END_ENABLED()) { ...compute costly args... }
 * PROBE_ON(NAME) is the guard spelled once: only take timestamps for a
 * probe when someone listens.
 */
#ifndef GLASSFS_PROBE_H
#define GLASSFS_PROBE_H

#define _SDT_HAS_SEMAPHORES 1
#include "probes.h"

#define PROBE_ON(NAME) __builtin_expect(GLASSFS_##NAME##_ENABLED(), 0)

#endif
