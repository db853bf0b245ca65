# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# hkv-bench: `make check` runs the quick benchmark suite and checks its JSON
# shape and sanity (not speed); `make bench` runs the full suite (Makefile).
CHECK_EXTRA	+= check-bench

.PHONY: check-bench
check-bench: $(BUILD)/hkv-bench
	$(Q)scripts/bench --check $(BUILD)
