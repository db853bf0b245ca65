# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""hugekv: host KV-cache pages on NUMA-local hugepage arenas, from Python.

    import hugekv
    with hugekv.Pool(1024, 64 << 10, backing="2m") as pool:
        ext = pool.alloc(37)              # int64 (k, 2) extents (start, len)
        kv = pool.as_tensor(torch.bfloat16)   # all pages, no copy
        pool.free(ext)

A ctypes binding of libhugekv.so (see hugekv._lib for where the library is
found); the engine adapters are hugekv.sglang, hugekv.lmcache, hugekv.vllm.
The library's messages go to the logger "hugekv" (see hugekv._log).
"""
from ._lib import (Error, OutOfPages, CallbackError, strerror, LANE_ANY,
                   BACKINGS, path as library_path)
from ._log import bridge as log_bridge, bridged as log_bridged
from .pool import Pool, as_extents
from .tokens import (extents_to_pages, pages_to_extents, extents_to_tokens,
                     tokens_to_pages, tokens_to_extents, runs_expand)

__version__ = "0.1.0"

__all__ = ["Pool", "Error", "OutOfPages", "CallbackError", "LANE_ANY", "BACKINGS",
           "strerror", "as_extents", "extents_to_pages", "pages_to_extents",
           "extents_to_tokens", "tokens_to_pages", "tokens_to_extents", "runs_expand",
           "library_path", "log_bridge", "log_bridged"]
