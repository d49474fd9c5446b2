# bpf/ — libbpf CO-RE tools: the skeleton chain
#   bpf/NAME.bpf.c -> $(OUT)/bpf/NAME.bpf.o -> $(OUT)/gen/NAME.skel.h
#   tools/glass-NAME.c + skeleton + libglasstools.a -> $(OUT)/bin/glass-NAME
# A new tool is one more word in BPF_TOOLS.  (This file is read before
# tools/tools.mk: name libglasstools.a by path, not by its variable.)

BPF_TOOLS  := offcputime lockstat commitlat trimstat profile

BPFTOOL    ?= bpftool
BPF_CLANG  ?= clang
BPF_ARCH   := x86
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(BPF_ARCH) -Wall -Werror \
	      -Wno-unused-function -I$(OUT)/gen -Ibpf \
	      -I/usr/include/$(shell uname -m)-linux-gnu
BPF_LIBS   := $(shell pkg-config --libs libbpf 2>/dev/null || echo -lbpf) -lelf -lz

VMLINUX_H  := $(OUT)/gen/vmlinux.h
BPF_TOOL_SRCS := $(wildcard $(BPF_TOOLS:%=bpf/%.bpf.c))
BPF_NAMES  := $(BPF_TOOL_SRCS:bpf/%.bpf.c=%)
BPF_BINS   := $(BPF_NAMES:%=$(OUT)/bin/glass-%)
BPF_SKELS  := $(BPF_NAMES:%=$(OUT)/gen/%.skel.h)
BINS       += $(BPF_BINS)

# Generated from the running kernel's BTF at build time, never committed.
$(VMLINUX_H):
	$(call msg,BTF,$@)
	@mkdir -p $(@D)
	$(Q)test -r /sys/kernel/btf/vmlinux || { echo "bpf.mk: no /sys/kernel/btf/vmlinux: kernel built without BTF (CONFIG_DEBUG_INFO_BTF)" >&2; exit 1; }
	$(Q)$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@.tmp && mv $@.tmp $@

$(OUT)/bpf/%.bpf.o: bpf/%.bpf.c $(VMLINUX_H) $(wildcard bpf/*.h)
	$(call msg,BPF,$@)
	@mkdir -p $(@D)
	$(Q)$(BPF_CLANG) $(BPF_CFLAGS) -c $< -o $@

$(OUT)/gen/%.skel.h: $(OUT)/bpf/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	@mkdir -p $(@D)
	$(Q)$(BPFTOOL) gen skeleton $< > $@.tmp && mv $@.tmp $@

# The loader's object needs its skeleton (and the probes list for USDT tools).
$(BPF_NAMES:%=$(OUT)/obj/tools/glass-%.o): $(OUT)/obj/tools/glass-%.o: $(OUT)/gen/%.skel.h

# tools/lib/pprof.c (--pprof) packs aggregator/profile.proto with protoc-c.
$(BPF_BINS): $(OUT)/bin/glass-%: $(OUT)/obj/tools/glass-%.o $(OUT)/lib/libglasstools.a \
	     $(OUT)/obj/aggregator/profile.pb-c.o
	$(call msg,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(FP_FLAGS) -o $@ $^ $(BPF_LIBS) -lprotobuf-c -lm

.PHONY: bpf
bpf: $(BPF_BINS)

# Keep the objects between the chain's links (make would delete them).
.SECONDARY: $(BPF_NAMES:%=$(OUT)/bpf/%.bpf.o)

# glass-profile --wall loads glass-offcputime's BPF side beside its own.
$(OUT)/obj/tools/glass-profile.o: $(OUT)/gen/offcputime.skel.h
