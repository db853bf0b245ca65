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
# without failing the check (both enforced). The core's layers, low to
# high (lib/internal.h has them file by file): os, log, env, trace; numa,
# cgroup; opts, backing, plan, arena; fork, shheap, meta; extent*;
# named_lock; lane_defer, lane_call, frag, lane; res, named_pins, unit*;
# evict, room, multi, compat; unit_check, named_recover, stats, statpage,
# stats_print; named; pool (create, attach, destroy: the top)
LAYERING_CORE	?=
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
