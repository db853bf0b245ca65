# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""pytest setup: the package from python/, the library from $(BUILD)
(HUGEKV_LIBRARY, set by mk/python.mk; build/ when run by hand)."""
import os
import sys

import pytest

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("HKV_TEST_BUILD", "build")
sys.path.insert(0, os.path.join(TOP, "python"))
os.environ.setdefault("HUGEKV_LIBRARY", os.path.join(TOP, BUILD, "libhugekv.so"))
os.environ.setdefault("HUGEKV_LOG", "error")


def free_hugepages(kb=2048):
    """Free hugepages of @kb kB on this machine now (0 if the size is absent)."""
    try:
        with open(f"/sys/kernel/mm/hugepages/hugepages-{kb}kB/free_hugepages") as f:
            return int(f.read())
    except OSError:
        return 0


def need_2m(pages):
    """Skip unless @pages free 2 MiB hugepages exist (make check reserves them)."""
    have = free_hugepages()
    if have < pages:
        pytest.skip(f"needs {pages} free 2 MiB hugepages, the machine has {have} "
                    "(run through scripts/test-env, as make check does)")
