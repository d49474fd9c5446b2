/*
 * syms_test.c — unit tests of tools/lib/syms.{c,h}, the user-space half:
 * a snapshot reads only the maps (no symbol table until a lookup), a
 * process that exited after its snapshot still resolves, even when its
 * binary was deleted meanwhile (the descriptor kept at first sight), two
 * processes of one binary share one file entry, and mappings added from
 * the kernel's mmap log (add_map/exec/fork, and tools/lib/mmapwatch.c for
 * real) resolve without any snapshot.
 *
 * Usage: syms_test [SEED]   (the seed picks the fake pids; printed)
 *        syms_test --child  (internal: print marker's address, wait)
 * Runs as any user; as root map_files is used, else /proc/PID/root/PATH.
 */
#include "tools/lib/syms.h"
#include "tools/lib/mmapwatch.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int fails;
#define CHECK(name, cond) do { \
	if (cond) printf("PASS: %s\n", name); \
	else { printf("FAIL: %s: %s:%d: %s\n", name, __FILE__, __LINE__, #cond); fails++; } \
} while (0)

/* The function whose name every case looks up. */
void __attribute__((noinline)) syms_test_marker(void)
{
	__asm__ volatile("" ::: "memory");
	pause();
}

/* A child (fork, or exec of exe when given) that reports marker's address
 * on a pipe and waits to be killed.  Returns its pid, *addr the address. */
static pid_t child(const char *exe, uint64_t *addr)
{
	int p[2];
	pid_t pid;
	FILE *f;
	unsigned long long a = 0;

	if (pipe(p))
		return -1;
	fflush(stdout);		/* or the child prints our buffered lines */
	pid = fork();
	if (pid == 0) {
		dup2(p[1], 1);
		close(p[0]);
		if (exe) {
			execl(exe, exe, "--child", (char *)NULL);
			_exit(127);
		}
		printf("%llx\n", (unsigned long long)(uintptr_t)syms_test_marker);
		fflush(stdout);
		syms_test_marker();
		_exit(0);
	}
	close(p[1]);
	f = fdopen(p[0], "r");
	if (!f || fscanf(f, "%llx", &a) != 1)
		a = 0;
	if (f)
		fclose(f);
	*addr = a;
	return pid;
}

static void reap(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static void lazy_and_exited(void)
{
	struct syms_cache *sc = syms_cache__new();
	struct syms_stats st;
	const char *mod = NULL, *n;
	uint64_t a;
	pid_t pid = child(NULL, &a);
	size_t files;

	CHECK("child started", pid > 0 && a);
	CHECK("snapshot of a live process", !syms_cache__snapshot(sc, pid));
	syms_cache__stats(sc, &st);
	CHECK("snapshot reads the maps, no symbol table",
	      st.snapshots == 1 && st.procs == 1 && st.files > 0 && st.files_loaded == 0);
	files = st.files;
	reap(pid);
	CHECK("re-snapshot of a gone process fails, keeps the maps",
	      syms_cache__snapshot(sc, pid) < 0);
	n = syms_cache__name(sc, pid, a, &mod);
	CHECK("exited process resolves from its saved maps",
	      n && !strcmp(n, "syms_test_marker"));
	CHECK("module is the binary's base name", mod && !strcmp(mod, "syms_test"));
	syms_cache__stats(sc, &st);
	CHECK("one table loaded, on the lookup", st.files_loaded == 1);

	/* A second process of the same binary: no new file entry. */
	pid = child(NULL, &a);
	CHECK("second snapshot", pid > 0 && !syms_cache__snapshot(sc, pid));
	syms_cache__stats(sc, &st);
	CHECK("two processes of one binary share its files", st.files == files);
	reap(pid);
	n = syms_cache__name(sc, pid, a, NULL);
	CHECK("second process resolves, no new load",
	      n && !strcmp(n, "syms_test_marker") && (syms_cache__stats(sc, &st), st.files_loaded == 1));
	n = syms_cache__name(sc, pid, 0x10, &mod);
	CHECK("unmapped address: no name, no module", !n && !mod);
	syms_cache__free(sc);
}

static void deleted_binary(void)
{
	char self[PATH_MAX], copy[] = "/tmp/syms_test.XXXXXX", cmd[2 * PATH_MAX + 16];
	struct syms_cache *sc = syms_cache__new();
	const char *mod = NULL, *n;
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	uint64_t a = 0;
	pid_t pid;
	int fd = mkstemp(copy);

	CHECK("temporary copy", len > 0 && fd >= 0);
	if (len <= 0 || fd < 0)
		return;
	self[len] = 0;
	close(fd);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s' && chmod +x '%s'", self, copy, copy);
	CHECK("copy the binary", !system(cmd));
	pid = child(copy, &a);
	CHECK("exec'ed copy started", pid > 0 && a);
	CHECK("snapshot", !syms_cache__snapshot(sc, pid));
	reap(pid);
	unlink(copy);
	n = syms_cache__name(sc, pid, a, &mod);
	CHECK("exited process whose binary was deleted resolves (descriptor kept)",
	      n && !strcmp(n, "syms_test_marker"));
	CHECK("deleted binary: module name without ' (deleted)'",
	      mod && !strncmp(mod, "syms_test.", 10) && !strchr(mod, ' '));
	syms_cache__free(sc);
}

/* Our own mapping of marker, as add_map is given it from the mmap log. */
static int self_map(uint64_t *s, uint64_t *e, uint64_t *off, unsigned *maj,
		    unsigned *min, uint64_t *ino, char *path)
{
	uint64_t a = (uintptr_t)syms_test_marker;
	char line[PATH_MAX + 128];
	FILE *f = fopen("/proc/self/maps", "r");
	int found = 0;

	while (f && !found && fgets(line, sizeof(line), f)) {
		unsigned long long ss, ee, oo, ii;

		if (sscanf(line, "%llx-%llx %*s %llx %x:%x %llu %4095s", &ss, &ee,
			   &oo, maj, min, &ii, path) == 7 && a >= ss && a < ee) {
			*s = ss, *e = ee, *off = oo, *ino = ii;
			found = 1;
		}
	}
	if (f)
		fclose(f);
	return found ? 0 : -1;
}

static void logged_maps(unsigned seed)
{
	struct syms_cache *sc = syms_cache__new();
	uint64_t s, e, off, ino, a = (uintptr_t)syms_test_marker;
	/* pids above any pid_max (2^22): never alive, never snapshotted */
	int base = (1 << 23) + (int)(seed % 1000) * 4;
	unsigned maj, min;
	char path[PATH_MAX];
	const char *n, *mod;
	struct syms_stats st;

	CHECK("own mapping found", !self_map(&s, &e, &off, &maj, &min, &ino, path));
	CHECK("unknown pid: no name, no module",
	      !syms_cache__name(sc, base + 3, a, &mod) && !mod);
	CHECK("add_map", !syms_cache__add_map(sc, base, s, e, off, maj, min, ino, path));
	n = syms_cache__name(sc, base, a, &mod);
	CHECK("logged mapping resolves without a snapshot", n && !strcmp(n, "syms_test_marker"));
	CHECK("fork copies the parent's maps", !syms_cache__fork(sc, base, base + 1) &&
	      (n = syms_cache__name(sc, base + 1, a, NULL)) && !strcmp(n, "syms_test_marker"));
	syms_cache__exec(sc, base);
	CHECK("exec forgets the old image", !syms_cache__name(sc, base, a, NULL));
	n = syms_cache__name(sc, base + 1, a, NULL);
	CHECK("the forked child keeps its copy", n && !strcmp(n, "syms_test_marker"));
	/* A later mapping over the same range wins: an anonymous one here. */
	CHECK("add_map over it", !syms_cache__add_map(sc, base + 1, s, e, 0, 0, 0, 0, "[anon]"));
	CHECK("newest mapping wins", !syms_cache__name(sc, base + 1, a, &mod) && !mod);
	syms_cache__stats(sc, &st);
	CHECK("stats count the added mappings", st.added == 2 && st.snapshots == 0);
	CHECK("logged mappings open no file", st.pinned == 0);
	syms_cache__free(sc);

	/* Pinning opens the files of a live process the log holds. */
	sc = syms_cache__new();
	syms_cache__add_map(sc, getpid(), s, e, off, maj, min, ino, path);
	syms_cache__pin(sc, getpid());
	syms_cache__pin(sc, getpid());
	syms_cache__stats(sc, &st);
	CHECK("pin opens a logged file once", st.pinned == 1 && st.files == 1);
	syms_cache__free(sc);
}

/* The kernel's mmap log alone: a process exec'ed, ran and died before
 * any snapshot; its image is known from the log (root or CAP_PERFMON). */
static void mmap_log(void)
{
	struct mmapwatch *mw = mmapwatch__new();
	struct syms_cache *sc = syms_cache__new();
	struct mmapwatch_stats ms;
	struct syms_stats st;
	char self[PATH_MAX];
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	const char *n;
	uint64_t a = 0;
	pid_t pid;

	if (!mw || len <= 0) {
		printf("SKIP: mmap log: %s\n", mw ? "no /proc/self/exe" : strerror(errno));
		mmapwatch__free(mw);
		syms_cache__free(sc);
		return;
	}
	self[len] = 0;
	pid = child(self, &a);
	CHECK("mmap log: exec'ed child started", pid > 0 && a);
	reap(pid);
	CHECK("mmap log: drain", !mmapwatch__drain(mw, sc));
	n = syms_cache__name(sc, pid, a, NULL);
	CHECK("mmap log: a process never snapshotted resolves from the log",
	      n && !strcmp(n, "syms_test_marker"));
	syms_cache__stats(sc, &st);
	mmapwatch__stats(mw, &ms);
	CHECK("mmap log: no snapshot taken, mappings added",
	      st.snapshots == 0 && st.added > 0 && ms.records >= st.added && !ms.lost);
	mmapwatch__free(mw);
	syms_cache__free(sc);
}

int main(int argc, char **argv)
{
	unsigned seed;

	if (argc > 1 && !strcmp(argv[1], "--child")) {
		printf("%llx\n", (unsigned long long)(uintptr_t)syms_test_marker);
		fflush(stdout);
		syms_test_marker();
		return 0;
	}
	seed = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 0) :
		getenv("SEED") ? (unsigned)strtoul(getenv("SEED"), NULL, 0) :
		(unsigned)time(NULL);
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("seed: %u\n", seed);
	lazy_and_exited();
	deleted_binary();
	logged_maps(seed);
	mmap_log();
	return fails ? 1 : 0;
}
