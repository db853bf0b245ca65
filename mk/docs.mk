# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# docs.mk - `make docs`: HTML from Kbuild-docs/ with Sphinx (python3-sphinx)
# into $(BUILD)/docs/html, or a clear message when Sphinx is missing.
# `check-docs` (in `make check`): the kernel's scripts/kernel-doc (Debian's
# linux-kbuild-6.1) finds nothing to say about the public headers, every
# public function has a kernel-doc comment and is described in Kbuild-docs/core-api,
# the core-api L1/L2 example compiles against the header and runs, and,
# where Sphinx is installed, the HTML builds without warnings (other than
# toctree globs for trace/ and dev-tools/ pages not written yet).

SPHINXBUILD	?= sphinx-build
DOCS_OUT	:= $(BUILD)/docs
DOCS_EXAMPLE	:= $(DOCS_OUT)/l1l2-example
KERNELDOC	:= /usr/bin/python3 Kbuild-docs/sphinx/kerneldoc.py
DOC_HEADERS	:= include/hugekv.h

.PHONY: docs check-docs

docs:
	$(Q)if command -v $(SPHINXBUILD) >/dev/null 2>&1; then \
		$(SPHINXBUILD) -q -b html Kbuild-docs $(DOCS_OUT)/html && \
		echo "docs: $(DOCS_OUT)/html/index.html"; \
	else \
		echo "docs: $(SPHINXBUILD) not found: install python3-sphinx" \
		     "(apt-get install python3-sphinx) for HTML; the RST in Kbuild-docs/" \
		     "reads as plain text, and man/*.1 are the manual pages"; \
	fi

$(DOCS_EXAMPLE): Kbuild-docs/core-api/l1l2-example.c include/hugekv.h $(BUILD)/libhugekv.so
	$(Q)mkdir -p $(DOCS_OUT)
	$(call msg,CCLD,$@)
	$(Q)$(CC) $(CFLAGS) -std=gnu11 -Wall -Wextra -Werror -Iinclude $< -L$(BUILD) -lhugekv \
		-Wl,-rpath,'$$ORIGIN/..' $(HKV_LDFLAGS) -o $@

check-docs: $(DOCS_EXAMPLE)
	$(Q)$(KERNELDOC) --check $(DOC_HEADERS) Kbuild-docs/core-api
	$(Q)HUGEKV_LOG=error $(DOCS_EXAMPLE) >/dev/null || \
		{ echo "check-docs: the core-api L1/L2 example failed" >&2; exit 1; }
	$(Q)echo "docs-check: core-api L1/L2 example compiled and ran"
	$(Q)if command -v $(SPHINXBUILD) >/dev/null 2>&1; then \
		rm -rf $(DOCS_OUT)/check; \
		$(SPHINXBUILD) -q -E -b html Kbuild-docs $(DOCS_OUT)/check 2>$(DOCS_OUT)/warnings; \
		rc=$$?; \
		grep -v "toctree glob pattern '\(trace/index\|hkv-bench\)\*' didn't match" \
			$(DOCS_OUT)/warnings > $(DOCS_OUT)/warnings.real; \
		if [ $$rc != 0 ] || [ -s $(DOCS_OUT)/warnings.real ]; then \
			cat $(DOCS_OUT)/warnings.real >&2; \
			echo "check-docs: sphinx-build reported the warnings above" >&2; exit 1; \
		fi; \
		echo "docs-check: sphinx HTML built without warnings"; \
	else \
		echo "docs-check: SKIP sphinx HTML build ($(SPHINXBUILD) not installed)"; \
	fi

CHECK_EXTRA	+= check-docs
