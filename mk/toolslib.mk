# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# toolslib.mk - tools/lib/, the code every tool shares (the JSON writer,
# the size and count parser, --version and usage errors, the clock), built
# once as $(BUILD)/tools-lib.a; the Makefile's tool rule links it into
# every tools/NAME, present and future.

TOOLS_LIB_SRCS	:= $(wildcard tools/lib/*.c)
TOOLS_LIB_OBJS	:= $(TOOLS_LIB_SRCS:%.c=$(BUILD)/%.o)
TOOLS_LIB	:= $(BUILD)/tools-lib.a

$(BUILD)/tools/lib/%.o: tools/lib/%.c $(wildcard tools/lib/*.h) include/hugekv.h Makefile
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(HKV_CFLAGS) -DHKV_VERSION='"$(VERSION)"' -c $< -o $@

$(TOOLS_LIB): $(TOOLS_LIB_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

# test_bench links hkv-bench's sources, which call into the archive
TEST_LIBS_test_bench += $(TOOLS_LIB) $(STLIB) $(LIBS)
$(BUILD)/tests/test_bench: $(TOOLS_LIB)

# tests/test_tools_lib.c checks the archive itself
TEST_LIBS_test_tools_lib := $(TOOLS_LIB)
$(BUILD)/tests/test_tools_lib: $(TOOLS_LIB)
