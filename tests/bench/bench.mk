# tests/bench/ — benchmark programs (built by `make bench`, run by
# tests/bench/run.sh).  memfs is the FUSE ceiling: an in-memory filesystem
# on the same libfuse3 low-level API and session options as glassfs.

MEMFS_FUSE_CFLAGS := $(shell pkg-config --cflags fuse3 2>/dev/null)
MEMFS_FUSE_LIBS   := $(shell pkg-config --libs fuse3 2>/dev/null || echo -lfuse3)

BENCH_BINS += $(OUT)/bench/memfs
$(OUT)/obj/tests/bench/memfs.o: EXTRA_CFLAGS += $(MEMFS_FUSE_CFLAGS)
$(OUT)/bench/memfs: $(OUT)/obj/tests/bench/memfs.o $(OUT)/obj/fs/fuse/fuse_readahead.o
	$(call msg,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(FP_FLAGS) -o $@ $^ $(MEMFS_FUSE_LIBS) -lpthread

# fsynclat: times each fsync of the fsync bench (experiment 6).
BENCH_BINS += $(OUT)/bench/fsynclat
$(OUT)/bench/fsynclat: $(OUT)/obj/tests/bench/fsynclat.o
	$(call msg,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(FP_FLAGS) -o $@ $^ -lpthread

# make bench-report: the talk's seven experiments (tests/bench/report.sh
# runs lockschemes, io-per-file, discard, fstsize, metafast, fsync and
# fleet with BENCH_OUT=$(OUT)/report) on one page, $(OUT)/report/report.html.
# REPORT_BENCHES=... runs a subset; BENCH_QUICK=1 tiny parameters.
.PHONY: bench-report
bench-report: deps
	$(Q)$(MAKE) --no-print-directory all $(BENCH_BINS)
	$(Q)OUT=$(OUT) tests/bench/report.sh

# make bench-report-pictures: pictures for docs/benchmarks.md (docs/img/) from the
# last bench-report: the key table and experiment 1's flame graph, rendered
# by headless Chromium (tests/bench/pictures.sh).
.PHONY: bench-report-pictures
bench-report-pictures:
	$(Q)OUT=$(OUT) tests/bench/pictures.sh $(OUT)/report docs/img

# passthrough_ll: libfuse's own low-level example, built from the source
# Debian ships with libfuse3-dev, over tmpfs in datapath.bench (a
# reference: the same kernel path with a real filesystem underneath).
PASSTHROUGH_LL_SRC := /usr/share/doc/libfuse3-dev/examples/passthrough_ll.c
ifneq ($(wildcard $(PASSTHROUGH_LL_SRC)),)
BENCH_BINS += $(OUT)/bench/passthrough_ll
$(OUT)/bench/passthrough_ll: $(PASSTHROUGH_LL_SRC)
	$(call msg,CC,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) -O2 -w -o $@ $< $(MEMFS_FUSE_CFLAGS) $(MEMFS_FUSE_LIBS) -lpthread
endif

# enginebench: the talk's lock experiment in-process (engine.bench): the
# engine library driven through fs/ops/fsops.h by N threads, no FUSE.
BENCH_BINS += $(OUT)/bench/enginebench
$(OUT)/bench/enginebench: $(OUT)/obj/tests/bench/enginebench.o $(OUT)/lib/libglassfs.a
	$(call msg,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(FP_FLAGS) -o $@ $^ $(FS_LIBS)

# extmap: a file's extents and disk gaps in an unmounted image (the
# allocation goal, issue 22; docs/benchmarks.md).
BENCH_BINS += $(OUT)/bench/extmap
$(OUT)/bench/extmap: $(OUT)/obj/tests/bench/extmap.o $(OUT)/lib/libglassfs.a
	$(call msg,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(FP_FLAGS) -o $@ $^ $(FS_LIBS)

# crcspeed: crc32c (ISA-L) against one crc32 instruction stream (crc32c.bench).
BENCH_BINS += $(OUT)/bench/crcspeed
$(OUT)/bench/crcspeed: $(OUT)/obj/tests/bench/crcspeed.o $(OUT)/lib/libglassfs.a
	$(call msg,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(FP_FLAGS) -o $@ $^ $(FS_LIBS)

# wrbench: the engine's CPU per 4 KiB random WRITE in-process (issue 22:
# the daemon's cost per WRITE sets buffered randwrite with the writeback cache).
BENCH_BINS += $(OUT)/bench/wrbench
$(OUT)/bench/wrbench: $(OUT)/obj/tests/bench/wrbench.o $(OUT)/lib/libglassfs.a
	$(call msg,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(FP_FLAGS) -o $@ $^ $(FS_LIBS)
