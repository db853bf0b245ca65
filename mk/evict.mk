# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# evict.mk - residency: `check-example` runs the two-tier example (L1
# index-only, L2 on hugepages, write-through backups on a worker thread);
# it fails if a unit with a pending backup was evicted or a byte was lost.

.PHONY: check-example
check-example: $(BUILD)/hkv-example
	$(Q)$(BUILD)/hkv-example --requests 20000 && echo "  check-example ok"

CHECK_EXTRA	+= check-example
