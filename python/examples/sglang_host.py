#!/usr/bin/python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""sglang_host.py - hugekv under SGLang's two allocators, as HiCache uses them.

SGLang is not needed: two small stand-ins take the place of its classes
(PagedTokenToKVPoolAllocator for the GPU page index, HostKVCache for the
host pool), keeping only what the mixins rely on (sizes, the lock, the
kv buffer, clear() from __init__). With SGLang installed, the same two
lines put the mixins under its own classes:

    class L1(DevicePoolMixin, PagedTokenToKVPoolAllocator): pass
    class L2(HostPoolMixin, MHATokenToKVPoolHost): pass

The loop: each request extends its sequence on L1 (alloc_extend), its KV
rows are written on the "device" (a CPU tensor here), backed up to the host
pool (alloc, copy by token index), the L1 pages freed (need_sort: they wait
in release_pages until an allocation needs them); half of the requests are
later loaded back from L2 and their bytes checked. A speculative step runs
between backup_state() and restore_state().

    sglang_host.py [--requests N] [--seed S] [--check]

--check exits 1 unless every byte loaded back matched and both pools end
full and pass hkv_check.
"""
import argparse
import os
import sys
import threading

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from hugekv.sglang import DevicePoolMixin, HostPoolMixin  # noqa: E402

PAGE, HEAD = 16, 8          # tokens per page, KV values per token


class PagedTokenToKVPoolAllocator:
    """Stand-in: SGLang's constructor order (free_pages None, then clear())."""

    def __init__(self, size, page_size, dtype, device, kvcache, need_sort):
        self.size, self.page_size, self.dtype, self.device = size, page_size, dtype, device
        self._kvcache, self.need_sort = kvcache, need_sort
        self.free_pages = None
        self.release_pages = None
        self.num_pages = size // page_size
        self.clear()


class HostKVCache:
    """Stand-in: sizes rounded up one page, an RLock, the kv buffer, clear()."""

    def __init__(self, size, page_size):
        self.page_size = page_size
        self.page_num = size // page_size + 1
        self.size = self.page_num * page_size
        self.kv_buffer = torch.zeros((self.size, HEAD), dtype=torch.float32)
        self.lock = threading.RLock()
        self.clear()


class L1(DevicePoolMixin, PagedTokenToKVPoolAllocator):
    pass


class L2(HostPoolMixin, HostKVCache):
    pass


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=300)
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--check", action="store_true", help="exit 1 unless all checks pass")
    a = ap.parse_args()
    if a.requests < 1:
        ap.error("--requests must be >= 1")
    rng = np.random.default_rng(a.seed)
    l1 = L1(4096 * PAGE, PAGE, torch.bfloat16, "cpu", None, True)
    l2 = L2(16384 * PAGE, PAGE)
    device_kv = torch.zeros((l1.size + PAGE, HEAD), dtype=torch.float32)
    stored, loaded, bad = [], 0, 0
    for r in range(a.requests):
        n = int(rng.integers(1, 40)) * PAGE
        pre = torch.tensor([0])
        seq = torch.tensor([n])
        dev = l1.alloc_extend(pre, pre, seq, seq, torch.tensor([-1]), n)
        if dev is None:
            break
        vals = torch.arange(n * HEAD, dtype=torch.float32).view(n, HEAD) + r * 1e4
        device_kv[dev] = vals
        host = l2.alloc(n)                          # write-through backup
        if host is None:
            l1.free(dev)
            continue
        l2.kv_buffer[host] = device_kv[dev]
        stored.append((host, vals))
        l1.free(dev)                                # waits in release_pages (need_sort)
        if r % 7 == 0:                              # a speculative step, rolled back
            state = l1.backup_state()
            spec = l1.alloc(4 * PAGE)
            if spec is not None:
                device_kv[spec] = -1.0
            l1.restore_state(state)
        if stored and rng.random() < 0.5:           # load a stored request back
            host, vals = stored.pop(int(rng.integers(len(stored))))
            dev = l1.alloc(host.numel())
            if dev is not None:
                device_kv[dev] = l2.kv_buffer[host]
                bad += int(not torch.equal(device_kv[dev], vals))
                loaded += 1
                l1.free(dev)
            l2.free(host)
    for host, _ in stored:
        l2.free(host)
    l1.merge_and_sort_free()
    ok = (bad == 0 and loaded > 0 and l1.available_size() == l1.size and
          l2.available_size() == l2.size)
    l1.hugekv_pool.check()
    l2.hugekv_pool.check()
    print(f"sglang_host: {a.requests} requests, {loaded} loaded back from L2, "
          f"{bad} mismatched; L1 {l1.available_size()}/{l1.size} free, "
          f"L2 {l2.available_size()}/{l2.size} free")
    if a.check and not ok:
        print("sglang_host: check failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
