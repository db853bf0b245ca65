# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""hugekv.vllm.BlockPoolMixin before a stand-in of vLLM's CPU offloading
manager (its constructor, BlockStatus ctypes structs, the three block-pool
methods the manager's store/evict paths call)."""
import ctypes

import pytest

from hugekv.vllm import BlockPoolMixin


class BlockStatus(ctypes.Structure):
    _fields_ = [("ref_cnt", ctypes.c_int32)]

    def __init__(self):
        super().__init__()
        self.ref_cnt = -1


class CPUBlockStatus(BlockStatus):
    _fields_ = BlockStatus._fields_ + [("block_id", ctypes.c_int64)]

    def __init__(self, block_id):
        super().__init__()
        self.block_id = block_id


class CPUOffloadingManager:
    """Stand-in: the free-list pool vLLM ships, for the same calls."""

    def __init__(self, block_size, num_blocks, cache_policy="lru", enable_events=False):
        self.block_size, self._num_blocks = block_size, num_blocks
        self._num_allocated_blocks, self._free_list = 0, []

    def _get_num_free_blocks(self):
        return len(self._free_list) + self._num_blocks - self._num_allocated_blocks

    def _allocate_blocks(self, block_hashes):
        raise AssertionError("the mixin's method must win")

    def _free_block(self, block):
        raise AssertionError("the mixin's method must win")


class Manager(BlockPoolMixin, CPUOffloadingManager):
    pass


def test_blocks_come_out_as_runs_and_reuse():
    m = Manager(16, 32)
    assert m._get_num_free_blocks() == 32
    a = m._allocate_blocks([b"h%d" % i for i in range(10)])
    assert [b.block_id for b in a] == list(range(10))
    assert type(a[0]) is CPUBlockStatus and a[0].ref_cnt == -1
    b = m._allocate_blocks([1, 2, 3])
    assert m._get_num_free_blocks() == 19
    for blk in a[2:6]:
        m._free_block(blk)
    c = m._allocate_blocks([7, 8, 9])              # best fit into the freed run
    assert [x.block_id for x in c] == [2, 3, 4]
    assert m.blocks_to_extents(a[:2] + b).tolist() == [[0, 2], [10, 3]]
    m._free_blocks(a[:2] + a[6:] + b + c)
    assert m._get_num_free_blocks() == 32         # block 5 was still free
    with pytest.raises(AssertionError, match=r"blocks not currently allocated: \[5\]\."):
        m._free_block(a[5])
    assert m._allocate_blocks([]) == []


def test_errors():
    m = Manager(16, 4)
    blocks = m._allocate_blocks([1, 2, 3, 4])
    with pytest.raises(AssertionError, match="4 free|0 free"):
        m._allocate_blocks([5])
    m._free_block(blocks[0])
    with pytest.raises(AssertionError, match=r"not currently allocated: \[0\]\."):
        m._free_block(blocks[0])                    # double free
    assert m._get_num_free_blocks() == 1
