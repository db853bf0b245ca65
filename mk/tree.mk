# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# tree.mk - checks of the tree as a whole, in `make check`: every rule that
# writes into the build directory makes or waits for it (scripts/
# check-build-dirs, built from a copy of the tree without one); one version
# (scripts/check-version: Makefile, Python package, symbol-version nodes).

.PHONY: check-tree check-build-dirs check-version

check-version:
	$(Q)scripts/check-version

check-build-dirs:
	$(Q)scripts/check-build-dirs SANITIZE=thread

check-tree: check-version check-build-dirs

CHECK_EXTRA	+= check-tree
