/*
 * spool.c — the agent's on-disk queue (see spool.h for the contract).
 */
#include "aggregator/spool.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int is_window(const char *name)
{
	size_t n = strlen(name);

	return name[0] != '.' && n > 8 && !strcmp(name + n - 8, ".json.gz");
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted list of window file names; caller frees each and the array. */
static int list(struct spool *sp, char ***out, size_t *n)
{
	DIR *d = opendir(sp->dir);
	struct dirent *de;
	char **v = NULL;
	size_t cap = 0;

	*n = 0;
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (!is_window(de->d_name))
			continue;
		if (*n == cap) {
			char **nv = realloc(v, (cap = cap ? cap * 2 : 64) * sizeof(*nv));

			if (!nv)
				goto oom;
			v = nv;
		}
		if (!(v[*n] = strdup(de->d_name)))
			goto oom;
		(*n)++;
	}
	closedir(d);
	if (*n)		/* qsort(NULL, 0) is undefined behaviour */
		qsort(v, *n, sizeof(*v), cmp_str);
	*out = v;
	return 0;
oom:
	closedir(d);
	while (*n)
		free(v[--*n]);
	free(v);
	return -ENOMEM;
}

static void rescan(struct spool *sp)
{
	char **v, p[PATH_MAX];
	size_t n;
	struct stat st;

	sp->bytes = 0;
	sp->files = 0;
	if (list(sp, &v, &n))
		return;
	for (size_t i = 0; i < n; i++) {
		snprintf(p, sizeof(p), "%s/%s", sp->dir, v[i]);
		if (!stat(p, &st)) {
			sp->bytes += st.st_size;
			sp->files++;
		}
		free(v[i]);
	}
	free(v);
}

static int mkdirs(const char *dir)
{
	char p[PATH_MAX];
	size_t n = strlen(dir);

	if (n >= sizeof(p))
		return -ENAMETOOLONG;
	memcpy(p, dir, n + 1);
	for (char *s = p + 1; *s; s++)
		if (*s == '/') {
			*s = 0;
			if (mkdir(p, 0700) && errno != EEXIST)
				return -errno;
			*s = '/';
		}
	if (mkdir(p, 0700) && errno != EEXIST)
		return -errno;
	return 0;
}

int spool_open(struct spool *sp, const char *dir, uint64_t max_bytes)
{
	int rc;

	memset(sp, 0, sizeof(*sp));
	if ((rc = mkdirs(dir)))
		return rc;
	if (!(sp->dir = strdup(dir)))
		return -ENOMEM;
	sp->max_bytes = max_bytes;
	rescan(sp);
	return 0;
}

void spool_close(struct spool *sp)
{
	free(sp->dir);
	sp->dir = NULL;
}

int spool_oldest(struct spool *sp, char *buf, size_t buflen)
{
	char **v;
	size_t n;
	int rc = list(sp, &v, &n);

	if (rc)
		return rc;
	if (!n) {
		free(v);
		return -ENOENT;
	}
	snprintf(buf, buflen, "%s/%s", sp->dir, v[0]);
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
	return 0;
}

int spool_remove(struct spool *sp, const char *path)
{
	struct stat st;

	if (!stat(path, &st) && !unlink(path)) {
		sp->bytes -= (uint64_t)st.st_size <= sp->bytes ? (uint64_t)st.st_size : sp->bytes;
		if (sp->files)
			sp->files--;
		return 0;
	}
	return -errno;
}

int spool_reject(struct spool *sp, const char *path)
{
	char rd[PATH_MAX], dst[PATH_MAX];
	const char *base = strrchr(path, '/');
	struct stat st;

	snprintf(rd, sizeof(rd), "%s/rejected", sp->dir);
	if (mkdir(rd, 0700) && errno != EEXIST)
		return -errno;
	if ((size_t)snprintf(dst, sizeof(dst), "%s/%s", rd, base ? base + 1 : path) >= sizeof(dst))
		return -ENAMETOOLONG;
	if (stat(path, &st) || rename(path, dst))
		return -errno;
	sp->bytes -= (uint64_t)st.st_size <= sp->bytes ? (uint64_t)st.st_size : sp->bytes;
	if (sp->files)
		sp->files--;
	return 0;
}

int spool_put(struct spool *sp, int64_t start_ns, uint64_t seq, const void *data, size_t len)
{
	char tmp[PATH_MAX], dst[PATH_MAX];
	int fd;

	if (len > sp->max_bytes)
		return -E2BIG;
	/* Make room: drop the oldest windows until this one fits. */
	while (sp->bytes + len > sp->max_bytes) {
		char old[PATH_MAX];

		if (spool_oldest(sp, old, sizeof(old)))
			break;
		if (spool_remove(sp, old))
			break;
		sp->dropped++;
		fprintf(stderr, "glass-agent: spool full (%llu bytes max): dropped oldest window %s\n",
			(unsigned long long)sp->max_bytes, old);
	}
	snprintf(dst, sizeof(dst), "%s/%019lld-%010llu.json.gz", sp->dir, (long long)start_ns,
		 (unsigned long long)seq);
	snprintf(tmp, sizeof(tmp), "%s/.tmp-%010llu", sp->dir, (unsigned long long)seq);
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) < 0)
		return -errno;
	for (size_t off = 0; off < len;) {
		ssize_t w = write(fd, (const char *)data + off, len - off);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			int e = errno;
			close(fd);
			unlink(tmp);
			return -e;
		}
		off += w;
	}
	if (fsync(fd)) {
		int e = errno;

		close(fd);
		unlink(tmp);
		return -e;
	}
	if (close(fd) || rename(tmp, dst)) {
		int e = errno;

		unlink(tmp);
		return -e;
	}
	/* The rename must survive a crash too. */
	if ((fd = open(sp->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
		fsync(fd);
		close(fd);
	}
	sp->bytes += len;
	sp->files++;
	return 0;
}
