# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# fuzz.mk - libFuzzer targets (clang, with ASan+UBSan). `make fuzz` builds
# them; `check-fuzz` (in `make check`) runs each for a bounded time from its
# seed corpus; `make fuzz-run FUZZ_TIME=600` runs longer.

FUZZ_CC		?= clang
FUZZ_TIME	?= 20
FUZZ_FLAGS	:= -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
		   -std=gnu11 -D_GNU_SOURCE -pthread -Iinclude -Ilib -Wall -Wextra -Werror \
		   -Wno-missing-field-initializers
FUZZ_BINS	:= $(patsubst tests/fuzz/%.c,$(BUILD)/fuzz/%,$(wildcard tests/fuzz/fuzz_*.c))

$(BUILD)/fuzz/%: tests/fuzz/%.c $(LIB_SRCS) $(wildcard lib/*.h) include/hugekv.h
	$(Q)mkdir -p $(@D)
	$(call msg,FUZZ,$@)
	$(Q)$(FUZZ_CC) $(FUZZ_FLAGS) $< $(LIB_SRCS) $(LIBS) -o $@

.PHONY: fuzz fuzz-run check-fuzz
fuzz: $(FUZZ_BINS)

# bounded: FUZZ_TIME seconds per target, fresh corpus seeded from tests/fuzz/seeds
fuzz-run check-fuzz: $(FUZZ_BINS)
	$(Q)for f in $(FUZZ_BINS); do \
		corpus=$(BUILD)/fuzz/corpus-$$(basename $$f); mkdir -p $$corpus; \
		HUGEKV_LOG=error $$f -max_total_time=$(FUZZ_TIME) -max_len=1024 \
			-print_final_stats=1 -artifact_prefix=$(BUILD)/fuzz/ $$corpus tests/fuzz/seeds 2>$$corpus.log; rc=$$?; \
		runs=$$(sed -n 's/^stat::number_of_executed_units: *//p' $$corpus.log); \
		if [ $$rc = 0 ]; then echo "  fuzz     $$(basename $$f): $$runs runs in $(FUZZ_TIME) s, no failure"; \
		else tail -40 $$corpus.log; echo "check-fuzz: $$(basename $$f) failed (log $$corpus.log)"; exit 1; fi; \
	done

CHECK_EXTRA	+= check-fuzz
