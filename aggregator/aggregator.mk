# aggregator/ — glass-aggd (the fleet aggregation service) and glass-agent.
# Both link tools/lib (the one folded parser, and the flame-graph renderer
# when present) through $(OUT)/lib/libglasstools.a (spelled out: this
# fragment is included before tools/tools.mk defines TOOLS_LIB).  Unit
# tests run under ASan/UBSan.

AGG_AGGD_SRCS  := aggregator/aggd.c aggregator/http.c aggregator/query.c \
		  aggregator/metrics.c aggregator/store_sqlite.c aggregator/store_clickhouse.c
AGG_CORE_SRCS  := aggregator/labels.c aggregator/selector.c aggregator/ingest.c
AGG_AGENT_SRCS := aggregator/agent.c aggregator/spool.c
AGG_LIBS       := $(shell pkg-config --libs libmicrohttpd sqlite3 jansson zlib libcurl 2>/dev/null || \
		    echo -lmicrohttpd -lsqlite3 -ljansson -lz -lcurl) -lpthread -lm
AGENT_LIBS     := $(shell pkg-config --libs libcurl jansson zlib 2>/dev/null || \
		    echo -lcurl -ljansson -lz) -lpthread

# The flame-graph renderer is optional until tools/lib/flamegraph.h lands.
ifneq ($(wildcard tools/lib/flamegraph.h),)
$(OUT)/obj/aggregator/query.o $(OUT)/asan/aggregator/query.o: EXTRA_CFLAGS += -DHAVE_FLAMEGRAPH
endif

$(OUT)/bin/glass-aggd: $(AGG_AGGD_SRCS:%.c=$(OUT)/obj/%.o) $(AGG_CORE_SRCS:%.c=$(OUT)/obj/%.o) $(OUT)/lib/libglasstools.a
	$(call msg,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(FP_FLAGS) -o $@ $^ $(AGG_LIBS)

$(OUT)/bin/glass-agent: $(AGG_AGENT_SRCS:%.c=$(OUT)/obj/%.o) $(AGG_CORE_SRCS:%.c=$(OUT)/obj/%.o) $(OUT)/lib/libglasstools.a
	$(call msg,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(FP_FLAGS) -o $@ $^ $(AGENT_LIBS) $(AGG_LIBS)

BINS += $(OUT)/bin/glass-aggd $(OUT)/bin/glass-agent

# Unit tests: selectors, ingest validation, merge/diff arithmetic (ASan).
AGG_TEST_OBJS := $(AGG_CORE_SRCS:%.c=$(OUT)/asan/%.o) $(OUT)/asan/aggregator/query.o \
		 $(OUT)/asan/aggregator/store_sqlite.o $(OUT)/asan/aggregator/store_clickhouse.o \
		 $(OUT)/asan/aggregator/metrics.o

$(OUT)/test/aggregator/%: $(OUT)/asan/tests/aggregator/%.o $(AGG_TEST_OBJS) $(OUT)/lib/libglasstools-san.a
	$(call msg,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(FP_FLAGS) $(SAN_FLAGS) -o $@ $^ $(AGG_LIBS)

TEST_BINS += $(OUT)/test/aggregator/agg_unit

# Benchmark load generator (tests/bench/aggregator.bench).
$(OUT)/bench/agg_load: $(OUT)/obj/tests/bench/agg_load.o $(OUT)/obj/aggregator/store_sqlite.o \
		$(OUT)/obj/aggregator/store_clickhouse.o \
		$(AGG_CORE_SRCS:%.c=$(OUT)/obj/%.o) $(OUT)/lib/libglasstools.a
	$(call msg,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(FP_FLAGS) -o $@ $^ $(AGENT_LIBS) $(AGG_LIBS)

BENCH_BINS += $(OUT)/bench/agg_load

# libFuzzer target for the ingest parser (clang): make fuzz-aggregator.
.PHONY: fuzz-aggregator
fuzz-aggregator: $(OUT)/fuzz/fuzz_ingest
$(OUT)/fuzz/fuzz_ingest: tests/aggregator/fuzz_ingest.c $(AGG_CORE_SRCS) tools/lib/folded.c
	$(call msg,FUZZ,$@)
	@mkdir -p $(@D)
	$(Q)$(CLANG) -g -O1 -std=gnu11 -D_GNU_SOURCE -I. -fsanitize=fuzzer,address,undefined \
		-o $@ $^ $(shell pkg-config --libs jansson zlib 2>/dev/null || echo -ljansson -lz)
