# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# hugekv - kernel-like build: `make`, `make check`, `make demo`, `make bench`,
# `make install`, `V=1` for verbose, `SANITIZE=address,undefined` or
# `SANITIZE=thread` for a sanitizer build (in build/san-*), `BUILD=dir` to
# build elsewhere. Parts of the build that belong to one concern live in
# mk/*.mk (BPF, docs, tools with extra libraries).

VERSION		:= 0.1.0
SOVERSION	:= 0
PREFIX		?= /usr/local
LIBDIR		?= $(PREFIX)/lib
INCLUDEDIR	?= $(PREFIX)/include
BINDIR		?= $(PREFIX)/bin
MANDIR		?= $(PREFIX)/share/man
PKGCONFIGDIR	?= $(LIBDIR)/pkgconfig
DESTDIR		?=

comma := ,
ifneq ($(SANITIZE),)
BUILD		?= build/san-$(subst $(comma),-,$(SANITIZE))
SANFLAGS	:= -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
else
BUILD		?= build
SANFLAGS	:=
endif

ifeq ($(V),1)
Q :=
msg =
else
Q := @
msg = @printf '  %-9s %s\n' "$(1)" "$(2)";
endif

CC		?= cc
CFLAGS		?= -O2 -g
HKV_CFLAGS	:= -std=gnu11 -D_GNU_SOURCE -fPIC -fvisibility=hidden -pthread \
		   -Wall -Wextra -Werror -Wno-missing-field-initializers \
		   -Iinclude -Ilib $(SANFLAGS)
HKV_LDFLAGS	:= -pthread $(SANFLAGS)
LIBS		:= -lnuma -lm

LIB_SRCS	:= $(wildcard lib/*.c)
LIB_OBJS	:= $(LIB_SRCS:%.c=$(BUILD)/%.o)
SONAME		:= libhugekv.so.$(SOVERSION)
SHLIB		:= $(BUILD)/libhugekv.so.$(VERSION)
STLIB		:= $(BUILD)/libhugekv.a

TEST_SRCS	:= $(wildcard tests/test_*.c)
TEST_COMMON	:= $(wildcard tests/common/*.c)
TEST_BINS	:= $(TEST_SRCS:tests/%.c=$(BUILD)/tests/%)
TEST_LIBS	:= -lcmocka $(LIBS)

# every tools/NAME/ directory builds $(BUILD)/NAME from its *.c and the
# shared tools/lib/ ($(TOOLS_LIB), mk/toolslib.mk); mk/NAME.mk may set
# TOOL_LIBS_NAME, TOOL_DEPS_NAME (extra prerequisites)
TOOLS		:= $(notdir $(patsubst %/,%,$(dir $(wildcard tools/*/*.c))))
TOOLS		:= $(sort $(filter-out lib,$(TOOLS)))
TOOL_BINS	:= $(TOOLS:%=$(BUILD)/%)

# tests run by `make check` after the unit suites (mk/*.mk add to these)
CHECK_EXTRA	:= check-install
# sanitizer passes: which test binaries run under TSan (concurrent parts)
TSAN_TESTS	:= $(patsubst tests/%.c,%,$(wildcard tests/test_*thread*.c))

.PHONY: all lib tests tools check check-all check-install check-unit check-asan check-tsan check-exports \
	demo bench install install-lib uninstall clean deps help
.DEFAULT_GOAL := all

all: lib tools

lib: $(BUILD)/libhugekv.so $(STLIB) $(BUILD)/hugekv.pc

-include $(wildcard mk/*.mk)

$(BUILD)/lib/%.o: lib/%.c include/hugekv.h $(wildcard lib/*.h) | $(BUILD)/lib
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(HKV_CFLAGS) -c $< -o $@

$(BUILD)/lib $(BUILD)/tests:
	$(Q)mkdir -p $@

$(SHLIB): $(LIB_OBJS) lib/libhugekv.map
	$(call msg,LD,$@)
	$(Q)$(CC) -shared $(HKV_LDFLAGS) -Wl,-soname,$(SONAME) \
		-Wl,--version-script=lib/libhugekv.map -Wl,-z,defs \
		$(LIB_OBJS) $(LIBS) -o $@

$(BUILD)/$(SONAME): $(SHLIB)
	$(Q)ln -sf $(notdir $<) $@

$(BUILD)/libhugekv.so: $(BUILD)/$(SONAME) | check-exports
	$(Q)ln -sf $(SONAME) $@

# objects of sources that are gone would still be read by nm over
# $(BUILD)/lib/*.o (the layering check): drop them with the archive
$(STLIB): $(LIB_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ $(filter-out $(LIB_OBJS),$(wildcard $(BUILD)/lib/*.o)) && ar rcs $@ $^

# the .pc names the install paths, so `make install` writes it anew for
# the PREFIX it is given; $(BUILD)/hugekv.pc is the default-PREFIX copy
define gen_pc
	printf '%s\n' 'prefix=$(PREFIX)' 'libdir=$(LIBDIR)' \
		'includedir=$(INCLUDEDIR)' '' 'Name: hugekv' \
		'Description: host KV-cache allocator on NUMA-local hugepage arenas' \
		'Version: $(VERSION)' 'Libs: -L$${libdir} -lhugekv' \
		'Libs.private: -lnuma -lpthread -lm' 'Cflags: -I$${includedir}' > $(1)
endef

$(BUILD)/hugekv.pc: Makefile
	$(call msg,GEN,$@)
	$(Q)$(call gen_pc,$@)

# every hkv_* function the header declares is exported, and nothing else
check-exports: $(SHLIB)
	$(Q)scripts/check-exports include/hugekv.h lib/libhugekv.map $(SHLIB)

# tests link the static library, so they can reach internal functions
$(BUILD)/tests/%: tests/%.c $(TEST_COMMON) $(STLIB) $(wildcard tests/*.h) | $(BUILD)/tests
	$(call msg,CCLD,$@)
	$(Q)$(CC) $(CFLAGS) $(HKV_CFLAGS) -Itests $< $(TEST_COMMON) $(STLIB) \
		$(HKV_LDFLAGS) $(TEST_LIBS) $(TEST_LIBS_$*) -o $@

tests: $(TEST_BINS)

define tool_rule
$(BUILD)/$(1): $(wildcard tools/$(1)/*.c tools/$(1)/*.h) $(BUILD)/libhugekv.so $$(TOOL_DEPS_$(1)) $$(TOOLS_LIB)
	$$(call msg,CCLD,$$@)
	$$(Q)$$(CC) $$(CFLAGS) $$(HKV_CFLAGS) -I$(BUILD) -Itools/$(1) \
		$(wildcard tools/$(1)/*.c) $$(TOOLS_LIB) -L$(BUILD) -lhugekv \
		-Wl,-rpath,'$$$$ORIGIN:$$$$ORIGIN/../lib' $$(HKV_LDFLAGS) \
		$$(TOOL_LIBS_$(1)) $$(LIBS) -o $$@
endef
$(foreach t,$(TOOLS),$(eval $(call tool_rule,$(t))))

tools: $(TOOL_BINS)

deps:
	$(Q)scripts/deps.sh

# the unit suites in this build, then ASan+UBSan, then TSan on the
# concurrent tests, then what mk/*.mk add (tracing, docs)
check: deps
	$(Q)scripts/test-env -- $(MAKE) --no-print-directory check-all

check-all:
	$(Q)$(MAKE) --no-print-directory check-unit
	$(Q)$(MAKE) --no-print-directory SANITIZE=address,undefined \
		BUILD=$(BUILD)/san-address-undefined check-unit
	$(Q)$(MAKE) --no-print-directory SANITIZE=thread BUILD=$(BUILD)/san-thread check-tsan
	$(Q)$(if $(strip $(CHECK_EXTRA)),$(MAKE) --no-print-directory $(CHECK_EXTRA))

check-unit: all tests
	$(Q)scripts/run-tests --build $(BUILD) $(TEST_BINS)

check-install: all
	$(Q)tests/install/check-install.sh $(BUILD)

check-tsan: tests
	$(Q)scripts/run-tests --build $(BUILD) --tsan $(TSAN_TESTS:%=$(BUILD)/tests/%)

demo: deps all
	$(Q)scripts/demo $(BUILD)

bench: deps all
	$(Q)scripts/test-env --hugepages 1100 --hugepages-1g 2 -- scripts/bench $(BUILD)

install:: install-lib

install-lib: lib tools
	install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(PKGCONFIGDIR) $(DESTDIR)$(BINDIR)
	install -m 0755 $(SHLIB) $(DESTDIR)$(LIBDIR)/
	ln -sf libhugekv.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libhugekv.so
	install -m 0644 $(STLIB) $(DESTDIR)$(LIBDIR)/
	install -m 0644 include/hugekv.h $(DESTDIR)$(INCLUDEDIR)/
	$(call gen_pc,$(DESTDIR)$(PKGCONFIGDIR)/hugekv.pc)
	$(if $(TOOL_BINS),install -m 0755 $(TOOL_BINS) $(DESTDIR)$(BINDIR)/)

.PHONY: uninstall-lib
uninstall:: uninstall-lib

uninstall-lib:
	rm -f $(DESTDIR)$(LIBDIR)/libhugekv.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$(SONAME) \
		$(DESTDIR)$(LIBDIR)/libhugekv.so $(DESTDIR)$(LIBDIR)/libhugekv.a \
		$(DESTDIR)$(INCLUDEDIR)/hugekv.h $(DESTDIR)$(PKGCONFIGDIR)/hugekv.pc \
		$(patsubst %,$(DESTDIR)$(BINDIR)/%,$(notdir $(TOOL_BINS)))

clean:
	rm -rf build

help:
	@echo 'make            build library and tools into $(BUILD)/'
	@echo 'make check      install deps, build, run every test (plain, ASan+UBSan, TSan, extras)'
	@echo 'make demo       the main job: a short churn on a real hugepage pool'
	@echo 'make bench      the benchmark suite into bench-results/'
	@echo 'make install    PREFIX=/usr/local DESTDIR= (library, header, .pc, tools)'
	@echo 'make uninstall  remove what make install installed (same PREFIX, DESTDIR)'
	@echo 'make docs       HTML documentation from Kbuild-docs/ (Sphinx)'
	@echo 'make fuzz-run   libFuzzer on the pool API, FUZZ_TIME=seconds per target'
	@echo 'options         V=1 verbose, SANITIZE=address,undefined|thread, BUILD=dir'
