# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""SGLang adapters: hugekv underneath SGLang's own pool classes.

    class Host(HostPoolMixin, MHATokenToKVPoolHost): pass     # L2 host pool
    class Dev(DevicePoolMixin, PagedTokenToKVPoolAllocator): pass   # L1 index

The mixins go first in the bases so that their methods win; the engine's
class keeps its constructor, buffers and transfer code. Importing this
module does not import SGLang. Token tensors are CPU int64 (moved to the
allocator's device where it has one).

HostTensorAllocator fills SGLang's host-tensor allocator slot with tensors
over hugekv memory pools (hugepages, NUMA-bound, prefaulted).
"""
import errno
import os
import threading

import numpy as np

from . import tokens as _tok
from ._lib import Error, OutOfPages
from .pool import Pool

_DOUBLE_FREE = "Double-free detected: slots not currently allocated: {}."
_DOUBLE_ALLOC = "Double-alloc detected: slots already allocated: {}."


def _torch():
    import torch
    return torch


def _to_np(indices):
    """Token indices (tensor, array, list) as int64 numpy, flattened."""
    if hasattr(indices, "detach"):
        return indices.detach().cpu().numpy().astype(np.int64, copy=False).reshape(-1)
    return np.asarray(indices, dtype=np.int64).reshape(-1)


def _not_allocated(pool, pages):
    """Of @pages (int64), those that are free now or named twice."""
    free = pool.free_slots(copy=True).astype(np.int64)
    bad = pages[np.isin(pages, free)]
    uniq, counts = np.unique(pages, return_counts=True)
    return np.union1d(bad, uniq[counts > 1])


def _one_run(indices, ps):
    """[[page, npages]] when @indices (a CPU torch tensor) is one aligned run
    of whole pages, else None: the fast path of free()."""
    if type(indices).__module__ != "torch" or indices.dim() != 1 or indices.device.type != "cpu":
        return None
    n = indices.numel()
    if n == 0 or n % ps or indices.dtype.is_floating_point or str(indices.dtype) == "torch.bool":
        return None
    first = int(indices[0])
    if first % ps or first < 0:
        return None
    torch = _torch()
    if not torch.equal(indices.to(torch.int64), torch.arange(first, first + n, dtype=torch.int64)):
        return None
    return np.array([[first // ps, n // ps]], dtype=np.int64)


class _ReadOnly:
    """A property that reads through @getter and refuses assignment."""

    def __init__(self, getter, name, why):
        self.getter, self.name, self.why = getter, name, why

    def __get__(self, obj, cls=None):
        return self if obj is None else self.getter(obj)

    def __set__(self, obj, value):
        raise AttributeError(f"{type(obj).__name__}.{self.name} is read-only: {self.why}")


class HostPoolMixin:
    """The allocation surface of SGLang's HostKVCache on an index-only
    hugekv pool of ``page_num`` pages of ``page_size`` tokens.

    Best fit from the low end: after freeing tokens [0, 2) and [6, 10) of a
    full pool, alloc(4) returns [6, 10). Frees are reusable at once, so
    ``release_slots`` is always [] and ``num_release_slots`` 0.
    """

    _hkv_pool = None

    def _hkv_lock(self):
        lock = getattr(self, "lock", None)
        if lock is None:
            lock = self.lock = threading.RLock()
        return lock

    def clear(self):
        with self._hkv_lock():
            page_size = int(getattr(self, "page_size", 1) or 1)
            page_num = getattr(self, "page_num", None)
            if page_num is None:
                page_num = int(self.size) // page_size
            if self._hkv_pool is not None:
                self._hkv_pool.close()
            self._hkv_pool = Pool(int(page_num))
            self._hkv_page_size = page_size

    def available_size(self):
        return self._hkv_pool.available * self._hkv_page_size

    def alloc(self, need_size):
        with self._hkv_lock():
            ps = self._hkv_page_size
            assert need_size % ps == 0, "The requested size should be a multiple of the page size."
            if need_size <= 0 or need_size > self.available_size():
                return None
            try:
                ext = self._hkv_pool.alloc(need_size // ps)
            except OutOfPages:
                return None
            if os.environ.get("SGLANG_DEBUG_MEMORY_POOL"):
                free = self._hkv_pool.free_slots(copy=True).astype(np.int64)
                pages = _tok.extents_to_pages(ext)
                taken = pages[np.isin(pages, free)]
                assert taken.size == 0, _DOUBLE_ALLOC.format(
                    _tok.extents_to_tokens(_tok.pages_to_extents(taken), ps).tolist())
            if ext.shape[0] == 1:               # the common case: one run
                torch = _torch()
                s, n = int(ext[0, 0]) * ps, int(ext[0, 1]) * ps
                return torch.arange(s, s + n, dtype=torch.int64)
            return _tok.extents_to_tokens(ext, ps, device="cpu")

    def free(self, indices):
        with self._hkv_lock():
            ps = self._hkv_page_size
            pool = self._hkv_pool
            ext = _one_run(indices, ps)
            tok = None
            if ext is None:
                tok = _to_np(indices)
                if tok.size == 0:
                    return 0
                try:
                    ext = _tok.tokens_to_extents(tok, ps)
                except ValueError as e:
                    raise ValueError(f"host pool free: {e}") from None
            try:
                pool.free(ext)
                return int(ext[:, 1].sum()) * ps
            except Error as e:
                if e.errno != errno.EINVAL:
                    raise
                if tok is None:
                    tok = _to_np(indices)
                pages = tok.reshape(-1, ps)[:, 0] // ps if ps > 1 else tok
                bad = _not_allocated(pool, pages[(pages >= 0) & (pages < pool.npages)])
                bad_tok = tok[np.isin(tok // ps, bad) | (tok < 0) | (tok >= pool.npages * ps)]
                raise AssertionError(_DOUBLE_FREE.format(np.unique(bad_tok).tolist())) from None

    def _hkv_free_slots(self):
        torch = _torch()
        pages = self._hkv_pool.free_slots(copy=True).astype(np.int64)
        ps = self._hkv_page_size
        tok = pages if ps == 1 else _tok.runs_expand(pages * ps, np.full_like(pages, ps))
        return torch.from_numpy(tok)

    free_slots = _ReadOnly(_hkv_free_slots, "free_slots",
                           "the free pages live in hugekv; use alloc()/free()")
    release_slots = _ReadOnly(lambda self: [], "release_slots",
                              "hugekv frees are reusable at once, nothing is deferred")
    num_release_slots = _ReadOnly(lambda self: 0, "num_release_slots",
                                  "hugekv frees are reusable at once, nothing is deferred")

    @property
    def hugekv_pool(self):
        """The hugekv.Pool underneath (stats, descriptors of host pages)."""
        return self._hkv_pool


class _TensorSlot:
    """free_pages / release_pages: tensors read from hugekv; the engine's
    base __init__ may assign None before the pool exists, nothing after."""

    def __init__(self, name):
        self.name = name

    def __get__(self, obj, cls=None):
        if obj is None:
            return self
        if obj.__dict__.get("_hkv_pool") is None:
            return None
        return obj._hkv_tensor(self.name)

    def __set__(self, obj, value):
        if value is None and obj.__dict__.get("_hkv_pool") is None:
            return
        raise AttributeError(f"{type(obj).__name__}.{self.name} is read-only: the free pages "
                             "live in hugekv (use alloc/free, backup_state/restore_state)")


class DevicePoolMixin:
    """The allocation surface of SGLang's TokenToKVPoolAllocator (page_size 1)
    and PagedTokenToKVPoolAllocator on an index-only hugekv pool.

    Page 0 is the padded slot for dummy outputs and is never handed out.
    ``free_pages`` is the sorted free page ids, ``release_pages`` empty:
    merge_and_sort_free() has nothing to do. backup_state() is a snapshot of
    the free pages; restore_state() returns the pool to it. SGLANG_DEBUG_
    MEMORY_POOL turns on the engine's checks (page-aligned sizes, unique
    outputs, last_loc alignment).
    """

    free_pages = _TensorSlot("free_pages")
    release_pages = _TensorSlot("release_pages")

    def clear(self):
        ps = int(getattr(self, "page_size", 1) or 1)
        self._hkv_ps = ps
        num_pages = int(self.size) // ps
        old = self.__dict__.get("_hkv_pool")
        if old is not None:
            old.close()
        pool = Pool(num_pages + 1)
        pool.alloc(1)                       # page 0: the padded slot, never freed
        self.__dict__["_hkv_pool"] = pool
        self.is_not_in_free_group = True
        self.free_group = []
        self.debug_mode = bool(os.environ.get("SGLANG_DEBUG_MEMORY_POOL"))

    @property
    def hugekv_pool(self):
        return self.__dict__.get("_hkv_pool")

    def _hkv_tensor(self, name):
        torch = _torch()
        if name == "release_pages":
            return torch.empty((0,), dtype=torch.int64, device=self.device)
        pages = self._hkv_pool.free_slots(copy=True).astype(np.int64)
        return self._hkv_dev(pages)

    def _hkv_dev(self, a):
        torch = _torch()
        t = torch.from_numpy(np.ascontiguousarray(a, dtype=np.int64))
        dev = getattr(self, "device", "cpu")
        return t if str(dev) == "cpu" else t.to(dev)

    def available_size(self):
        return self._hkv_pool.available * self._hkv_ps

    def merge_and_sort_free(self):
        """Nothing to merge: hugekv frees are coalesced and reusable at once."""

    def _take(self, npages):
        try:
            return self._hkv_pool.alloc(npages)
        except OutOfPages:
            return None

    def alloc(self, need_size):
        ps = self._hkv_ps
        if self.debug_mode:
            assert need_size % ps == 0, "The allocation size should be page-aligned"
        npages = need_size // ps
        if npages <= 0:
            return self._hkv_dev(np.zeros(0, dtype=np.int64)) if npages == 0 else None
        ext = self._take(npages)
        if ext is None:
            return None
        return self._hkv_dev(_tok.extents_to_tokens(ext, ps))

    def alloc_extend(self, prefix_lens, prefix_lens_cpu, seq_lens, seq_lens_cpu,
                     last_loc, extend_num_tokens):
        """Token slots for extending each request from prefix_lens to seq_lens:
        the rest of its last page (after last_loc), then new pages."""
        pre = _to_np(prefix_lens_cpu if prefix_lens_cpu is not None else prefix_lens)
        seq = _to_np(seq_lens_cpu if seq_lens_cpu is not None else seq_lens)
        last = _to_np(last_loc)
        if self.debug_mode:
            assert np.all((last + 1) % self._hkv_ps == pre % self._hkv_ps)
        if pre.shape == seq.shape and int((seq - pre).sum()) != extend_num_tokens:
            raise ValueError(f"extend_num_tokens {extend_num_tokens} != sum(seq_lens - "
                             f"prefix_lens) {int((seq - pre).sum())}")
        out = self._extend(pre, seq, last)
        return None if out is None else self._hkv_dev(out)

    def alloc_decode(self, seq_lens, seq_lens_cpu, last_loc):
        """One token slot per request (seq_lens already count the new token)."""
        seq = _to_np(seq_lens_cpu if seq_lens_cpu is not None else seq_lens)
        last = _to_np(last_loc)
        if self.debug_mode:
            assert np.all((last + 2) % self._hkv_ps == seq % self._hkv_ps)
        out = self._extend(seq - 1, seq, last)
        return None if out is None else self._hkv_dev(out)

    def _extend(self, pre, seq, last):
        ps = self._hkv_ps
        if pre.shape != seq.shape or pre.shape != last.shape or (seq < pre).any() or (pre < 0).any():
            raise ValueError("prefix_lens, seq_lens and last_loc need one entry per request "
                             "with 0 <= prefix_len <= seq_len")
        first_new = (pre + ps - 1) // ps                # page index of the first new page
        new_pages = (seq + ps - 1) // ps - first_new
        total = int(new_pages.sum())
        pages = np.zeros(0, dtype=np.int64)
        if total:
            ext = self._take(total)
            if ext is None:
                return None
            pages = _tok.extents_to_pages(ext)
        n = seq - pre
        req = np.repeat(np.arange(pre.size), n)
        pos = _tok.runs_expand(pre, n)                 # token position in its request
        in_last = pos < first_new[req] * ps
        page_base = np.cumsum(new_pages) - new_pages
        j = page_base[req] + pos // ps - first_new[req]
        out = np.where(in_last, last[req] + 1 + (pos - pre[req]),
                       pages[np.clip(j, 0, max(total - 1, 0))] * ps + pos % ps
                       if total else 0)
        if self.debug_mode:
            assert np.unique(out).size == out.size
        return out.astype(np.int64)

    def free(self, free_index):
        if free_index is None or (free_index.numel() if hasattr(free_index, "numel")
                                  else np.size(free_index)) == 0:
            return
        if not self.is_not_in_free_group:
            self.free_group.append(free_index)
            return
        tok = _to_np(free_index)
        pages = np.unique(tok // self._hkv_ps)
        if (pages <= 0).any() or (pages >= self._hkv_pool.npages).any():
            raise ValueError(f"free: token indices outside the pool's slots 1..{self.size}, "
                             f"or the padded slot 0: pages {pages[(pages <= 0) | (pages >= self._hkv_pool.npages)].tolist()}")
        try:
            self._hkv_pool.free(_tok.pages_to_extents(pages))
        except Error as e:
            if e.errno != errno.EINVAL:
                raise
            bad = _not_allocated(self._hkv_pool, pages)
            raise AssertionError(_DOUBLE_FREE.format(bad.tolist())) from None

    def free_group_begin(self):
        self.is_not_in_free_group = False
        self.free_group = []

    def free_group_end(self):
        self.is_not_in_free_group = True
        if self.free_group:
            torch = _torch()
            self.free(torch.cat(self.free_group))

    def backup_state(self):
        return ("hugekv", self._hkv_pool.free_slots(copy=True).astype(np.int64))

    def restore_state(self, state):
        """Return to a backup_state(): pages taken since are freed, pages
        freed since are taken again."""
        if not (isinstance(state, tuple) and len(state) == 2 and state[0] == "hugekv"):
            raise ValueError("restore_state needs a state from this allocator's backup_state()")
        pool = self._hkv_pool
        want = state[1]
        now = pool.free_slots(copy=True).astype(np.int64)
        give = np.setdiff1d(want, now)          # allocated since the backup
        take = np.setdiff1d(now, want)          # freed since the backup
        if take.size:
            pool.alloc(int(now.size))           # every free page, then keep @take
            keep = np.setdiff1d(now, take)
            if keep.size:
                pool.free(_tok.pages_to_extents(keep))
        if give.size:
            pool.free(_tok.pages_to_extents(give))


class HostTensorAllocator:
    """SGLang's host-tensor allocator slot: allocate(dims, dtype, device)
    returns a CPU tensor over its own hugekv memory pool, one page per
    dims[0] row (hugepages, bound to numa_node, prefaulted, verified).

    chunk_bytes caps a registration chunk (rounded down to whole rows, so no
    row straddles two registrations); registration_ranges(tensor) gives the
    (ptr, bytes) ranges to register, for example with cudaHostRegister.
    """

    def __init__(self, *, backing="auto", numa_node=-1, strict=False, chunk_bytes=0,
                 prefault_threads=0):
        self.dtype = None
        self.dims = None
        self._opts = dict(backing=backing, numa_node=numa_node, strict=strict,
                          chunk_bytes=chunk_bytes, prefault_threads=prefault_threads)
        Pool(1, 0)          # fail early if the library is unusable
        self.pools = []

    def allocate(self, dims, dtype, device="cpu"):
        torch = _torch()
        assert str(device) == "cpu", \
            f"HostTensorAllocator only supports CPU allocations; got device={device!r}"
        dims = tuple(int(d) for d in dims)
        if not dims or any(d <= 0 for d in dims):
            raise ValueError(f"dims must be positive, got {dims}")
        elem = torch.empty(0, dtype=dtype).element_size()
        row = elem * int(np.prod(dims[1:], dtype=np.int64)) if len(dims) > 1 else elem
        pool = Pool(dims[0], row, **self._opts)
        t = pool.as_tensor(dtype, dims)
        self.pools.append(pool)
        self.dtype, self.dims = dtype, dims
        return t

    def pool_of(self, tensor):
        """The hugekv.Pool a tensor from allocate() sits on."""
        for p in self.pools:
            if not p.closed and p.page_ptr(0) == tensor.data_ptr():
                return p
        raise ValueError("tensor was not allocated by this HostTensorAllocator")

    def registration_ranges(self, tensor):
        """(ptr, bytes) ranges covering the tensor: one per memory region,
        split at chunk_bytes (whole rows)."""
        pool = self.pool_of(tensor)
        chunk = self._opts["chunk_bytes"]
        rows = max(chunk // pool.page_bytes, 1) if chunk else pool.npages
        out = []
        for r in pool.regions():
            first, n = r["first_page"], r["npages"]
            for s in range(first, first + n, rows):
                k = min(rows, first + n - s)
                out.append((pool.page_ptr(s), k * pool.page_bytes))
        return out
