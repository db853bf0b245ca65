# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Extents <-> page ids <-> token indices, vectorized (no Python loop per
page or token). Engines that count tokens hold a KV page of ``page_size``
tokens: token t lives in page t // page_size.

Each function takes numpy arrays or torch tensors (CPU) and returns the
same kind it was given (numpy for lists).
"""
from typing import Any

import numpy as np

ArrayLike = Any     # numpy array, torch tensor (CPU), or a sequence of ints

_I64 = np.dtype(np.int64)
_I64_MAX = (1 << 63) - 1


def _is_torch(x):
    return type(x).__module__.startswith("torch") and hasattr(x, "numpy")


def _np(x, what):
    """(int64 numpy array, was_torch)."""
    if _is_torch(x):
        if x.is_floating_point() or x.is_complex() or str(x.dtype) == "torch.bool":
            raise TypeError(f"{what} must hold integers, not {x.dtype}")
        return x.detach().cpu().numpy().astype(np.int64, copy=False), True
    a = np.asarray(x)
    if a.size and a.dtype.kind not in "iu":
        raise TypeError(f"{what} must hold integers, not {a.dtype}")
    if a.size and a.dtype.kind == "u" and int(a.max()) > _I64_MAX:
        raise ValueError(f"{what} out of int64 range")
    return a.astype(np.int64, copy=False), False


def _out(a, torch_out, device=None):
    if not torch_out:
        return a
    import torch
    t = torch.from_numpy(np.ascontiguousarray(a))
    return t if device is None or str(device) == "cpu" else t.to(device)


def _page_size(page_size):
    if isinstance(page_size, bool) or not isinstance(page_size, (int, np.integer)) \
            or page_size < 1:
        raise ValueError(f"page_size must be a positive integer, got {page_size!r}")
    return int(page_size)


def _extents(e):
    a, t = _np(e, "extents")
    if a.size == 0:
        return a.reshape(0, 2), t
    if a.ndim == 1 and a.shape[0] == 2:
        a = a.reshape(1, 2)
    if a.ndim != 2 or a.shape[1] != 2:
        raise ValueError(f"extents must have shape (k, 2), got {a.shape}")
    if (a[:, 0] < 0).any() or (a[:, 1] <= 0).any():
        raise ValueError("extents need start >= 0 and len > 0")
    if (a[:, 0] > _I64_MAX - a[:, 1]).any():
        raise ValueError("an extent's start + len overflows int64")
    return a, t


def runs_expand(starts: ArrayLike, lens: ArrayLike) -> np.ndarray:
    """The concatenation of arange(s, s + n) for each (s, n): int64."""
    starts = np.asarray(starts, dtype=np.int64)
    lens = np.asarray(lens, dtype=np.int64)
    total = int(lens.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    first = np.cumsum(lens) - lens                 # output offset of each run
    return np.arange(total, dtype=np.int64) + np.repeat(starts - first, lens)


def extents_to_pages(extents: ArrayLike) -> ArrayLike:
    """Page ids of the extents, in extent order."""
    a, t = _extents(extents)
    return _out(runs_expand(a[:, 0], a[:, 1]), t)


def pages_to_extents(pages: ArrayLike) -> ArrayLike:
    """Runs of consecutive increasing page ids, in the order given:
    (k, 2) extents. [3, 4, 5, 9, 10, 2] -> [[3, 3], [9, 2], [2, 1]]."""
    p, t = _np(pages, "pages")
    p = p.reshape(-1)
    if p.size == 0:
        return _out(np.zeros((0, 2), dtype=np.int64), t)
    if (p < 0).any():
        raise ValueError("page ids must be >= 0")
    head = np.ones(p.size, dtype=bool)
    head[1:] = p[1:] != p[:-1] + 1
    idx = np.flatnonzero(head)
    lens = np.diff(np.append(idx, p.size))
    return _out(np.stack([p[idx], lens], axis=1), t)


def extents_to_tokens(extents: ArrayLike, page_size: int, device: Any = None) -> ArrayLike:
    """Token indices of the extents' pages: page p holds tokens
    [p * page_size, (p + 1) * page_size). int64, in extent order."""
    ps = _page_size(page_size)
    a, t = _extents(extents)
    if a.size and int((a[:, 0] + a[:, 1]).max()) > _I64_MAX // ps:
        raise ValueError(f"token indices of these extents overflow int64 (page_size {ps})")
    out = runs_expand(a[:, 0] * ps, a[:, 1] * ps)
    return _out(out, t or device is not None, device)


def tokens_to_pages(tokens: ArrayLike, page_size: int, *,
                    whole_pages: bool = True) -> ArrayLike:
    """Page ids of page-aligned token indices (each page's page_size tokens
    in order). whole_pages=False: the unique pages the tokens touch, in
    order of first appearance; any token indices are fine then."""
    ps = _page_size(page_size)
    a, t = _np(tokens, "tokens")
    a = a.reshape(-1)
    if (a < 0).any():
        raise ValueError("token indices must be >= 0")
    if not whole_pages:
        pg = a // ps
        _, first = np.unique(pg, return_index=True)
        return _out(pg[np.sort(first)], t)
    if a.size % ps:
        raise ValueError(f"{a.size} tokens are not whole pages of {ps}")
    m = a.reshape(-1, ps)
    pages = m[:, 0] // ps
    if (m != pages[:, None] * ps + np.arange(ps, dtype=np.int64)[None, :]).any():
        raise ValueError(f"token indices are not whole, page-aligned pages of {ps} tokens")
    return _out(pages, t)


def tokens_to_extents(tokens: ArrayLike, page_size: int) -> ArrayLike:
    """Extents of whole, page-aligned token indices (runs merged)."""
    p = tokens_to_pages(tokens, page_size)
    return pages_to_extents(p)
