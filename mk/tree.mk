# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# tree.mk - checks of the tree as a whole, in `make check`: every rule that
# writes into the build directory makes or waits for it (scripts/
# check-build-dirs, built from a copy of the tree without one); one version
# (scripts/check-version: Makefile, Python package, symbol-version nodes);
# the objects of each library (libhugekv, libhugekv-xfer) call each other
# without a cycle
# (scripts/check-layering, beside scripts/check-exports).

.PHONY: check-tree check-build-dirs check-version check-layering

# LAYERING_CORE / LAYERING_XFER=--report-only print a library's cycle
# without failing the check. The core's is reported for now: the named
# pools' objects (named*.c with opts.c and pool.c) call each other in a
# cycle; empty it once they are layered
LAYERING_CORE	?= --report-only
LAYERING_XFER	?=

check-layering: $(STLIB) $(XFER_OBJS)
	$(Q)scripts/check-layering $(LAYERING_CORE) libhugekv $(LIB_OBJS)
	$(Q)$(if $(XFER_OBJS),scripts/check-layering $(LAYERING_XFER) libhugekv-xfer $(XFER_OBJS))

check-version:
	$(Q)scripts/check-version

check-build-dirs:
	$(Q)scripts/check-build-dirs SANITIZE=thread

check-tree: check-version check-layering check-build-dirs

CHECK_EXTRA	+= check-tree
