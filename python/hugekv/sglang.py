# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""SGLang adapters: hugekv underneath SGLang's own pool classes.

    class Host(HostPoolMixin, MHATokenToKVPoolHost): pass     # L2 host pool
    class Dev(DevicePoolMixin, PagedTokenToKVPoolAllocator): pass   # L1 index

The mixins go first in the bases so that their methods win; the engine's
class keeps its constructor, buffers and transfer code. Importing this
module does not import SGLang. Token tensors are CPU int64 (moved to the
allocator's device where it has one).

Follows SGLang 0.5.23 (the current release): HostKVCache of
sglang/srt/mem_cache/pool_host/base.py and TokenToKVPoolAllocator /
PagedTokenToKVPoolAllocator of sglang/srt/mem_cache/allocator.py, call for
call: the same return values (None when the pool is short, empty tensors
for 0), AssertionError with the engine's texts for its own assertions
("The requested size should be a multiple of the page size.",
"Double-free detected: slots not currently allocated: [...]."), IndexError
with torch's text for indices no tensor could be indexed with (float,
out of range), the L1 lazy free path (need_sort: frees wait in
release_pages until an allocation needs them, then merge_and_sort_free),
and backup_state()/restore_state() with (free_pages, release_pages).

Where SGLang itself would corrupt its state, the adapters refuse instead
and change nothing: a slot freed twice in one call, a bool mask or a
negative index given to free(), a partial page freed from a paged pool,
the padded slot 0 freed to the L1 pool.

HostTensorAllocator fills SGLang's host-tensor allocator slot with tensors
over hugekv memory pools (hugepages, NUMA-bound, prefaulted).
"""
from __future__ import annotations

import errno
import math
import os
import struct
import threading
import time
from typing import TYPE_CHECKING, Any, Optional, Tuple

if TYPE_CHECKING:
    import torch

import numpy as np

from . import tokens as _tok
from ._lib import Error, OutOfPages
from .pool import Pool, _index

_DOUBLE_FREE = "Double-free detected: slots not currently allocated: {}."
_HOST_ALIGN = "The requested size should be a multiple of the page size."
_DEV_ALIGN = "The allocation size should be page-aligned"
_index_dtype_text = []


def _index_dtype():
    """The IndexError text the installed torch gives for float indices (what
    indexing SGLang's slot tensors with them raises)."""
    if not _index_dtype_text:
        torch = _torch()
        try:
            torch.zeros(1)[torch.zeros(1)]
            _index_dtype_text.append("tensors used as indices must be long, int, byte "
                                     "or bool tensors")
        except IndexError as e:
            _index_dtype_text.append(str(e))
    return _index_dtype_text[0]
_pack_run = struct.Struct("=qq").pack


def _torch():
    import torch
    return torch


def _from_numpy(a):
    global _from_numpy
    _from_numpy = _torch().from_numpy
    return _from_numpy(a)


def _need_size(v):
    """alloc()'s need_size as an int (ints, numpy and one-element torch
    integers), else TypeError: a float or an array names no token count.
    Any sign: alloc() answers a negative one itself."""
    return _index(v, "alloc: need_size", -math.inf, math.inf)


def _index_tokens(indices, size, what="free"):
    """Token indices (tensor, array, list) as flat int64 numpy, refused the
    way indexing SGLang's slot tensors refuses them (IndexError), and
    besides: bool masks and negative indices, which would not name slots."""
    if hasattr(indices, "detach"):
        t = indices.detach()
        if t.is_floating_point() or t.is_complex():
            raise IndexError(_index_dtype())
        if str(t.dtype) == "torch.bool":
            raise IndexError(f"{what}() takes slot indices, not a bool mask")
        a = t.cpu().numpy().reshape(-1)
    else:
        a = np.asarray(indices).reshape(-1)
        if a.size and a.dtype.kind not in "iu":
            raise IndexError(_index_dtype())
    if a.dtype.kind == "u" and a.size and int(a.max()) > size:
        raise IndexError(f"index {int(a.max())} is out of bounds for dimension 0 with size {size}")
    a = a.astype(np.int64, copy=False)
    if a.size:
        bad = (a < 0) | (a >= size)
        if bad.any():
            raise IndexError(f"index {int(a[bad][0])} is out of bounds for dimension 0 "
                             f"with size {size}")
    return a


def _dups(a):
    """Mask of entries of @a that repeat an earlier one."""
    _, first = np.unique(a, return_index=True)
    m = np.ones(a.size, dtype=bool)
    m[first] = False
    return m


def _double_free(tok, ps, free_pages, extra_bad_pages=None):
    """AssertionError naming the token slots of @tok that are not allocated:
    on a free page, on @extra_bad_pages, or named twice."""
    pages = tok // ps
    bad = np.isin(pages, free_pages) | _dups(tok)
    if extra_bad_pages is not None and len(extra_bad_pages):
        bad |= np.isin(pages, extra_bad_pages)
    return AssertionError(_DOUBLE_FREE.format(tok[bad].tolist()))


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
    ``release_slots`` is always [] and ``num_release_slots`` 0 (HostKVCache
    defers its frees only to avoid concatenating its free list).

    alloc() returns a view of one token-index tensor the adapter keeps
    (SGLang's alloc returns views of its free_slots the same way): read it,
    slice it, copy it, never write into it. free() of such a view (or of a
    contiguous slice of one) costs O(1); any other tensor is converted with
    vectorized numpy.
    """

    _hkv_pool = None

    def _hkv_lock(self):
        lock = getattr(self, "lock", None)
        if lock is None:
            lock = self.lock = threading.RLock()
        return lock

    def clear(self):
        torch = _torch()
        self._hkv_lock()
        with self.lock:
            page_size = int(getattr(self, "page_size", 1) or 1)
            page_num = getattr(self, "page_num", None)
            if page_num is None:
                page_num = int(self.size) // page_size
            page_num = int(page_num)
            if self._hkv_pool is not None:
                self._hkv_pool.close()
            self._hkv_pool = Pool(page_num)
            self._hkv_page_size = page_size
            self._hkv_size = page_num * page_size
            # every token index once: alloc() hands out views of it
            self._hkv_tok = torch.arange(self._hkv_size, dtype=torch.int64)
            self._hkv_tok_np = self._hkv_tok.numpy()
            self._hkv_tok_ptr = self._hkv_tok.data_ptr()
            self._hkv_tensor_type, self._hkv_int64 = torch.Tensor, torch.int64

    def available_size(self) -> int:
        return self._hkv_pool.available * self._hkv_page_size

    def alloc(self, need_size: int) -> Optional[torch.Tensor]:
        ps = self._hkv_page_size
        if type(need_size) is not int:
            need_size = _need_size(need_size)
        if need_size % ps:
            raise AssertionError(_HOST_ALIGN)
        with self.lock:
            if need_size <= 0:
                if need_size == 0:
                    return self._hkv_tok[:0]
                raise ValueError(f"alloc: need_size must be >= 0, got {need_size}")
            n, buf = self._hkv_pool._alloc_raw(need_size // ps)
            if n == 1:                          # the common case: one run
                s = buf.item(0) * ps
                return _from_numpy(self._hkv_tok_np[s:s + need_size])
            if n < 0:
                return None
            return _tok.extents_to_tokens(buf[:n].copy(), ps, device="cpu")

    def free(self, indices: Any) -> int:
        with self.lock:
            ps = self._hkv_page_size
            # O(1): a contiguous run of whole pages of alloc()'s token tensor
            # (the values there are the token indices themselves)
            if type(indices) is self._hkv_tensor_type:
                off = (indices.data_ptr() - self._hkv_tok_ptr) >> 3
                if 0 <= off < self._hkv_size and indices.dtype is self._hkv_int64 and \
                        indices.dim() == 1 and indices.is_contiguous():
                    n = indices.numel()
                    tn = self._hkv_tok_np
                    if n and not off % ps and not n % ps and off + n <= self._hkv_size and \
                            tn[off] == off and tn[off + n - 1] == off + n - 1:
                        if not self._hkv_pool._free_raw(_pack_run(off // ps, n // ps), 1):
                            return n
            return self._hkv_free_slow(indices, ps)

    def _hkv_free_slow(self, indices, ps):
        pool = self._hkv_pool
        tok = _index_tokens(indices, self._hkv_size)
        if tok.size == 0:
            return 0
        if ps == 1:
            pages = tok
        else:
            m = tok.reshape(-1, ps) if tok.size % ps == 0 else None
            if m is None or (m != (m[:, :1] // ps) * ps + np.arange(ps)).any():
                raise ValueError(f"host pool free: token indices must be whole, page-aligned "
                                 f"pages of {ps} tokens (hugekv frees pages)")
            pages = m[:, 0] // ps
        if _dups(pages).any():
            raise _double_free(tok, ps, np.zeros(0, dtype=np.int64))
        ext = _tok.pages_to_extents(pages)
        err = pool._free_raw(ext.tobytes(), ext.shape[0])
        if err == -errno.EINVAL:
            raise _double_free(tok, ps, pool.free_slots(copy=True).astype(np.int64)) from None
        if err:
            from ._lib import error
            raise error(err, f"host pool free of {tok.size} slots")
        return len(indices)

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
    ``free_pages`` is the sorted free page ids. With the engine's
    ``need_sort`` set, free() does what SGLang's does: the pages wait in
    ``release_pages`` (counted by available_size(), not handed out) until
    an allocation needs more than the free pages, or merge_and_sort_free()
    runs. backup_state() is (free_pages, release_pages); restore_state()
    returns the pool to such a state, or raises and changes nothing.
    SGLANG_DEBUG_MEMORY_POOL turns on the engine's checks (page-aligned
    sizes, unique outputs, last_loc alignment).
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
        self._hkv_released = []             # arrays of released pages, newest as SGLang orders
        self._hkv_nreleased = 0
        self._hkv_is_released = np.zeros(num_pages + 1, dtype=bool)
        self.is_not_in_free_group = True
        self.free_group = []
        self.debug_mode = bool(os.environ.get("SGLANG_DEBUG_MEMORY_POOL"))

    @property
    def hugekv_pool(self):
        return self.__dict__.get("_hkv_pool")

    def _hkv_release_array(self):
        if not self._hkv_released:
            return np.zeros(0, dtype=np.int64)
        return np.concatenate(self._hkv_released)

    def _hkv_tensor(self, name):
        if name == "release_pages":
            return self._hkv_dev(self._hkv_release_array())
        pages = self._hkv_pool.free_slots(copy=True).astype(np.int64)
        return self._hkv_dev(pages)

    def _hkv_dev(self, a):
        torch = _torch()
        t = torch.from_numpy(np.ascontiguousarray(a, dtype=np.int64))
        dev = getattr(self, "device", "cpu")
        return t if str(dev) == "cpu" else t.to(dev)

    def available_size(self) -> int:
        return (self._hkv_pool.available + self._hkv_nreleased) * self._hkv_ps

    def merge_and_sort_free(self) -> None:
        """Released pages become free pages (hugekv keeps them sorted)."""
        if not self._hkv_nreleased:
            return
        pages = np.sort(self._hkv_release_array())
        err = self._hkv_pool._free_raw(_tok.pages_to_extents(pages).tobytes(),
                                       _tok.pages_to_extents(pages).shape[0])
        if err:
            from ._lib import error
            raise error(err, "merge_and_sort_free")
        self._hkv_is_released[pages] = False
        self._hkv_released = []
        self._hkv_nreleased = 0

    def _need_sort(self):
        return bool(getattr(self, "need_sort", False))

    def _take(self, npages):
        try:
            return self._hkv_pool.alloc(npages)
        except OutOfPages:
            return None

    def alloc(self, need_size: int) -> Optional[torch.Tensor]:
        ps = self._hkv_ps
        if type(need_size) is not int:
            need_size = _need_size(need_size)
        if self.debug_mode and ps > 1:
            assert need_size % ps == 0, _DEV_ALIGN
        npages = need_size // ps
        if self._need_sort() and npages > self._hkv_pool.available:
            self.merge_and_sort_free()
        if npages <= 0:
            if npages == 0:
                return self._hkv_dev(np.zeros(0, dtype=np.int64))
            raise ValueError(f"alloc: need_size must be >= 0, got {need_size}")
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
        if self._need_sort() and \
                extend_num_tokens // self._hkv_ps + pre.size + 1 > self._hkv_pool.available:
            self.merge_and_sort_free()
        out = self._extend(pre, seq, last)
        return None if out is None else self._hkv_dev(out)

    def alloc_decode(self, seq_lens, seq_lens_cpu, last_loc):
        """One token slot per request (seq_lens already count the new token)."""
        seq = _to_np(seq_lens_cpu if seq_lens_cpu is not None else seq_lens)
        last = _to_np(last_loc)
        if self.debug_mode:
            assert np.all((last + 2) % self._hkv_ps == seq % self._hkv_ps)
        if self._need_sort() and seq.size > self._hkv_pool.available:
            self.merge_and_sort_free()
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

    def free(self, free_index: Any) -> None:
        if free_index is None:
            return
        if (free_index.numel() if hasattr(free_index, "numel") else np.size(free_index)) == 0:
            return
        if not self.is_not_in_free_group:
            self.free_group.append(free_index)
            return
        ps = self._hkv_ps
        pool = self._hkv_pool
        tok = _index_tokens(free_index, pool.npages * ps)
        if ps == 1 and _dups(tok).any():    # SGLang would list the slot twice
            raise _double_free(tok, ps, np.zeros(0, dtype=np.int64))
        pages = np.unique(tok // ps)
        if pages[0] == 0:           # the padded slot is never the caller's
            raise _double_free(tok, ps, np.zeros(0, dtype=np.int64), np.array([0]))
        rel = self._hkv_is_released[pages]
        if rel.any():
            raise _double_free(tok, ps, np.zeros(0, dtype=np.int64), pages[rel])
        ext = _tok.pages_to_extents(pages)
        ok = pool.allocated(ext)
        if not ok:
            raise _double_free(tok, ps, pool.free_slots(copy=True).astype(np.int64))
        if self._need_sort():
            # SGLang: the paged allocator puts new pages first, the token one last
            if ps > 1:
                self._hkv_released.insert(0, pages)
            else:
                self._hkv_released.append(pages)
            self._hkv_is_released[pages] = True
            self._hkv_nreleased += pages.size
            return
        err = pool._free_raw(ext.tobytes(), ext.shape[0])
        if err == -errno.EINVAL:
            raise _double_free(tok, ps, pool.free_slots(copy=True).astype(np.int64))
        if err:
            from ._lib import error
            raise error(err, f"free of {pages.size} pages")

    def free_group_begin(self):
        self.is_not_in_free_group = False
        self.free_group = []

    def free_group_end(self):
        self.is_not_in_free_group = True
        if self.free_group:
            torch = _torch()
            self.free(torch.cat(self.free_group))

    def backup_state(self) -> Tuple[torch.Tensor, torch.Tensor]:
        """(free_pages, release_pages), as SGLang's allocators return it."""
        return (self.free_pages, self.release_pages)

    def restore_state(self, state: Tuple[Any, Any]) -> None:
        """Return to a backup_state(): pages taken since are freed again,
        pages freed since are taken again, released pages are released
        again. A state that does not describe this pool (pages out of
        range, the padded slot 0, a page both free and released or named
        twice) raises ValueError and changes nothing."""
        pool = self._hkv_pool
        want_free, want_rel = self._hkv_state_arrays(state)
        now_free = pool.free_slots(copy=True).astype(np.int64)
        give = np.setdiff1d(want_free, now_free)     # allocated now, free in the state
        take = np.setdiff1d(now_free, want_free)     # free now, allocated in the state
        if take.size:
            # hugekv has no call that takes named pages: take every free page
            # and give back those the state has free (all or nothing)
            every = pool.alloc(int(now_free.size))
            keep = np.setdiff1d(now_free, take)
            if keep.size:
                k = _tok.pages_to_extents(keep)
                err = pool._free_raw(k.tobytes(), k.shape[0])
                if err:     # cannot happen: these pages were just taken
                    pool.free(every)
                    from ._lib import error
                    raise error(err, "restore_state")
        if give.size:
            g = _tok.pages_to_extents(give)
            err = pool._free_raw(g.tobytes(), g.shape[0])
            if err:
                if take.size:
                    t = _tok.pages_to_extents(take)
                    pool._free_raw(t.tobytes(), t.shape[0])
                from ._lib import error
                raise error(err, "restore_state")
        self._hkv_is_released[self._hkv_release_array()] = False
        self._hkv_is_released[want_rel] = True
        self._hkv_released = [want_rel] if want_rel.size else []
        self._hkv_nreleased = int(want_rel.size)

    def _hkv_state_arrays(self, state):
        if not (isinstance(state, tuple) and len(state) == 2):
            raise ValueError("restore_state needs a (free_pages, release_pages) state from "
                             "backup_state()")
        n = self._hkv_pool.npages
        out = []
        for name, x in zip(("free_pages", "release_pages"), state):
            try:
                a = _index_tokens(x, n, "restore_state")
            except IndexError as e:
                raise ValueError(f"restore_state: {name}: {e}") from None
            if a.size and (a == 0).any():
                raise ValueError(f"restore_state: {name} holds the padded page 0")
            if _dups(a).any():
                raise ValueError(f"restore_state: {name} names a page twice")
            out.append(a)
        if np.intersect1d(out[0], out[1]).size:
            raise ValueError("restore_state: a page is both free and released")
        return out[0], out[1]


def _to_np(indices):
    """Token indices (tensor, array, list) as int64 numpy, flattened."""
    if hasattr(indices, "detach"):
        return indices.detach().cpu().numpy().astype(np.int64, copy=False).reshape(-1)
    return np.asarray(indices, dtype=np.int64).reshape(-1)


class HostTensorAllocator:
    """SGLang's host-tensor allocator slot: allocate(dims, dtype, device)
    returns a CPU tensor over its own hugekv memory pool, one page per
    dims[0] row (hugepages, bound to numa_node, prefaulted, verified).

    chunk_bytes caps a registration chunk (rounded down to whole rows, so no
    row straddles two registrations); registration_ranges(tensor) gives the
    (ptr, bytes) ranges to register, for example with cudaHostRegister.

    name: every rank's allocator given the same name puts its tensors on
    named pools ("NAME-0", "NAME-1", ... in allocation order): the first
    rank to allocate makes each, the others attach it, so all ranks share
    one copy in host memory (a shared MLA cache) instead of one each, and
    it outlives a restart of the ranks.
    """

    def __init__(self, *, backing="auto", numa_node=-1, strict=False, chunk_bytes=0,
                 prefault_threads=0, name=None):
        self.dtype = None
        self.dims = None
        self._name = name
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
        pool = self._named(dims[0], row) if self._name else Pool(dims[0], row, **self._opts)
        t = pool.as_tensor(dtype, dims)
        self.pools.append(pool)
        self.dtype, self.dims = dtype, dims
        return t

    def _named(self, rows, row, wait=30.0):
        """The named pool of this allocation: made here, or attached (made by
        another rank, perhaps still being made)."""
        name = f"{self._name}-{len(self.pools)}"
        deadline = time.monotonic() + wait
        while True:
            try:
                return Pool(rows, row, name=name, **self._opts)
            except Error as e:
                if e.errno != errno.EEXIST:
                    raise
            try:
                pool = Pool.attach(name)
            except Error as e:
                if e.errno != errno.EAGAIN or time.monotonic() > deadline:
                    raise
                time.sleep(0.01)        # its maker has not finished yet
                continue
            if (pool.npages, pool.page_bytes) != (rows, row):
                pool.close()
                raise ValueError(f"named pool {name!r} holds {pool.npages} rows of "
                                 f"{pool.page_bytes} bytes, this rank asks {rows} of {row}")
            return pool

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
