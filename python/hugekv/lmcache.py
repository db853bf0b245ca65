# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""LMCache adapter: PagedTensorMemoryAllocator on hugekv.

Follows LMCache 0.5.6 (the current release), lmcache/v1/memory_management.py:
PagedTensorMemoryAllocator and the callers that build it
(HostMemoryAllocator, PinMemoryAllocator, ...).

LMCache's paged allocator hands out one fixed-size chunk (page) per memory
object from a preallocated buffer. This one keeps its surface (allocate
and all-or-nothing batched_allocate returning None when short, free and
batched_free skipping invalid objects, as LMCache's do, memcheck, close)
and its constructor in both spellings LMCache's callers use,
``PagedTensorMemoryAllocator(tensor=..., shapes=..., dtypes=..., fmt=...)``
and ``PagedTensorMemoryAllocator(tensor=..., shape=..., dtype=..., fmt=...)``
(a single torch.Size and dtype), where ``tensor`` is one of:

* a byte count (int): a hugekv memory pool of that many bytes is created
  (hugepages, NUMA-bound, prefaulted; backing/numa_node/chunk_bytes
  keywords), pages of one chunk each;
* a hugekv.Pool with memory whose page_bytes is the chunk size;
* a torch tensor (LMCache's own buffer): hugekv keeps the page index in an
  index-only pool over it. It must be contiguous: pages are views of the
  buffer itself, so a strided or non-contiguous tensor is refused
  (ValueError) rather than copied, where objects would write into the copy.

batched_allocate takes its pages as contiguous runs where it can, so a
batch is few transfer descriptors (see ``descriptors``). Importing this
module does not import LMCache.
"""
from __future__ import annotations

import enum
import logging
import math
import threading
from typing import Any, List, Optional

import numpy as np

from . import tokens as _tok
from ._lib import OutOfPages
from .pool import Pool


class MemoryFormat(enum.Enum):
    """Stand-in for lmcache.v1.memory_management.MemoryFormat (any value
    given by the caller is stored as is)."""
    UNDEFINED = 0
    KV_2LTD = 1
    KV_T2D = 2
    BINARY = 3
    BINARY_BUFFER = 4
    KV_MLA_FMT = 5


def _torch():
    import torch
    return torch


def _size_bytes(shapes, dtypes):
    torch = _torch()
    total = 0
    for s, d in zip(shapes, dtypes):     # Python ints: a product cannot wrap
        total += math.prod(s) * torch.empty(0, dtype=d).element_size()
    return total


def _norm(shapes, dtypes):
    torch = _torch()
    if isinstance(shapes, (torch.Size, tuple)) and all(isinstance(x, int) for x in shapes):
        shapes = [torch.Size(shapes)]
    shapes = [torch.Size(s) for s in shapes]
    for s in shapes:
        if any(x < 0 for x in s):
            raise ValueError(f"shape {tuple(s)} has a negative dimension")
    if isinstance(dtypes, torch.dtype):
        dtypes = [dtypes] * len(shapes)
    dtypes = list(dtypes)
    if len(dtypes) != len(shapes) or not shapes:
        raise ValueError(f"need one dtype per shape, got {len(shapes)} shapes, {len(dtypes)} dtypes")
    if not all(isinstance(d, torch.dtype) for d in dtypes):
        raise TypeError("dtypes must be torch dtypes")
    return shapes, dtypes


class MemoryObjMetadata:
    """What LMCache's MemoryObjMetadata carries: shape(s), dtype(s), address
    (the page index), phy_size, ref_count, pin_count, fmt."""

    def __init__(self, shape, dtype, address, phy_size, ref_count, pin_count, fmt,
                 shapes=None, dtypes=None):
        self.shape, self.dtype, self.address = shape, dtype, address
        self.phy_size, self.ref_count, self.pin_count, self.fmt = \
            phy_size, ref_count, pin_count, fmt
        self.shapes, self.dtypes = shapes or [shape], dtypes or [dtype]


class HugeKVMemoryObj:
    """One allocated page: ``tensor`` views it with the asked shape/dtype,
    ``raw_data`` is the page's bytes (uint8)."""

    def __init__(self, allocator, page, meta):
        self.parent_allocator = allocator
        self.page = page
        self.meta = meta
        self.raw_data = allocator._page_bytes_view(page)
        self._valid = True

    def is_valid(self):
        return self._valid

    def invalidate(self):
        self._valid = False

    @property
    def tensor(self):
        if not self._valid:
            return None
        self.parent_allocator._check_memory()
        s, d = self.meta.shapes[0], self.meta.dtypes[0]
        n = _size_bytes([s], [d])
        return self.raw_data[:n].view(d).view(s)

    @property
    def byte_array(self):
        self.parent_allocator._check_memory()
        return self.raw_data.numpy().tobytes()

    def get_size(self):
        return _size_bytes(self.meta.shapes, self.meta.dtypes)

    def get_physical_size(self):
        return self.meta.phy_size

    def data_ptr(self):
        return self.raw_data.data_ptr()

    def ref_count_up(self):
        self.meta.ref_count += 1

    def ref_count_down(self):
        self.meta.ref_count -= 1
        if self.meta.ref_count == 0 and self._valid:
            self.parent_allocator.free(self)

    def get_ref_count(self):
        return self.meta.ref_count

    def pin(self):
        self.meta.pin_count += 1
        return True

    def unpin(self):
        self.meta.pin_count -= 1
        return True

    @property
    def is_pinned(self):
        return self.meta.pin_count > 0


_log = logging.getLogger("hugekv")


class PagedTensorMemoryAllocator:
    """LMCache's paged allocator on a hugekv pool (see the module text)."""

    def __init__(self, tensor, shapes=None, dtypes=None, fmt=MemoryFormat.KV_2LTD, *,
                 shape=None, dtype=None, backing="auto", numa_node=-1, chunk_bytes=0,
                 strict=False):
        torch = _torch()
        if shape is not None:
            if shapes is not None:
                raise TypeError("give shapes= or shape=, not both")
            shapes = shape
        if dtype is not None:
            if dtypes is not None:
                raise TypeError("give dtypes= or dtype=, not both")
            dtypes = dtype
        if shapes is None or dtypes is None:
            raise TypeError("PagedTensorMemoryAllocator needs shapes (or shape) and "
                            "dtypes (or dtype)")
        shapes, dtypes = _norm(shapes, dtypes)
        self.shapes, self.dtypes, self.fmt = shapes, dtypes, fmt
        self.shape, self.dtype = shapes[0], dtypes[0]
        self.align_bytes = _size_bytes(shapes, dtypes)
        if self.align_bytes <= 0:
            raise ValueError("a chunk of 0 bytes")
        self._own_pool = False
        if isinstance(tensor, Pool):
            if tensor.page_bytes != self.align_bytes:
                raise ValueError(f"pool page_bytes {tensor.page_bytes} != chunk bytes "
                                 f"{self.align_bytes}")
            self.pool = tensor
            self.buffer = tensor.as_tensor(torch.uint8).reshape(-1)
        elif isinstance(tensor, int) and not isinstance(tensor, bool):
            if tensor <= 0 or tensor % self.align_bytes:
                raise ValueError(f"buffer size {tensor} must be a positive multiple of "
                                 f"the chunk size {self.align_bytes}")
            self.pool = Pool(tensor // self.align_bytes, self.align_bytes, backing=backing,
                             numa_node=numa_node, chunk_bytes=chunk_bytes, strict=strict)
            self._own_pool = True
            self.buffer = self.pool.as_tensor(torch.uint8).reshape(-1)
        elif isinstance(tensor, torch.Tensor):
            if tensor.device.type != "cpu" and tensor.device.type != "cuda":
                raise ValueError(f"unsupported buffer device {tensor.device}")
            if not tensor.is_contiguous():
                raise ValueError(f"the buffer must be contiguous (shape {tuple(tensor.shape)}, "
                                 f"strides {tensor.stride()}): pages are views of it, and a "
                                 "copy would take the writes")
            self.buffer = tensor.view(-1).view(torch.uint8)
            size = self.buffer.numel()
            assert size % self.align_bytes == 0, (
                f"Buffer size {size} must be a multiple of align bytes {self.align_bytes} "
                "in paged memory allocator.")
            self.pool = Pool(size // self.align_bytes)
            self._own_pool = True
        else:
            raise TypeError("tensor must be a byte count, a hugekv.Pool or a torch tensor")
        self.buffer_size = self.buffer.numel()
        self.buffer_ptr = self.buffer.data_ptr()
        self.num_pages = self.pool.npages
        self.num_active_allocations = 0
        self.total_allocated_size = 0
        self._lock = threading.Lock()
        self._objs = {}            # page -> live HugeKVMemoryObj

    def _check_memory(self):
        """Raise Error(ECHILD) in a fork() child when the pages are the
        pool's own memory, which the child does not have."""
        if self.pool.page_bytes:
            self.pool._handle()

    def _page_bytes_view(self, page):
        a = page * self.align_bytes
        return self.buffer[a:a + self.align_bytes]

    def _make(self, page, shapes, dtypes, fmt):
        meta = MemoryObjMetadata(shapes[0], dtypes[0], page, self.align_bytes, 1, 0, fmt,
                                 shapes=shapes, dtypes=dtypes)
        obj = HugeKVMemoryObj(self, page, meta)
        self._objs[page] = obj
        return obj

    def _check_fit(self, shapes, dtypes):
        need = _size_bytes(shapes, dtypes)
        if need > self.align_bytes:
            raise ValueError(f"an object of {need} bytes does not fit a page of "
                             f"{self.align_bytes} bytes")

    def allocate(self, shapes: Any, dtypes: Any = None, fmt: Any = MemoryFormat.KV_2LTD,
                 allocator_type: Optional[str] = None) -> Optional[HugeKVMemoryObj]:
        """One page, or None when none is free."""
        shapes, dtypes = _norm(shapes, dtypes if dtypes is not None else self.dtypes[0])
        self._check_fit(shapes, dtypes)
        with self._lock:
            try:
                ext = self.pool.alloc(1)
            except OutOfPages:
                return None
            self.num_active_allocations += 1
            self.total_allocated_size += self.align_bytes
            return self._make(int(ext[0, 0]), shapes, dtypes, fmt)

    def batched_allocate(self, shapes: Any, dtypes: Any, batch_size: int,
                         fmt: Any = MemoryFormat.KV_2LTD,
                         allocator_type: Optional[str] = None) -> Optional[List[HugeKVMemoryObj]]:
        """batch_size pages, all or nothing (None), as few runs as possible."""
        shapes, dtypes = _norm(shapes, dtypes)
        self._check_fit(shapes, dtypes)
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 0:
            raise ValueError(f"batch_size must be a non-negative integer, got {batch_size!r}")
        if batch_size == 0:
            return []
        with self._lock:
            try:
                ext = self.pool.alloc(batch_size)
            except OutOfPages:
                return None
            pages = _tok.extents_to_pages(ext).tolist()
            self.num_active_allocations += batch_size
            self.total_allocated_size += batch_size * self.align_bytes
            return [self._make(p, shapes, dtypes, fmt) for p in pages]

    def free(self, memory_obj: HugeKVMemoryObj, allocator_type: Optional[str] = None) -> None:
        """Give the object's page back (an object already freed is ignored)."""
        if isinstance(memory_obj, HugeKVMemoryObj) and not memory_obj.is_valid():
            return
        self.batched_free([memory_obj])

    def batched_free(self, memory_objs: List[HugeKVMemoryObj],
                     allocator_type: Optional[str] = None, update_stats: bool = True) -> None:
        """Give pages back: one hugekv call for the batch, runs merged."""
        with self._lock:
            objs, seen = [], set()
            for o in memory_objs:
                if not isinstance(o, HugeKVMemoryObj) or o.parent_allocator is not self:
                    raise ValueError("memory object was not allocated by this allocator")
                if o.is_valid() and self._objs.get(o.page) is o and o.page not in seen:
                    seen.add(o.page)     # named twice: freed once, as free() twice
                    objs.append(o)
                else:
                    _log.warning("Trying to free an invalidated MemoryObj")
            if not objs:
                return
            pages = np.sort(np.array([o.page for o in objs], dtype=np.int64))
            self.pool.free(_tok.pages_to_extents(pages))
            for o in objs:
                o.invalidate()
                del self._objs[o.page]
            self.num_active_allocations -= len(objs)
            self.total_allocated_size -= len(objs) * self.align_bytes

    def descriptors(self, memory_objs):
        """(address, bytes) rows for the objects' pages, contiguous runs merged
        (memory pools only)."""
        pages = np.array([o.page for o in memory_objs], dtype=np.int64)
        if self.pool.page_bytes:
            return self.pool.descriptors(_tok.pages_to_extents(pages))
        ext = _tok.pages_to_extents(pages)
        return np.stack([self.buffer_ptr + ext[:, 0] * self.align_bytes,
                         ext[:, 1] * self.align_bytes], axis=1)

    def memcheck(self) -> bool:
        """True when the counters agree with the pool and hkv_check passes."""
        with self._lock:
            free = self.pool.available * self.align_bytes
            ok = free + self.total_allocated_size == self.num_pages * self.align_bytes
            ok = ok and len(self._objs) == self.num_active_allocations
            try:
                self.pool.check()
            except Exception:
                ok = False
            return ok

    def close(self):
        """Release the pool if this allocator created it (idempotent)."""
        if self._own_pool:
            self.pool.close()
        self._objs.clear()

    def __str__(self):
        return "PagedTensorMemoryAllocator"
