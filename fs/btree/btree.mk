# fs/btree/btree.mk — rules of the B-tree area (H8).
#
# tests/unit/btree_mem: the B-tree, node format and node cache linked alone
# against an in-memory core (tests/unit/btree_fixture.c), so they are tested
# without devices, chunks or the allocator.  Not named test_*.c: the generic
# unit-test rule links the whole engine library, which has the real core.
# Its btree.c is a copy built with BTREE_TEST_HOOKS (btree.h), and so is
# the test: the engine and its other tests link btree.o, without hooks.
BTREE_MEM_OBJS := $(addprefix $(OUT)/asan/fs/,btree/btree_hooks.o btree/node.o btree/cache.o base/htable.o base/lock.o base/crc32c.o base/probe.o) \
		  $(OUT)/asan/tests/unit/btree_fixture.o $(OUT)/asan/tests/unit/btree_mem_test.o
TEST_BINS += $(OUT)/test/unit/btree_mem
$(OUT)/test/unit/btree_mem: $(BTREE_MEM_OBJS)
	$(call msg,LD-SAN,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(FP_FLAGS) $(SAN_FLAGS) -o $@ $^ -lpthread -lisal

$(OUT)/asan/fs/btree/btree_hooks.o: fs/btree/btree.c | $(GEN_HDRS)
	$(call msg,CC-SAN,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) $(SAN_FLAGS) -DBTREE_TEST_HOOKS -c $< -o $@
$(OUT)/asan/tests/unit/btree_mem_test.o: EXTRA_CFLAGS += -DBTREE_TEST_HOOKS
