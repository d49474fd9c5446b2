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

# ---- flame graphs: tools/lib/{folded,flamegraph,xmlesc,svgchart},
# glass-flamegraph, glass-report, their tests (tests/tools), fuzzing.
#   make regolden-tools   re-record tests/tools golden files after a
#                         deliberate format change (review with git diff)
#   make fuzz-flamegraph  libFuzzer on the parser + renderer, FUZZ_TIME s

# The script embedded in every SVG: tools/lib/flamegraph.js as a C string.
GEN_HDRS += $(OUT)/gen/flamegraph_js.h
$(OUT)/gen/flamegraph_js.h: tools/lib/flamegraph.js
	$(call msg,GEN,$@)
	@mkdir -p $(@D)
	$(Q)if grep -q ']]>' $<; then echo "$<: contains ]]>" >&2; exit 1; fi
	$(Q){ echo '/* generated from $< — do not edit */'; \
	  echo 'static const char flamegraph_js[] ='; \
	  sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$$/\\n"/' $<; \
	  echo ';'; } > $@

TOOLS_FG_BINS := $(OUT)/bin/glass-flamegraph $(OUT)/bin/glass-report
BINS += $(TOOLS_FG_BINS)

$(OUT)/bin/glass-flamegraph: $(OUT)/obj/tools/glass-flamegraph.o $(TOOLS_LIB)
	$(call msg,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(FP_FLAGS) -o $@ $^ -lm

$(OUT)/bin/glass-report: $(OUT)/obj/tools/glass-report.o $(TOOLS_LIB)
	$(call msg,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(FP_FLAGS) -o $@ $^ -ljansson -lm

# Unit tests (ASan/UBSan): one program per tests/tools/NAME.c.  fuzz_folded
# replays tests/tools/corpus/ (fuzz crashers) and the parser goldens.
TOOLS_TEST_LIBS := -lm
TEST_BINS += $(OUT)/test/tools/folded_test $(OUT)/test/tools/flamegraph_test \
	     $(OUT)/test/tools/fuzz_folded $(OUT)/test/tools/hist_test
# syms_test: the symbolizer (tools/lib/syms.c) reads ELF files.
TEST_BINS += $(OUT)/test/tools/syms_test
$(OUT)/test/tools/syms_test: TOOLS_TEST_LIBS += -lelf -ldl
$(OUT)/test/tools/%: $(OUT)/asan/tests/tools/%.o $(TOOLS_LIB_SAN)
	$(call msg,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(FP_FLAGS) $(SAN_FLAGS) -o $@ $^ $(TOOLS_TEST_LIBS)

.PHONY: regolden-tools
regolden-tools: $(OUT)/test/tools/folded_test $(TOOLS_FG_BINS)
	$(Q)GLASSFS_ROOT=$(CURDIR) REGOLDEN=1 $(OUT)/test/tools/folded_test >/dev/null
	$(Q)GLASSFS_ROOT=$(CURDIR) OUT=$(OUT) REGOLDEN=1 tests/tools/flamegraph.test >/dev/null
	@echo "re-recorded tests/tools golden files: review with git diff"

# libFuzzer (clang, ASan+UBSan).  Crashers are written to tests/tools/corpus/
# so that, once committed, the fuzz_folded unit test replays them.
FUZZ_TIME ?= 60
FUZZ_SRCS := tests/tools/fuzz_folded.c tools/lib/folded.c tools/lib/flamegraph.c \
	     tools/lib/xmlesc.c
.PHONY: fuzz-flamegraph
fuzz-flamegraph: $(OUT)/fuzz/fuzz_folded
	@mkdir -p $(OUT)/fuzz/corpus
	$(Q)cp -n tests/tools/folded/*.in tests/tools/corpus/* $(OUT)/fuzz/corpus/ 2>/dev/null || true
	$(OUT)/fuzz/fuzz_folded -max_total_time=$(FUZZ_TIME) -max_len=4096 -timeout=10 \
		-artifact_prefix=tests/tools/corpus/ $(OUT)/fuzz/corpus
$(OUT)/fuzz/fuzz_folded: $(FUZZ_SRCS) $(wildcard tools/lib/*.h) $(OUT)/gen/flamegraph_js.h
	$(call msg,FUZZ-LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CLANG) -g -O1 -std=gnu11 -D_GNU_SOURCE -DFUZZING -I. -I$(OUT)/gen \
		-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
		-o $@ $(FUZZ_SRCS) -lm

# `make fuzz` runs every area's fuzzer.
fuzz: fuzz-flamegraph fuzz-aggregator
