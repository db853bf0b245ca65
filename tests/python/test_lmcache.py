# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""hugekv.lmcache.PagedTensorMemoryAllocator: LMCache's paged allocator
behaviours (allocate until full, batched all-or-nothing, free and reuse,
smaller-than-page objects, in-place writes, memcheck) on hugekv."""
import pytest

torch = pytest.importorskip("torch")

import hugekv
from hugekv.lmcache import MemoryFormat, PagedTensorMemoryAllocator
from conftest import need_2m

SHAPE = torch.Size([2, 4, 16, 64])          # kv, layers, tokens, hidden: 16 KiB of bf16


def make(npages=64, **kw):
    return PagedTensorMemoryAllocator(npages * 16384, [SHAPE], [torch.bfloat16],
                                      MemoryFormat.KV_2LTD, backing="4k", **kw)


def test_allocate_until_full_then_none():
    a = make(8)
    objs = [a.allocate(SHAPE, torch.bfloat16) for _ in range(8)]
    assert all(o is not None for o in objs)
    assert sorted(o.meta.address for o in objs) == list(range(8))
    assert a.allocate(SHAPE, torch.bfloat16) is None
    assert a.memcheck()
    a.free(objs[3])
    again = a.allocate(SHAPE, torch.bfloat16)
    assert again.meta.address == 3
    a.batched_free(objs[:3] + objs[4:] + [again])
    assert a.memcheck() and a.pool.available == 8
    a.close()


def test_batched_allocate_all_or_nothing_and_contiguous():
    a = make(16)
    one = a.allocate(SHAPE, torch.bfloat16)
    batch = a.batched_allocate(SHAPE, torch.bfloat16, 10)
    assert [o.meta.address for o in batch] == list(range(1, 11))
    assert a.descriptors(batch).shape == (1, 2)    # one run: one descriptor
    assert a.batched_allocate(SHAPE, torch.bfloat16, 6) is None
    assert a.pool.available == 5 and a.memcheck()
    assert a.batched_allocate(SHAPE, torch.bfloat16, 0) == []
    a.batched_free(batch)
    a.free(one)
    assert a.memcheck() and a.num_active_allocations == 0
    a.close()


def test_inplace_write_and_smaller_object():
    a = make(4)
    o = a.allocate(SHAPE, torch.bfloat16)
    o.tensor.fill_(2.5)
    assert float(a.buffer[o.meta.address * 16384:][:16384].view(torch.bfloat16)[0]) == 2.5
    small = a.allocate(torch.Size([4, 64]), torch.float32)        # 1 KiB in a 16 KiB page
    assert small.tensor.shape == (4, 64) and small.get_size() == 1024
    assert small.get_physical_size() == 16384
    with pytest.raises(ValueError, match="does not fit"):
        a.allocate(torch.Size([2, 4, 16, 65]), torch.bfloat16)
    a.batched_free([o, small])
    assert not o.is_valid() and o.tensor is None
    a.free(o)                                      # an invalid object: ignored
    assert a.memcheck()
    a.close()


def test_ref_count_down_frees():
    a = make(2)
    o = a.allocate(SHAPE, torch.bfloat16)
    o.ref_count_up()
    o.ref_count_down()
    assert o.is_valid()
    o.ref_count_down()
    assert not o.is_valid() and a.pool.available == 2
    a.close()


def test_over_an_lmcache_buffer_and_errors():
    buf = torch.zeros(4 * 16384, dtype=torch.uint8)
    a = PagedTensorMemoryAllocator(buf, [SHAPE], [torch.bfloat16])
    o = a.allocate(SHAPE, torch.bfloat16)
    o.tensor.fill_(1)
    assert buf.view(torch.bfloat16)[0] == 1 and o.data_ptr() == buf.data_ptr()
    with pytest.raises(ValueError, match="not allocated by this"):
        make(2).free(o)
    a.free(o)
    with pytest.raises(AssertionError, match="multiple of align bytes"):
        PagedTensorMemoryAllocator(torch.zeros(100, dtype=torch.uint8), [SHAPE], [torch.bfloat16])
    with pytest.raises(ValueError):
        PagedTensorMemoryAllocator(1000, [SHAPE], [torch.bfloat16])
    with pytest.raises(TypeError):
        PagedTensorMemoryAllocator("x", [SHAPE], [torch.bfloat16])


def test_bad_shapes_and_a_batch_naming_an_object_twice():
    a = make(4)
    for shape in (torch.Size([-1]), torch.Size([2, -4]),
                  torch.Size([2 ** 40, 2 ** 40]),        # 2^81 bytes: wraps int64
                  torch.Size([2 ** 32, 2 ** 32, 4])):    # 2^66 elements: wraps to 0
        with pytest.raises(ValueError):
            a.allocate(shape, torch.bfloat16)
    assert a.num_active_allocations == 0 and a.pool.available == 4
    o, p = a.allocate(SHAPE, torch.bfloat16), a.allocate(SHAPE, torch.bfloat16)
    a.batched_free([o, p, o])            # freed once each, as free() twice would
    assert not o.is_valid() and not p.is_valid()
    assert a.num_active_allocations == 0 and a.pool.available == 4 and a.memcheck()


def test_on_hugepages_and_a_given_pool():
    need_2m(4)
    a = PagedTensorMemoryAllocator(128 * 16384, [SHAPE], [torch.bfloat16], backing="2m",
                                   strict=True)
    assert a.pool.regions()[0]["hugepage_bytes"] == 2 << 20
    objs = a.batched_allocate(SHAPE, torch.bfloat16, 128)
    for i, o in enumerate(objs):
        o.tensor.fill_(i % 7)
    assert all(float(o.tensor[0, 0, 0, 0]) == i % 7 for i, o in enumerate(objs))
    a.batched_free(objs)
    a.close()
    with hugekv.Pool(8, 16384, backing="4k") as p:
        b = PagedTensorMemoryAllocator(p, [SHAPE], [torch.bfloat16])
        assert b.allocate(SHAPE, torch.bfloat16).data_ptr() == p.page_ptr(0)
        b.close()                                  # not its pool: stays open
        assert not p.closed
