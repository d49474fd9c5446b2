# fs/items/items.mk — the items layer's link needs (owned by the items layer).
#
# fs/cmd/fsck.c calls fsck_items_check() through a weak reference, which does not
# pull items_fsck.o out of libglassfs.a: link it into fsck.glassfs directly.
ifneq ($(wildcard fs/cmd/fsck.c),)
$(OUT)/bin/fsck.glassfs: $(OUT)/obj/fs/items/items_fsck.o
endif
