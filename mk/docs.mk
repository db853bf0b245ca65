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
DOC_HEADERS	:= $(wildcard include/hugekv*.h)

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

# Manual pages into $(BUILD)/man: the hand-written ones of man/
# with the Makefile's VERSION filled in, and for the tools whose --help is
# the reference one made by Debian's help2man from --help, with each
# subcommand's --help as a SUBCOMMANDS section, so they cannot drift.

HELP2MAN	?= help2man
MAN_WRITTEN	:= $(patsubst man/%.1,$(BUILD)/man/%.1,$(wildcard man/*.1))

$(BUILD)/man/%.1: man/%.1 Makefile
	$(Q)mkdir -p $(@D)
	$(call msg,GEN,$@)
	$(Q)sed 's/@VERSION@/$(VERSION)/g' $< > $@

# the subcommands a tool's --help lists: lines "  name   what it does"
man_subcommands = $$($(1) --help 2>&1 | awk '/^  [a-z][a-z-]+  / {print $$1}')

# $(call man_from_help,TOOL PATH,ONE LINE[,SUBCOMMANDS]): the recipe of a
# generated page (subcommands: those --help lists, unless named)
define man_from_help
	$(Q)mkdir -p $(@D)
	$(call msg,HELP2MAN,$@)
	$(Q){ echo '[SUBCOMMANDS]'; for s in $(if $(3),$(3),$(call man_subcommands,$(1))); do \
		echo ".SS $$s"; echo ".nf"; \
		$(1) $$s --help 2>&1 | sed -e 's/\\/\\e/g' -e "s/^[.']/\\\\\\&&/"; \
		echo ".fi"; done; } > $@.h2m
	$(Q)$(HELP2MAN) --no-info --no-discard-stderr --name=$(2) \
		--version-string='$(VERSION)' --include=$@.h2m --output=$@.tmp $(1)
	$(Q)rm -f $@.h2m && mv $@.tmp $@
endef
