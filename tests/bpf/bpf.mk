# tests/bpf — helper programs for tests/bpf/*.test (not tests themselves:
# they live outside $(OUT)/test so the runner does not run them).

BPF_TEST_HELPERS := contend fakeframes spinsleep
BPF_TEST_HELPER_BINS := $(BPF_TEST_HELPERS:%=$(OUT)/testbin/bpf/%)
TEST_BINS += $(BPF_TEST_HELPER_BINS)

# fakeframes pushes onto the stack inside inline asm: no red zone.
$(OUT)/obj/tests/bpf/fakeframes.o: EXTRA_CFLAGS += -mno-red-zone

# Linked with the engine's lock module (probes included) so stacks and
# probes are the engine's own.
$(OUT)/testbin/bpf/%: $(OUT)/obj/tests/bpf/%.o $(OUT)/obj/fs/base/lock.o $(OUT)/obj/fs/base/probe.o
	$(call msg,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(FP_FLAGS) -o $@ $^ -lpthread

# Unit test of the pprof writer (tools/lib/pprof.c) under ASan/UBSan.
TEST_BINS += $(OUT)/test/bpf/pprof_test
$(OUT)/test/bpf/pprof_test: $(OUT)/asan/tests/bpf/pprof_test.o $(OUT)/lib/libglasstools-san.a \
			    $(OUT)/asan/aggregator/profile.pb-c.o
	$(call msg,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(FP_FLAGS) $(SAN_FLAGS) -o $@ $^ -lprotobuf-c -lz
