/* SPDX-License-Identifier: MIT */
/* commitlat.h — what glass-commitlat's BPF side records (usdt_hist.h keys). */
#ifndef GLASS_COMMITLAT_H
#define GLASS_COMMITLAT_H
#include "usdt_hist.h"

enum cl_what {
	CL_COMMIT = 1,		/* idx 0: commit__end dur_ns, bytes, nodes */
	CL_PHASE = 2,		/* idx = phase (fs/base/probes.d numbering) */
	CL_WAIT = 3,		/* commit__wait: operations blocked behind a commit */
	CL_START = 4,		/* idx = reason; count only */
};
#endif
