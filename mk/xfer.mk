# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# xfer.mk - libhugekv-xfer.so: KV transfers between pools over UCX, in its
# own library (lib/xfer/, never linked into libhugekv.so) with its header,
# version script, soname and generated hugekv-xfer.pc; the hkv-xfer tool;
# `check-xfer` (two processes on one host, two network namespaces, the
# fault cases; root, real UCX). All of it only where `pkg-config ucx`
# finds UCX; otherwise hkv-xfer is left out of the tools.

UCX_CFLAGS	:= $(shell pkg-config --cflags ucx 2>/dev/null)
UCX_LIBS	:= $(shell pkg-config --libs ucx 2>/dev/null)
# HMAC-SHA256 and nonces of the peers' authentication
CRYPTO_LIBS	:= $(shell pkg-config --libs libcrypto 2>/dev/null || echo -lcrypto)
HAVE_UCX	:= $(shell pkg-config --exists ucx 2>/dev/null && echo 1)

ifeq ($(HAVE_UCX),1)

XFER_VERSION	:= $(VERSION)
XFER_SONAME	:= libhugekv-xfer.so.0
XFER_SRCS	:= $(wildcard lib/xfer/*.c)
XFER_OBJS	:= $(XFER_SRCS:%.c=$(BUILD)/%.o)
XFER_SHLIB	:= $(BUILD)/libhugekv-xfer.so.$(XFER_VERSION)
XFER_MAP	:= lib/xfer/libhugekv-xfer.map
XFER_TEST	:= $(BUILD)/tests/xfer-test
XFER_ATTACK	:= $(BUILD)/tests/xfer-attack

lib: $(BUILD)/libhugekv-xfer.so $(BUILD)/hugekv-xfer.pc

$(BUILD)/lib/xfer/%.o: lib/xfer/%.c include/hugekv-xfer.h include/hugekv.h $(wildcard lib/xfer/*.h) \
		lib/trace.h bpf/hugekv_probes.h
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(HKV_CFLAGS) $(UCX_CFLAGS) -Ilib/xfer -c $< -o $@

$(XFER_SHLIB): $(XFER_OBJS) $(XFER_MAP) $(BUILD)/libhugekv.so
	$(call msg,LD,$@)
	$(Q)$(CC) -shared $(HKV_LDFLAGS) -Wl,-soname,$(XFER_SONAME) \
		-Wl,--version-script=$(XFER_MAP) -Wl,-z,defs -Wl,-rpath,'$$ORIGIN' \
		$(XFER_OBJS) -L$(BUILD) -lhugekv $(UCX_LIBS) $(CRYPTO_LIBS) -o $@
	$(Q)scripts/check-exports include/hugekv-xfer.h $(XFER_MAP) $@

$(BUILD)/$(XFER_SONAME): $(XFER_SHLIB)
	$(Q)ln -sf $(notdir $<) $@

$(BUILD)/libhugekv-xfer.so: $(BUILD)/$(XFER_SONAME)
	$(Q)ln -sf $(XFER_SONAME) $@

define gen_xfer_pc
	printf '%s\n' 'prefix=$(PREFIX)' 'libdir=$(LIBDIR)' \
		'includedir=$(INCLUDEDIR)' '' 'Name: hugekv-xfer' \
		'Description: KV page transfers between hugekv pools over UCX' \
		'Version: $(XFER_VERSION)' 'Requires: hugekv' 'Requires.private: ucx' \
		'Libs: -L$${libdir} -lhugekv-xfer' 'Cflags: -I$${includedir}' > $(1)
endef

$(BUILD)/hugekv-xfer.pc: mk/xfer.mk | $(BUILD)
	$(call msg,GEN,$@)
	$(Q)$(call gen_xfer_pc,$@)

TOOL_DEPS_hkv-xfer := $(BUILD)/libhugekv-xfer.so include/hugekv-xfer.h
TOOL_LIBS_hkv-xfer := -lhugekv-xfer $(UCX_LIBS)

# the fault and protocol test: a C program that forks its peer; linked
# with the library's objects rather than its .so, so that a case can also
# speak the wire protocol as a modified peer would (lib/xfer/internal.h)
$(XFER_TEST): tests/xfer/xfer-test.c $(XFER_OBJS) $(BUILD)/libhugekv.so | $(BUILD)/tests
	$(call msg,CCLD,$@)
	$(Q)$(CC) $(CFLAGS) $(HKV_CFLAGS) $(UCX_CFLAGS) $< $(XFER_OBJS) -L$(BUILD) \
		-lhugekv -Wl,-rpath,'$$ORIGIN/..' $(HKV_LDFLAGS) $(UCX_LIBS) $(CRYPTO_LIBS) \
		$(LIBS) -o $@

# the attacks: plain libucp against a served pool
$(XFER_ATTACK): tests/xfer/xfer-attack.c tests/hkv_test_clock.h $(BUILD)/libhugekv-xfer.so | $(BUILD)/tests
	$(call msg,CCLD,$@)
	$(Q)$(CC) $(CFLAGS) $(HKV_CFLAGS) $(UCX_CFLAGS) $< -L$(BUILD) -lhugekv-xfer -lhugekv \
		-Wl,-rpath,'$$ORIGIN/..' $(HKV_LDFLAGS) $(UCX_LIBS) $(LIBS) -o $@

# the metrics tests' transfer programs (mk/metrics.mk): a target under a
# grant flood; two processes of this host on the single-copy path
METRICS_XFER	:= $(BUILD)/tests/metrics-grants $(BUILD)/tests/metrics-cma
$(METRICS_XFER): $(BUILD)/tests/metrics-%: tests/metrics/%.c tests/metrics/xfer-side.h tests/hkv_test_clock.h \
		$(BUILD)/libhugekv-xfer.so | $(BUILD)/tests
	$(call msg,CCLD,$@)
	$(Q)$(CC) $(CFLAGS) $(HKV_CFLAGS) $(UCX_CFLAGS) $< -L$(BUILD) -lhugekv-xfer -lhugekv \
		-Wl,-rpath,'$$ORIGIN/..' $(HKV_LDFLAGS) $(UCX_LIBS) $(LIBS) -o $@

check-metrics: $(METRICS_XFER) $(BUILD)/hkv-xfer

.PHONY: check-xfer install-xfer xfer-test
xfer-test: $(XFER_TEST) $(XFER_ATTACK) $(BUILD)/hkv-xfer

# real UCX endpoints, real hugepages, real network namespaces (root); the
# protocol and fault cases also under ASan+UBSan and under TSan (the
# sanitizer builds of check-all, grown by the transfer library and its test)
XFER_ASAN	:= $(BUILD)/san-address-undefined
XFER_TSAN	:= $(BUILD)/san-thread
check-xfer: $(XFER_TEST) $(XFER_ATTACK) $(BUILD)/hkv-xfer $(filter $(BUILD)/hkv-trace,$(TOOL_BINS))
	$(Q)python3 Kbuild-docs/sphinx/kerneldoc.py --check include/hugekv-xfer.h Kbuild-docs/core-api
	$(Q)$(if $(SANITIZE),,$(MAKE) --no-print-directory SANITIZE=address,undefined \
		BUILD=$(XFER_ASAN) $(XFER_ASAN)/tests/xfer-test)
	$(Q)$(if $(SANITIZE),,$(MAKE) --no-print-directory SANITIZE=thread \
		BUILD=$(XFER_TSAN) $(XFER_TSAN)/tests/xfer-test)
	$(Q)tests/xfer/run --build $(BUILD) $(if $(SANITIZE),,--asan $(XFER_ASAN) --tsan $(XFER_TSAN))

CHECK_EXTRA	+= check-xfer

.PHONY: bench-xfer
# the transfer benchmark: tcp, shared memory, namespaces; beside ucx_perftest
bench-xfer: $(BUILD)/hkv-xfer
	$(Q)scripts/test-env -- tests/xfer/bench --build $(BUILD)

# its manual page, from --help (and bench --help), so it cannot drift
XFER_MAN	:= $(BUILD)/man/hkv-xfer.1
$(XFER_MAN): $(BUILD)/hkv-xfer
	$(call man_from_help,$<,"KV page transfers between hugekv pools over UCX",bench)

install:: install-xfer

install-xfer: $(BUILD)/libhugekv-xfer.so $(XFER_MAN)
	install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(PKGCONFIGDIR) \
		$(DESTDIR)$(MANDIR)/man1
	install -m 0644 $(XFER_MAN) $(DESTDIR)$(MANDIR)/man1/
	install -m 0755 $(XFER_SHLIB) $(DESTDIR)$(LIBDIR)/
	ln -sf $(notdir $(XFER_SHLIB)) $(DESTDIR)$(LIBDIR)/$(XFER_SONAME)
	ln -sf $(XFER_SONAME) $(DESTDIR)$(LIBDIR)/libhugekv-xfer.so
	install -m 0644 include/hugekv-xfer.h $(DESTDIR)$(INCLUDEDIR)/
	$(call gen_xfer_pc,$(DESTDIR)$(PKGCONFIGDIR)/hugekv-xfer.pc)

else

TOOLS		:= $(filter-out hkv-xfer,$(TOOLS))
TOOL_BINS	:= $(filter-out $(BUILD)/hkv-xfer,$(TOOL_BINS))

.PHONY: check-xfer
check-xfer:
	@echo "check-xfer: SKIP: UCX not found (pkg-config ucx; apt-get install libucx-dev)"

endif
