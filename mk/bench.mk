# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# hkv-bench: `make check` runs the quick benchmark suite and checks its JSON
# shape and sanity (not speed); `make bench` runs the full suite (Makefile).
CHECK_EXTRA	+= check-bench

.PHONY: check-bench
check-bench: $(BUILD)/hkv-bench
	$(Q)scripts/bench --check $(BUILD)

# tests/test_bench.c checks the tool's own machinery: link the parts it tests
BENCH_TESTED	:= tools/hkv-bench/common.c tools/hkv-bench/timing.c \
		   tools/hkv-bench/json.c tools/hkv-bench/sizes.c tools/hkv-bench/baselines.c \
		   tools/hkv-bench/replay.c tools/hkv-bench/workload.c tools/hkv-bench/tlsf.c
TEST_LIBS_test_bench := $(BENCH_TESTED) $(STLIB) $(LIBS)	# after them: they call in
$(BUILD)/tests/test_bench: $(BENCH_TESTED) $(wildcard tools/hkv-bench/*.h)

# the named pools' kill fuzzer for longer than make check runs it
# (KILLS=N kills, default 3000)
.PHONY: bench-named-fuzz
bench-named-fuzz: $(BUILD)/tests/test_named_proc
	$(Q)HKV_KILLS=$(or $(KILLS),3000) $(BUILD)/tests/test_named_proc
