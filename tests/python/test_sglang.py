# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""hugekv.sglang under stand-ins of SGLang's classes.

The stand-ins model what the mixins rely on: HostKVCache's constructor
(sizes from host_size or the device pool, page_num = size // page_size + 1,
an RLock, clear() at the end of __init__), BaseTokenToKVPoolAllocator's
constructor (free_pages / release_pages set to None first, clear() from the
subclass) and the free-group methods. The behaviours checked are those
SGLang's own allocator and host-pool tests check, written anew.
"""
import abc
import threading

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from hugekv.sglang import DevicePoolMixin, HostPoolMixin, HostTensorAllocator
from conftest import need_2m


class FakeDevicePool:
    def __init__(self, size):
        self.size, self.store_dtype = size, torch.bfloat16
        self.start_layer, self.end_layer = 0, 2


class HostKVCache(abc.ABC):
    """Stand-in: HostKVCache.__init__ as SGLang writes it, minus psutil/CUDA."""

    def __init__(self, device_pool, host_to_device_ratio, host_size, page_size, layout,
                 pin_memory, device, allocator_type="default"):
        self.device_pool, self.page_size, self.layout = device_pool, page_size, layout
        self.pin_memory, self.device = pin_memory, device
        self.dtype = device_pool.store_dtype
        self.size_per_token = self.get_size_per_token()
        if host_size > 0:
            self.size = int(host_size * 1e9 // self.size_per_token)
        else:
            self.size = int(device_pool.size * host_to_device_ratio)
        self.page_num = self.size // self.page_size + 1
        self.size = self.page_num * self.page_size
        self.kv_buffer = self.init_kv_buffer()
        self.lock = threading.RLock()
        self.clear()

    @abc.abstractmethod
    def get_size_per_token(self): ...

    @abc.abstractmethod
    def init_kv_buffer(self): ...

    def clear(self):
        raise AssertionError("the mixin's clear() must win")


class MHATokenToKVPoolHost(HostKVCache):
    def get_size_per_token(self):
        return 2 * 2 * 8 * 2        # layers * k/v * head_dim * bf16

    def init_kv_buffer(self):
        return torch.zeros((2, 2, self.size, 8), dtype=self.dtype)


class Host(HostPoolMixin, MHATokenToKVPoolHost):
    pass


def host(size=10, page_size=1):
    return Host(FakeDevicePool(size), 1.0, 0, page_size, "layer_first", False, "cpu")


def test_host_mro_and_sizes():
    h = host(9, 1)
    assert Host.__mro__.index(HostPoolMixin) < Host.__mro__.index(HostKVCache)
    assert h.size == 10 and h.available_size() == 10
    assert h.release_slots == [] and h.num_release_slots == 0
    assert h.free_slots.tolist() == list(range(10))
    assert h.hugekv_pool.npages == 10


def test_host_best_fit_from_low_end():
    h = host(9, 1)
    assert h.alloc(10).tolist() == list(range(10))
    h.free(torch.tensor([0, 1]))
    h.free(torch.tensor([6, 7, 8, 9]))
    assert h.available_size() == 6
    assert h.alloc(4).tolist() == [6, 7, 8, 9]
    assert h.alloc(2).tolist() == [0, 1]
    assert h.alloc(1) is None


def test_host_paged_alloc_free():
    h = host(15, 4)                            # page_num 4 -> 16 slots
    assert h.size == 16
    with pytest.raises(AssertionError, match="multiple of the page size"):
        h.alloc(3)
    a = h.alloc(8)
    assert a.dtype == torch.int64 and a.tolist() == list(range(8))
    assert h.free(a) == 8
    assert h.alloc(20) is None
    with pytest.raises(ValueError, match="page-aligned"):
        h.free(torch.tensor([1, 2, 3, 4]))
    assert h.available_size() == 16
    for size in (4.0, np.array([4]), "4", None, True):     # no token count: TypeError
        with pytest.raises(TypeError, match="need_size"):
            h.alloc(size)
    assert h.available_size() == 16
    assert h.free(h.alloc(np.int64(4))) == 4 and h.free(h.alloc(torch.tensor(4))) == 4


def test_host_double_free_names_the_slots():
    h = host(9, 1)
    a = h.alloc(4)
    h.free(a)
    with pytest.raises(AssertionError) as ei:
        h.free(torch.tensor([2, 3]))
    assert str(ei.value) == "Double-free detected: slots not currently allocated: [2, 3]."
    b = h.alloc(3)
    with pytest.raises(AssertionError, match=r"\[1\]"):
        h.free(torch.tensor([0, 1, 1]))
    assert h.available_size() == 7             # nothing freed by the failed calls
    assert h.free(torch.tensor([], dtype=torch.int64)) == 0
    h.free(b)


def test_host_free_slots_is_read_only():
    h = host(4, 1)
    with pytest.raises(AttributeError, match="read-only"):
        h.free_slots = torch.arange(3)
    with pytest.raises(AttributeError, match="read-only"):
        h.release_slots = [torch.arange(2)]


def test_host_clear_and_lock():
    h = host(8, 1)
    h.alloc(5)
    h.clear()
    assert h.available_size() == 9
    assert isinstance(h.lock, type(threading.RLock()))


def test_host_threads_share_the_lock():
    h = host(4095, 1)
    out = []

    def work():
        mine = []
        for _ in range(200):
            a = h.alloc(8)
            if a is not None:
                mine.append(a)
            if len(mine) > 10:
                h.free(mine.pop(0))
        out.extend(mine)
    ts = [threading.Thread(target=work) for _ in range(3)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    allocated = torch.cat(out).tolist()
    assert len(allocated) == len(set(allocated))
    assert h.available_size() == 4096 - len(allocated)


class BaseTokenToKVPoolAllocator(abc.ABC):
    """Stand-in of SGLang's base: attributes first, clear() in subclasses."""

    def __init__(self, size, page_size, dtype, device, kvcache, need_sort):
        self.size, self.page_size, self.dtype, self.device = size, page_size, dtype, device
        self._kvcache, self.need_sort = kvcache, need_sort
        self.free_pages = None
        self.release_pages = None
        self.is_not_in_free_group = True
        self.free_group = []

    def free_group_begin(self):
        self.is_not_in_free_group = False
        self.free_group = []

    def free_group_end(self):
        self.is_not_in_free_group = True
        if self.free_group:
            self.free(torch.cat(self.free_group))


class TokenToKVPoolAllocator(BaseTokenToKVPoolAllocator):
    def __init__(self, size, dtype, device, kvcache, need_sort):
        super().__init__(size, 1, dtype, device, kvcache, need_sort)
        self.clear()

    def clear(self):
        raise AssertionError("the mixin's clear() must win")


class PagedTokenToKVPoolAllocator(BaseTokenToKVPoolAllocator):
    def __init__(self, size, page_size, dtype, device, kvcache, need_sort):
        super().__init__(size, page_size, dtype, device, kvcache, need_sort)
        self.num_pages = size // page_size
        self.clear()

    def clear(self):
        raise AssertionError("the mixin's clear() must win")


class Dev(DevicePoolMixin, TokenToKVPoolAllocator):
    pass


class PagedDev(DevicePoolMixin, PagedTokenToKVPoolAllocator):
    pass


@pytest.mark.parametrize("need_sort", [True, False])
def test_token_allocator_basics(need_sort):
    a = Dev(16, torch.bfloat16, "cpu", None, need_sort)
    assert a.available_size() == 16
    x = a.alloc(4)
    assert x.tolist() == [1, 2, 3, 4]           # slot 0 is the padded slot
    assert a.free_pages.tolist() == list(range(5, 17))
    assert a.release_pages.numel() == 0
    assert a.alloc(13) is None and a.available_size() == 12
    a.free(x)
    a.merge_and_sort_free()
    assert a.free_pages.tolist() == list(range(1, 17))
    all_ = a.alloc(16)
    assert 0 not in all_.tolist() and a.alloc(1) is None
    with pytest.raises(AssertionError, match=r"not currently allocated: \[0\]\."):
        a.free(torch.tensor([0]))           # the padded slot is never the caller's
    a.free(all_)
    with pytest.raises(AssertionError, match="Double-free detected"):
        a.free(torch.tensor([3]))
    a.clear()
    assert a.available_size() == 16


def test_free_group_batches_frees():
    a = Dev(16, torch.bfloat16, "cpu", None, True)
    x, y = a.alloc(2), a.alloc(3)
    a.free_group_begin()
    a.free(x)
    a.free(y)
    assert a.available_size() == 11            # held until the group ends
    a.free_group_end()
    assert a.available_size() == 16


def test_backup_and_restore_state():
    a = Dev(32, torch.bfloat16, "cpu", None, True)
    keep = a.alloc(5)
    state = a.backup_state()
    x = a.alloc(7)
    a.free(keep[:2])
    a.restore_state(state)
    assert a.available_size() == 27 and a.free_pages.tolist() == list(range(6, 33))
    a.free(keep)
    with pytest.raises(AssertionError):
        a.free(x)                               # rolled back: x is free again
    with pytest.raises(ValueError):
        a.restore_state((None, None))
    with pytest.raises(AttributeError, match="read-only"):
        a.free_pages = torch.arange(3)


def test_paged_alloc_is_page_aligned_and_contiguous(monkeypatch):
    monkeypatch.setenv("SGLANG_DEBUG_MEMORY_POOL", "1")
    a = PagedDev(64, 4, torch.bfloat16, "cpu", None, True)
    assert a.available_size() == 64
    with pytest.raises(AssertionError, match="page-aligned"):
        a.alloc(6)
    for size in (8.0, 2.0, np.array([8]), "8"):     # 2.0 // 4 is 0.0: no empty answer
        with pytest.raises(TypeError, match="need_size"):
            a.alloc(size)
    x = a.alloc(8)
    assert x.tolist() == list(range(4, 12))
    a.free(x[:3])                               # any token of a page frees the page
    assert a.available_size() == 60
    a.free(x[4:])
    assert a.available_size() == 64


def test_paged_alloc_extend_and_decode(monkeypatch):
    monkeypatch.setenv("SGLANG_DEBUG_MEMORY_POOL", "1")
    ps = 4
    a = PagedDev(64, ps, torch.bfloat16, "cpu", None, True)
    # request 0 is new (7 tokens); request 1 has 2 tokens on page 5 (slots 20, 21)
    a.free_group_begin()
    a.free_group_end()
    held = a.alloc(4 * ps)                      # pages 1..4
    assert held.tolist()[0] == 4
    taken = a.alloc(ps)                         # page 5: request 1's page
    pre = torch.tensor([0, 2])
    seq = torch.tensor([7, 9])
    last = torch.tensor([-1, 21])
    with pytest.raises(ValueError, match="extend_num_tokens"):
        a.alloc_extend(pre, pre, seq, seq, last, 12)
    assert a.available_size() == 64 - 20        # the refused call took nothing
    out = a.alloc_extend(pre, pre, seq, seq, last, 14)
    o = out.tolist()
    # request 0: new pages 6, 7; request 1: slots 22, 23 of its page, then pages 8, 9
    assert o[:7] == [24, 25, 26, 27, 28, 29, 30]
    assert o[7:] == [22, 23, 32, 33, 34, 35, 36]
    d = a.alloc_decode(torch.tensor([8, 10]), torch.tensor([8, 10]), torch.tensor([30, 36]))
    assert d.tolist() == [31, 37]               # both still inside their pages
    d2 = a.alloc_decode(torch.tensor([9]), torch.tensor([9]), torch.tensor([31]))
    assert d2.tolist() == [40]                  # a new page
    before = a.available_size()
    assert a.alloc_extend(torch.tensor([0]), torch.tensor([0]), torch.tensor([400]),
                          torch.tensor([400]), torch.tensor([-1]), 400) is None
    assert a.available_size() == before         # nothing taken
    a.free(torch.cat([held, taken, out, d, d2]))
    assert a.available_size() == 64


def test_host_tensor_allocator_on_hugepages():
    need_2m(4)
    alloc = HostTensorAllocator(backing="2m", chunk_bytes=1 << 20)
    t = alloc.allocate((64, 2, 1024), torch.bfloat16, "cpu")   # 4 KiB rows
    assert t.shape == (64, 2, 1024) and t.dtype == torch.bfloat16
    t.fill_(3.0)
    assert float(t.sum()) == 3.0 * t.numel()
    assert alloc.dims == (64, 2, 1024) and alloc.dtype == torch.bfloat16
    pool = alloc.pool_of(t)
    assert pool.regions()[0]["hugepage_bytes"] == 2 << 20
    rng = alloc.registration_ranges(t)
    assert sum(n for _, n in rng) == 64 * 4096 and all(n <= 1 << 20 for _, n in rng)
    assert rng[0][0] == t.data_ptr()
    with pytest.raises(AssertionError, match="CPU"):
        alloc.allocate((4, 4), torch.float32, "cuda")
    with pytest.raises(ValueError):
        alloc.allocate((0, 4), torch.float32, "cpu")
