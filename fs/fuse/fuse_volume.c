// SPDX-License-Identifier: MIT
/*
 * fuse_volume.c — the device and balance ioctls (fs/format/ioctl.h,
 * numbers 20-29) on a mounted glassfs: decode the request, call
 * fs/services/volume.h, encode the answer.  In and out as the FUSE request
 * carries them; returns 0 (the answer's result field says how the
 * operation went) or -errno for a malformed request.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/fuse/fuse_ops.h"
#include "fs/format/ioctl.h"
#include "fs/services/volume.h"

int fuse_volume_ioctl(struct core *c, unsigned cmd, const void *in, size_t insz, void *out,
			 size_t *outsz)
{
	if (cmd == GLASSFS_IOC_BALANCE_STATUS) {
		struct glassfs_ioc_balance o;
		struct volume_balance_status s;

		if (*outsz < sizeof(o))
			return -EINVAL;
		volume_balance_status(c, &s);
		memset(&o, 0, sizeof(o));
		o.version = 1;
		o.running = s.running;
		o.result = s.result;
		o.started = s.started;
		o.chunks_total = s.chunks_total;
		o.chunks_done = s.chunks_done;
		o.bytes_total = s.bytes_total;
		o.bytes_done = s.bytes_done;
		o.op = s.op;
		o.op_running = s.op_running;
		snprintf(o.msg, sizeof(o.msg), "%s", s.msg);
		memcpy(out, &o, sizeof(o));
		*outsz = sizeof(o);
		return 0;
	}
	if (cmd != GLASSFS_IOC_DEV_ADD && cmd != GLASSFS_IOC_DEV_REMOVE &&
	    cmd != GLASSFS_IOC_DEV_ROTATIONAL && cmd != GLASSFS_IOC_BALANCE_START &&
	    cmd != GLASSFS_IOC_BALANCE_CANCEL)
		return -ENOTTY;

	struct glassfs_ioc_vol *io = malloc(sizeof(*io));
	int ret;

	if (!io)
		return -ENOMEM;
	if (insz < sizeof(*io) || *outsz < sizeof(*io)) {
		free(io);
		return -EINVAL;
	}
	memcpy(io, in, sizeof(*io));
	io->path[sizeof(io->path) - 1] = 0;
	io->msg[0] = 0;
	switch (cmd) {
	case GLASSFS_IOC_DEV_ADD:
		ret = volume_dev_add(c, io->path, io->msg, sizeof(io->msg));
		break;
	case GLASSFS_IOC_DEV_REMOVE:
		ret = volume_dev_remove(c, io->path, io->msg, sizeof(io->msg));
		break;
	case GLASSFS_IOC_DEV_ROTATIONAL:
		ret = volume_set_rotational(c, io->path, (int)io->arg0, io->msg, sizeof(io->msg));
		break;
	case GLASSFS_IOC_BALANCE_START:
		ret = volume_balance_start(c, io->arg0, io->arg1, io->msg, sizeof(io->msg));
		break;
	default:
		ret = volume_balance_cancel(c);
		if (ret == -ENOENT)
			snprintf(io->msg, sizeof(io->msg), "no balance running");
		break;
	}
	io->result = ret;
	memcpy(out, io, sizeof(*io));
	*outsz = sizeof(*io);
	free(io);
	return 0;
}
