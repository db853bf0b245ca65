# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Token helpers: extents <-> pages <-> token indices, numpy and torch."""
import numpy as np
import pytest

import hugekv as h


def test_extents_to_tokens_and_back():
    ext = np.array([[3, 2], [10, 1], [0, 1]], dtype=np.int64)
    tok = h.extents_to_tokens(ext, 4)
    assert tok.tolist() == list(range(12, 20)) + list(range(40, 44)) + list(range(0, 4))
    assert h.tokens_to_extents(tok, 4).tolist() == [[3, 2], [10, 1], [0, 1]]
    assert h.extents_to_pages(ext).tolist() == [3, 4, 10, 0]
    assert h.pages_to_extents([3, 4, 5, 9, 10, 2]).tolist() == [[3, 3], [9, 2], [2, 1]]


def test_page_size_one_and_empty():
    assert h.extents_to_tokens([[5, 3]], 1).tolist() == [5, 6, 7]
    assert h.extents_to_tokens(np.zeros((0, 2), np.int64), 8).size == 0
    assert h.pages_to_extents([]).shape == (0, 2)


def test_torch_in_torch_out():
    torch = pytest.importorskip("torch")
    t = h.extents_to_tokens(torch.tensor([[1, 2]]), 2)
    assert isinstance(t, torch.Tensor) and t.dtype == torch.int64 and t.tolist() == [2, 3, 4, 5]
    e = h.tokens_to_extents(t, 2)
    assert isinstance(e, torch.Tensor) and e.tolist() == [[1, 2]]
    assert isinstance(h.extents_to_tokens([[0, 1]], 2, device="cpu"), torch.Tensor)
    with pytest.raises(TypeError):
        h.tokens_to_pages(torch.tensor([1.0, 2.0]), 1)


def test_unaligned_tokens_are_refused():
    with pytest.raises(ValueError, match="whole pages"):
        h.tokens_to_extents([0, 1, 2], 2)
    with pytest.raises(ValueError, match="page-aligned"):
        h.tokens_to_extents([1, 2], 2)
    with pytest.raises(ValueError, match="page-aligned"):
        h.tokens_to_extents([0, 2], 2)
    with pytest.raises(ValueError):
        h.tokens_to_pages([-1], 1)
    with pytest.raises(ValueError):
        h.extents_to_tokens([[0, 1]], 0)
    with pytest.raises(ValueError):
        h.extents_to_tokens([[0, 0]], 2)
    assert h.tokens_to_pages([5, 4, 9, 1], 4, whole_pages=False).tolist() == [1, 2, 0]


def test_large_vectorized():
    rng = np.random.default_rng(1)
    starts = np.sort(rng.choice(10 ** 6, 5000, replace=False)) * 8
    ext = np.stack([starts, np.full_like(starts, 3)], axis=1)
    tok = h.extents_to_tokens(ext, 64)
    assert tok.size == 5000 * 3 * 64
    assert (h.tokens_to_extents(tok, 64) == ext).all()
