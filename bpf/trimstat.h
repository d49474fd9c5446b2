/* SPDX-License-Identifier: MIT */
/* trimstat.h — what glass-trimstat's BPF side records (usdt_hist.h keys). */
#ifndef GLASS_TRIMSTAT_H
#define GLASS_TRIMSTAT_H
#include "usdt_hist.h"

enum ts_what {
	TS_QUEUED = 1,		/* idx = devid; bytes */
	TS_ISSUED = 2,		/* idx = devid; bytes */
	TS_DONE = 3,		/* idx = devid; discard latency, bytes */
	TS_STALL = 4,		/* idx 0: operations/commits stalled on discards */
};
#endif
