# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Lifetimes that cannot crash, and inputs that cannot reach past a pool:
one owner per C pool, close() against calls in flight, fork children,
int64 overflow of extents, dtype mistakes, errors that name the cause, and
the library's messages in Python logging."""
import copy
import errno
import gc
import logging
import os
import pickle
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import hugekv
from hugekv import tokens
from hugekv.pool import _Handle
from conftest import TOP


def test_copy_deepcopy_pickle_refused_and_original_intact():
    p = hugekv.Pool(64)
    e = p.alloc(8)
    live = _Handle.live
    for attempt in (copy.copy, copy.deepcopy, pickle.dumps,
                    lambda x: copy.deepcopy({"pool": x}), lambda x: copy.copy(x._h)):
        with pytest.raises(TypeError, match="cannot be copied"):
            attempt(p)
        gc.collect()
        assert _Handle.live == live             # no half-made copy destroyed anything
    p.free(e)
    assert p.alloc(64).tolist() == [[0, 64]]    # the original still works (no hang)
    p.close()


def _pool_with_units(n=8):
    p = hugekv.Pool(n * 4)
    for u in range(n):
        p.unit_add(u, p.alloc(4))
    return p


def test_close_waits_for_a_call_in_flight():
    p = _pool_with_units()
    inside, release, closed = threading.Event(), threading.Event(), threading.Event()

    def cb(unit, ext):
        inside.set()
        release.wait(10)

    p.on_evict(cb)
    res = {}
    ev = threading.Thread(target=lambda: res.setdefault("freed", p.evict(8)))
    ev.start()
    assert inside.wait(10)
    cl = threading.Thread(target=lambda: (p.close(), closed.set()))
    cl.start()
    time.sleep(0.2)
    assert not closed.is_set() and not p.closed    # waits, the C pool is still there
    with pytest.raises(ValueError, match="closed"):
        p.alloc(1)                              # but new calls are refused at once
    release.set()
    ev.join(10)
    cl.join(10)
    assert closed.is_set() and p.closed and res["freed"] >= 8


def test_close_times_out_and_stays_open():
    p = _pool_with_units()
    inside, release = threading.Event(), threading.Event()
    p.on_evict(lambda u, e: (inside.set(), release.wait(10)))
    ev = threading.Thread(target=p.evict, args=(8,))
    ev.start()
    assert inside.wait(10)
    with pytest.raises(hugekv.Error) as ei:
        p.close(timeout=0.05)
    assert ei.value.errno == errno.EBUSY and not p.closed
    release.set()
    ev.join(10)
    assert p.available >= 8                      # still open and working
    p.close()


def test_close_from_inside_the_evict_callback_is_refused():
    p = _pool_with_units()
    seen = []

    def cb(unit, ext):
        try:
            p.close()
        except hugekv.Error as e:
            seen.append(e.errno)

    p.on_evict(cb)
    assert p.evict(4) >= 4
    assert seen and set(seen) == {errno.EDEADLK} and not p.closed
    p.check()
    p.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_fork_child_gets_echild_from_every_memory_call():
    torch = pytest.importorskip("torch")
    from hugekv.lmcache import PagedTensorMemoryAllocator
    p = hugekv.Pool(16, 4096, backing="4k")
    ext = p.alloc(4)
    lm = PagedTensorMemoryAllocator(tensor=4 * 4096, shape=torch.Size([1024]),
                                    dtype=torch.float32, backing="4k")
    obj = lm.allocate([torch.Size([1024])], [torch.float32])
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:                     # the child: report, never touch the memory
        try:
            out = []
            calls = [lambda: p.page_ptr(0), lambda: p.page_view(0), lambda: p.as_array(),
                     lambda: p.descriptors(ext), lambda: p.regions(), lambda: p.alloc(1),
                     lambda: p.free_slots(), lambda: p.page_buffer_meta(ext),
                     lambda: p.buffer_lists(ext), lambda: p.stats(), lambda: obj.tensor,
                     lambda: p.as_tensor(torch.float32)]
            for c in calls:
                try:
                    c()
                    out.append("ok")
                except hugekv.Error as e:
                    out.append(str(e.errno))
                except Exception as e:          # noqa: BLE001
                    out.append(type(e).__name__)
            p.close()
            os.write(w, ",".join(out).encode())
        finally:
            os._exit(0)
    os.close(w)
    got = os.read(r, 4096).decode().split(",")
    os.close(r)
    os.waitpid(pid, 0)
    assert got == [str(errno.ECHILD)] * 12, got
    assert float(obj.tensor.sum()) == float(obj.tensor.sum())      # fine in the parent
    assert p.page_ptr(0) and p.descriptors(ext).shape == (1, 2)   # the parent's pool is fine
    p.free(ext)
    p.close()


def test_int64_overflow_refused_everywhere_an_extent_enters():
    p = hugekv.Pool(16, 4096, backing="4k")
    big = [[(1 << 62), (1 << 62)]]               # start + len wraps int64
    for fn in (p.descriptors, p.free, p.allocated, lambda e: p.unit_add(1, e),
               hugekv.as_extents, tokens.extents_to_pages,
               lambda e: tokens.extents_to_tokens(e, 4)):
        with pytest.raises((ValueError, hugekv.Error)):
            fn(big)
    with pytest.raises(ValueError):
        p.descriptors([[10, (1 << 63) - 5]])     # in int64, past the pool
    with pytest.raises(ValueError, match="overflow"):
        tokens.extents_to_tokens([[1 << 60, 1]], 64)   # token index past int64
    assert p.available == 16
    p.close()


@pytest.mark.parametrize("dtype", ["S0", "U0", object, "O", [("a", "O")], "nonsense", "V0"])
def test_as_array_dtype_mistakes_are_value_errors(dtype):
    p = hugekv.Pool(4, 4096, backing="4k")
    with pytest.raises(ValueError):
        p.as_array(dtype)
    assert p.as_array("S16").shape == (4, 256)
    p.close()


def test_out_of_pages_names_the_cause():
    p = hugekv.Pool(100)
    with pytest.raises(hugekv.OutOfPages) as ei:
        p.alloc(1000)
    msg = str(ei.value)
    assert "not enough free pages" in msg and "1000" in msg and "100 free" in msg
    assert "hugepage" not in msg
    p.alloc(100)
    p.free(np.array([[10, 20], [70, 20]]))
    with pytest.raises(hugekv.OutOfPages, match="no free run of 30 contiguous pages"):
        p.alloc(30, contig=True)
    assert p.available == 40
    p.close()


def test_library_warnings_reach_python_logging():
    code = ("import logging, sys\n"
            "logging.basicConfig(level=logging.WARNING, stream=sys.stdout, "
            "format='PY %(name)s %(levelname)s %(message)s')\n"
            "import hugekv\n"
            "assert hugekv.log_bridged()\n"
            "hugekv.Pool(4).close()\n")
    env = dict(os.environ, HUGEKV_BACKING="bogus", PYTHONPATH=os.path.join(TOP, "python"))
    env.pop("HUGEKV_LOG", None)
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "PY hugekv WARNING HUGEKV_BACKING=bogus" in r.stdout, (r.stdout, r.stderr)
    assert "hugekv: warning" not in r.stderr        # not the library's own stderr line


def test_log_bridge_off_and_on(caplog):
    caplog.set_level(logging.WARNING, logger="hugekv")
    hugekv.log_bridge(False)
    try:
        assert not hugekv.log_bridged()
    finally:
        hugekv.log_bridge(True)
    assert hugekv.log_bridged()
