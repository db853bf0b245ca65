# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Models of the engine classes the adapters stand in for, written from
their behaviour (not their code), for the fidelity tests:

* SGLang 0.5.23: HostKVCache's allocation (sglang/srt/mem_cache/pool_host/
  base.py) and TokenToKVPoolAllocator / PagedTokenToKVPoolAllocator
  (sglang/srt/mem_cache/allocator.py);
* LMCache 0.5.6: PagedTensorMemoryAllocator (lmcache/v1/memory_management.py);
* vLLM 0.33.0: the block pool of CPUOffloadingManager
  (vllm/v1/kv_offload/cpu/manager.py).

Each model keeps the engine's own state (free lists as tensors, release
lists, slot_used flags, deques) and its own checks and texts, so the engine
class and the adapter mixed into it can run the same calls side by side.
The models are also the base classes the mixins are mixed into.
"""
import collections
import ctypes
import threading
from functools import wraps

import torch


def _locked(fn):
    @wraps(fn)
    def run(self, *args, **kwargs):
        with self.lock:
            return fn(self, *args, **kwargs)
    return run


class SGLangHostKVCache:
    """HostKVCache's allocation: a free_slots tensor handed out by slicing,
    frees parked in release_slots until an alloc needs them, a slot_used
    flag per slot for the double-alloc/free assertions, an RLock."""

    def __init__(self, size, page_size):
        self.page_size = page_size
        self.page_num = size // page_size + 1       # the engine rounds up by one page
        self.size = self.page_num * page_size
        self.lock = threading.RLock()
        self.clear()

    @_locked
    def clear(self):
        self.free_slots = torch.arange(self.size, dtype=torch.int64)
        self.release_slots = []
        self.num_release_slots = 0
        self.slot_used = torch.zeros(self.size, dtype=torch.bool)

    @_locked
    def available_size(self):
        return len(self.free_slots) + self.num_release_slots

    def _merge(self):
        if not self.num_release_slots:
            return
        self.free_slots = torch.cat([self.free_slots] + self.release_slots)
        self.release_slots, self.num_release_slots = [], 0

    @_locked
    def alloc(self, need_size):
        assert need_size % self.page_size == 0, \
            "The requested size should be a multiple of the page size."
        if need_size > self.available_size():
            return None
        if need_size > len(self.free_slots):
            self._merge()
        out, self.free_slots = self.free_slots[:need_size], self.free_slots[need_size:]
        used = self.slot_used[out]
        assert not used.any(), \
            f"Double-alloc detected: slots already allocated: {out[used].tolist()}."
        self.slot_used[out] = True
        return out

    @_locked
    def free(self, indices):
        idx = indices.cpu()
        if idx.numel() == 0:
            return 0
        used = self.slot_used[idx]
        assert used.all(), \
            f"Double-free detected: slots not currently allocated: {idx[~used].tolist()}."
        self.slot_used[idx] = False
        self.release_slots.append(idx)
        self.num_release_slots += len(idx)
        return len(indices)


class SGLangTokenAllocator:
    """TokenToKVPoolAllocator (page_size 1) and, with page_size > 1,
    PagedTokenToKVPoolAllocator: free_pages from 1 (0 is the padded slot),
    need_sort frees parked in release_pages until merge_and_sort_free(),
    free groups, (free_pages, release_pages) backups."""

    def __init__(self, size, page_size, dtype, device, kvcache, need_sort):
        self.size, self.page_size, self.dtype, self.device = size, page_size, dtype, device
        self._kvcache, self.need_sort = kvcache, need_sort
        self.free_pages = None
        self.release_pages = None
        self.is_not_in_free_group = True
        self.free_group = []
        self.num_pages = size // page_size
        self.debug_mode = False
        self.clear()

    def clear(self):
        self.free_pages = torch.arange(1, self.num_pages + 1, dtype=torch.int64)
        self.release_pages = torch.empty((0,), dtype=torch.int64)
        self.is_not_in_free_group = True
        self.free_group = []

    def available_size(self):
        return (len(self.free_pages) + len(self.release_pages)) * self.page_size

    def merge_and_sort_free(self):
        if len(self.release_pages):
            self.free_pages = torch.sort(torch.cat((self.free_pages, self.release_pages)))[0]
            self.release_pages = torch.empty((0,), dtype=torch.int64)

    def backup_state(self):
        return (self.free_pages, self.release_pages)

    def restore_state(self, state):
        self.free_pages, self.release_pages = state

    def free_group_begin(self):
        self.is_not_in_free_group = False
        self.free_group = []

    def free_group_end(self):
        self.is_not_in_free_group = True
        if self.free_group:
            self.free(torch.cat(self.free_group))

    def alloc(self, need_size):
        ps = self.page_size
        n = need_size // ps
        if self.need_sort and n > len(self.free_pages):
            self.merge_and_sort_free()
        if n > len(self.free_pages):
            return None
        pages, self.free_pages = self.free_pages[:n], self.free_pages[n:]
        if ps == 1:
            return pages
        return (pages[:, None] * ps + torch.arange(ps)).reshape(-1)

    def free(self, free_index):
        if free_index.numel() == 0:
            return
        if not self.is_not_in_free_group:
            self.free_group.append(free_index)
            return
        if self.page_size == 1:
            if self.need_sort:
                self.release_pages = torch.cat((self.release_pages, free_index))
            else:
                self.free_pages = torch.cat((self.free_pages, free_index))
            return
        pages = torch.unique(free_index // self.page_size)
        if self.need_sort:
            self.release_pages = torch.cat((pages, self.release_pages))
        else:
            self.free_pages = torch.cat((pages, self.free_pages))


class LMCachePagedAllocator:
    """PagedTensorMemoryAllocator: the buffer split into chunks of
    align_bytes, a deque of free chunks, None when short, batched_allocate
    all or nothing, frees of invalid objects ignored. One deliberate
    difference: LMCache leaves a freed object valid (a second free would
    queue its chunk twice); here, as in the adapter, free invalidates it."""

    class Obj:
        def __init__(self, page):
            self.page, self.valid = page, True

        def is_valid(self):
            return self.valid

    def __init__(self, tensor, shapes, dtypes, fmt=None):
        self.buffer = tensor.view(torch.uint8).flatten()
        self.align_bytes = sum(torch.Size(s).numel() * torch.empty(0, dtype=d).element_size()
                               for s, d in zip(shapes, dtypes))
        assert self.buffer.numel() % self.align_bytes == 0
        self.free_blocks = collections.deque(range(self.buffer.numel() // self.align_bytes))
        self.num_active_allocations = 0
        self.total_allocated_size = 0

    def allocate(self, shapes, dtypes, fmt=None):
        if not self.free_blocks:
            return None
        self.num_active_allocations += 1
        self.total_allocated_size += self.align_bytes
        return self.Obj(self.free_blocks.popleft())

    def batched_allocate(self, shapes, dtypes, batch_size, fmt=None):
        if len(self.free_blocks) < batch_size:
            return None
        return [self.allocate(shapes, dtypes, fmt) for _ in range(batch_size)]

    def free(self, obj):
        if not obj.is_valid():
            return
        obj.valid = False
        self.free_blocks.append(obj.page)
        self.num_active_allocations -= 1
        self.total_allocated_size -= self.align_bytes

    def batched_free(self, objs):
        for o in objs:
            self.free(o)

    def memcheck(self):
        return len(self.free_blocks) * self.align_bytes + self.total_allocated_size == \
            self.buffer.numel()


class VLLMBlockStatus(ctypes.Structure):
    _fields_ = [("ref_cnt", ctypes.c_int32), ("block_id", ctypes.c_int64)]

    def __init__(self, block_id):
        super().__init__()
        self.ref_cnt = -1
        self.block_id = block_id


BlockStatus = VLLMBlockStatus       # the name the manager's module exports


class VLLMBlockPool:
    """CPUOffloadingManager's block pool: fresh blocks counted up from 0,
    then reuse of the freed ones (a list used as a stack)."""

    def __init__(self, num_blocks):
        self._num_blocks = num_blocks
        self._num_allocated_blocks = 0
        self._free_list = []

    def _get_num_free_blocks(self):
        return len(self._free_list) + self._num_blocks - self._num_allocated_blocks

    def _allocate_blocks(self, keys):
        fresh = min(len(keys), self._num_blocks - self._num_allocated_blocks)
        reused = len(keys) - fresh
        assert len(self._free_list) >= reused
        out = []
        for _ in range(fresh):
            out.append(VLLMBlockStatus(self._num_allocated_blocks))
            self._num_allocated_blocks += 1
        for _ in range(reused):
            out.append(VLLMBlockStatus(self._free_list.pop()))
        return out

    def _free_block(self, block):
        self._free_list.append(block.block_id)

    def reset_cache(self):
        self._free_list.clear()
        self._num_allocated_blocks = 0
