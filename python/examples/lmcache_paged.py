#!/usr/bin/python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""lmcache_paged.py - LMCache's paged allocator on hugekv, as its callers
build and use it.

LMCache is not needed: the allocator is constructed the way LMCache's own
host and pinned allocators construct theirs, with keywords, once with a
buffer tensor (hugekv keeps the page index over it) and once with a byte
count (hugekv reserves the memory itself, on hugepages where it can):

    PagedTensorMemoryAllocator(tensor=buffer, shape=..., dtype=..., fmt=...)
    PagedTensorMemoryAllocator(tensor=nbytes, shapes=[...], dtypes=[...], fmt=...)

Chunks of KV (one memory object per chunk) are stored in batches
(batched_allocate, write through .tensor), looked up and checked, and
freed; a batch's pages come out as few contiguous runs, so a transfer of a
batch needs few descriptors (descriptors()).

    lmcache_paged.py [--chunks N] [--seed S] [--check]

--check exits 1 unless every chunk read back matched, both allocators end
empty (memcheck), and batches averaged under 2 runs.
"""
import argparse
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from hugekv.lmcache import MemoryFormat, PagedTensorMemoryAllocator  # noqa: E402

SHAPE = torch.Size([2, 4, 32, 64])       # [k/v, layers, tokens, hidden]: 32 KiB of bf16


def run(alloc, rng, chunks):
    live, bad, runs, batches = {}, 0, 0, 0
    key = 0
    while key < chunks:
        k = int(rng.integers(1, 9))
        objs = alloc.batched_allocate([SHAPE], [torch.bfloat16], k, MemoryFormat.KV_2LTD)
        if objs is None:                         # full: drop the oldest batch
            oldest = sorted(live)[:8]
            alloc.batched_free([live.pop(i)[0] for i in oldest])
            continue
        runs += alloc.descriptors(objs).shape[0]
        batches += 1
        for o in objs:
            o.tensor.fill_(float(key % 251))
            live[key] = (o, float(key % 251))
            key += 1
        for i in list(live)[:: max(1, len(live) // 3)]:     # read some back
            o, v = live[i]
            bad += int(not bool((o.tensor == v).all()))
    alloc.batched_free([o for o, _ in live.values()])
    return bad, runs / max(batches, 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--chunks", type=int, default=600)
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--check", action="store_true", help="exit 1 unless all checks pass")
    a = ap.parse_args()
    if a.chunks < 1:
        ap.error("--chunks must be >= 1")
    rng = np.random.default_rng(a.seed)
    chunk = SHAPE.numel() * 2
    buffer = torch.empty(128 * chunk, dtype=torch.uint8)          # LMCache's own buffer
    by_tensor = PagedTensorMemoryAllocator(tensor=buffer, shape=SHAPE, dtype=torch.bfloat16,
                                           fmt=MemoryFormat.KV_2LTD)
    by_size = PagedTensorMemoryAllocator(tensor=128 * chunk, shapes=[SHAPE],
                                         dtypes=[torch.bfloat16], fmt=MemoryFormat.KV_2LTD)
    ok = True
    for name, alloc in (("tensor", by_tensor), ("bytes", by_size)):
        bad, per = run(alloc, rng, a.chunks)
        empty = alloc.memcheck() and alloc.num_active_allocations == 0
        print(f"lmcache_paged: {name}: {a.chunks} chunks, {bad} mismatched, "
              f"{per:.2f} runs per batch, empty at the end: {empty}")
        ok = ok and bad == 0 and empty and per < 2.0
        alloc.close()
    if a.check and not ok:
        print("lmcache_paged: check failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
