# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Every public call of the package and of its engine adapters with
hostile arguments, seeded: prints one JSON object, {"calls": N,
"unexpected": [...]}; run by test_hostile.py in a process of its own, so
that a crash fails the test instead of ending pytest. A call may succeed or raise a clear exception
(EXPECTED); anything else (ctypes.ArgumentError, AttributeError, a crash)
is what the test catches. Silent acceptance is not: the suites of each
class test the values that must be refused."""
import json
import random
import sys

import numpy as np

import conftest  # noqa: F401  (the package and the library of this build)
import hugekv
from hugekv import tokens

EXPECTED = (hugekv.Error, TypeError, ValueError, OverflowError, IndexError, KeyError,
            MemoryError)

INTS = [0, 1, -1, 3, 63, 64, 2 ** 31, 2 ** 32 - 1, 2 ** 32, 2 ** 63, 2 ** 64, -2 ** 63]
ODD = [1.5, 4.0, float("nan"), float("inf"), None, True, "3", b"x", "a\0b", object(),
       np.int64(2), np.uint64(2 ** 64 - 1), np.float64(2.0), np.array([]),
       np.array([1, 2]), np.array([[0, 2]]), np.array([[0, 2]], dtype=np.uint64),
       np.array([[0, 2]], dtype=np.float32), np.zeros((0, 2), np.int64),
       np.array([[5, -1]]), np.array([[2 ** 62, 2 ** 62]], dtype=np.int64),
       [], [1], [[0, 1]], [(0, 1), (0, 1)], [[0, 1], [1, 1]]]
VALUES = INTS + ODD


class Run:
    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.calls = 0
        self.unexpected = []

    def arg(self, extra=()):
        return self.rng.choice(VALUES + list(extra))

    def call(self, what, fn, *args, expected=EXPECTED, **kw):
        self.calls += 1
        try:
            return fn(*args, **kw)
        except expected:
            return None
        except Exception as e:  # noqa: BLE001 (the point: any other type is a defect)
            if len(self.unexpected) < 20:
                self.unexpected.append(f"{what}{args!r:.120} {kw!r:.80}: "
                                       f"{type(e).__name__}: {e}"[:300])
            return None


POOL_CALLS = ("alloc", "alloc_lanes", "free", "allocated", "lane_range", "unit_add",
              "unit_touch", "unit_pin", "unit_unpin", "unit_split", "unit_remove", "evict",
              "page_ptr", "page_view", "as_array", "descriptors", "page_buffer_meta",
              "buffer_lists", "unit_extents", "unit_seal", "unit_verify", "free_slots",
              "on_evict")


def pool_calls(r, n):
    with hugekv.Pool(64, 4096, nlanes=2, backing="4k") as p:
        live = []
        for _ in range(n):
            m = r.rng.choice(POOL_CALLS)
            args = [r.arg(live[-2:]) for _ in range(r.rng.randint(0, 3))]
            kw = {}
            if m == "alloc" and r.rng.random() < 0.5:
                kw = {k: r.arg() for k in ("lane", "contig", "evict") if r.rng.random() < 0.5}
            out = r.call(f"Pool.{m}", getattr(p, m), *args, **kw)
            if m == "alloc" and out is not None:
                live.append(out)
        r.call("Pool.check", p.check)
        for v in VALUES:
            r.call("Pool(label=)", lambda: hugekv.Pool(8, label=v).close())
            r.call("Pool(nlanes=)", lambda: hugekv.Pool(8, nlanes=v).close())
            r.call("Pool.attach", hugekv.Pool.attach, v)


def token_calls(r, n):
    fns = [(tokens.runs_expand, 2), (tokens.extents_to_pages, 1), (tokens.pages_to_extents, 1),
           (tokens.extents_to_tokens, 2), (tokens.tokens_to_pages, 2),
           (tokens.tokens_to_extents, 2)]
    for _ in range(n):
        fn, k = r.rng.choice(fns)
        r.call(f"tokens.{fn.__name__}", fn, *[r.arg() for _ in range(k)])


def xfer_calls(r):
    try:
        from hugekv import xfer
    except (ImportError, OSError):
        return                          # no UCX build: the other calls still run
    key = b"hostile_child: a key of enough bytes"
    with hugekv.Pool(64, 65536, backing="4k") as p:
        for opt in ("name", "key_file", "max_inflight", "max_grants", "max_peers",
                    "reg_chunk_bytes", "max_grant_mem", "timeout_ms", "grant_timeout_ms"):
            for v in (5, -1, 2 ** 64, 1.5, "a\0b", None, object()):
                ep = r.call(f"Endpoint({opt}=)", xfer.Endpoint, p, key=key, **{opt: v})
                if ep is not None:
                    ep.close()
        with xfer.Endpoint(p, key=key) as ep:
            for v in VALUES:
                r.call("Endpoint.listen", ep.listen, v)
                r.call("Endpoint.connect", ep.connect, v, timeout_ms=50)
                r.call("Endpoint.test", ep.test, v)
                r.call("Endpoint.wait", ep.wait, v, timeout_ms=1)


def lmcache_calls(r):
    try:
        import torch
    except ImportError:
        return
    from hugekv.lmcache import PagedTensorMemoryAllocator
    shape = torch.Size([2, 4, 16, 64])
    a = PagedTensorMemoryAllocator(8 * 16384, [shape], [torch.bfloat16], backing="4k")
    shapes = [shape, torch.Size([0]), [2 ** 40, 2 ** 40], [-1], "x", None, [], [[1.5]], 5]
    live = []
    for _ in range(300):
        o = r.call("lmcache.allocate", a.allocate, r.rng.choice(shapes), torch.bfloat16)
        if o is not None:
            live.append(o)
        got = r.call("lmcache.batched_allocate", a.batched_allocate, [shape],
                     [torch.bfloat16], r.arg())
        live += got or []
        if live and r.rng.random() < 0.5:
            pick = [r.rng.choice(live) for _ in range(r.rng.randint(1, 3))]
            r.call("lmcache.batched_free", a.batched_free, pick)
    r.call("lmcache.batched_free", a.batched_free, live)
    if not a.memcheck():
        r.unexpected.append("lmcache: memcheck failed")
    a.close()


def sglang_calls(r, n):
    """the SGLang pools over the stand-ins of test_sglang.py; SGLang's own
    checks raise AssertionError, and so do the adapters"""
    try:
        import torch
        import test_sglang as sg
    except ImportError:
        return
    odd_idx = [torch.tensor([]), torch.tensor([1, 1]), torch.tensor([-1]), torch.tensor([0.5]),
               torch.tensor([[1]]), torch.tensor([2 ** 40]), torch.tensor([True]),
               torch.tensor([3], dtype=torch.int32)]
    for make in (lambda: sg.host(16, 1), lambda: sg.host(16, 4),
                 lambda: sg.Dev(16, torch.bfloat16, "cpu", None, True),
                 lambda: sg.PagedDev(64, 4, torch.bfloat16, "cpu", None, False)):
        a, live = make(), []
        for _ in range(n):
            m = r.rng.choice(("alloc", "free", "available_size", "clear", "backup_state",
                              "restore_state", "free_group_begin", "free_group_end"))
            fn = getattr(a, m, None)
            if fn is None:
                continue
            args = [r.rng.choice(VALUES + odd_idx + live[-2:])] \
                if m in ("alloc", "free", "restore_state") else []
            out = r.call(f"{type(a).__name__}.{m}", fn, *args,
                         expected=EXPECTED + (AssertionError, RuntimeError))
            if m in ("alloc", "backup_state") and out is not None:
                live.append(out)
        r.call(f"{type(a).__name__}.check", a.hugekv_pool.check)


def main():
    seed = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    r = Run(seed)
    pool_calls(r, 6000)
    token_calls(r, 3000)
    xfer_calls(r)
    lmcache_calls(r)
    sglang_calls(r, 1500)
    print(json.dumps({"calls": r.calls, "unexpected": r.unexpected}))


if __name__ == "__main__":
    main()
