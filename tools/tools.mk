# tools/ — report tools and the shared helpers every tool links (tools/lib).
#
# Every tools/lib/*.c goes into libglasstools.a; adding a helper needs no
# edit here.  Programs are added to TOOLS_BINS by the fragment that owns
# them (this file for plain C tools, bpf/bpf.mk for BPF loaders).

TOOLS_LIB_SRCS := $(wildcard tools/lib/*.c)
TOOLS_LIB      := $(OUT)/lib/libglasstools.a
TOOLS_LIB_SAN  := $(OUT)/lib/libglasstools-san.a

$(TOOLS_LIB): $(TOOLS_LIB_SRCS:%.c=$(OUT)/obj/%.o)
	$(call msg,AR,$@)
	@mkdir -p $(@D)
	$(Q)rm -f $@ && ar rcs $@ $^

$(TOOLS_LIB_SAN): $(TOOLS_LIB_SRCS:%.c=$(OUT)/asan/%.o)
	$(call msg,AR,$@)
	@mkdir -p $(@D)
	$(Q)rm -f $@ && ar rcs $@ $^
