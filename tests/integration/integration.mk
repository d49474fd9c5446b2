# tests/integration — mounted tests (tests/integration/*.test) and their
# small C helpers, built into $(OUT)/itest/ (not $(OUT)/test/: they are
# tools the scripts call, not tests of their own).
ITEST_HELPERS := $(patsubst tests/integration/%.c,$(OUT)/itest/%,$(wildcard tests/integration/*.c))
TEST_BINS += $(ITEST_HELPERS)
$(OUT)/itest/%: tests/integration/%.c
	$(call msg,CC,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(FP_FLAGS) $(WFLAGS) -std=gnu11 -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 -I. -o $@ $< -lpthread
