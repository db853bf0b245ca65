# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# hkvctl.mk - the operator side: hkvctl links libhugetlbfs (page sizes,
# hugetlbfs mounts; the library itself does not), a small process that
# holds a pool for `hkvctl verify`, `check-ops` (hkvctl, the script tools
# hkv-numa-tune and hkv-hugepages-setup) and the installation of the man
# pages.

TOOL_LIBS_hkvctl := -lhugetlbfs

OPS_HOLDER	:= $(BUILD)/tests/ops-pool-holder

$(OPS_HOLDER): tests/ops/pool-holder.c $(BUILD)/libhugekv.so | $(BUILD)/tests
	$(call msg,CCLD,$@)
	$(Q)$(CC) $(CFLAGS) $(HKV_CFLAGS) $< -L$(BUILD) -lhugekv \
		-Wl,-rpath,'$$ORIGIN/..' $(HKV_LDFLAGS) $(LIBS) -o $@

# manual pages (mk/docs.mk): hkv-bench's is made from its --help; the
# others are written by hand in man/ (a hand-written page wins)
GEN_MAN_hkv-bench := "benchmarks of the hugekv allocator"
GEN_MAN_hkv-trace := "live eBPF tracing of the hugekv USDT probes"
GEN_MANS	:= $(foreach t,hkv-bench hkv-trace,$(if $(wildcard man/$(t).1),,$(if \
			$(filter $(t),$(TOOLS)),$(BUILD)/man/$(t).1)))

$(BUILD)/man/hkv-bench.1: $(BUILD)/hkv-bench
	$(call man_from_help,$<,$(GEN_MAN_hkv-bench))

.PHONY: check-ops install-man
# hkvctl and the scripts against this machine (root-only parts say when
# they are skipped)
check-ops: $(BUILD)/hkvctl $(TOOL_SCRIPTS:%=$(BUILD)/%) $(OPS_HOLDER) $(if $(filter hkv-bench,$(TOOLS)),$(BUILD)/hkv-bench) \
	   $(GEN_MANS) $(MAN_WRITTEN)
	$(Q)tests/ops/run --build $(BUILD)

CHECK_EXTRA	+= check-ops

install:: install-man

install-man: $(GEN_MANS) $(MAN_WRITTEN)
	install -d $(DESTDIR)$(MANDIR)/man1
	install -m 0644 $(MAN_WRITTEN) $(GEN_MANS) $(DESTDIR)$(MANDIR)/man1/
