# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""hugekv.Pool: one pool of KV pages, its extents, units and memory.

Extents are numpy int64 arrays of shape (k, 2), rows (start, len). Every
call either succeeds or raises and changes nothing (a CallbackError is the
one exception to raising-means-nothing-happened: see on_evict()).

Threads: ctypes releases the GIL for the length of every C call, so calls
from several Python threads run in the library at the same time, with the
library's own locking (calls on different lanes do not contend). Each
thread gets its own extent buffer.

Lifetime: a Pool is the one owner of its C pool: it cannot be copied,
deep-copied or pickled (TypeError; the original is untouched). close() (or
leaving the ``with`` block) refuses new calls at once, waits for calls
other threads have in flight, then destroys the C pool; from inside this
pool's eviction callback it refuses (Error EDEADLK), as the call that runs
the callback is still in flight. The memory of a pool whose pages are
still viewed (page_view, as_array, as_tensor, a zero-copy free_slots)
stays mapped until the last of those views is released, and is unmapped
then: a view never dangles.

fork(): a pool belongs to the process that created it; its memory is not
mapped in a child (MADV_DONTFORK). In a child every call on an inherited
pool raises Error(ECHILD), the memory-handing ones (page_ptr, page_view,
as_array, as_tensor, regions, descriptors, ...) included; close() there
frees the child's copy of the bookkeeping. Views made before the fork
must not be touched in the child.
"""
from __future__ import annotations

import ctypes
import errno
import operator
import os
import threading
import time
import weakref
from typing import Any, Callable, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _lib
from ._lib import Error, CallbackError, OutOfPages, error, lib

LANE_ANY = _lib.LANE_ANY
_U64_MAX = (1 << 64) - 1
_I64_MAX = (1 << 63) - 1
_I64 = np.dtype(np.int64)
_EMPTY = np.zeros((0, 2), dtype=np.int64)
_BUF_ROWS = 64
_hkv_alloc, _hkv_free = lib.hkv_alloc, lib.hkv_free     # hot path: no lookups
_NOCOPY = ("hugekv.Pool owns its C pool and cannot be copied, deep-copied or "
           "pickled; share the object itself")

ExtentsLike = Union[np.ndarray, Sequence[Sequence[int]], Any]

# the fork generation this process is in: a child's pools are not its own
_fork_gen = [0]


def _forked():
    _fork_gen[0] += 1


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked)


class _Handle:
    """Owns the C pool; hkv_pool_destroy() runs when the last reference
    (the Pool, a call in flight, or a view's keeper) is gone.

    ``inflight`` holds one entry per call in flight (list append and pop
    are atomic under the GIL); ``closing`` refuses new calls."""

    live = 0  # handles not yet destroyed, all pools (tests read it)

    def __init__(self, ptr):
        self.ptr = ptr
        self.gen = _fork_gen[0]
        self.inflight = []
        self.closing = False
        self.evict_cb = None   # the ctypes callback the C pool points at
        self.old_cbs = []      # replaced callbacks: another thread may be in one
        _Handle.live += 1

    def __reduce_ex__(self, protocol):
        raise TypeError(_NOCOPY)

    def __copy__(self):
        raise TypeError(_NOCOPY)

    def __deepcopy__(self, memo):
        raise TypeError(_NOCOPY)

    def __del__(self):
        if self.ptr:
            lib.hkv_pool_destroy(self.ptr)
            self.ptr = None
            _Handle.live -= 1


class _Mem:
    """A raw byte range numpy can view; holds the handle that keeps it mapped."""

    def __init__(self, handle, addr, nbytes, writable=True):
        self.handle = handle
        self.__array_interface__ = {"shape": (nbytes,), "typestr": "|u1",
                                    "data": (addr, not writable), "version": 3}


class _Call:
    """``with pool._call() as ptr``: one call in flight (close() waits for it)."""

    __slots__ = ("pool", "fl")

    def __init__(self, pool):
        self.pool = pool

    def __enter__(self):
        h = self.pool._handle()
        fl = h.inflight
        fl.append(None)
        if h.closing:
            fl.pop()
            raise ValueError("operation on a closed hugekv.Pool")
        self.fl = fl
        return h.ptr

    def __exit__(self, *exc):
        self.fl.pop()
        return False


def _index(v, what, lo=0, hi=_U64_MAX):
    """v as an int in [lo, hi], else TypeError/ValueError naming @what."""
    if isinstance(v, bool):
        raise TypeError(f"{what} must be an integer, not bool")
    try:
        v = operator.index(v)
    except TypeError:
        raise TypeError(f"{what} must be an integer, not {type(v).__name__}") from None
    if v < lo or v > hi:
        raise ValueError(f"{what} must be in [{lo}, {hi}], got {v}")
    return v


def _lane_index(v, nlanes):
    """v as a lane of a pool of @nlanes lanes, or LANE_ANY, else
    TypeError/ValueError."""
    v = _index(v, "lane")
    if v != LANE_ANY and v >= nlanes:
        raise ValueError(f"lane must be in [0, {nlanes - 1}] or hugekv.LANE_ANY, got {v}")
    return v


def as_extents(extents: ExtentsLike) -> np.ndarray:
    """extents as a C-contiguous int64 (k, 2) numpy array (copied only when
    needed). Accepts numpy arrays, torch tensors, (start, len) pairs.
    Refuses rows whose start + len does not fit int64 (ValueError)."""
    if type(extents) is np.ndarray and extents.dtype == _I64:
        a = extents
    elif hasattr(extents, "detach") and hasattr(extents, "numpy"):   # torch
        a = extents.detach().cpu().numpy()
    else:
        a = np.asarray(extents)
        if a.size == 0:
            a = a.reshape(0, 2)
    if a.dtype != _I64:
        if a.dtype.kind not in "iu":
            raise TypeError(f"extents must hold integers, not {a.dtype}")
        if a.dtype.kind == "u" and a.size and int(a.max()) > _I64_MAX:
            raise ValueError("extent values out of range")
        a = a.astype(np.int64)
    if a.ndim == 1 and a.shape[0] == 2:
        a = a.reshape(1, 2)
    if a.ndim != 2 or a.shape[1] != 2:
        raise ValueError(f"extents must have shape (k, 2) rows (start, len), got {a.shape}")
    if not a.flags.c_contiguous:
        a = np.ascontiguousarray(a)
    if a.shape[0] and ((a[:, 1] > 0) & (a[:, 0] > _I64_MAX - a[:, 1])).any():
        raise ValueError("an extent's start + len overflows int64")
    return a


def _outside(a, npages):
    """Row mask: empty, negative, or not inside [0, npages) (no overflow:
    start is bounded before len is compared with what is left)."""
    s, n = a[:, 0], a[:, 1]
    return (n <= 0) | (s < 0) | (s > npages) | (n > npages - np.clip(s, 0, npages))


def _bad_extents(a, npages):
    """Why the library refused extents: a message for the common causes."""
    if (a[:, 1] <= 0).any():
        return "an extent has len <= 0"
    if _outside(a, npages).any():
        return f"an extent is outside the pool's {npages} pages"
    return "pages not allocated, or named twice"


class Pool:
    """A pool of ``npages`` KV pages of ``page_bytes`` bytes (0: index-only).

    backing: "auto" (1G -> 2M -> THP -> 4K), "1g", "2m", "thp", "4k", as
    HUGEKV_BACKING spells it; ignored for index-only pools. strict: fail
    rather than fall back. free_room: (low, high) watermark fractions for
    allocations with evict=True. chunk_bytes: registration chunk cap (extents
    never cross one). evict_window: victim window among the coldest units.
    label: a short human label (at most 63 bytes, no control characters)
    shown beside the pool's id by its stats, its metrics and the tools.
    """

    npages: int
    page_bytes: int
    nlanes: int
    name: Optional[str]     # a named pool's name, else None

    def __init__(self, npages: int, page_bytes: int = 0, *, nlanes: int = 1,
                 backing: str = "auto", numa_node: int = -1, strict: bool = False,
                 prefault: bool = True, prefault_threads: int = 0,
                 free_room: Tuple[float, float] = (0.0, 0.0), chunk_bytes: int = 0,
                 evict_window: int = 0, name: Optional[str] = None,
                 label: Optional[str] = None) -> None:
        self._h = None
        o = self._opts(
            npages, page_bytes, nlanes=nlanes, backing=backing, numa_node=numa_node,
            strict=strict, prefault=prefault, prefault_threads=prefault_threads,
            free_room=free_room, chunk_bytes=chunk_bytes, evict_window=evict_window,
            label=label)
        if name is not None:
            o.name = _pool_name(name)
        self._adopt(self._create(o))
        self.name = name
        self.free_room = (o.free_room_low, o.free_room_high)   # hugekv.prometheus

    @staticmethod
    def _opts(npages, page_bytes, *, nlanes, backing, numa_node, strict, prefault,
              prefault_threads, free_room, chunk_bytes, evict_window, label=None):
        """A checked struct hkv_pool_opts (named pools add their fields here)."""
        npages = _index(npages, "npages", 1)
        page_bytes = _index(page_bytes, "page_bytes")
        nlanes = _index(nlanes, "nlanes", 1, 0xFFFFFFFE)
        if not isinstance(backing, str) or backing.lower() not in _lib.BACKINGS:
            raise ValueError(f"backing must be one of {sorted(_lib.BACKINGS)}, got {backing!r}")
        numa_node = _index(numa_node, "numa_node", -1, 1 << 30)
        prefault_threads = _index(prefault_threads, "prefault_threads", 0, 0xFFFFFFFF)
        chunk_bytes = _index(chunk_bytes, "chunk_bytes")
        evict_window = _index(evict_window, "evict_window", 0, 0xFFFFFFFF)
        try:
            low, high = (float(x) for x in free_room)
        except (TypeError, ValueError):
            raise TypeError("free_room must be a pair of floats (low, high)") from None
        if not (0.0 <= low <= high <= 1.0):
            raise ValueError(f"free_room must satisfy 0 <= low <= high <= 1, got {free_room!r}")
        o = _lib.PoolOpts()
        o.sz = ctypes.sizeof(o)
        o.npages, o.page_bytes, o.nlanes = npages, page_bytes, nlanes
        o.backing = _lib.BACKINGS[backing.lower()] if page_bytes else _lib.BACKING_NONE
        o.numa_node = numa_node
        o.flags = (_lib.POOL_STRICT if strict else 0) | (0 if prefault else _lib.POOL_NO_PREFAULT)
        o.prefault_threads = prefault_threads
        o.free_room_low, o.free_room_high = low, high
        o.chunk_bytes, o.evict_window = chunk_bytes, evict_window
        if label is not None:
            if not isinstance(label, str):
                raise TypeError(f"label must be a str, got {type(label).__name__}")
            if "\0" in label:            # C would keep only what comes before it
                raise ValueError("label contains a NUL character")
            o.label = label.encode()      # kept by o until create; the library copies it
        return o

    # --- named pools: one pool for many processes, across restarts ------

    @classmethod
    def attach(cls, name: str) -> "Pool":
        """The named pool ``name`` (made by Pool(..., name=name) in this or
        another process, possibly one that has exited): every call works on
        it; close() detaches, the pool and its units stay. Raises Error:
        ENOENT (no such pool), EPERM (another owner, writable by others, a
        symlink), EPROTO (another layout version), EADDRINUSE (attached
        already in this process)."""
        out = ctypes.c_void_p()
        err = lib.hkv_pool_attach(_pool_name(name), 0, ctypes.byref(out))
        if err:
            raise error(err, f"attaching the named pool {name!r}")
        self = cls.__new__(cls)
        self._h = None
        self._adopt(out.value)
        self.name = name
        return self

    @staticmethod
    def unlink(name: str, force: bool = False) -> None:
        """Remove the named pool's files; refused (Error EBUSY) while a live
        process is attached, unless ``force``."""
        err = lib.hkv_pool_unlink_flags(_pool_name(name), _lib.UNLINK_FORCE if force else 0)
        if err:
            raise error(err, f"removing the named pool {name!r}")

    def info(self) -> dict:
        """A named pool's description: name, geometry, the attached pids,
        recoveries and what they gave back (hkv_pool_info)."""
        i = _lib.NamedInfo()
        i.sz = ctypes.sizeof(i)
        with self._call() as h:
            err = lib.hkv_pool_info(h, ctypes.byref(i))
        if err:
            raise error(err, "hkv_pool_info")
        out = {k: getattr(i, k) for k, _ in i._fields_ if k not in ("sz", "name", "pids")}
        out["name"] = i.name.decode()
        out["pids"] = list(i.pids[:i.nattached])
        out["backing"] = _lib.BACKING_NAMES.get(i.backing, i.backing)
        return out

    def unit_list(self) -> np.ndarray:
        """The ids of the pool's units (numpy uint64), in no order: after a
        restart, the cache this process can serve hits from."""
        with self._call() as h:
            while True:
                n = lib.hkv_unit_list(h, None, 0)
                if n < 0:
                    raise error(n, "hkv_unit_list")
                ids = np.empty(n + 64, dtype=np.uint64)
                got = lib.hkv_unit_list(h, ids.ctypes.data, ids.size)
                if got < 0:
                    raise error(got, "hkv_unit_list")
                if got <= ids.size:
                    return ids[:got].copy()

    def unit_extents(self, unit: int) -> np.ndarray:
        """A unit's extents in its page order, int64 (k, 2)."""
        unit = _index(unit, "unit")
        with self._call() as h:
            rows = _BUF_ROWS
            while True:
                buf = np.empty((rows, 2), dtype=np.uint64)
                k = lib.hkv_unit_extents(h, unit, buf.ctypes.data, rows)
                if k < 0:
                    raise error(k, f"hkv_unit_extents of unit {unit}")
                if k <= rows:
                    return buf[:k].astype(np.int64)
                rows = k

    def unit_seal(self, unit: int) -> None:
        """Record a checksum (XXH3) of the unit's bytes, kept with the unit."""
        self._unit_call(lib.hkv_unit_seal, "hkv_unit_seal", unit)

    def unit_verify(self, unit: int) -> bool:
        """True if the unit's bytes are the ones sealed, False if they
        changed; Error ENODATA if it was never sealed."""
        unit = _index(unit, "unit")
        with self._call() as h:
            err = lib.hkv_unit_verify(h, unit)
        if err == -errno.EBADMSG:
            return False
        if err:
            raise error(err, f"hkv_unit_verify of unit {unit}")
        return True

    @staticmethod
    def _create(o):
        """hkv_pool_create(): the new C pool's address."""
        out = ctypes.c_void_p()
        err = lib.hkv_pool_create(ctypes.byref(o), ctypes.byref(out))
        if err:
            raise error(err, f"creating a pool of {o.npages} pages of {o.page_bytes} bytes "
                             f"(backing {_lib.BACKING_NAMES.get(o.backing, o.backing)!r}, "
                             f"node {o.numa_node})")
        return out.value

    def _adopt(self, ptr):
        """Become the owner of the C pool at @ptr (created or attached): the
        geometry is read back from the library."""
        self._h = _Handle(ptr)
        st = _lib.Stats()
        st.sz = ctypes.sizeof(st)
        err = lib.hkv_stats(ptr, ctypes.byref(st))
        if err:
            self._h = None          # the handle destroys the C pool
            raise error(err, "hkv_stats of a new pool")
        self.npages, self.page_bytes, self.nlanes = int(st.npages), int(st.page_bytes), \
            int(st.nlanes)
        self._tls = threading.local()
        self._slots_keeper = None   # weakref to the last zero-copy free_slots view
        self._cb_threads = set()    # threads running this pool's evict callback
        pb, n = self.page_bytes, self.npages
        self._base = lib.hkv_page_ptr(ptr, 0) if pb else None
        # views address page p at base + p * page_bytes: the arena is one range
        if pb and lib.hkv_page_ptr(ptr, n - 1) != self._base + (n - 1) * pb:
            self._base = None

    # --- lifetime -------------------------------------------------------

    def close(self, timeout: Optional[float] = None) -> None:
        """End the pool (idempotent): new calls raise at once; calls other
        threads have in flight are waited for (up to @timeout seconds, then
        Error(EBUSY) and the pool stays open); then the C pool is destroyed,
        or when the last view of its memory is released.

        From inside this pool's eviction callback it raises Error(EDEADLK)
        and changes nothing."""
        h = self._h
        if h is None:
            return
        if self._cb_threads and threading.get_ident() in self._cb_threads:
            raise Error(errno.EDEADLK, "close() from inside this pool's eviction callback: "
                                       "the call that runs the callback is still in flight")
        h.closing = True
        if h.gen == _fork_gen[0]:      # a child has none of the parent's threads
            deadline = None if timeout is None else time.monotonic() + timeout
            pause = 1e-5
            while h.inflight:
                if deadline is not None and time.monotonic() >= deadline:
                    h.closing = False
                    raise Error(errno.EBUSY, f"close(): {len(h.inflight)} call(s) still in "
                                             f"flight after {timeout} s; the pool stays open")
                time.sleep(pause)
                pause = min(pause * 2, 2e-3)
        self._h = None      # the handle's __del__ destroys, unless views hold it

    @property
    def closed(self) -> bool:
        return self._h is None

    def __enter__(self) -> "Pool":
        self._handle()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        h = getattr(self, "_h", None)
        if h is not None:
            h.closing = True
            self._h = None

    def __reduce_ex__(self, protocol):
        raise TypeError(_NOCOPY)

    def __copy__(self):
        raise TypeError(_NOCOPY)

    def __deepcopy__(self, memo):
        raise TypeError(_NOCOPY)

    def __repr__(self):
        if self._h is None:
            return "<hugekv.Pool closed>"
        return (f"<hugekv.Pool id={self.id} npages={self.npages} page_bytes={self.page_bytes} "
                f"nlanes={self.nlanes} available={self.available}>")

    def _handle(self):
        """The live handle, else the exception that says why not."""
        h = self._h
        if h is None or h.closing:
            raise ValueError("operation on a closed hugekv.Pool")
        if h.gen != _fork_gen[0]:
            raise Error(errno.ECHILD, f"{_lib.strerror(errno.ECHILD)}: this pool belongs to "
                                      f"the parent process (pid {os.getppid()})")
        if self._cb_threads and threading.get_ident() in self._cb_threads:
            raise Error(errno.EDEADLK, "the eviction callback must not call into its pool")
        return h

    def _live(self):
        """The C pool's address for a call that needs no in-flight record
        (one C call that reads nothing the destroy frees)."""
        return self._handle().ptr

    def _call(self):
        return _Call(self)

    def _buf(self, rows):
        """This thread's extent buffer of at least @rows rows: (buf, addr, rows)."""
        tls = self._tls
        b = getattr(tls, "b", None)
        if b is None or b[2] < rows:
            buf = np.empty((max(rows, _BUF_ROWS), 2), dtype=np.int64)
            b = tls.b = (buf, buf.ctypes.data, buf.shape[0])
        return b

    # --- pages ----------------------------------------------------------

    @property
    def id(self) -> int:
        """The pool's id, as trace probes carry it."""
        with self._call() as ptr:
            return lib.hkv_pool_id(ptr)

    @property
    def available(self) -> int:
        """Free pages (O(1))."""
        with self._call() as ptr:
            return lib.hkv_available(ptr)

    def alloc(self, npages: int, lane: int = LANE_ANY, *, contig: bool = False,
              evict: bool = False) -> np.ndarray:
        """Allocate npages: int64 (k, 2) extents, largest first; one extent
        whenever a free run of npages exists (best fit, low end first).
        Raises OutOfPages (nothing taken), ValueError for bad arguments."""
        h = self._h
        if h is None or self._cb_threads:
            h = self._handle()
        if type(npages) is not int or npages <= 0 or npages > _U64_MAX:
            npages = _index(npages, "npages", 1)
        if type(lane) is not int or (lane != LANE_ANY and not 0 <= lane < self.nlanes):
            lane = _lane_index(lane, self.nlanes)
        flags = (1 if contig else 0) | (2 if evict else 0) if contig or evict else 0
        try:
            buf, bufp, rows = self._tls.b
        except AttributeError:
            buf, bufp, rows = self._buf(_BUF_ROWS)
        if evict:
            self._tls.evict_errors = []       # the callback runs on this thread
        fl = h.inflight
        fl.append(None)
        try:
            if h.closing:
                raise ValueError("operation on a closed hugekv.Pool")
            n = _hkv_alloc(h.ptr, npages, lane, flags, bufp, rows)
            while n == -errno.ENOSPC:
                buf, bufp, rows = self._buf(rows * 8)
                n = lib.hkv_alloc(h.ptr, npages, lane, flags, bufp, rows)
            if n < 0:
                raise self._alloc_error(h, n, npages, lane, contig, evict)
        finally:
            fl.pop()
        out = buf[:n].copy()
        if evict and self._tls.evict_errors:
            self._raise_cb(out)
        return out

    def _alloc_raw(self, npages):
        """hkv_alloc(npages) from any lane for adapters: (n, buf) with the
        extents in buf[:n], this thread's buffer, valid until its next
        call; n is -ENOMEM when the pool is short (nothing taken)."""
        h = self._h
        if h is None or self._cb_threads:
            h = self._handle()
        try:
            buf, bufp, rows = self._tls.b
        except AttributeError:
            buf, bufp, rows = self._buf(_BUF_ROWS)
        fl = h.inflight
        fl.append(None)
        try:
            if h.closing:
                raise ValueError("operation on a closed hugekv.Pool")
            n = _hkv_alloc(h.ptr, npages, LANE_ANY, 0, bufp, rows)
            while n == -errno.ENOSPC:
                buf, bufp, rows = self._buf(rows * 8)
                n = lib.hkv_alloc(h.ptr, npages, LANE_ANY, 0, bufp, rows)
            if n < 0 and n != -errno.ENOMEM:
                raise self._alloc_error(h, n, npages, LANE_ANY, False, False)
        finally:
            fl.pop()
        return n, buf

    def _alloc_error(self, h, err, npages, lane, contig, evict):
        what = (f"alloc({npages}, lane={'any' if lane == LANE_ANY else lane}"
                f"{', contig' if contig else ''}{', evict' if evict else ''})")
        if err != -errno.ENOMEM:
            return error(err, what)
        free = lib.hkv_available(h.ptr)
        if contig and free >= npages:
            why = f"no free run of {npages} contiguous pages ({free} pages free, fragmented)"
        elif lane != LANE_ANY:
            why = f"not enough free pages in lane {lane} ({free} free in the pool)"
        else:
            why = f"not enough free pages: {npages} asked, {free} free of {self.npages}"
        return OutOfPages(errno.ENOMEM, f"{why}: {what}")

    def alloc_lanes(self, counts: Sequence[int]) -> np.ndarray:
        """counts[i] pages from lane i, all or nothing: extents, lane by lane."""
        self._handle()
        if len(counts) != self.nlanes:
            raise ValueError(f"counts needs one entry per lane ({self.nlanes}), got {len(counts)}")
        c = np.array([_index(x, "count") for x in counts], dtype=np.uint64)
        total = int(c.sum())
        if total == 0:
            raise ValueError("alloc_lanes: counts are all 0")
        buf, bufp, rows = self._buf(_BUF_ROWS)
        with self._call() as ptr:
            while True:
                n = lib.hkv_alloc_lanes(ptr, c.tobytes(), 0, bufp, rows)
                if n != -errno.ENOSPC:
                    break
                buf, bufp, rows = self._buf(rows * 8)
            if n == -errno.ENOMEM:
                raise OutOfPages(errno.ENOMEM, f"not enough free pages in some lane for "
                                               f"alloc_lanes({list(counts)})")
        if n < 0:
            raise error(n, f"alloc_lanes({list(counts)})")
        return buf[:n].copy()

    def free(self, extents: ExtentsLike) -> None:
        """Free every page of the extents (sub-ranges of allocations are
        fine). Raises Error (EINVAL: not allocated, out of range, named
        twice; EBUSY: pages of a unit) and frees nothing then."""
        h = self._h
        if h is None or self._cb_threads:
            h = self._handle()
        a = extents
        if type(a) is not np.ndarray or a.dtype is not _I64 or a.ndim != 2 or a.shape[1] != 2:
            a = as_extents(a)
        k = a.shape[0]
        if k == 0:
            return
        fl = h.inflight
        fl.append(None)
        try:
            if h.closing:
                raise ValueError("operation on a closed hugekv.Pool")
            err = _hkv_free(h.ptr, a.tobytes(), k)     # bytes: C order, no copy back
        finally:
            fl.pop()
        if err:
            raise error(err, f"free of {k} extent(s): {_bad_extents(a, self.npages)}")

    def _free_raw(self, ext, k):
        """hkv_free() of @k extents packed in @ext (bytes, or an address):
        0 or -errno, for adapters that build their own messages."""
        h = self._h
        if h is None or self._cb_threads:
            h = self._handle()
        fl = h.inflight
        fl.append(None)
        try:
            if h.closing:
                raise ValueError("operation on a closed hugekv.Pool")
            return _hkv_free(h.ptr, ext, k)
        finally:
            fl.pop()

    def allocated(self, extents: ExtentsLike) -> bool:
        """True when every page of the extents is allocated (in a unit or
        not), False when any is free; out-of-range or empty extents raise
        Error(EINVAL). A snapshot, changing nothing: for page numbers that
        come from elsewhere (a transfer peer, an engine's own lists)."""
        self._handle()
        a = as_extents(extents)
        if a.shape[0] == 0:
            return True
        if _outside(a, self.npages).any():
            raise error(-errno.EINVAL, f"allocated(): {_bad_extents(a, self.npages)}")
        with self._call() as ptr:
            return lib.hkv_extents_allocated(ptr, a.tobytes(), a.shape[0]) == 0

    def lane_range(self, lane: int) -> Tuple[int, int]:
        """(start, len) of the pages lane owns."""
        e = _lib.Extent()
        lane = _index(lane, "lane", 0, self.nlanes - 1)
        with self._call() as ptr:
            err = lib.hkv_lane_range(ptr, lane, ctypes.byref(e))
        if err:
            raise error(err, f"lane_range({lane}) of a pool of {self.nlanes} lanes")
        return (e.start, e.len)

    def check(self) -> None:
        """Full invariant check (scans everything); raises Error(EUCLEAN)."""
        with self._call() as ptr:
            err = lib.hkv_check(ptr)
        if err:
            raise error(err, "hkv_check")

    @property
    def label(self) -> str:
        """The pool's label ("" if none)."""
        with self._call() as ptr:
            return lib.hkv_pool_label(ptr).decode(errors="replace")

    def publish(self) -> None:
        """Publish the pool's stats page now (hkv_stats_publish()); raises
        Error(ENOENT) when the pool has no page (HUGEKV_STATS_INTERVAL_MS=0)."""
        with self._call() as ptr:
            err = lib.hkv_stats_publish(ptr)
        if err:
            raise error(err, "hkv_stats_publish")

    def stats(self) -> dict:
        """A snapshot: a dict keyed by struct hkv_stats' field names; per-lane
        lists cut to the pool's lanes, "region" a list of dicts."""
        st = _lib.Stats()
        st.sz = ctypes.sizeof(st)
        with self._call() as ptr:
            err = lib.hkv_stats(ptr, ctypes.byref(st))
        if err:
            raise error(err, "hkv_stats")
        out = {}
        nl = min(st.nlanes, _lib.STATS_LANES)
        for name, _ in _lib.Stats._fields_:
            if name == "sz":
                continue
            v = getattr(st, name)
            if name.startswith("lane_"):
                v = list(v)[:nl]
            elif name in ("ufi_size", "ufi", "extents_hist", "evict_age_hist"):
                v = list(v)
            elif name == "region":
                v = [{f: getattr(r, f) for f, _ in _lib.RegionStats._fields_}
                     for r in list(v)[:min(st.nregions, _lib.STATS_REGIONS)]]
            out[name] = v
        out["backing_name"] = _lib.BACKING_NAMES.get(st.backing, str(st.backing))
        return out

    def free_slots(self, copy: bool = False) -> np.ndarray:
        """Sorted free page ids (uint64 numpy array).

        copy=False returns a read-only view of the library's cached array,
        without copying. It shows the state of this call and stays readable
        (not updated) after later changes; it must be dropped before the
        next free_slots() call, which may replace the cache (that call raises
        ValueError while an earlier view is alive). copy=True returns a copy
        that is the caller's to keep."""
        h = self._handle()
        keeper = self._slots_keeper() if self._slots_keeper is not None else None
        if keeper is not None:
            raise ValueError("an earlier zero-copy free_slots() view is still alive: "
                             "drop it (and arrays derived from it) first, or use copy=True")
        slots = ctypes.POINTER(ctypes.c_uint64)()
        n = ctypes.c_uint64()
        with self._call() as ptr:
            err = lib.hkv_free_slots(ptr, ctypes.byref(slots), ctypes.byref(n))
            if err:
                raise error(err, "hkv_free_slots")
            if n.value == 0:
                return np.zeros(0, dtype=np.uint64)
            addr = ctypes.cast(slots, ctypes.c_void_p).value
            mem = _Mem(h, addr, n.value * 8, writable=False)
            view = np.asarray(mem).view(np.uint64)
            if copy:
                return view.copy()
        self._slots_keeper = weakref.ref(mem)
        return view

    # --- residency ------------------------------------------------------

    def unit_add(self, unit: int, extents: ExtentsLike) -> None:
        """Make allocated pages (in unit page order) the cache unit ``unit``."""
        self._handle()
        unit = _index(unit, "unit id")
        a = as_extents(extents)
        if a.shape[0] == 0:
            raise ValueError("unit_add needs at least one extent")
        with self._call() as ptr:
            err = lib.hkv_unit_add(ptr, unit, a.tobytes(), a.shape[0])
        if err:
            raise error(err, f"unit_add({unit}, {a.shape[0]} extent(s)): "
                             f"{_bad_extents(a, self.npages)}")

    def _unit_call(self, fn, name, unit, *args):
        unit = _index(unit, "unit id")
        with self._call() as ptr:
            err = fn(ptr, unit, *args)
        if err:
            raise error(err, f"{name}({unit}{''.join(', ' + str(a) for a in args)})")

    def unit_touch(self, unit: int) -> None:
        """Mark the unit most recently used."""
        self._unit_call(lib.hkv_unit_touch, "unit_touch", unit)

    def unit_pin(self, unit: int) -> None:
        """Take a pin: the unit is not evicted, removed or freed until unpinned."""
        self._unit_call(lib.hkv_unit_pin, "unit_pin", unit)

    def unit_unpin(self, unit: int) -> None:
        """Drop a pin."""
        self._unit_call(lib.hkv_unit_unpin, "unit_unpin", unit)

    def unit_split(self, unit: int, at_page: int, new_unit: int) -> None:
        """The first at_page pages stay in unit, the rest become new_unit."""
        self._unit_call(lib.hkv_unit_split, "unit_split", unit,
                        _index(at_page, "at_page", 1), _index(new_unit, "new unit id"))

    def unit_remove(self, unit: int, free: bool = True) -> None:
        """Release the unit; free=True frees its pages as well."""
        self._unit_call(lib.hkv_unit_remove, "unit_remove", unit,
                        _lib.UNIT_FREE if free else 0)

    def on_evict(self, callback: Optional[Callable[[int, np.ndarray], Any]]) -> None:
        """callback(unit_id, extents) for each evicted unit (None: no callback).

        It runs on the evicting thread, after the unit left the LRU and before
        its pages are freed, and must not call into this pool (such calls
        raise Error(EDEADLK), close() too). An exception it raises does not
        stop the eviction: the evict() or alloc(evict=True) call that ran it
        completes and then raises CallbackError, carrying its result and the
        errors."""
        if callback is not None and not callable(callback):
            raise TypeError("on_evict needs a callable or None")
        h = self._handle()
        if callback is None:
            with self._call() as ptr:
                lib.hkv_set_evict_fn(ptr, _lib.EVICT_FN(), None)
            if h.evict_cb is not None:
                h.old_cbs.append(h.evict_cb)
            h.evict_cb = None
            return

        wself = weakref.ref(self)      # the C pool must not keep the Pool alive

        def trampoline(_ctx, unit, ext, n):
            self = wself()
            if self is None:
                return
            ext_arr = np.ctypeslib.as_array(ext, shape=(n,)).view(np.uint64) \
                .reshape(n, 2).astype(np.int64) if n else _EMPTY.copy()
            me = threading.get_ident()
            self._cb_threads.add(me)
            try:
                callback(unit, ext_arr)
            except BaseException as e:      # noqa: B036 - reported to the caller
                errs = getattr(self._tls, "evict_errors", None)
                if errs is None:
                    errs = self._tls.evict_errors = []
                errs.append(e)
            finally:
                self._cb_threads.discard(me)

        cb = _lib.EVICT_FN(trampoline)
        with self._call() as ptr:
            lib.hkv_set_evict_fn(ptr, cb, None)
        if h.evict_cb is not None:
            h.old_cbs.append(h.evict_cb)   # another thread may still be inside it
        h.evict_cb = cb     # lives as long as the C pool

    def evict(self, target_free: int) -> int:
        """Evict cold unpinned units until target_free pages are free: pages freed."""
        target_free = _index(target_free, "target_free")
        self._tls.evict_errors = []
        with self._call() as ptr:
            n = lib.hkv_evict(ptr, target_free)
        if n < 0:
            raise error(n, f"evict({target_free})")
        if self._tls.evict_errors:
            self._raise_cb(n)
        return n

    def _raise_cb(self, result):
        errs, self._tls.evict_errors = self._tls.evict_errors, []
        raise CallbackError(f"the eviction callback raised {len(errs)} time(s), first: "
                            f"{errs[0]!r}", result, errs) from errs[0]

    # --- memory ---------------------------------------------------------

    def _need_memory(self):
        """The live handle of a pool whose memory can be viewed here."""
        h = self._handle()
        if not self.page_bytes:
            raise ValueError("an index-only pool (page_bytes=0) has no memory to view")
        if self._base is None:
            raise Error(errno.ENOTSUP, "the pool's pages are not one contiguous range")
        return h

    def page_ptr(self, page: int) -> int:
        """Address of a page."""
        self._need_memory()
        page = _index(page, "page", 0, self.npages - 1)
        return self._base + page * self.page_bytes

    def page_view(self, page: int) -> memoryview:
        """A writable memoryview of one page (keeps the memory mapped)."""
        h = self._need_memory()
        addr = self.page_ptr(page)
        return memoryview(np.asarray(_Mem(h, addr, self.page_bytes)))

    def as_array(self, dtype: Any = None, shape: Optional[Sequence[int]] = None) -> np.ndarray:
        """A numpy view of all pages: default uint8 (npages, page_bytes); with
        dtype, (npages, page_bytes // itemsize); shape must cover exactly the
        pool's npages * page_bytes bytes. dtype must be a fixed-size type
        without Python objects (ValueError otherwise)."""
        h = self._need_memory()
        dt = _plain_dtype(dtype)
        total = self.npages * self.page_bytes
        if shape is None:
            if self.page_bytes % dt.itemsize:
                raise ValueError(f"page_bytes {self.page_bytes} is not a multiple of "
                                 f"{dt}'s {dt.itemsize} bytes")
            shape = (self.npages, self.page_bytes // dt.itemsize)
        elif isinstance(shape, (int, np.integer)):
            shape = (shape,)
        shape = tuple(_index(s, "shape entry", 0) for s in shape)
        covered = int(np.prod(shape, dtype=object)) * dt.itemsize
        if covered != total:
            raise ValueError(f"shape {shape} of {dt} covers {covered} bytes, "
                             f"the pool holds {total}")
        return np.asarray(_Mem(h, self._base, total)).view(dt).reshape(shape)

    def as_tensor(self, dtype: Any, shape: Optional[Sequence[int]] = None):
        """A torch tensor view of all pages (any torch dtype, bfloat16 too)."""
        import torch
        if not isinstance(dtype, torch.dtype):
            raise TypeError(f"dtype must be a torch.dtype, got {dtype!r}")
        size = torch.empty(0, dtype=dtype).element_size()
        ints = {1: np.uint8, 2: np.int16, 4: np.int32, 8: np.int64}
        if size not in ints:
            raise ValueError(f"unsupported element size {size} of {dtype}")
        arr = self.as_array(ints[size], shape)
        t = torch.from_numpy(arr)
        return t if t.dtype == dtype else t.view(dtype)

    def regions(self) -> List[dict]:
        """The memory regions (for cudaHostRegister, NIXL, UCX): a list of
        dicts with the fields of struct hkv_region (base as an int)."""
        with self._call() as ptr:
            n = lib.hkv_regions(ptr, None, 0)
            if n < 0:
                raise error(n, "hkv_regions")
            if n == 0:
                return []
            arr = (_lib.Region * n)()
            n = lib.hkv_regions(ptr, ctypes.cast(arr, ctypes.c_void_p), n)
        if n < 0:
            raise error(n, "hkv_regions")
        return [{f: (getattr(r, f) or 0) if f == "base" else getattr(r, f)
                 for f, _ in _lib.Region._fields_} for r in arr[:n]]

    def _region_cuts(self):
        """First pages of regions 1.., where memory runs must be split."""
        return np.array([r["first_page"] for r in self.regions()[1:]], dtype=np.int64)

    def descriptors(self, extents: ExtentsLike, plane_bytes: Optional[int] = None) -> np.ndarray:
        """(address, bytes) int64 rows for a transfer of the extents' pages.

        plane_bytes=None: one row per run contiguous in memory, extents that
        touch merged (split where a memory region ends, as each region is
        registered on its own). plane_bytes=P (a divisor of page_bytes): each
        page is page_bytes // P planes (for example one per layer); a row per
        page and plane, in page order then plane order."""
        self._need_memory()
        a = as_extents(extents)
        if a.shape[0] == 0:
            return _EMPTY.copy()
        if _outside(a, self.npages).any():
            raise ValueError(f"extents must be non-empty and inside the pool's {self.npages} pages")
        pb = self.page_bytes
        if plane_bytes is not None:
            plane_bytes = _index(plane_bytes, "plane_bytes", 1)
            if pb % plane_bytes:
                raise ValueError(f"plane_bytes {plane_bytes} does not divide page_bytes {pb}")
            from .tokens import extents_to_pages
            pages = extents_to_pages(a)
            planes = pb // plane_bytes
            addr = (self._base + pages[:, None] * pb +
                    np.arange(planes, dtype=np.int64)[None, :] * plane_bytes).reshape(-1)
            return np.stack([addr, np.full_like(addr, plane_bytes)], axis=1)
        starts, lens = a[:, 0], a[:, 1]
        cuts = self._region_cuts()
        if cuts.size:
            starts, lens = _split_at(starts, lens, cuts)
        # merge where one run ends exactly where the next begins (and no cut)
        ends = starts + lens
        join = np.zeros(starts.shape[0], dtype=bool)
        join[1:] = starts[1:] == ends[:-1]
        if cuts.size:
            join[1:] &= ~np.isin(starts[1:], cuts)
        head = np.flatnonzero(~join)
        run_start = starts[head]
        run_len = np.add.reduceat(lens, head)
        return np.stack([self._base + run_start * pb, run_len * pb], axis=1)

    def page_buffer_meta(self, extents: ExtentsLike,
                         plane_bytes: Optional[int] = None) -> Tuple[List[int], List[int]]:
        """(ptr_list, size_list) as Python lists, one entry per page (or per
        page and plane): the shape SGLang's get_page_buffer_meta returns."""
        d = self.descriptors(extents, plane_bytes if plane_bytes is not None else self.page_bytes)
        return d[:, 0].tolist(), d[:, 1].tolist()

    def buffer_lists(self, extents: ExtentsLike) -> Tuple[List[int], List[int]]:
        """(ptr_list, size_list) of the merged descriptors, for batch transfer
        APIs such as Mooncake's batch_put_from / batch_get_into."""
        d = self.descriptors(extents)
        return d[:, 0].tolist(), d[:, 1].tolist()


def _pool_name(name):
    """A named pool's name as the library takes it (bytes), checked."""
    if not isinstance(name, str) or not name or len(name) > _lib.NAME_MAX or \
            name.startswith(".") or \
            not all(c.isascii() and (c.isalnum() or c in "._-") for c in name):
        raise ValueError(f"a pool name is 1..{_lib.NAME_MAX} letters, digits, '.', '_', "
                         f"'-', not starting with '.'; got {name!r}")
    return name.encode()


def _plain_dtype(dtype):
    """np.dtype of @dtype for a view of raw memory: a fixed, non-zero size
    and no Python objects, else ValueError."""
    try:
        dt = np.dtype(np.uint8 if dtype is None else dtype)
    except TypeError as e:
        raise ValueError(f"dtype {dtype!r} is not a numpy dtype: {e}") from None
    if dt.hasobject:
        raise ValueError(f"dtype {dt} holds Python objects: raw memory cannot be viewed as it")
    if dt.itemsize == 0:
        raise ValueError(f"dtype {dt} has no size (give one, such as 'S16')")
    return dt


def _split_at(starts, lens, cuts):
    """Split extents at the page numbers in cuts (sorted)."""
    out_s, out_l = [], []
    for s, n in zip(starts.tolist(), lens.tolist()):
        e = s + n
        i = int(np.searchsorted(cuts, s, side="right"))
        while i < cuts.size and cuts[i] < e:
            c = int(cuts[i])
            out_s.append(s)
            out_l.append(c - s)
            s = c
            i += 1
        out_s.append(s)
        out_l.append(e - s)
    return np.array(out_s, dtype=np.int64), np.array(out_l, dtype=np.int64)
