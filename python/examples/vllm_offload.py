#!/usr/bin/python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""vllm_offload.py - vLLM's CPU offloading block pool on hugekv.

vLLM is not needed: a stand-in of CPUOffloadingManager keeps what the
mixin replaces and what calls it (its free-list block pool, an LRU of
offloaded block hashes with eviction in prepare_store, reset_cache). With
vLLM installed the mixin goes under its own class:

    class Manager(BlockPoolMixin, CPUOffloadingManager): pass

Blocks live in a hugekv memory pool (one page per block). Each store
offloads the blocks of a request (eviction first when the pool is short),
writes them, and loads some earlier blocks back, checking their bytes. The
blocks of one store come out as contiguous runs: the summary counts the
copy descriptors against one per block.

    vllm_offload.py [--stores N] [--seed S] [--check]

--check exits 1 unless every loaded block matched, stores needed fewer
descriptors than blocks, and every block is free after reset_cache().
"""
import argparse
import collections
import ctypes
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import hugekv  # noqa: E402
from hugekv.vllm import BlockPoolMixin  # noqa: E402

BLOCK_BYTES = 16 << 10


class BlockStatus(ctypes.Structure):
    """vLLM's block status layout: ref_cnt, then block_id."""
    _fields_ = [("ref_cnt", ctypes.c_int32), ("block_id", ctypes.c_int64)]

    def __init__(self, block_id):
        super().__init__()
        self.ref_cnt = -1
        self.block_id = block_id


class CPUOffloadingManager:
    """Stand-in: an LRU of stored hashes over the manager's block pool."""

    def __init__(self, num_blocks):
        self._num_blocks = num_blocks
        self._num_allocated_blocks = 0
        self._free_list = []
        self.lru = collections.OrderedDict()        # hash -> BlockStatus

    def prepare_store(self, hashes):
        need = len(hashes) - self._get_num_free_blocks()
        while need > 0 and self.lru:
            _, blk = self.lru.popitem(last=False)
            self._free_block(blk)
            need -= 1
        if need > 0:
            return None
        blocks = self._allocate_blocks(hashes)
        for h, b in zip(hashes, blocks):
            self.lru[h] = b
        return blocks

    def reset_cache(self):
        self.lru.clear()
        self._free_list.clear()
        self._num_allocated_blocks = 0


class Manager(BlockPoolMixin, CPUOffloadingManager):
    pass


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--stores", type=int, default=400)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--check", action="store_true", help="exit 1 unless all checks pass")
    a = ap.parse_args()
    if a.stores < 1:
        ap.error("--stores must be >= 1")
    rng = np.random.default_rng(a.seed)
    nblocks = 512
    mem = hugekv.Pool(nblocks, BLOCK_BYTES)            # the CPU blocks' bytes
    data = mem.as_array(np.uint64)                     # (blocks, BLOCK_BYTES // 8)
    m = Manager(nblocks)
    blocks_total, descs, bad, loads, h = 0, 0, 0, 0, 0
    for _ in range(a.stores):
        n = int(rng.integers(1, 33))
        hashes = list(range(h, h + n))
        h += n
        blocks = m.prepare_store(hashes)
        if blocks is None:
            continue
        ids = np.array([b.block_id for b in blocks], dtype=np.int64)
        data[ids] = np.array(hashes, dtype=np.uint64)[:, None]
        blocks_total += n
        descs += mem.descriptors(m.blocks_to_extents(blocks)).shape[0]
        for key in list(m.lru)[:: max(1, len(m.lru) // 4)]:        # load some back
            b = m.lru[key]
            bad += int(not (data[b.block_id] == key).all())
            loads += 1
    m.reset_cache()
    all_free = m._get_num_free_blocks() == nblocks
    print(f"vllm_offload: {a.stores} stores, {blocks_total} blocks in "
          f"{descs} descriptors, {loads} loads, {bad} mismatched, all free after "
          f"reset_cache: {all_free}")
    mem.close()
    if a.check and not (bad == 0 and loads and descs < blocks_total and all_free):
        print("vllm_offload: check failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
