# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# python.mk - the hugekv Python package (python/hugekv, ctypes over
# $(BUILD)/libhugekv.so) and its engine adapters. `check-python` runs the
# pytest suites (tests/python), the HiCache-shaped example and the
# installed-package tests with Debian's python3; `install-python` (part of
# `make install`) puts the package in $(PYTHONDIR) with the library
# directory recorded and a dist-info pip sees (pip show, pip uninstall);
# `uninstall-python` (part of `make uninstall`) removes both;
# `bench-python` runs python/bench.py into bench-results/python.json.

PYTHON		?= /usr/bin/python3
# where Debian's python3 looks: /usr/lib/python3/dist-packages for the
# system prefix, <prefix>/lib/python3.X/dist-packages elsewhere (/usr/local)
PY_VER		= $(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])')
PYTHONDIR	?= $(if $(filter /usr,$(PREFIX)),/usr/lib/python3,$(PREFIX)/lib/python$(PY_VER))/dist-packages
PY_SRCS		:= $(wildcard python/hugekv/*.py) python/hugekv/py.typed
PY_ENV		= HUGEKV_LIBRARY=$(abspath $(BUILD))/libhugekv.so HUGEKV_LOG=error \
		  PYTHONPATH=$(abspath python) PYTHONDONTWRITEBYTECODE=1

.PHONY: check-python install-python uninstall-python bench-python

check-python: $(BUILD)/libhugekv.so
	$(Q)grep -qx '__version__ = "$(VERSION)"' python/hugekv/__init__.py || \
		{ echo "check-python: python/hugekv/__init__.py's __version__ is not the" \
		       "Makefile's VERSION $(VERSION)" >&2; exit 1; }
	$(Q)$(PY_ENV) HKV_TEST_BUILD=$(BUILD) $(PYTHON) -m pytest -q -p no:cacheprovider tests/python
	$(Q)$(PY_ENV) $(PYTHON) python/examples/hicache.py --check
	$(Q)for ex in sglang_host lmcache_paged vllm_offload warm_restart multi_rank; do \
		$(PY_ENV) $(PYTHON) python/examples/$$ex.py --check || exit 1; done

CHECK_EXTRA	+= check-python

install:: install-python

install-python:
	install -d $(DESTDIR)$(PYTHONDIR)/hugekv
	install -m 0644 $(PY_SRCS) $(DESTDIR)$(PYTHONDIR)/hugekv/
	printf '%s\n' '# written by make install' 'LIBDIR = "$(LIBDIR)"' \
		> $(DESTDIR)$(PYTHONDIR)/hugekv/_paths.py
	rm -rf $(DESTDIR)$(PYTHONDIR)/hugekv-*.dist-info
	$(PYTHON) python/dist_info.py $(DESTDIR)$(PYTHONDIR) $(VERSION)

uninstall:: uninstall-python

# what install-python installed, and the bytecode python3 left beside it
uninstall-python:
	rm -rf $(DESTDIR)$(PYTHONDIR)/hugekv $(DESTDIR)$(PYTHONDIR)/hugekv-*.dist-info

bench-python: $(BUILD)/libhugekv.so
	$(Q)mkdir -p bench-results
	$(Q)$(PY_ENV) $(PYTHON) python/bench.py --out bench-results/python.json

# about 15 s: cheap enough to run with the C suite
bench: bench-python
