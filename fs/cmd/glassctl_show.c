// SPDX-License-Identifier: MIT
/*
 * glassctl_show.c — what a mounted volume is made of, in btrfs-progs'
 * shapes, from one GLASSFS_IOC_FS_INFO (fs/format/ioctl.h):
 *
 *   glassctl filesystem show MNT     label, uuid, devices with size and use,
 *                                    missing devices
 *   glassctl filesystem usage MNT    overall, then each block-group type:
 *                                    profile, size, used, per device
 *   glassctl device list MNT         one line per device
 *   glassctl device usage MNT        each device's space by type
 *   glassctl device stats [-z] [-c] MNT   per-device error counters (-z:
 *                                    zero them after printing; -c: exit 64
 *                                    when one is not zero)
 *
 * --raw prints sizes in bytes; --json prints one JSON object instead.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "fs/cmd/glassctl.h"
#include "fs/cmd/progress.h"
#include "fs/format/format.h"
#include "fs/format/ioctl.h"

void glassctl_show_usage(FILE *f)
{
	fprintf(f, "       glassctl filesystem show|usage [--raw|--json] MNT\n"
		   "       glassctl device list|usage [--raw|--json] MNT\n"
		   "       glassctl device stats [-z] [-c] [--json] MNT   (-z: reset after printing;"
		   " -c: exit 64 if any is not zero)\n");
}

static bool raw;

static const char *sz(uint64_t b, char *buf, size_t len)
{
	if (raw) {
		snprintf(buf, len, "%llu", (unsigned long long)b);
		return buf;
	}
	return progress_size(b, buf, len);
}

/* Error counters in btrfs's order (write first), by their index in
 * GLASSFS_ERR_FIELDS. */
static const struct { const char *name; int idx; } err_order[] = {
	{ "write_io_errs", 1 }, { "read_io_errs", 0 }, { "flush_io_errs", 2 },
	{ "corruption_errs", 3 }, { "generation_errs", 4 },
};

static const char *type_name(uint64_t f)
{
	return (f & BG_DATA) ? "Data" : (f & BG_SYSTEM) ? "System" : "Metadata";
}

static const char *profile_name(uint64_t f)
{
	return (f & BG_RAID1) ? "RAID1" : (f & BG_RAID1C3) ? "RAID1C3" : (f & BG_RAID1C4) ? "RAID1C4" :
	       (f & BG_DUP) ? "DUP" : (f & BG_RAID10) ? "RAID10" :
	       (f & BG_RAID5) ? "RAID5" : (f & BG_RAID6) ? "RAID6" :
	       (f & BG_RAID0) ? "RAID0" : "single";
}

static int type_idx(uint64_t f)
{
	return (f & BG_DATA) ? 0 : (f & BG_SYSTEM) ? 1 : 2;
}

static int fs_info(const char *mnt, struct glassfs_ioc_fs_info *o, bool reset)
{
	int fd = glassctl_open_dir(mnt);

	if (fd < 0)
		return -1;
	memset(o, 0, sizeof(*o));
	o->version = 1;
	o->reset = reset;
	if (ioctl(fd, GLASSFS_IOC_FS_INFO, o) < 0) {
		int e = errno;
		fprintf(stderr, "glassctl: %s: %s%s\n", mnt, strerror(e),
			e == ENOTTY || e == ENOSYS || e == EINVAL ? " (not a glassfs mount, or "
			"a daemon older than this glassctl?)" : "");
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

static void uuid_str(const uint8_t *u, char *out)
{
	static const int dash[] = { 4, 6, 8, 10 };
	int k = 0;

	for (int i = 0; i < 16; i++) {
		for (int j = 0; j < 4; j++)
			if (dash[j] == i)
				out[k++] = '-';
		k += sprintf(out + k, "%02x", u[i]);
	}
	out[k] = 0;
}

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			printf("\\%c", ch);
		else if (ch < 0x20)
			printf("\\u%04x", ch);
		else
			putchar(ch);
	}
	putchar('"');
}

static uint64_t unallocated(const struct glassfs_dev_info *d)
{
	return d->size > d->used ? d->size - d->used : 0;
}

static void print_json(const struct glassfs_ioc_fs_info *o)
{
	char u[40];

	uuid_str(o->fsid, u);
	printf("{\"uuid\": \"%s\", \"label\": ", u);
	json_str(o->label);
	printf(", \"generation\": %llu, \"num_devices\": %llu, \"nodesize\": %u, "
	       "\"sectorsize\": %u, \"device_size\": %llu, \"used\": %llu,\n \"devices\": [",
	       (unsigned long long)o->generation, (unsigned long long)o->num_devices,
	       o->nodesize, o->sectorsize, (unsigned long long)o->total_bytes,
	       (unsigned long long)o->bytes_used);
	for (uint32_t i = 0; i < o->ndevs; i++) {
		const struct glassfs_dev_info *d = &o->dev[i];
		printf("%s\n  {\"devid\": %llu, \"path\": ", i ? "," : "", (unsigned long long)d->devid);
		json_str(d->path);
		printf(", \"size\": %llu, \"used\": %llu, \"unallocated\": %llu, "
		       "\"data\": %llu, \"system\": %llu, \"metadata\": %llu, "
		       "\"missing\": %s, \"stale\": %s, \"rotational\": %s, \"removing\": %s",
		       (unsigned long long)d->size, (unsigned long long)d->used,
		       (unsigned long long)unallocated(d), (unsigned long long)d->alloc[0],
		       (unsigned long long)d->alloc[1], (unsigned long long)d->alloc[2],
		       d->flags & GLASSFS_DEV_MISSING ? "true" : "false",
		       d->flags & GLASSFS_DEV_STALE ? "true" : "false",
		       d->flags & GLASSFS_DEV_ROTATIONAL ? "true" : "false",
		       d->flags & GLASSFS_DEV_REMOVING ? "true" : "false");
		for (size_t k = 0; k < sizeof(err_order) / sizeof(err_order[0]); k++)
			printf(", \"%s\": %llu", err_order[k].name,
			       (unsigned long long)d->errs[err_order[k].idx]);
		printf("}");
	}
	printf("],\n \"space\": [");
	for (uint32_t i = 0; i < o->nspaces; i++) {
		const struct glassfs_space_info *s = &o->space[i];
		printf("%s\n  {\"type\": \"%s\", \"profile\": \"%s\", \"size\": %llu, \"used\": %llu}",
		       i ? "," : "", type_name(s->flags), profile_name(s->flags),
		       (unsigned long long)s->size, (unsigned long long)s->used);
	}
	printf("]}\n");
}

static int missing_count(const struct glassfs_ioc_fs_info *o)
{
	int n = 0;

	for (uint32_t i = 0; i < o->ndevs; i++)
		n += !!(o->dev[i].flags & GLASSFS_DEV_MISSING);
	/* a device with no item left to name it still counts */
	if (o->num_devices > o->ndevs)
		n += (int)(o->num_devices - o->ndevs);
	return n;
}

static const char *dev_name(const struct glassfs_dev_info *d, char *buf, size_t len)
{
	if (d->flags & GLASSFS_DEV_MISSING)
		snprintf(buf, len, "<missing disk #%llu>", (unsigned long long)d->devid);
	else
		snprintf(buf, len, "%s", d->path);
	return buf;
}

static void show(const struct glassfs_ioc_fs_info *o)
{
	char u[40], a[32], b[32], n[300];

	uuid_str(o->fsid, u);
	if (o->label[0])
		printf("Label: '%s'  uuid: %s\n", o->label, u);
	else
		printf("Label: none  uuid: %s\n", u);
	printf("\tTotal devices %llu FS bytes used %s\n", (unsigned long long)o->num_devices,
	       sz(o->bytes_used, a, sizeof(a)));
	for (uint32_t i = 0; i < o->ndevs; i++) {
		const struct glassfs_dev_info *d = &o->dev[i];
		printf("\tdevid %4llu size %s used %s path %s%s%s\n", (unsigned long long)d->devid,
		       sz(d->size, a, sizeof(a)), sz(d->used, b, sizeof(b)), dev_name(d, n, sizeof(n)),
		       d->flags & GLASSFS_DEV_STALE ? " (stale: resyncing)" : "",
		       d->flags & GLASSFS_DEV_REMOVING ? " (being removed)" : "");
	}
	if (missing_count(o))
		printf("\t*** Some devices missing (glassctl device remove missing MNT drops them,"
		       " or remount with them)\n");
	printf("\n");
}

static void usage_overall(const struct glassfs_ioc_fs_info *o)
{
	uint64_t alloc = 0, unalloc = 0, missing = 0, dsize = 0, dalloc = 0, dused = 0;
	uint64_t msize = 0, malloc_ = 0, used_dev = 0;
	char a[32];

	for (uint32_t i = 0; i < o->ndevs; i++) {
		const struct glassfs_dev_info *d = &o->dev[i];
		if (d->flags & GLASSFS_DEV_MISSING) {
			missing += d->size;
			continue;
		}
		alloc += d->used;
		unalloc += unallocated(d);
		dalloc += d->alloc[0];
		malloc_ += d->alloc[1] + d->alloc[2];
	}
	for (uint32_t i = 0; i < o->nspaces; i++) {
		const struct glassfs_space_info *s = &o->space[i];
		if (s->flags & BG_DATA) {
			dsize += s->size;
			dused += s->used;
		} else {
			msize += s->size;
		}
	}
	/* device bytes that hold used logical bytes: each type's used times
	 * its ratio of device bytes to logical bytes */
	double dratio = dsize ? (double)dalloc / (double)dsize : 1.0;
	double mratio = msize ? (double)malloc_ / (double)msize : 1.0;
	for (uint32_t i = 0; i < o->nspaces; i++) {
		const struct glassfs_space_info *s = &o->space[i];
		used_dev += (uint64_t)((double)s->used * ((s->flags & BG_DATA) ? dratio : mratio));
	}
	printf("Overall:\n");
	printf("    Device size:\t\t%12s\n", sz(o->total_bytes, a, sizeof(a)));
	printf("    Device allocated:\t\t%12s\n", sz(alloc, a, sizeof(a)));
	printf("    Device unallocated:\t\t%12s\n", sz(unalloc, a, sizeof(a)));
	printf("    Device missing:\t\t%12s\n", sz(missing, a, sizeof(a)));
	printf("    Used:\t\t\t%12s\n", sz(used_dev, a, sizeof(a)));
	printf("    Free (estimated):\t\t%12s\t(min: %s)\n",
	       sz(dsize - dused + (uint64_t)((double)unalloc / (dratio > 0 ? dratio : 1)), a, sizeof(a)),
	       sz(dsize - dused + unalloc / 2, (char[32]){ 0 }, 32));
	printf("    Data ratio:\t\t\t%12.2f\n", dratio);
	printf("    Metadata ratio:\t\t%12.2f\n", mratio);
}

static void usage_full(const struct glassfs_ioc_fs_info *o)
{
	char a[32], b[32], n[300];

	usage_overall(o);
	for (int t = 0; t < 3; t++) {
		static const int order[] = { 0, 2, 1 };	/* Data, Metadata, System */
		for (uint32_t i = 0; i < o->nspaces; i++) {
			const struct glassfs_space_info *s = &o->space[i];
			if (type_idx(s->flags) != order[t])
				continue;
			printf("\n%s,%s: Size:%s, Used:%s (%.2f%%)\n", type_name(s->flags),
			       profile_name(s->flags), sz(s->size, a, sizeof(a)),
			       sz(s->used, b, sizeof(b)), s->size ? 100.0 * (double)s->used / (double)s->size : 0.0);
			for (uint32_t k = 0; k < o->ndevs; k++) {
				const struct glassfs_dev_info *d = &o->dev[k];
				if (d->alloc[order[t]])
					printf("   %s\t%12s\n", dev_name(d, n, sizeof(n)),
					       sz(d->alloc[order[t]], a, sizeof(a)));
			}
		}
	}
	printf("\nUnallocated:\n");
	for (uint32_t k = 0; k < o->ndevs; k++)
		printf("   %s\t%12s\n", dev_name(&o->dev[k], n, sizeof(n)),
		       sz(unallocated(&o->dev[k]), a, sizeof(a)));
}

static void dev_usage(const struct glassfs_ioc_fs_info *o)
{
	char a[32], n[300];

	for (uint32_t k = 0; k < o->ndevs; k++) {
		const struct glassfs_dev_info *d = &o->dev[k];
		printf("%s%s, ID: %llu\n", k ? "\n" : "", dev_name(d, n, sizeof(n)),
		       (unsigned long long)d->devid);
		printf("   %-20s%12s\n", "Device size:", sz(d->size, a, sizeof(a)));
		for (int t = 0; t < 3; t++) {
			static const int order[] = { 0, 2, 1 };
			uint64_t prof = 0;
			if (!d->alloc[order[t]])
				continue;
			for (uint32_t i = 0; i < o->nspaces; i++)
				if (type_idx(o->space[i].flags) == order[t])
					prof = o->space[i].flags;
			uint64_t tf = order[t] == 0 ? BG_DATA : order[t] == 1 ? BG_SYSTEM : BG_METADATA;
			char lab[40];
			snprintf(lab, sizeof(lab), "%s,%s:", type_name(tf), profile_name(prof));
			printf("   %-20s%12s\n", lab, sz(d->alloc[order[t]], a, sizeof(a)));
		}
		printf("   %-20s%12s\n", "Unallocated:", sz(unallocated(d), a, sizeof(a)));
	}
}

static void dev_list(const struct glassfs_ioc_fs_info *o)
{
	char a[32], b[32], n[300];

	printf("%-6s %12s %12s %-12s %s\n", "DEVID", "SIZE", "USED", "STATE", "PATH");
	for (uint32_t k = 0; k < o->ndevs; k++) {
		const struct glassfs_dev_info *d = &o->dev[k];
		printf("%-6llu %12s %12s %-12s %s\n", (unsigned long long)d->devid,
		       sz(d->size, a, sizeof(a)), sz(d->used, b, sizeof(b)),
		       d->flags & GLASSFS_DEV_MISSING ? "missing" : d->flags & GLASSFS_DEV_STALE ? "stale" :
		       d->flags & GLASSFS_DEV_REMOVING ? "removing" : "ok",
		       dev_name(d, n, sizeof(n)));
	}
}

/* Returns whether a counter is not zero. */
static bool dev_stats(const struct glassfs_ioc_fs_info *o, bool json)
{
	bool any = false;
	char n[300];

	if (json)
		printf("{\"devices\": [");
	for (uint32_t k = 0; k < o->ndevs; k++) {
		const struct glassfs_dev_info *d = &o->dev[k];
		if (json) {
			printf("%s\n  {\"devid\": %llu, \"path\": ", k ? "," : "", (unsigned long long)d->devid);
			json_str(d->path);
		}
		for (size_t e = 0; e < sizeof(err_order) / sizeof(err_order[0]); e++) {
			uint64_t v = d->errs[err_order[e].idx];
			any |= v != 0;
			if (json)
				printf(", \"%s\": %llu", err_order[e].name, (unsigned long long)v);
			else
				printf("[%s].%-16s %llu\n", dev_name(d, n, sizeof(n)), err_order[e].name,
				       (unsigned long long)v);
		}
		if (json)
			printf("}");
	}
	if (json)
		printf("]}\n");
	return any;
}

static int bad_usage(void)
{
	fprintf(stderr, "usage:\n");
	glassctl_show_usage(stderr);
	return 2;
}

/* Options (--raw/-b, --json; with stats also -z/--reset, -c/--check), then
 * exactly one MNT, whose answer (reset: after reading the counters) goes
 * to *o.  0; 1 when MNT does not answer (said); 2 on a usage error (usage
 * printed). */
static int load(int argc, char **argv, bool stats, struct glassfs_ioc_fs_info *o, bool *json,
		bool *check)
{
	bool reset = false;

	for (int i = 1; i < argc - 1; i++) {
		if (!strcmp(argv[i], "--raw") || !strcmp(argv[i], "-b"))
			raw = true;
		else if (!strcmp(argv[i], "--json"))
			*json = true;
		else if (stats && (!strcmp(argv[i], "-z") || !strcmp(argv[i], "--reset")))
			reset = true;
		else if (stats && (!strcmp(argv[i], "-c") || !strcmp(argv[i], "--check")))
			*check = true;
		else
			return bad_usage();
	}
	if (argc < 2 || argv[argc - 1][0] == '-')
		return bad_usage();
	return fs_info(argv[argc - 1], o, reset) ? 1 : 0;
}

int glassctl_filesystem(int argc, char **argv)
{
	struct glassfs_ioc_fs_info o;
	bool json = false, check = false;
	const char *sub = argc > 0 ? argv[0] : "";
	int rc;

	if (strcmp(sub, "show") && strcmp(sub, "usage"))
		return bad_usage();
	rc = load(argc, argv, false, &o, &json, &check);
	if (rc)
		return rc;
	if (json)
		print_json(&o);
	else if (!strcmp(sub, "show"))
		show(&o);
	else
		usage_full(&o);
	return 0;
}

/* device list|usage|stats; other device subcommands return -1. */
int glassctl_device_info(int argc, char **argv)
{
	struct glassfs_ioc_fs_info o;
	bool json = false, check = false;
	const char *sub = argc > 0 ? argv[0] : "";
	bool stats = !strcmp(sub, "stats");
	int rc;

	if (strcmp(sub, "list") && strcmp(sub, "usage") && !stats)
		return -1;
	rc = load(argc, argv, stats, &o, &json, &check);
	if (rc)
		return rc;
	if (stats)
		return dev_stats(&o, json) && check ? 64 : 0;
	if (json)
		print_json(&o);
	else if (!strcmp(sub, "list"))
		dev_list(&o);
	else
		dev_usage(&o);
	return 0;
}
