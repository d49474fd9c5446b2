# aggregator/ — glass-aggd (the fleet aggregation service) and glass-agent.
# Both link tools/lib (the one folded parser, and the flame-graph renderer
# when present) through $(OUT)/lib/libglasstools.a (spelled out: this
# fragment is included before tools/tools.mk defines TOOLS_LIB).  Unit
# tests run under ASan/UBSan.

AGG_AGGD_SRCS  := aggregator/aggd.c aggregator/tokens.c aggregator/http.c aggregator/query.c \
		  aggregator/metrics.c aggregator/fleetmetrics.c aggregator/store.c aggregator/store_sqlite.c \
		  aggregator/store_clickhouse.c
AGG_CORE_SRCS  := aggregator/labels.c aggregator/selector.c aggregator/ingest.c aggregator/gunzip.c aggregator/pprof.c \
		  aggregator/locks.c
# pprof: profile.proto -> $(OUT)/gen/aggregator/profile.pb-c.{c,h} (protoc-c)
AGG_PB_C       := $(OUT)/gen/aggregator/profile.pb-c.c
AGG_PB_H       := $(OUT)/gen/aggregator/profile.pb-c.h
GEN_HDRS       += $(AGG_PB_H)
AGG_CORE_OBJS   = $(AGG_CORE_SRCS:%.c=$(OUT)/obj/%.o) $(OUT)/obj/aggregator/profile.pb-c.o \
		  $(OUT)/obj/aggregator/regex.o
AGG_CORE_SAN    = $(AGG_CORE_SRCS:%.c=$(OUT)/asan/%.o) $(OUT)/asan/aggregator/profile.pb-c.o \
		  $(OUT)/asan/aggregator/regex.o

# Every user-supplied pattern goes through RE2 (Debian libre2-dev) behind a
# small C++ shim with a C API (aggregator/regex.h).
CXX            ?= g++
AGG_CXXFLAGS    = $(CFLAGS) $(FP_FLAGS) $(WFLAGS) -std=c++17 -MMD -MP -I. $(EXTRA_CFLAGS)
$(OUT)/obj/aggregator/regex.o: aggregator/regex.cc
	$(call msg,CXX,$@)
	@mkdir -p $(@D)
	$(Q)$(CXX) $(AGG_CXXFLAGS) -c $< -o $@
$(OUT)/asan/aggregator/regex.o: aggregator/regex.cc
	$(call msg,CXX-SAN,$@)
	@mkdir -p $(@D)
	$(Q)$(CXX) $(AGG_CXXFLAGS) $(SAN_FLAGS) -c $< -o $@

$(AGG_PB_C) $(AGG_PB_H) &: aggregator/profile.proto
	$(call msg,PROTOC,$@)
	@mkdir -p $(OUT)/gen
	$(Q)protoc-c --c_out=$(OUT)/gen --proto_path=. $<

$(OUT)/obj/aggregator/profile.pb-c.o: $(AGG_PB_C)
	$(call msg,CC,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -c $< -o $@

$(OUT)/asan/aggregator/profile.pb-c.o: $(AGG_PB_C)
	$(call msg,CC-SAN,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) $(SAN_FLAGS) -c $< -o $@
AGG_AGENT_SRCS := aggregator/agent.c aggregator/spool.c
AGG_LIBS       := $(shell pkg-config --libs libmicrohttpd sqlite3 jansson zlib libcurl libprotobuf-c 2>/dev/null || \
		    echo -lmicrohttpd -lsqlite3 -ljansson -lz -lcurl -lprotobuf-c) \
		  $(shell pkg-config --libs re2 2>/dev/null || echo -lre2) -lstdc++ -lpthread -lm
AGENT_LIBS     := $(shell pkg-config --libs libcurl jansson zlib 2>/dev/null || \
		    echo -lcurl -ljansson -lz) -lpthread

# The flame-graph renderer is optional until tools/lib/flamegraph.h lands.
ifneq ($(wildcard tools/lib/flamegraph.h),)
$(OUT)/obj/aggregator/query.o $(OUT)/asan/aggregator/query.o: EXTRA_CFLAGS += -DHAVE_FLAMEGRAPH
endif

$(OUT)/bin/glass-aggd: $(AGG_AGGD_SRCS:%.c=$(OUT)/obj/%.o) $(AGG_CORE_OBJS) $(OUT)/lib/libglasstools.a
	$(call msg,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(FP_FLAGS) -o $@ $^ $(AGG_LIBS)

$(OUT)/bin/glass-agent: $(AGG_AGENT_SRCS:%.c=$(OUT)/obj/%.o) $(AGG_CORE_OBJS) $(OUT)/lib/libglasstools.a
	$(call msg,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(FP_FLAGS) -o $@ $^ $(AGENT_LIBS) $(AGG_LIBS)

BINS += $(OUT)/bin/glass-aggd $(OUT)/bin/glass-agent

# Unit tests: selectors, ingest validation, merge/diff arithmetic (ASan).
AGG_TEST_OBJS := $(AGG_CORE_SAN) $(OUT)/asan/aggregator/query.o \
		 $(OUT)/asan/aggregator/store.o $(OUT)/asan/aggregator/store_sqlite.o \
		 $(OUT)/asan/aggregator/store_clickhouse.o \
		 $(OUT)/asan/aggregator/metrics.o $(OUT)/asan/aggregator/fleetmetrics.o

$(OUT)/test/aggregator/%: $(OUT)/asan/tests/aggregator/%.o $(AGG_TEST_OBJS) $(OUT)/lib/libglasstools-san.a
	$(call msg,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(FP_FLAGS) $(SAN_FLAGS) -o $@ $^ $(AGG_LIBS)

TEST_BINS += $(OUT)/test/aggregator/agg_unit $(OUT)/test/aggregator/fuzz_ingest
# Keep the sanitizer objects (only pattern rules name them).
.SECONDARY: $(AGG_TEST_OBJS) $(OUT)/asan/tests/aggregator/agg_unit.o \
	    $(OUT)/asan/tests/aggregator/fuzz_ingest.o

# Benchmark load generator (tests/bench/aggregator.bench).
$(OUT)/bench/agg_load: $(OUT)/obj/tests/bench/agg_load.o $(OUT)/obj/aggregator/store.o \
		$(OUT)/obj/aggregator/store_sqlite.o \
		$(OUT)/obj/aggregator/store_clickhouse.o \
		$(AGG_CORE_OBJS) $(OUT)/lib/libglasstools.a
	$(call msg,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(FP_FLAGS) -o $@ $^ $(AGENT_LIBS) $(AGG_LIBS)

BENCH_BINS += $(OUT)/bench/agg_load

# libFuzzer on the ingest parser (clang), FUZZ_TIME seconds: make
# fuzz-aggregator.  It starts from tests/aggregator/corpus/ (seeds) in a
# scratch copy and writes crashers back there, where the fuzz_ingest unit
# test (make test) replays them.
.PHONY: fuzz-aggregator
fuzz-aggregator: $(OUT)/fuzz/fuzz_ingest
	@mkdir -p $(OUT)/fuzz/ingest-corpus
	$(Q)cp -n tests/aggregator/corpus/* $(OUT)/fuzz/ingest-corpus/ 2>/dev/null || true
	$(OUT)/fuzz/fuzz_ingest -max_total_time=$(FUZZ_TIME) -max_len=8192 -timeout=10 \
		-artifact_prefix=tests/aggregator/corpus/ $(OUT)/fuzz/ingest-corpus
$(OUT)/fuzz/regex.o: aggregator/regex.cc aggregator/regex.h
	@mkdir -p $(@D)
	$(Q)$(CLANG)++ -g -O1 -std=c++17 -I. -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize=function,vptr -c $< -o $@
$(OUT)/fuzz/fuzz_ingest: tests/aggregator/fuzz_ingest.c $(AGG_CORE_SRCS) $(AGG_PB_C) tools/lib/folded.c \
		$(OUT)/fuzz/regex.o
	$(call msg,FUZZ,$@)
	@mkdir -p $(@D)
	$(Q)$(CLANG) -g -O1 -std=gnu11 -D_GNU_SOURCE -DFUZZING -I. -fsanitize=fuzzer,address,undefined \
		-I$(OUT)/gen -o $@ $^ $(shell pkg-config --libs jansson zlib libprotobuf-c 2>/dev/null || \
		echo -ljansson -lz -lprotobuf-c) -lre2 -lstdc++
