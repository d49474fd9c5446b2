# fs/ — the engine, the daemon and its offline tools, one folder per layer
# (fs/*/README.md; the order and the rules: tests/unit/layers.test).
#
# Every fs/*/*.c is part of the engine library except the programs
# (fs/cmd/) and the FUSE glue (fs/fuse/, linked into the daemon only, so the
# engine links into unit tests with no FUSE at all).  Adding a file needs no
# edit here.  Each layer may add its own rules as fs/LAYER/*.mk.

FS_LAYERS    := base format core store btree trees txn items services ops fuse cmd
FS_MAINS     := fs/cmd/main.c fs/cmd/mkfs.c fs/cmd/fsck.c fs/cmd/glassctl.c
FS_CMD_SRCS  := $(wildcard fs/cmd/*.c)
FS_FUSE_SRCS := $(wildcard fs/fuse/*.c)
FS_LIB_SRCS  := $(filter-out $(FS_CMD_SRCS) $(FS_FUSE_SRCS),$(wildcard fs/*/*.c))
FS_LIB_OBJS  := $(FS_LIB_SRCS:%.c=$(OUT)/obj/%.o)
FS_LIB_SAN   := $(FS_LIB_SRCS:%.c=$(OUT)/asan/%.o)
FS_LIBS      := -lpthread -lisal

FUSE_CFLAGS  := $(shell pkg-config --cflags fuse3 2>/dev/null)
FUSE_LIBS    := $(shell pkg-config --libs fuse3 2>/dev/null || echo -lfuse3)

# USDT probes: one list (fs/base/probes.d) -> one generated header.
GEN_HDRS += $(OUT)/gen/probes.h
$(OUT)/gen/probes.h: fs/base/probes.d
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

$(FS_FUSE_SRCS:%.c=$(OUT)/obj/%.o) $(OUT)/obj/fs/cmd/main.o: EXTRA_CFLAGS += $(FUSE_CFLAGS)

ifneq ($(wildcard fs/cmd/main.c),)
BINS += $(OUT)/bin/glassfs
$(OUT)/bin/glassfs: $(OUT)/obj/fs/cmd/main.o $(FS_FUSE_SRCS:%.c=$(OUT)/obj/%.o) $(OUT)/lib/libglassfs.a
	$(call msg,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(FP_FLAGS) -o $@ $^ $(FUSE_LIBS) $(FS_LIBS)
endif

# The offline tools: one main each, linked against the engine library.
FS_TOOL_MAINS := $(filter-out fs/cmd/main.c,$(wildcard $(FS_MAINS)))
FS_TOOL_BINS  := $(patsubst fs/cmd/%.c,$(OUT)/bin/%.glassfs,$(filter fs/cmd/mkfs.c fs/cmd/fsck.c,$(FS_TOOL_MAINS))) \
		 $(if $(wildcard fs/cmd/glassctl.c),$(OUT)/bin/glassctl)
# glassctl's subcommand files (fs/cmd/glassctl_*.c) link into glassctl only,
# fsck's pass over the items (fs/cmd/fsck_items.c) and its repairs
# (fs/cmd/fsck_repair.c) into fsck.glassfs only.
GLASSCTL_PARTS := $(wildcard fs/cmd/glassctl_*.c)
$(OUT)/bin/fsck.glassfs: $(OUT)/obj/fs/cmd/fsck_items.o $(OUT)/obj/fs/cmd/fsck_repair.o
# the progress line (fs/cmd/progress.c) of glassctl, mkfs and fsck
$(OUT)/bin/fsck.glassfs $(OUT)/bin/mkfs.glassfs: $(OUT)/obj/fs/cmd/progress.o
BINS += $(FS_TOOL_BINS)
$(OUT)/bin/%.glassfs: $(OUT)/obj/fs/cmd/%.o $(OUT)/lib/libglassfs.a
	$(call msg,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(FP_FLAGS) -o $@ $^ $(FS_LIBS)
# mkfs.glassfs's libblkid wipe (fs/cmd/mkfs_wipe.c), kept out of the engine library.
FS_MKFS_SRCS := fs/cmd/mkfs_wipe.c
$(OUT)/bin/mkfs.glassfs: $(FS_MKFS_SRCS:%.c=$(OUT)/obj/%.o)
$(OUT)/bin/mkfs.glassfs: FS_LIBS += -lblkid
$(OUT)/bin/glassctl: $(OUT)/obj/fs/cmd/glassctl.o $(GLASSCTL_PARTS:%.c=$(OUT)/obj/%.o) $(OUT)/obj/fs/cmd/progress.o \
		     $(OUT)/lib/libglassfs.a
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
