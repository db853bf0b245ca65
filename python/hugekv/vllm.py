# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""vLLM adapter: the block-pool methods of vLLM's CPU offloading manager on
hugekv.

Follows vLLM 0.33.0 (the current release): CPUOffloadingManager of
vllm/v1/kv_offload/cpu/manager.py, whose block pool is
``_get_num_free_blocks()``, ``_allocate_blocks(keys)`` (AssertionError when
the pool is short, as vLLM's own assert) and ``_free_block(block)``, and
whose ``reset_cache()`` makes every block free again.

    class Manager(BlockPoolMixin, CPUOffloadingManager): pass

The engine class keeps its cache policy and events; the mixin replaces the
three block-pool methods (``_get_num_free_blocks``, ``_allocate_blocks``,
``_free_block``) with an index-only hugekv pool of ``_num_blocks`` blocks,
so the blocks of one offload come out as contiguous runs (few transfer
descriptors) instead of whatever order a free list holds. Block status
objects are the engine's own class (``BlockStatus`` of the module that
defines the manager, or ``block_status_cls``). Importing this module does
not import vLLM.
"""
from __future__ import annotations

import ctypes
import sys
from typing import Any, List, Sequence

import numpy as np

from . import tokens as _tok
from ._lib import OutOfPages
from .pool import Pool


class CPUBlockStatus(ctypes.Structure):
    """Fallback status when the engine's class cannot be found: vLLM's
    layout (ref_cnt, then block_id)."""
    _fields_ = [("ref_cnt", ctypes.c_int32), ("block_id", ctypes.c_int64)]

    def __init__(self, block_id):
        super().__init__()
        self.ref_cnt = -1
        self.block_id = block_id


class BlockPoolMixin:
    block_status_cls = None

    def _hkv(self):
        pool = self.__dict__.get("_hkv_pool")
        if pool is None:
            n = int(getattr(self, "_num_blocks"))
            pool = self.__dict__["_hkv_pool"] = Pool(n)
        return pool

    @property
    def hugekv_pool(self):
        return self._hkv()

    def _status_cls(self):
        cls = self.block_status_cls
        if cls is None:
            for base in type(self).__mro__:
                mod = sys.modules.get(base.__module__)
                cand = getattr(mod, "CPUBlockStatus", None) or getattr(mod, "BlockStatus", None)
                if cand is not None and cand is not CPUBlockStatus and \
                        base.__module__ != __name__:
                    cls = cand
                    break
            cls = type(self).block_status_cls = cls or CPUBlockStatus
        return cls

    def _get_num_free_blocks(self) -> int:
        return self._hkv().available

    def _allocate_blocks(self, block_hashes: Sequence[Any]) -> List[Any]:
        n = len(block_hashes)
        if n == 0:
            return []
        try:
            ext = self._hkv().alloc(n)
        except OutOfPages:
            raise AssertionError(f"_allocate_blocks: {n} blocks asked, "
                                 f"{self._hkv().available} free") from None
        cls = self._status_cls()
        return [cls(int(b)) for b in _tok.extents_to_pages(ext).tolist()]

    def _free_block(self, block: Any) -> None:
        self._free_blocks([block])

    def _free_blocks(self, blocks: Sequence[Any]) -> None:
        """Free several blocks in one call (runs merged). A block that is not
        allocated (freed twice, or never handed out) raises AssertionError
        naming it, and nothing is freed."""
        ids = np.sort(np.array([int(b.block_id) for b in blocks], dtype=np.int64))
        if not ids.size:
            return
        pool = self._hkv()
        bad = (ids < 0) | (ids >= pool.npages)
        bad[1:] |= ids[1:] == ids[:-1]
        if not bad.any():
            ext = _tok.pages_to_extents(ids)
            if pool._free_raw(ext.tobytes(), ext.shape[0]) == 0:
                return
            free = pool.free_slots(copy=True).astype(np.int64)
            bad = np.isin(ids, free)
            bad[1:] |= ids[1:] == ids[:-1]
        raise AssertionError(f"Double-free detected: blocks not currently allocated: "
                             f"{ids[bad].tolist()}.")

    def reset_cache(self) -> None:
        """The engine's reset_cache(), then every block free again."""
        sup = getattr(super(), "reset_cache", None)
        if sup is not None:
            sup()
        old = self.__dict__.pop("_hkv_pool", None)
        if old is not None:
            old.close()

    def blocks_to_extents(self, blocks):
        """The runs of contiguous block ids of @blocks, in order: (k, 2)."""
        return _tok.pages_to_extents(np.array([int(b.block_id) for b in blocks],
                                              dtype=np.int64))
