// SPDX-License-Identifier: MIT
/*
 * dev_latency.c — the mount options' device latency model (core_opts
 * dev_latency=, dev_latency.N=) applied to one device of the volume, at
 * open (fs/ops/mount.c) and when a device is added (fs/services/volume_dev.c).
 */
#include "fs/core/core_types.h"
#include "fs/store/dev.h"

/*
 * The latency model of device index idx: dev_latency.N= for the
 * operations it names, else dev_latency=, else what the device has
 * (GLASSFS_DEV_LATENCY, read at dev_open).
 */
void dev_apply_latency(struct core *c, struct dev *d, int idx)
{
	for (int op = 0; op < 4; op++) {
		if (idx >= 0 && idx < CORE_MAX_DEVS && (c->opts.dev_lat_dev_set[idx] & (1u << op)))
			dev_set_latency(d, (enum dev_op)op, c->opts.dev_lat_dev_us[idx][op] * 1000ull);
		else if (c->opts.dev_lat_us[op])
			dev_set_latency(d, (enum dev_op)op, c->opts.dev_lat_us[op] * 1000ull);
	}
}
