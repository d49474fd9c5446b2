# glassfs — one entry point: make, make test, make bench, make demo, make install.
#
# Each area owns fragments (fs/fs.mk, tools/tools.mk, bpf/bpf.mk,
# aggregator/aggregator.mk, tests/AREA/*.mk, ...) that appends to the lists
# below; this file owns only the flags, the pattern rules and the phony
# targets.  Everything builds into $(OUT).  Quiet unless V=1.

OUT      ?= build
CC       ?= gcc
CLANG    ?= clang
PREFIX   ?= /usr/local

ifeq ($(V),1)
Q :=
msg = @true
else
Q := @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)"
endif

# Frame pointers everywhere: off-CPU user stacks unwind through the engine.
FP_FLAGS := -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer
WFLAGS   := -Wall -Wextra -Werror
CFLAGS   ?= -O2 -g
# What every program's --version prints.
VERSION  := 0.1
ALL_CFLAGS = $(CFLAGS) $(FP_FLAGS) $(WFLAGS) -std=gnu11 -D_GNU_SOURCE -DGLASSFS_VERSION='"$(VERSION)"' \
	     -D_FILE_OFFSET_BITS=64 -MMD -MP -I$(OUT)/gen -I. $(EXTRA_CFLAGS)
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined

# Lists the fragments append to.
BINS        :=	# installed programs, $(OUT)/bin/NAME
TEST_BINS   :=	# test programs, built by `make test-build`
BENCH_BINS  :=	# benchmark programs
GEN_HDRS    :=	# generated headers every object may depend on

.DEFAULT_GOAL := all
.DELETE_ON_ERROR:
.SECONDARY:
.SUFFIXES:

# Every area's fragments: AREA/*.mk and tests/*/*.mk (one per owner).
include $(sort $(wildcard fs/*.mk fs/*/*.mk tools/*.mk bpf/*.mk aggregator/*.mk \
	dashboards/*.mk tests/*.mk tests/*/*.mk))

# Plain objects and sanitizer objects from the same sources.
$(OUT)/obj/%.o: %.c | $(GEN_HDRS)
	$(call msg,CC,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -c $< -o $@

$(OUT)/asan/%.o: %.c | $(GEN_HDRS)
	$(call msg,CC-SAN,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) $(SAN_FLAGS) -c $< -o $@

.PHONY: all deps deps-demo test test-build bench soak fuzz demo install clean

all: $(BINS)

# What the tests need (tools/deps-demo.apt + tools/deps.apt, npm), and what
# only the build and the demo need (tools/deps-demo.apt).
deps:
	$(Q)tools/deps.sh test

deps-demo:
	$(Q)tools/deps.sh demo

test-build: all $(TEST_BINS)

# The README's test command: installs what is missing, builds, runs all tests.
test: deps
	$(Q)$(MAKE) --no-print-directory test-build
	$(Q)OUT=$(OUT) tests/run.sh $(TESTS)

bench: deps
	$(Q)$(MAKE) --no-print-directory all $(BENCH_BINS)
	$(Q)OUT=$(OUT) tests/bench/run.sh $(BENCHES)

# The README's first command: the talk's experiment end to end (tools/demo.sh).
demo: deps-demo
	$(Q)$(MAKE) --no-print-directory all
	$(Q)OUT=$(OUT) tools/demo.sh

# Programs, the reference pages (the systemd units' Documentation= points
# there) and the systemd units (systemd reads $(PREFIX)/lib/systemd/system).
DOC_DIR  = $(DESTDIR)$(PREFIX)/share/doc/glassfs
UNIT_DIR = $(DESTDIR)$(PREFIX)/lib/systemd/system
install: all
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 755 $(BINS) $(DESTDIR)$(PREFIX)/bin/
	install -d $(DOC_DIR)/docs/img $(DOC_DIR)/aggregator $(UNIT_DIR)
	install -m 644 README.md $(DOC_DIR)/
	install -m 644 docs/*.md $(DOC_DIR)/docs/
	install -m 644 docs/img/*.png $(DOC_DIR)/docs/img/
	install -m 644 aggregator/API.md $(DOC_DIR)/aggregator/
	install -m 644 aggregator/systemd/*.service $(UNIT_DIR)/
	install -d $(DESTDIR)$(PREFIX)/share/man/man8
	install -m 644 $(MANS) $(DESTDIR)$(PREFIX)/share/man/man8/

# A man page for every program, from its --help and --version (help2man:
# one source, the text the program prints).  Section 8: they run as root.
MANS = $(BINS:$(OUT)/bin/%=$(OUT)/man/%.8)
.PHONY: man
man: $(MANS)
install: $(MANS)
$(OUT)/man/%.8: $(OUT)/bin/%
	$(call msg,MAN,$@)
	@mkdir -p $(@D)
	$(Q)help2man -N -s 8 --no-discard-stderr -o $@ $< >/dev/null 2>&1 || \
		{ echo "man: help2man failed for $< (apt-get install help2man)" >&2; exit 1; }

# The targets, one line each.
.PHONY: help
help:
	@echo 'make              build everything into $(OUT)/ (V=1 shows the commands)'
	@echo 'make demo         as root: the talk'"'"'s experiment end to end (tools/demo.sh; DEMO_SERVE=1 keeps the dashboards up)'
	@echo 'make test         as root: install what the tests need, build, run every test (TESTS=FILTER...)'
	@echo 'make test-build   build the programs and the test programs'
	@echo 'make bench        the benchmarks (BENCHES="NAME ..."); docs/benchmarks.md'
	@echo 'make bench-report the talk'"'"'s seven experiments as one HTML page'
	@echo 'make soak         long crash and big-directory runs'
	@echo 'make fuzz         the libFuzzer targets (FUZZ_TIME seconds each)'
	@echo 'make deps         install the Debian packages the tests need (deps-demo: the demo'"'"'s only)'
	@echo 'make docs-probes  regenerate docs/probes.md from fs/base/probes.d'
	@echo 'make demo-picture the README'"'"'s pictures (flame graph, wall-clock graph) from the last make demo'
	@echo 'make man          a man page for every program, from its --help (help2man)'
	@echo 'make install      programs, man pages, dashboards, docs, systemd units under PREFIX=$(PREFIX) (DESTDIR honoured)'
	@echo 'make clean        remove $(OUT)/'

clean:
	rm -rf $(OUT)

-include $(shell find $(OUT) -name '*.d' 2>/dev/null)

# The probe reference (docs/probes.md), regenerated from fs/base/probes.d.
.PHONY: docs-probes readme-probes demo-picture
docs-probes readme-probes:
	$(Q)tools/readme-probes.sh --write

# The README's pictures from the last `make demo` (tools/demo-picture.sh).
demo-picture:
	$(Q)tools/demo-picture.sh

# Long runs that do not belong in `make test`: 500 crash rounds, a
# million-entry directory, the crash unit test at many more kills,
# power-loss crash states (test_powerloss: every class on single and raid1
# volumes, 1,000 random states per workload and profile and a mixed
# workload of 330 steps: the least found to reach 10,000 distinct states
# (10,300-10,862 over six seeds: COUNT_ONLY=1 counts them without the
# checks); then dup at the defaults with every class, then with every
# class the opt-in raid profiles: raid6, convert2 (two data chunks' moves),
# device remove and replace on raid5 and raid6 (POWERLOSS_RAID_PROFILES=
# to choose); RANDOM_STATES=n,
# MIXED_STEPS=n, SEED=n; repeats of a state are not counted;
# powerloss.test: 200 states of a log written
# by the real daemon, single and raid1, POWERLOSS_STATES=n), and the
# oracle test at a million operations per node size (50 random seeds of
# 20,000 each, on top of the fixed ones; about 2 hours each at ~150 ops/s),
# and the B-tree model tests under every lock scheme (BTREE_MATRIX=full:
# node, groups:4/16/64 x cowlock=leaf/path x rwlock/mutex/spin, 4 and
# 16 KiB nodes; BTREE_TIMEOUT=s, 4 h by default), and stress-ng's whole
# filesystem class with --verify, 60 s a stressor (STRESSNG_SECONDS=s).
soak: deps
	$(Q)$(MAKE) --no-print-directory test-build
	$(Q)CRASH_ROUNDS=$${CRASH_ROUNDS:-500} BIGDIR_FILES=$${BIGDIR_FILES:-1000000} \
		TEST_TIMEOUT=$${TEST_TIMEOUT:-7200} OUT=$(OUT) tests/run.sh crash.test stress.test
	$(Q)RANDOM_STATES=$${RANDOM_STATES:-1000} MIXED_STEPS=$${MIXED_STEPS:-330} \
		PROFILE=$${PROFILE:-single,raid1,convert} EPOCH_CLASSES=all POWERLOSS_STATES=$${POWERLOSS_STATES:-200} \
		TEST_TIMEOUT=$${POWERLOSS_TIMEOUT:-28800} OUT=$(OUT) tests/run.sh test_powerloss \
		powerloss.test
	$(Q)PROFILE=dup EPOCH_CLASSES=all TEST_TIMEOUT=$${POWERLOSS_TIMEOUT:-28800} OUT=$(OUT) \
		tests/run.sh test_powerloss
	$(Q)PROFILE=$${POWERLOSS_RAID_PROFILES:-raid6,convert2,raid5remove,raid6remove,raid5replace,raid6replace} \
		EPOCH_CLASSES=all TEST_TIMEOUT=$${POWERLOSS_TIMEOUT:-28800} OUT=$(OUT) tests/run.sh test_powerloss
	$(Q)POWERLOSS_PROFILE=raid1 POWERLOSS_STATES=$${POWERLOSS_STATES:-200} \
		TEST_TIMEOUT=$${POWERLOSS_TIMEOUT:-28800} OUT=$(OUT) tests/run.sh powerloss.test
	$(Q)BTREE_MATRIX=full TEST_TIMEOUT=$${BTREE_TIMEOUT:-14400} OUT=$(OUT) tests/run.sh btree_mem
	$(Q)ORACLE_ROUNDS=$${ORACLE_ROUNDS:-50} ORACLE_OPS=$${ORACLE_OPS:-20000} \
		TEST_TIMEOUT=$${ORACLE_TIMEOUT:-28800} OUT=$(OUT) tests/run.sh oracle
	$(Q)STRESSNG_CLASS=1 STRESSNG_SECONDS=$${STRESSNG_SECONDS:-60} TEST_TIMEOUT=$${STRESSNG_TIMEOUT:-7200} \
		OUT=$(OUT) tests/run.sh stressng.test
