# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# hkvctl.mk - the operator side: hkvctl links libhugetlbfs (page sizes,
# hugetlbfs mounts; the library itself does not), a small process that
# holds a pool for `hkvctl verify`, `check-ops` (hkvctl and the scripts),
# and the installation of the scripts and man pages.

TOOL_LIBS_hkvctl := -lhugetlbfs

OPS_HOLDER	:= $(BUILD)/tests/ops-pool-holder

$(OPS_HOLDER): tests/ops/pool-holder.c $(BUILD)/libhugekv.so | $(BUILD)/tests
	$(call msg,CCLD,$@)
	$(Q)$(CC) $(CFLAGS) $(HKV_CFLAGS) $< -L$(BUILD) -lhugekv \
		-Wl,-rpath,'$$ORIGIN/..' $(HKV_LDFLAGS) $(LIBS) -o $@

.PHONY: check-ops
# hkvctl and the scripts against this machine (root-only parts say when
# they are skipped)
check-ops: $(BUILD)/hkvctl $(OPS_HOLDER) $(if $(filter hkv-bench,$(TOOLS)),$(BUILD)/hkv-bench)
	$(Q)tests/ops/run --build $(BUILD)

CHECK_EXTRA	+= check-ops

install::
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1
	install -m 0755 scripts/numa-tune $(DESTDIR)$(BINDIR)/hkv-numa-tune
	install -m 0755 scripts/hugepages-setup $(DESTDIR)$(BINDIR)/hkv-hugepages-setup
	install -m 0644 $(wildcard man/*.1) $(DESTDIR)$(MANDIR)/man1/
