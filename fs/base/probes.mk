# fs/base/probes.mk — the probe list's generated semaphores (base layer).
#
# USDT semaphores: probes.h (dtrace -h) only declares them; fs/base/probe.c
# defines them from this generated list, so the list stays the one in
# fs/base/probes.d and every program linking libglassfs gets them once.
GEN_HDRS += $(OUT)/gen/probes_sem.h
$(OUT)/gen/probes_sem.h: fs/base/probes.d
	$(call msg,GEN,$@)
	@mkdir -p $(@D)
	$(Q)sed -n 's/^[[:space:]]*probe[[:space:]]\{1,\}\([a-z_0-9]*\)(.*/unsigned short glassfs_\1_semaphore __attribute__((section(".probes"))) = 0;/p' $< > $@
