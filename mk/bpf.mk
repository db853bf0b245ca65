# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# bpf.mk - live tracing: the CO-RE BPF object (bpf/hugekv_trace.bpf.c) and
# its libbpf skeleton for hkv-trace's loader (tools/hkv-trace/hugekv_trace.c),
# a copy of the library with the probes compiled out (check-trace tests
# that it has none), the tracing workload, a transfer-probe fixture and
# `check-trace`.

CLANG		?= clang
BPFTOOL		?= bpftool
VMLINUX_BTF	?= /sys/kernel/btf/vmlinux
# clang's own system include dirs, searched after ours (asm/errno.h & co.)
BPF_SYS_INCS	:= $(shell $(CLANG) -v -E - </dev/null 2>&1 | \
		   sed -n '/<\.\.\.> search starts/,/End of search/ s|^ \(/.*\)|-idirafter \1|p')
BPF_CFLAGS	:= -g -O2 -target bpf -D__TARGET_ARCH_x86 -Wall -Werror \
		   -I$(BUILD)/bpf -Ibpf $(BPF_SYS_INCS)

$(BUILD)/bpf:
	$(Q)mkdir -p $@

$(BUILD)/bpf/vmlinux.h: | $(BUILD)/bpf
	$(call msg,GEN,$@)
	$(Q)test -r $(VMLINUX_BTF) || { echo "bpf.mk: $(VMLINUX_BTF) missing: kernel without BTF (CONFIG_DEBUG_INFO_BTF)" >&2; exit 1; }
	$(Q)$(BPFTOOL) btf dump file $(VMLINUX_BTF) format c > $@.tmp && mv $@.tmp $@

$(BUILD)/bpf/%.bpf.o: bpf/%.bpf.c bpf/hugekv_trace.h bpf/hugekv_probes.h $(BUILD)/bpf/vmlinux.h
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $(@:.bpf.o=.tmp.bpf.o)
	$(Q)$(BPFTOOL) gen object $@ $(@:.bpf.o=.tmp.bpf.o)

$(BUILD)/bpf/%.skel.h: $(BUILD)/bpf/%.bpf.o
	$(call msg,GEN,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $(subst -,_,$*)_bpf > $@.tmp && mv $@.tmp $@

TOOL_DEPS_hkv-trace := $(BUILD)/bpf/hugekv_trace.skel.h bpf/hugekv_trace.h bpf/hugekv_probes.h
TOOL_LIBS_hkv-trace := -lbpf -lelf -lz

# the library again with -DHKV_NO_PROBES: built by check-trace only
NOPROBES_OBJS	:= $(LIB_SRCS:%.c=$(BUILD)/noprobes/%.o)
NOPROBES_LIB	:= $(BUILD)/noprobes/libhugekv.so

$(BUILD)/noprobes/lib/%.o: lib/%.c include/hugekv.h $(wildcard lib/*.h)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(HKV_CFLAGS) -DHKV_NO_PROBES -c $< -o $@

$(NOPROBES_LIB): $(NOPROBES_OBJS) lib/libhugekv.map
	$(call msg,LD,$@)
	$(Q)$(CC) -shared $(HKV_LDFLAGS) -Wl,-soname,libhugekv-noprobes.so \
		-Wl,--version-script=lib/libhugekv.map -Wl,-z,defs \
		$(NOPROBES_OBJS) $(LIBS) -o $@

# a process of known operation counts, linked to $(BUILD)/libhugekv.so
TRACE_WORKLOAD	:= $(BUILD)/tests/trace-workload

$(TRACE_WORKLOAD): tests/trace/workload.c $(BUILD)/libhugekv.so | $(BUILD)/tests
	$(call msg,CCLD,$@)
	$(Q)$(CC) $(CFLAGS) $(HKV_CFLAGS) $< -L$(BUILD) -lhugekv \
		-Wl,-rpath,'$$ORIGIN/..' $(HKV_LDFLAGS) $(LIBS) -ldl -o $@

# a libhugekv-xfer.so that fires the transfer probes as given (the tracing
# tests' stand-in for lib/xfer: it moves no bytes)
XFER_FIXTURE	:= $(BUILD)/tests/xfer-fixture/libhugekv-xfer.so

$(XFER_FIXTURE): tests/trace/xfer-fixture.c lib/trace.h bpf/hugekv_probes.h
	$(call msg,CCLD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(HKV_CFLAGS) -shared $< $(HKV_LDFLAGS) -o $@

# the library's objects hold the probes of the list
$(LIB_OBJS) $(NOPROBES_OBJS): bpf/hugekv_probes.h

.PHONY: check-trace
# real BPF on a real process; needs root and bpffs (scripts/test-env)
check-trace: $(BUILD)/libhugekv.so $(BUILD)/hkv-trace $(TRACE_WORKLOAD) $(NOPROBES_LIB) \
	     $(XFER_FIXTURE)
	$(Q)tests/trace/run --build $(BUILD)

CHECK_EXTRA	+= check-trace

# keep the BPF object: hkv-trace's skeleton embeds it, and so may a reader
.SECONDARY: $(BUILD)/bpf/hugekv_trace.bpf.o $(BUILD)/bpf/vmlinux.h

# the bpftrace one-liners, for operators without a checkout
install::
	install -d $(DESTDIR)$(PREFIX)/share/hugekv/bpftrace
	install -m 0644 $(wildcard scripts/bpftrace/*.bt) $(DESTDIR)$(PREFIX)/share/hugekv/bpftrace/
