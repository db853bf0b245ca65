# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Named pools from Python: Pool(..., name=...), Pool.attach(name) in other
real processes, a warm restart after SIGKILL (units and bytes survive, the
dead process's pages come back), the unit listing, info() and the refusals
(bad names, a pool that does not exist, unlink while attached)."""
import errno
import os
import signal
import subprocess
import sys
import tempfile

import numpy as np
import pytest

import hugekv
from conftest import TOP


@pytest.fixture(autouse=True)
def named_dir(monkeypatch):
    with tempfile.TemporaryDirectory(dir="/dev/shm", prefix="hkv-py-") as d:
        monkeypatch.setenv("HUGEKV_NAMED_DIR", d)
        yield d


def run_py(code, expect=0):
    env = dict(os.environ, PYTHONPATH=os.path.join(TOP, "python"))
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == expect, r.stdout + r.stderr
    return r.stdout


FILL = """
import os, signal, numpy as np, hugekv
p = hugekv.Pool(256, 4096, nlanes=2, backing="4k", name="warm")
for u in range(20):
    e = p.alloc(3)
    for s, n in e.tolist():
        for pg in range(s, s + n):
            p.page_view(pg)[:8] = int(0xabc000 + u).to_bytes(8, "little")
    p.unit_add(0xabc000 + u, e)
    p.unit_seal(0xabc000 + u)
p.unit_pin(0xabc000)           # a pin the dead process never drops
held = p.alloc(10)             # held outside units: comes back
print("filled", flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_warm_restart_after_kill():
    run_py(FILL, expect=-signal.SIGKILL)
    p = hugekv.Pool.attach("warm")
    ids = p.unit_list()
    assert sorted(ids.tolist()) == [0xabc000 + u for u in range(20)]
    for u in ids.tolist():
        ext = p.unit_extents(u)
        assert ext[:, 1].sum() == 3
        for s, n in ext.tolist():
            for pg in range(s, s + n):
                assert bytes(p.page_view(pg)[:8]) == u.to_bytes(8, "little")
        assert p.unit_verify(u)
    p.check()                               # reaps the dead process
    info = p.info()
    assert info["name"] == "warm" and info["pids"] == [os.getpid()]
    assert info["reclaimed_pages"] == 10 and info["dropped_pins"] == 1
    assert p.available == 256 - 60
    assert p.stats()["pinned_units"] == 0
    s = int(p.unit_extents(0xabc001)[0, 0])
    p.page_view(s)[9] ^= 1
    assert not p.unit_verify(0xabc001)         # a changed byte is found
    p.page_view(s)[9] ^= 1
    assert p.unit_verify(0xabc001)
    assert p.evict(256) == 60
    p.close()
    hugekv.Pool.unlink("warm")


def test_other_processes_share_one_pool():
    p = hugekv.Pool(1024, 0, nlanes=4, name="ranks")
    code = """
import sys, hugekv
rank = int(sys.argv[1]) if len(sys.argv) > 1 else 0
"""
    for rank in range(4):
        run_py(f"""
import hugekv
p = hugekv.Pool.attach("ranks")
e = p.alloc(50, lane={rank})
p.unit_add({rank} * 1000 + 1, e)
p.close()
""")
    assert sorted(p.unit_list().tolist()) == [1, 1001, 2001, 3001]
    for rank in range(4):
        lo, n = p.lane_range(rank)
        ext = p.unit_extents(rank * 1000 + 1)
        assert ((ext[:, 0] >= lo) & (ext[:, 0] + ext[:, 1] <= lo + n)).all()
    assert p.available == 1024 - 200
    p.check()
    p.close()
    hugekv.Pool.unlink("ranks")


def test_refusals():
    for bad in ("", ".x", "a/b", "x" * 64, 7, "é"):
        with pytest.raises((ValueError, TypeError)):
            hugekv.Pool(16, name=bad)
    with pytest.raises(hugekv.Error) as ei:
        hugekv.Pool.attach("missing")
    assert ei.value.errno == errno.ENOENT
    p = hugekv.Pool(16, name="busy")
    with pytest.raises(hugekv.Error) as ei:
        hugekv.Pool(16, name="busy")
    assert ei.value.errno == errno.EEXIST
    with pytest.raises(hugekv.Error) as ei:
        hugekv.Pool.attach("busy")                 # already attached here
    assert ei.value.errno == errno.EADDRINUSE
    with pytest.raises(hugekv.Error) as ei:
        hugekv.Pool.unlink("busy")
    assert ei.value.errno == errno.EBUSY
    with pytest.raises(hugekv.Error) as ei:
        hugekv.Pool(16).info()                     # not a named pool
    assert ei.value.errno == errno.EOPNOTSUPP
    hugekv.Pool.unlink("busy", force=True)
    p.close()
    with pytest.raises(hugekv.Error):
        hugekv.Pool.attach("busy")


def test_unit_listing_of_a_private_pool():
    p = hugekv.Pool(64)
    assert p.unit_list().tolist() == []
    e = p.alloc(5)
    p.unit_add(9, e)
    assert p.unit_list().tolist() == [9]
    assert p.unit_extents(9).tolist() == e.tolist()
    with pytest.raises(hugekv.Error) as ei:
        p.unit_extents(10)
    assert ei.value.errno == errno.ENOENT
    p.close()


def test_sglang_host_tensor_allocator_ranks_share_one_pool():
    torch = pytest.importorskip("torch")
    from hugekv.sglang import HostTensorAllocator
    a = HostTensorAllocator(backing="4k", name="tp")
    t = a.allocate((64, 16), torch.float32)           # rank 0 makes "tp-0"
    t[:] = 0
    run_py("""
import torch
from hugekv.sglang import HostTensorAllocator
b = HostTensorAllocator(backing="4k", name="tp")
u = b.allocate((64, 16), torch.float32)              # rank 1 attaches "tp-0"
u[5] = 7.0                                           # written in the shared copy
b.allocate((32, 16), torch.float32)                 # "tp-1": made here
""")
    assert float(t[5, 3]) == 7.0
    q = hugekv.Pool.attach("tp-1")
    assert q.npages == 32
    q.close()
    del t                                   # the tensor's view keeps its pool mapped
    for p in a.pools:
        p.close()
    hugekv.Pool.unlink("tp-0")
    hugekv.Pool.unlink("tp-1")
