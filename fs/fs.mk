# fs/ — the engine, the daemon and its offline tools.
#
# Every fs/*.c is part of the engine library except the programs' mains
# (FS_MAINS) and the FUSE glue (fs/fuse_*.c, linked into the daemon only,
# so the engine links into unit tests with no FUSE at all).
# Adding a file needs no edit here.

FS_MAINS     := fs/main.c fs/mkfs.c fs/fsck.c fs/glassctl.c
# mkfs.glassfs's libblkid wipe, kept out of the engine library.
FS_MKFS_SRCS := fs/mkfs_wipe.c
FS_FUSE_SRCS := $(wildcard fs/fuse_*.c)
FS_LIB_SRCS  := $(filter-out $(FS_MAINS) $(FS_MKFS_SRCS) $(FS_FUSE_SRCS),$(wildcard fs/*.c))
FS_LIB_OBJS  := $(FS_LIB_SRCS:%.c=$(OUT)/obj/%.o)
FS_LIB_SAN   := $(FS_LIB_SRCS:%.c=$(OUT)/asan/%.o)
FS_LIBS      := -lpthread

FUSE_CFLAGS  := $(shell pkg-config --cflags fuse3 2>/dev/null)
FUSE_LIBS    := $(shell pkg-config --libs fuse3 2>/dev/null || echo -lfuse3)

# USDT probes: one list (fs/probes.d) -> one generated header.
GEN_HDRS += $(OUT)/gen/probes.h
$(OUT)/gen/probes.h: fs/probes.d
	$(call msg,DTRACE,$@)
	@mkdir -p $(@D)
	$(Q)dtrace -h -s $< -o $@

$(OUT)/lib/libglassfs.a: $(FS_LIB_OBJS)
	$(call msg,AR,$@)
	@mkdir -p $(@D)
	$(Q)rm -f $@ && ar rcs $@ $^

$(OUT)/lib/libglassfs-san.a: $(FS_LIB_SAN)
	$(call msg,AR,$@)
	@mkdir -p $(@D)
	$(Q)rm -f $@ && ar rcs $@ $^

$(FS_FUSE_SRCS:%.c=$(OUT)/obj/%.o) $(OUT)/obj/fs/main.o: EXTRA_CFLAGS += $(FUSE_CFLAGS)

ifneq ($(wildcard fs/main.c),)
BINS += $(OUT)/bin/glassfs
$(OUT)/bin/glassfs: $(OUT)/obj/fs/main.o $(FS_FUSE_SRCS:%.c=$(OUT)/obj/%.o) $(OUT)/lib/libglassfs.a
	$(call msg,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(FP_FLAGS) -o $@ $^ $(FUSE_LIBS) $(FS_LIBS)
endif

# The offline tools: one main each, linked against the engine library.
FS_TOOL_MAINS := $(filter-out fs/main.c,$(wildcard $(FS_MAINS)))
FS_TOOL_BINS  := $(patsubst fs/%.c,$(OUT)/bin/%.glassfs,$(filter fs/mkfs.c fs/fsck.c,$(FS_TOOL_MAINS))) \
		 $(if $(wildcard fs/glassctl.c),$(OUT)/bin/glassctl)
BINS += $(FS_TOOL_BINS)
$(OUT)/bin/%.glassfs: $(OUT)/obj/fs/%.o $(OUT)/lib/libglassfs.a
	$(call msg,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(FP_FLAGS) -o $@ $^ $(FS_LIBS)
$(OUT)/bin/mkfs.glassfs: $(FS_MKFS_SRCS:%.c=$(OUT)/obj/%.o)
$(OUT)/bin/mkfs.glassfs: FS_LIBS += -lblkid
$(OUT)/bin/glassctl: $(OUT)/obj/fs/glassctl.o $(OUT)/lib/libglassfs.a
	$(call msg,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(FP_FLAGS) -o $@ $^ $(FS_LIBS)

# Unit tests of the engine: tests/unit/test_*.c, each built with ASan and
# UBSan against the sanitizer build of the engine library.
FS_UNIT_SRCS := $(wildcard tests/unit/test_*.c)
TEST_BINS += $(FS_UNIT_SRCS:tests/unit/%.c=$(OUT)/test/unit/%)
$(OUT)/test/unit/%: $(OUT)/asan/tests/unit/%.o $(OUT)/lib/libglassfs-san.a
	$(call msg,LD-SAN,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(FP_FLAGS) $(SAN_FLAGS) -o $@ $^ $(FS_LIBS)
