# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""The adapters against models of the engine classes (engine_models.py),
call for call: the same random sequences of calls go to the engine model
and to the adapter mixed into it, and every answer is compared: None or
not, sizes, available_size(), the lazy release counts, the exception type
and its text (with each side's own slot numbers). Where pages are handed
out in another order (hugekv's best fit against a free list), the tests
compare what the engine's callers can rely on, never the order."""
import random

import pytest

torch = pytest.importorskip("torch")

import engine_models as em
from hugekv.lmcache import PagedTensorMemoryAllocator
from hugekv.sglang import DevicePoolMixin, HostPoolMixin
from hugekv.vllm import BlockPoolMixin


class Host(HostPoolMixin, em.SGLangHostKVCache):
    pass


class Dev(DevicePoolMixin, em.SGLangTokenAllocator):
    pass


class Blocks(BlockPoolMixin, em.VLLMBlockPool):
    pass


def outcome(fn, *args):
    """("ok", result) or (exception type, text)."""
    try:
        return "ok", fn(*args)
    except (AssertionError, IndexError, ValueError, TypeError) as e:
        return type(e), str(e)


def same_error(a, b, fmt=None):
    assert a[0] is b[0], (a, b)
    if fmt is None:
        assert a[1] == b[1], (a, b)


# --- SGLang host pool ------------------------------------------------------

@pytest.mark.parametrize("page_size", [1, 4, 64])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_host_pool_call_for_call(page_size, seed):
    rng = random.Random(seed)
    size = 200 * page_size
    m, h = em.SGLangHostKVCache(size, page_size), Host(size, page_size)
    assert (m.size, m.page_num) == (h.size, h.page_num)
    live_m, live_h = [], []
    for step in range(400):
        op = rng.random()
        if op < 0.45 or not live_m:
            n = rng.choice([0, 1, 2, 3, 7, 30, 150]) * page_size
            if rng.random() < 0.05 and page_size > 1:
                n += 1                              # not a multiple of the page size
            a, b = outcome(m.alloc, n), outcome(h.alloc, n)
            if a[0] != "ok":
                same_error(a, b)
                continue
            assert b[0] == "ok"
            assert (a[1] is None) == (b[1] is None), (step, n)
            if a[1] is not None:
                assert b[1].dtype == torch.int64 and b[1].numel() == a[1].numel() == n
                if n:
                    live_m.append(a[1])
                    live_h.append(b[1])
        elif op < 0.85:
            i = rng.randrange(len(live_m))
            xm, xh = live_m.pop(i), live_h.pop(i)
            if rng.random() < 0.5 and xm.numel() > page_size:   # a slice of whole pages
                k = xm.numel() // page_size // 2 * page_size
                live_m.append(xm[k:])
                live_h.append(xh[k:])
                xm, xh = xm[:k], xh[:k]
            assert m.free(xm) == h.free(xh) == xm.numel()
            if rng.random() < 0.3:                  # the same slots again, at once
                a, b = outcome(m.free, xm), outcome(h.free, xh)
                assert a[0] is b[0] is AssertionError
                assert a[1] == f"Double-free detected: slots not currently allocated: " \
                              f"{xm.tolist()}."
                assert b[1] == f"Double-free detected: slots not currently allocated: " \
                              f"{xh.tolist()}."
        elif op < 0.9:
            bad = torch.tensor([float(page_size)] * page_size)      # float indices
            same_error(outcome(m.free, bad), outcome(h.free, bad))
        elif op < 0.95:
            bad = torch.arange(m.size, m.size + page_size)          # past the end
            same_error(outcome(m.free, bad), outcome(h.free, bad))
        else:
            e = torch.empty(0, dtype=torch.int64)
            assert m.free(e) == h.free(e) == 0
        assert m.available_size() == h.available_size(), step
    live = torch.cat(live_h).tolist() if live_h else []
    assert len(live) == len(set(live))
    h.hugekv_pool.check()


def test_host_refuses_what_would_corrupt_sglang():
    h = Host(64, 4)
    x = h.alloc(8)
    with pytest.raises(AssertionError, match=r"not currently allocated: \[4, 5, 6, 7\]\."):
        h.free(torch.cat([x[4:], x[4:]]))     # named twice in one call
    with pytest.raises(IndexError, match="bool mask"):
        h.free(torch.ones(68, dtype=torch.bool))
    with pytest.raises(IndexError, match="out of bounds"):
        h.free(torch.tensor([-4, -3, -2, -1]))
    with pytest.raises(ValueError, match="whole, page-aligned"):
        h.free(x[1:5])
    with pytest.raises(IndexError, match="tensors used as indices"):
        h.free(x.double())                    # not truncated
    assert h.available_size() == 60 and h.free(x) == 8


def test_host_fast_path_frees_only_its_own_values():
    h = Host(256, 4)
    x = h.alloc(16)
    y = x.clone()                             # same values, other memory: the slow path
    assert h.free(y) == 16
    with pytest.raises(AssertionError, match="Double-free"):
        h.free(x)                             # the fast path finds them free too
    z = h.alloc(8)
    assert h.free(z[4:]) == 4 and h.free(z[:4]) == 4
    assert h.available_size() == h.size


# --- SGLang L1 allocators ---------------------------------------------------

def _counts(a):
    return (a.available_size(), len(a.free_pages), len(a.release_pages))


@pytest.mark.parametrize("page_size", [1, 4])
@pytest.mark.parametrize("need_sort", [True, False])
@pytest.mark.parametrize("seed", [1, 2])
def test_device_allocator_call_for_call(page_size, need_sort, seed):
    rng = random.Random(seed)
    size = 120 * page_size
    m = em.SGLangTokenAllocator(size, page_size, torch.bfloat16, "cpu", None, need_sort)
    d = Dev(size, page_size, torch.bfloat16, "cpu", None, need_sort)
    assert _counts(m) == _counts(d)
    live_m, live_d, backup = [], [], None
    for step in range(300):
        op = rng.random()
        if op < 0.4 or not live_m:
            n = rng.choice([0, 1, 2, 5, 17, 60]) * page_size
            a, b = m.alloc(n), d.alloc(n)
            assert (a is None) == (b is None), (step, n)
            if a is not None:
                assert a.numel() == b.numel() == n and 0 not in b.tolist()
                if page_size > 1 and n:
                    p = b.view(-1, page_size)
                    assert (p == p[:, :1] + torch.arange(page_size)).all()
                if n:
                    live_m.append(a)
                    live_d.append(b)
        elif op < 0.75:
            i = rng.randrange(len(live_m))
            m.free(live_m.pop(i))
            d.free(live_d.pop(i))
        elif op < 0.8:
            m.merge_and_sort_free()
            d.merge_and_sort_free()
        elif op < 0.87:
            m.free_group_begin()
            d.free_group_begin()
            for _ in range(min(3, len(live_m))):
                m.free(live_m.pop())
                d.free(live_d.pop())
            assert _counts(m) == _counts(d)
            m.free_group_end()
            d.free_group_end()
        elif op < 0.94 or backup is None:
            backup = (m.backup_state(), d.backup_state(), list(live_m), list(live_d))
        else:
            sm, sd, lm, ld = backup
            m.restore_state(sm)
            d.restore_state(sd)
            live_m, live_d = list(lm), list(ld)
            backup = None
        assert _counts(m) == _counts(d), (step, op)
    d.hugekv_pool.check()


def test_lazy_free_waits_until_an_alloc_needs_it():
    d = Dev(8, 1, torch.bfloat16, "cpu", None, True)
    x = d.alloc(6)
    d.free(x[:2])
    assert d.release_pages.tolist() == [1, 2] and d.available_size() == 4
    y = d.alloc(2)                          # 2 free pages suffice: no merge
    assert y.tolist() == [7, 8] and d.release_pages.tolist() == [1, 2]
    z = d.alloc(2)                          # now it must merge
    assert z.tolist() == [1, 2] and len(d.release_pages) == 0
    with pytest.raises(AssertionError, match=r"not currently allocated: \[3\]\."):
        d.free(torch.tensor([3, 3]))       # named twice
    d.free(x[2:3])
    with pytest.raises(AssertionError, match=r"not currently allocated: \[3\]\."):
        d.free(x[2:3])                     # already waiting in release_pages
    with pytest.raises(IndexError, match="tensors used as indices"):
        d.free(torch.tensor([4.0]))        # a float tensor is refused, not truncated


def test_restore_state_with_bad_pages_changes_nothing():
    d = Dev(32, 1, torch.bfloat16, "cpu", None, True)
    x = d.alloc(10)
    d.free(x[:3])
    before = (d.free_pages.tolist(), d.release_pages.tolist(), d.available_size())
    good_free, good_rel = d.backup_state()
    bad = [
        (torch.tensor([0, 20]), good_rel),                       # the padded page
        (torch.tensor([33]), good_rel),                          # out of range
        (torch.tensor([-1]), good_rel),
        (torch.tensor([20, 20]), good_rel),                      # named twice
        (good_free, torch.tensor([good_free[0].item()])),        # free and released
        (good_free.double(), good_rel),                          # floats
        (good_free,),                                            # not a pair
    ]
    for st in bad:
        with pytest.raises(ValueError):
            d.restore_state(st)
        assert (d.free_pages.tolist(), d.release_pages.tolist(), d.available_size()) == before
    d.hugekv_pool.check()
    d.restore_state((good_free, good_rel))
    assert (d.free_pages.tolist(), d.release_pages.tolist(), d.available_size()) == before


# --- LMCache ----------------------------------------------------------------

def _lm_counts(a):
    return (a.num_active_allocations, a.total_allocated_size, a.memcheck())


@pytest.mark.parametrize("spelling", ["plural", "singular"])
def test_lmcache_call_for_call(spelling):
    shape, dt = torch.Size([2, 4, 16]), torch.bfloat16
    nbytes = 2 * 4 * 16 * 2 * 50
    m = em.LMCachePagedAllocator(torch.empty(nbytes, dtype=torch.uint8), [shape], [dt])
    buf = torch.empty(nbytes, dtype=torch.uint8)
    if spelling == "plural":
        a = PagedTensorMemoryAllocator(tensor=buf, shapes=[shape], dtypes=[dt], fmt=None)
    else:   # how LMCache's own callers spell it
        a = PagedTensorMemoryAllocator(tensor=buf, shape=shape, dtype=dt, fmt=None)
    assert a.buffer.data_ptr() == buf.data_ptr()      # the buffer itself, no copy
    rng = random.Random(5)
    live_m, live_a = [], []
    for step in range(300):
        op = rng.random()
        if op < 0.3:
            x, y = m.allocate([shape], [dt]), a.allocate([shape], [dt])
            assert (x is None) == (y is None)
            if x is not None:
                live_m.append(x)
                live_a.append(y)
        elif op < 0.5:
            k = rng.choice([1, 3, 8, 20])
            x, y = m.batched_allocate([shape], [dt], k), a.batched_allocate([shape], [dt], k)
            assert (x is None) == (y is None)
            if x is not None:
                assert len(x) == len(y) == k
                live_m += x
                live_a += y
        elif op < 0.8 and live_m:
            i = rng.randrange(len(live_m))
            xm, xa = live_m.pop(i), live_a.pop(i)
            m.free(xm)
            a.free(xa)
            if rng.random() < 0.3:          # freed again: ignored by both
                m.free(xm)
                a.free(xa)
        elif live_m:
            k = min(len(live_m), rng.choice([2, 5]))
            m.batched_free(live_m[:k])
            a.batched_free(live_a[:k])
            del live_m[:k], live_a[:k]
        assert _lm_counts(m) == _lm_counts(a), step
    pages = [o.page for o in live_a]
    assert len(pages) == len(set(pages))


def test_lmcache_refuses_strided_buffers():
    shape, dt = torch.Size([4, 16]), torch.float32
    big = torch.empty(8, 2 * 64, dtype=torch.float32)
    with pytest.raises(ValueError, match="contiguous"):
        PagedTensorMemoryAllocator(tensor=big[:, :64], shape=shape, dtype=dt)
    with pytest.raises(ValueError, match="contiguous"):
        PagedTensorMemoryAllocator(big.t(), [shape], [dt])
    with pytest.raises(TypeError, match="not both"):
        PagedTensorMemoryAllocator(tensor=big, shapes=[shape], shape=shape, dtype=dt)
    a = PagedTensorMemoryAllocator(tensor=big, shape=shape, dtype=dt)
    o = a.allocate([shape], [dt])
    o.tensor.fill_(7.0)                       # writes land in the caller's buffer
    assert float(big.view(-1)[o.page * 64]) == 7.0


# --- vLLM ---------------------------------------------------------------------

def test_vllm_block_pool_call_for_call():
    m, b = em.VLLMBlockPool(64), Blocks(64)
    rng = random.Random(9)
    live_m, live_b = [], []
    for step in range(300):
        op = rng.random()
        if op < 0.45:
            k = rng.choice([1, 2, 5, 13])
            a, c = outcome(m._allocate_blocks, [0] * k), outcome(b._allocate_blocks, [0] * k)
            assert a[0] == c[0], (step, a, c)
            if a[0] == "ok":
                assert len(a[1]) == len(c[1]) == k
                assert type(c[1][0]) is em.VLLMBlockStatus and c[1][0].ref_cnt == -1
                live_m += a[1]
                live_b += c[1]
        elif op < 0.95 and live_m:
            i = rng.randrange(len(live_m))
            m._free_block(live_m.pop(i))
            b._free_block(live_b.pop(i))
        else:
            m.reset_cache()
            b.reset_cache()
            live_m, live_b = [], []
        assert m._get_num_free_blocks() == b._get_num_free_blocks(), step
    ids = [x.block_id for x in live_b]
    assert len(ids) == len(set(ids))
