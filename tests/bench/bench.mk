# tests/bench/ — benchmark programs (built by `make bench`, run by
# tests/bench/run.sh).  memfs is the FUSE ceiling: an in-memory filesystem
# on the same libfuse3 low-level API and session options as glassfs.

MEMFS_FUSE_CFLAGS := $(shell pkg-config --cflags fuse3 2>/dev/null)
MEMFS_FUSE_LIBS   := $(shell pkg-config --libs fuse3 2>/dev/null || echo -lfuse3)

BENCH_BINS += $(OUT)/bench/memfs
$(OUT)/obj/tests/bench/memfs.o: EXTRA_CFLAGS += $(MEMFS_FUSE_CFLAGS)
$(OUT)/bench/memfs: $(OUT)/obj/tests/bench/memfs.o
	$(call msg,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(FP_FLAGS) -o $@ $^ $(MEMFS_FUSE_LIBS) -lpthread
