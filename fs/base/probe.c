// SPDX-License-Identifier: MIT
/*
 * probe.c — the definitions of the USDT semaphores declared by probes.h.
 * A tracer attaching to a probe increments its semaphore; PROBE_ON() reads it.
 * The list is generated from fs/base/probes.d (fs/base/probes.mk).
 */
#include "fs/base/probe.h"
#include "probes_sem.h"
