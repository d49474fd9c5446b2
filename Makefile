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
ALL_CFLAGS = $(CFLAGS) $(FP_FLAGS) $(WFLAGS) -std=gnu11 -D_GNU_SOURCE \
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
include $(sort $(wildcard fs/*.mk tools/*.mk bpf/*.mk aggregator/*.mk \
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

.PHONY: all deps test test-build bench soak fuzz demo install clean

all: $(BINS)

deps:
	$(Q)tools/deps.sh

test-build: all $(TEST_BINS)

# The README's test command: installs what is missing, builds, runs all tests.
test: deps
	$(Q)$(MAKE) --no-print-directory test-build
	$(Q)OUT=$(OUT) tests/run.sh $(TESTS)

bench: deps
	$(Q)$(MAKE) --no-print-directory all $(BENCH_BINS)
	$(Q)OUT=$(OUT) tests/bench/run.sh $(BENCHES)

# The README's first command: the talk's experiment end to end (tools/demo.sh).
demo: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)tools/demo.sh

install: all
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 755 $(BINS) $(DESTDIR)$(PREFIX)/bin/

clean:
	rm -rf $(OUT)

-include $(shell find $(OUT) -name '*.d' 2>/dev/null)

# The README's probe table, regenerated from fs/probes.d.
.PHONY: readme-probes
readme-probes:
	$(Q)tools/readme-probes.sh --write

# Long runs that do not belong in `make test`: 500 crash rounds, a
# million-entry directory, the crash unit test at many more kills, and the
# oracle test at a million operations per node size (50 random seeds of
# 20,000 each, on top of the fixed ones; about 2 hours each at ~150 ops/s).
soak: deps
	$(Q)$(MAKE) --no-print-directory test-build
	$(Q)CRASH_ROUNDS=$${CRASH_ROUNDS:-500} BIGDIR_FILES=$${BIGDIR_FILES:-1000000} \
		TEST_TIMEOUT=$${TEST_TIMEOUT:-7200} OUT=$(OUT) tests/run.sh crash.test stress.test
	$(Q)ORACLE_ROUNDS=$${ORACLE_ROUNDS:-50} ORACLE_OPS=$${ORACLE_OPS:-20000} \
		TEST_TIMEOUT=$${ORACLE_TIMEOUT:-28800} OUT=$(OUT) tests/run.sh oracle
