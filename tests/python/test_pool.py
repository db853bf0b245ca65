# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""hugekv.Pool: allocation, errors that change nothing, residency, views."""
import ctypes
import errno
import gc
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import hugekv
from hugekv import _lib
from hugekv.pool import _Handle
from conftest import TOP, need_2m

MB2 = 2 << 20


def test_alloc_free_roundtrip():
    with hugekv.Pool(1000) as p:
        e = p.alloc(300)
        assert e.dtype == np.int64 and e.shape == (1, 2)
        assert e.tolist() == [[0, 300]]          # carved from the low end
        assert p.available == 700
        p.free(e)
        assert p.available == 1000
        p.check()


def test_allocated_query():
    with hugekv.Pool(300, nlanes=3) as p:
        a = p.alloc(100, lane=1)
        b = p.alloc(40, lane=2)
        assert p.allocated(a) and p.allocated(b)
        assert p.allocated([(150, 90)])             # across lanes 1 and 2
        assert not p.allocated([(150, 91)])         # page 240 is free
        assert not p.allocated(np.vstack([a, [[250, 1]]]))
        p.unit_add(7, b)
        assert p.allocated(b)                       # unit pages count
        avail = p.available
        for bad in ([(299, 2)], [(10, 0)], [(-1, 2)]):
            with pytest.raises(hugekv.Error) as e:
                p.allocated(bad)
            assert e.value.errno == errno.EINVAL
        assert p.available == avail
        p.check()


def test_best_fit_and_multi_extent():
    with hugekv.Pool(100) as p:
        a, b, c, d = p.alloc(10), p.alloc(5), p.alloc(20), p.alloc(65)
        p.free(a)
        p.free(c)                                 # holes of 10 at 0 and 20 at 15
        assert p.alloc(8).tolist() == [[0, 8]]    # best fit: the 10-hole
        e = p.alloc(22)                           # 2 + 20: two extents, largest first
        assert e.tolist() == [[15, 20], [8, 2]]
        p.free(e)
        with pytest.raises(hugekv.OutOfPages):
            p.alloc(21, contig=True)
        assert p.alloc(20, contig=True).tolist() == [[15, 20]]
        p.free(np.vstack([b, d]))
        p.check()


def test_out_of_pages_takes_nothing():
    with hugekv.Pool(64) as p:
        p.alloc(60)
        with pytest.raises(hugekv.OutOfPages) as ei:
            p.alloc(5)
        assert isinstance(ei.value, MemoryError) and isinstance(ei.value, OSError)
        assert ei.value.errno == errno.ENOMEM
        assert "not enough free pages" in str(ei.value)
        assert p.available == 4


@pytest.mark.parametrize("bad, exc", [
    (0, ValueError), (-3, ValueError), (1.5, TypeError), ("4", TypeError), (True, TypeError),
    (1 << 64, ValueError)])
def test_alloc_bad_npages(bad, exc):
    with hugekv.Pool(16) as p:
        with pytest.raises(exc):
            p.alloc(bad)
        assert p.available == 16


def test_bad_lane_and_options():
    with hugekv.Pool(16, nlanes=2) as p:
        with pytest.raises(ValueError):
            p.alloc(1, lane=2)
        with pytest.raises(ValueError):
            p.alloc(1, lane=-1)
        # a lane of another type: TypeError, however it compares to LANE_ANY
        for lane in (np.array([]), np.array([0, 1]), float(hugekv.LANE_ANY), 0.0, "0", None, True):
            with pytest.raises(TypeError):
                p.alloc(1, lane=lane)
        assert p.alloc(1, lane=np.uint32(hugekv.LANE_ANY)).shape == (1, 2)    # index-like: taken
        e, (lo, n) = p.alloc(1, lane=np.int64(1)), p.lane_range(1)
        assert e[0, 1] == 1 and lo <= e[0, 0] < lo + n
        assert p.available == 14
    for kw in (dict(npages=0), dict(npages=-1), dict(npages=8, nlanes=0),
               dict(npages=8, backing="2M-please"), dict(npages=8, free_room=(0.5, 0.1)),
               dict(npages=8, numa_node=-2), dict(npages=8, chunk_bytes=-1)):
        with pytest.raises((ValueError, TypeError)):
            hugekv.Pool(**kw)
    with pytest.raises(hugekv.Error) as ei:       # the library refuses 0-page lanes
        hugekv.Pool(2, nlanes=4)
    assert ei.value.errno == errno.EINVAL


def test_free_errors_change_nothing():
    with hugekv.Pool(100) as p:
        e = p.alloc(10)
        before = p.available
        for bad in ([[5, 10]],              # half not allocated
                    [[0, 5], [3, 2]],       # named twice
                    [[0, 0]],               # empty extent
                    [[-1, 2]],              # negative start
                    [[0, -2]],              # negative len
                    [[95, 10]]):            # past the end
            with pytest.raises(hugekv.Error) as ei:
                p.free(bad)
            assert ei.value.errno == errno.EINVAL
            assert p.available == before
        for bad in ([1, 2, 3], [[1.0, 2.0]], np.zeros((2, 3), np.int64)):
            with pytest.raises((ValueError, TypeError)):
                p.free(bad)
        p.free(e[:, :])                     # still all there
        p.check()
        assert p.available == 100


def test_free_accepts_lists_torch_and_subranges():
    torch = pytest.importorskip("torch")
    with hugekv.Pool(100) as p:
        assert p.alloc(40).tolist() == [[0, 40]]
        p.free([[0, 10]])
        p.free(torch.tensor([[10, 10]]))
        p.free(np.array([[20, 20]], dtype=np.int32))
        assert p.available == 100
        assert p.free(np.zeros((0, 2), np.int64)) is None


def test_alloc_lanes_all_or_nothing():
    with hugekv.Pool(100, nlanes=4) as p:
        assert [p.lane_range(i) for i in range(4)] == [(0, 25), (25, 25), (50, 25), (75, 25)]
        e = p.alloc_lanes([5, 0, 3, 1])
        assert e.tolist() == [[0, 5], [50, 3], [75, 1]]
        with pytest.raises(hugekv.OutOfPages):
            p.alloc_lanes([1, 1, 1, 30])
        assert p.available == 91
        with pytest.raises(ValueError):
            p.alloc_lanes([1, 2])
        with pytest.raises(ValueError):
            p.alloc_lanes([0, 0, 0, 0])
        with pytest.raises(ValueError):
            p.lane_range(4)
        assert p.alloc(3, lane=1).tolist() == [[25, 3]]


def test_many_extents_grow_the_buffer():
    with hugekv.Pool(1000) as p:
        held = [p.alloc(1) for _ in range(1000)]
        p.free(np.vstack(held[::2]))          # 500 one-page holes
        e = p.alloc(300)
        assert e.shape == (300, 2) and (e[:, 1] == 1).all()
        p.check()


def test_stats_mirror_the_c_names():
    with hugekv.Pool(1000, nlanes=2) as p:
        p.alloc(10)
        st = p.stats()
        for k in ("npages", "free_pages", "free_extents", "largest_free_extent", "allocs",
                  "extents_per_alloc", "lane_free_pages", "metadata_bytes", "ufi"):
            assert k in st
        assert st["npages"] == 1000 and st["free_pages"] == 990 and st["allocs"] == 1
        assert st["lane_free_pages"] == [490, 500]
        assert st["backing_name"] == "none"


def test_struct_layout_matches_header(tmp_path):
    """Every field offset of the ctypes mirrors equals the C compiler's."""
    lines = []
    for cname, cls in (("hkv_stats", _lib.Stats), ("hkv_pool_opts", _lib.PoolOpts),
                       ("hkv_region", _lib.Region), ("hkv_region_stats", _lib.RegionStats),
                       ("hkv_extent", _lib.Extent)):
        lines.append(f'printf("{cname} %zu\\n", sizeof(struct {cname}));')
        for f, _ in cls._fields_:
            lines.append(f'printf("{cname}.{f} %zu\\n", offsetof(struct {cname}, {f}));')
    src = tmp_path / "layout.c"
    src.write_text("#include <stddef.h>\n#include <stdio.h>\n#include <hugekv.h>\n"
                   "int main(void){" + "".join(lines) + "return 0;}\n")
    exe = tmp_path / "layout"
    subprocess.run(["cc", "-I", os.path.join(TOP, "include"), str(src), "-o", str(exe)],
                   check=True)
    got = dict(l.split() for l in subprocess.run([str(exe)], capture_output=True, text=True,
                                                  check=True).stdout.splitlines())
    for cname, cls in (("hkv_stats", _lib.Stats), ("hkv_pool_opts", _lib.PoolOpts),
                       ("hkv_region", _lib.Region), ("hkv_region_stats", _lib.RegionStats),
                       ("hkv_extent", _lib.Extent)):
        assert int(got[cname]) == ctypes.sizeof(cls), cname
        for f, _ in cls._fields_:
            assert int(got[f"{cname}.{f}"]) == getattr(cls, f).offset, f"{cname}.{f}"


def test_closed_pool_raises_and_close_is_idempotent():
    p = hugekv.Pool(8)
    p.close()
    p.close()
    assert p.closed
    for call in (lambda: p.alloc(1), lambda: p.free([[0, 1]]), lambda: p.available,
                 lambda: p.stats(), lambda: p.unit_pin(1), lambda: p.free_slots()):
        with pytest.raises(ValueError, match="closed"):
            call()


def test_free_slots_zero_copy_lifetime():
    with hugekv.Pool(10) as p:
        p.alloc(3)
        s = p.free_slots()
        assert s.tolist() == list(range(3, 10)) and not s.flags.writeable
        with pytest.raises(ValueError, match="still alive"):
            p.free_slots()
        tail = s[2:]                  # a derived array keeps the view alive too
        del s
        with pytest.raises(ValueError):
            p.free_slots()
        del tail
        p.alloc(2)
        assert p.free_slots().tolist() == list(range(5, 10))
        c = p.free_slots(copy=True)
        c[0] = 99                     # the caller's own copy
        assert p.free_slots(copy=True)[0] == 5


def test_units_pins_split_remove():
    with hugekv.Pool(100) as p:
        e = p.alloc(10)
        p.unit_add(7, e)
        with pytest.raises(hugekv.Error) as ei:
            p.unit_add(7, p.alloc(1))
        assert ei.value.errno == errno.EEXIST
        with pytest.raises(hugekv.Error) as ei:
            p.free(e)                         # pages of a unit
        assert ei.value.errno == errno.EBUSY
        p.unit_pin(7)
        p.unit_split(7, 4, 8)
        with pytest.raises(hugekv.Error):
            p.unit_remove(8)                  # pinned (the split kept the pin)
        p.unit_unpin(7)
        p.unit_unpin(8)
        with pytest.raises(hugekv.Error) as ei:
            p.unit_unpin(8)
        assert ei.value.errno == errno.EINVAL
        with pytest.raises(hugekv.Error) as ei:
            p.unit_touch(12345)
        assert ei.value.errno == errno.ENOENT
        with pytest.raises(ValueError):
            p.unit_pin(-1)
        p.unit_remove(7)
        p.unit_remove(8, free=False)
        p.free([[4, 6]])
        assert p.available == 99
        p.check()


def test_evict_callback_order_and_extents():
    with hugekv.Pool(100) as p:
        seen = []
        p.on_evict(lambda u, ext: seen.append((u, ext.tolist())))
        for u in range(5):
            p.unit_add(u, p.alloc(20))
        p.unit_pin(0)
        p.unit_touch(1)                       # order now 0(pinned), 2, 3, 4, 1
        assert p.evict(40) == 40
        assert seen == [(2, [[40, 20]]), (3, [[60, 20]])]
        p.on_evict(None)
        assert p.evict(60) == 20 and len(seen) == 2


def test_evict_callback_exception_is_reported():
    with hugekv.Pool(50, free_room=(0.2, 0.4)) as p:
        def bad(u, ext):
            raise RuntimeError(f"boom {u}")
        p.on_evict(bad)
        for u in range(5):
            p.unit_add(u, p.alloc(10))
        with pytest.raises(hugekv.CallbackError) as ei:
            p.evict(10)
        assert ei.value.result == 10 and "boom 0" in str(ei.value)
        assert isinstance(ei.value.__cause__, RuntimeError)
        with pytest.raises(hugekv.CallbackError) as ei:
            p.alloc(5, evict=True)            # watermarks: evicts up to 40 % free
        ext = ei.value.result                 # the allocation happened: caller owns it
        assert ext[:, 1].sum() == 5
        p.free(ext)
        p.check()


def test_evict_callback_must_not_reenter():
    with hugekv.Pool(20) as p:
        errs = []

        def cb(u, ext):
            try:
                p.unit_pin(99)
            except hugekv.Error as e:
                errs.append(e.errno)
        p.on_evict(cb)
        p.unit_add(1, p.alloc(10))
        assert p.evict(20) == 10
        assert errs == [errno.EDEADLK]


def test_two_python_threads_run_in_the_library():
    """ctypes drops the GIL in each call: two threads, one lane each."""
    with hugekv.Pool(1 << 16, nlanes=2) as p:
        errors = []

        def work(lane):
            rng = np.random.default_rng(lane)
            held = []
            try:
                for i in range(20000):
                    if held and (len(held) > 50 or rng.random() < 0.5):
                        p.free(held.pop(int(rng.integers(len(held)))))
                    else:
                        e = p.alloc(int(rng.integers(1, 64)), lane=lane)
                        lo, n = p.lane_range(lane)
                        assert (e[:, 0] >= lo).all() and (e.sum(axis=1) <= lo + n).all()
                        held.append(e)
                for e in held:
                    p.free(e)
            except Exception as e:            # reported below
                errors.append(e)
        ts = [threading.Thread(target=work, args=(i,)) for i in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert not errors
        assert p.available == 1 << 16
        p.check()


def test_index_only_pool_has_no_memory():
    with hugekv.Pool(8) as p:
        assert p.regions() == []
        for call in (lambda: p.page_view(0), lambda: p.as_array(), lambda: p.descriptors([[0, 1]])):
            with pytest.raises(ValueError, match="index-only"):
                call()


def test_memory_pool_views_and_descriptors():
    need_2m(8)
    torch = pytest.importorskip("torch")
    with hugekv.Pool(256, 64 << 10, backing="2m", strict=True) as p:
        r = p.regions()
        assert r and all(x["hugepage_bytes"] == MB2 for x in r)
        assert sum(x["npages"] for x in r) == 256
        assert p.stats()["backing_name"] == "2m"
        kv = p.as_tensor(torch.bfloat16, (256, 2, 16, 1024))
        kv[5].fill_(1.5)
        raw = p.page_view(5)
        assert len(raw) == 64 << 10 and raw[:2].tobytes() == b"\xc0\x3f"   # 1.5 in bf16
        a = p.as_array(np.float32)
        assert a.shape == (256, 16384)
        a[7, :] = 2.0
        assert float(kv[7].view(torch.float32)[0, 0, 0]) == 2.0
        with pytest.raises(ValueError):
            p.as_array(np.float32, (3, 3))
        with pytest.raises(ValueError):
            p.page_view(256)
        base = p.page_ptr(0)
        d = p.descriptors([[0, 4], [4, 4], [10, 2], [9, 1]])
        assert d.tolist() == [[base, 8 << 16], [base + (10 << 16), 2 << 16],
                              [base + (9 << 16), 1 << 16]]
        ptrs, sizes = p.page_buffer_meta([[3, 2]])
        assert ptrs == [base + (3 << 16), base + (4 << 16)] and sizes == [1 << 16] * 2
        planes = p.descriptors([[3, 2]], plane_bytes=16 << 10)
        assert planes.shape == (8, 2) and planes[1, 0] == base + (3 << 16) + (16 << 10)
        with pytest.raises(ValueError):
            p.descriptors([[255, 2]])


def test_views_keep_the_memory_mapped_after_close():
    need_2m(2)
    torch = pytest.importorskip("torch")
    gc.collect()
    live = _Handle.live
    p = hugekv.Pool(16, 64 << 10, backing="2m")
    t = p.as_tensor(torch.uint8)
    mv = p.page_view(1)
    p.close()
    assert _Handle.live == live + 1           # still mapped: views hold it
    t[1, 0] = 42                              # no SIGSEGV: the memory is there
    assert mv[0] == 42
    del t
    gc.collect()
    assert _Handle.live == live + 1
    mv.release()
    del mv
    gc.collect()
    assert _Handle.live == live               # the last view gone: unmapped


def test_chunk_bytes_extents_never_cross_a_chunk():
    with hugekv.Pool(64, 4096, backing="4k", chunk_bytes=16 * 4096) as p:
        e = p.alloc(40)
        for s, n in e.tolist():
            assert s // 16 == (s + n - 1) // 16
        p.free(e)


def test_pool_with_too_many_hugepages_fails_cleanly():
    free = int(open("/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages").read())
    with pytest.raises(hugekv.OutOfPages):
        hugekv.Pool(free + 64, MB2, backing="2m", strict=True)
    assert int(open("/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages").read()) >= free - 8


def test_more_bad_input_is_refused():
    torch = pytest.importorskip("torch")
    with hugekv.Pool(32) as p:
        with pytest.raises(TypeError):
            p.on_evict(42)
        with pytest.raises(ValueError):
            p.unit_add(1, np.zeros((0, 2), np.int64))
        e = p.alloc(8)
        p.unit_add(1, e)
        with pytest.raises(ValueError):
            p.unit_split(1, 0, 2)
        with pytest.raises(hugekv.Error) as ei:
            p.unit_split(1, 8, 2)                 # at_page must be < the unit's size
        assert ei.value.errno == errno.EINVAL
        with pytest.raises(ValueError):
            p.evict(-1)
        assert p.stats()["units"] == 1 and p.available == 24
    with hugekv.Pool(4, 4096, backing="4k") as m:
        with pytest.raises(TypeError):
            m.as_tensor(np.float32)
        with pytest.raises(ValueError):
            m.as_array(np.dtype((np.void, 3)))    # 4096 is not a multiple of 3
        assert m.as_tensor(torch.float64).shape == (4, 512)


def test_descriptors_split_where_a_region_ends(monkeypatch):
    with hugekv.Pool(64, 4096, backing="4k") as p:
        base = p.page_ptr(0)
        monkeypatch.setattr(p, "_region_cuts", lambda: np.array([16, 40], dtype=np.int64))
        d = p.descriptors([[10, 10], [20, 30]])
        assert d.tolist() == [[base + 10 * 4096, 6 * 4096], [base + 16 * 4096, 24 * 4096],
                              [base + 40 * 4096, 10 * 4096]]


def test_free_slots_view_survives_close():
    gc.collect()
    live = _Handle.live
    p = hugekv.Pool(8)
    p.alloc(2)
    s = p.free_slots()
    p.close()
    assert s.tolist() == list(range(2, 8)) and _Handle.live == live + 1
    del s
    gc.collect()
    assert _Handle.live == live


def test_pool_dropped_without_close_is_destroyed():
    gc.collect()
    live = _Handle.live
    p = hugekv.Pool(8)
    p.on_evict(lambda u, e: None)                 # no cycle through the callback
    del p
    assert _Handle.live == live


def test_a_blocked_call_releases_the_gil():
    """Thread B blocks inside the library (on the residency lock that A's
    eviction holds) while A's callback keeps running Python: only possible
    if B's ctypes call dropped the GIL. A deadlock would show as a timeout."""
    import time
    with hugekv.Pool(40) as p:
        p.unit_add(1, p.alloc(10))
        p.unit_add(2, p.alloc(10))
        p.unit_touch(2)
        in_cb, times = threading.Event(), {}

        def cb(u, ext):
            in_cb.set()
            t = time.monotonic()
            while time.monotonic() - t < 0.3:     # Python work while B waits in C
                sum(range(1000))

        def touch():
            in_cb.wait(5)
            t = time.monotonic()
            p.unit_touch(2)
            times["b"] = time.monotonic() - t
        p.on_evict(cb)
        b = threading.Thread(target=touch)
        b.start()
        p.evict(30)                               # evicts unit 1 only
        b.join(5)
        assert not b.is_alive(), "deadlock: the blocked call held the GIL"
        assert times["b"] > 0.1                   # it did wait for the eviction


def test_importing_adapters_needs_no_engine():
    code = ("import sys, hugekv, hugekv.sglang, hugekv.lmcache, hugekv.vllm; "
            "bad = [m for m in ('torch', 'sglang', 'lmcache', 'vllm') if m in sys.modules]; "
            "assert not bad, bad")
    env = dict(os.environ, PYTHONPATH=os.path.join(TOP, "python"))
    subprocess.run([sys.executable, "-c", code], check=True, env=env)
