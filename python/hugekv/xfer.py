# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""hugekv.xfer: move extents of a hugekv.Pool between processes and hosts
(ctypes over libhugekv-xfer.so, UCX underneath).

    from hugekv.xfer import Endpoint
    # target                               # initiator
    ep = Endpoint(pool, key_file=path)     ep = Endpoint(pool, key_file=path)
    port = ep.listen("0.0.0.0:0")          peer = ep.connect(f"{host}:{port}")
    peer = ep.accept()                     t = peer.put(local_ext, remote_ext)
    while not peer.error:                  ep.wait(t)      # raises on failure
        ep.progress()

Every peer proves a key before its first grant (include/hugekv-xfer.h says
exactly what each side is guaranteed): ``key`` (bytes), ``key_file`` (a
keyring file, mode 0600), else $HUGEKV_XFER_KEY_FILE or $HUGEKV_XFER_KEY.
Extents are int64 (k, 2) arrays of (start, len), as hugekv.Pool returns
them. Errors raise hugekv.Error with the errno (EACCES: refused or not
authenticated, ETIMEDOUT, ECONNRESET, ENOBUFS, ...). An endpoint and its
peers belong to one thread at a time; the library is found next to
libhugekv.so ($HUGEKV_XFER_LIBRARY overrides). In a fork() child, every
call on an endpoint or peer of the parent raises Error(ECHILD) and close()
leaves the parent's connections alone.
"""
import ctypes
import errno
import json
import os

import numpy as np

from . import _lib
from ._lib import Error, Extent, error
from .pool import Pool, _index, as_extents

c_u64, c_uint, c_int, c_void_p = ctypes.c_uint64, ctypes.c_uint, ctypes.c_int, ctypes.c_void_p
c_size_t = ctypes.c_size_t

# include/hugekv-xfer.h
NO_WAIT_IDLE = 1 << 0
SAME_UID = 1 << 2
SAME_HOST = 1 << 3
NO_CMA = 1 << 4
PER_PAGE = 1 << 0
ACCESS_BEGIN, ACCESS_END = 1, 2
OP_PUT, OP_GET = 1, 2
SLOWEST = 8


class XferOpts(ctypes.Structure):
    _fields_ = [("sz", c_size_t), ("max_inflight", c_uint), ("timeout_ms", c_int),
                ("reg_chunk_bytes", c_u64), ("flags", c_uint), ("max_grants", c_uint),
                ("name", ctypes.c_char_p), ("key_file", ctypes.c_char_p),
                ("key", c_void_p), ("key_len", c_size_t), ("grant_timeout_ms", c_int),
                ("max_grant_mem", c_u64), ("max_grant_mem_all", c_u64),
                ("max_peers", c_uint)]


DONE_FN = ctypes.CFUNCTYPE(None, c_void_p, c_u64, c_int)


class XferReq(ctypes.Structure):
    _fields_ = [("sz", c_size_t), ("local", c_void_p), ("nlocal", c_uint),
                ("remote", c_void_p), ("nremote", c_uint), ("pin_units", c_void_p),
                ("npin_units", c_uint), ("flags", c_uint), ("timeout_ms", c_int),
                ("done", DONE_FN), ("ctx", c_void_p)]


class XferSlow(ctypes.Structure):
    _fields_ = [("id", c_u64), ("peer", c_u64), ("ns", c_u64), ("grant_ns", c_u64),
                ("pages", c_u64), ("ops", c_u64), ("result", c_int)]


class XferStats(ctypes.Structure):
    _fields_ = [("sz", c_size_t)] + [(n, c_u64) for n in (
        "peers", "transfers", "failures", "timeouts", "refused", "puts", "gets", "ops",
        "pages", "bytes", "extents_in")] + [("ops_per_transfer", ctypes.c_double)] + [
        (n, c_u64) for n in ("max_ops_inflight", "grants", "grants_refused", "grants_active",
                             "peer_failures", "lat_p50_ns", "lat_p99_ns", "lat_max_ns",
                             "grant_p50_ns")] + [
        ("nslow", c_uint), ("slow", XferSlow * SLOWEST)] + [(n, c_u64) for n in (
            "auth_failures", "grants_expired", "grants_over_limit", "grant_mem",
            "grant_mem_peak", "grants_busy", "grant_pages", "grant_bytes", "peers_rejected",
            "cma_out", "cma_in", "cma_refused", "cma_calls", "cma_runs", "cma_bytes",
            "cma_faults")]


ACCESS_FN = ctypes.CFUNCTYPE(c_int, c_void_p, c_void_p, c_uint, c_uint,
                             ctypes.POINTER(Extent), c_uint, c_int)

_X, _PR = c_void_p, c_void_p     # struct hkv_xfer *, struct hkv_xfer_peer *
_PROTOS = {
    "hkv_xfer_create": (c_int, [c_void_p, ctypes.POINTER(XferOpts), ctypes.POINTER(c_void_p)]),
    "hkv_xfer_destroy": (None, [_X]),
    "hkv_xfer_listen": (c_int, [_X, ctypes.c_char_p, ctypes.POINTER(c_uint)]),
    "hkv_xfer_accept": (c_int, [_X, c_int, ctypes.POINTER(c_void_p)]),
    "hkv_xfer_connect": (c_int, [_X, ctypes.c_char_p, c_int, ctypes.POINTER(c_void_p)]),
    "hkv_xfer_peer_close": (None, [_PR]),
    "hkv_xfer_peer_id": (c_u64, [_PR]),
    "hkv_xfer_peer_name": (ctypes.c_char_p, [_PR]),
    "hkv_xfer_peer_npages": (c_u64, [_PR]),
    "hkv_xfer_peer_error": (c_int, [_PR]),
    "hkv_xfer_put": (c_int, [_PR, ctypes.POINTER(XferReq), ctypes.POINTER(c_u64)]),
    "hkv_xfer_get": (c_int, [_PR, ctypes.POINTER(XferReq), ctypes.POINTER(c_u64)]),
    "hkv_xfer_progress": (c_int, [_X]),
    "hkv_xfer_test": (c_int, [_X, c_u64]),
    "hkv_xfer_wait": (c_int, [_X, c_u64, c_int]),
    "hkv_xfer_set_access_fn": (None, [_X, c_void_p, c_void_p]),
    "hkv_xfer_nregs": (c_uint, [_X]),
    "hkv_xfer_stats": (c_int, [_X, _PR, ctypes.POINTER(XferStats)]),
    "hkv_xfer_stats_print": (c_int, [_X, c_void_p, c_uint]),
}


def _load():
    env = os.environ.get("HUGEKV_XFER_LIBRARY")
    names = [env] if env else [os.path.join(os.path.dirname(_lib.path), "libhugekv-xfer.so"),
                               "libhugekv-xfer.so.0"]
    tried = []
    for name in names:
        try:
            return ctypes.CDLL(name)
        except OSError as e:
            tried.append(f"{name} ({e})")
    raise ImportError("hugekv.xfer: cannot load libhugekv-xfer: tried " + "; ".join(tried) +
                      " (it is built where UCX is found: apt-get install libucx-dev)")


xlib = _load()
for _name, (_res, _args) in _PROTOS.items():
    _f = getattr(xlib, _name)
    _f.restype = _res
    _f.argtypes = _args

_libc = ctypes.CDLL(None)
_libc.open_memstream.restype = c_void_p
_libc.open_memstream.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(c_size_t)]
_libc.fclose.argtypes = [c_void_p]
_libc.free.argtypes = [c_void_p]


def _check(err, what):
    if err < 0:
        raise error(err, what)
    return err


def _timeout(v, what):
    if isinstance(v, bool) or not isinstance(v, int) or v < -1 or v > 2**31 - 1:
        raise ValueError(f"{what} must be an int in [-1, 2**31 - 1] (ms), got {v!r}")
    return v


def _cstr(v, what, path=False):
    """@v as the bytes of a C string (None stays None), else TypeError; a
    NUL inside is refused (ValueError): C would read a shorter string."""
    if v is None:
        return None
    if path and isinstance(v, os.PathLike):
        v = os.fspath(v)
    if isinstance(v, str):
        v = os.fsencode(v) if path else v.encode()
    if not isinstance(v, (bytes, bytearray)):
        raise TypeError(f"{what} must be a str{', a path' if path else ''} or bytes, "
                        f"not {type(v).__name__}")
    if b"\0" in v:
        raise ValueError(f"{what} contains a NUL byte")
    return bytes(v)


def _unit_ids(v):
    """pin_units as a flat uint64 array of unit ids: integers only (a float
    or a string would name another unit), none negative."""
    try:
        a = np.asarray(v).reshape(-1)
    except (TypeError, ValueError) as e:
        raise TypeError(f"pin_units must be integers: {e}") from None
    if a.size and a.dtype.kind not in "iu":
        raise TypeError(f"pin_units must be integers, not {a.dtype}")
    if a.dtype.kind == "i" and (a < 0).any():
        raise ValueError("pin_units: a negative unit id")
    return np.ascontiguousarray(a.astype(np.uint64))


def _addr(v):
    """an address "HOST:PORT" as C string bytes"""
    if v is None:
        raise TypeError("addr must be a str or bytes, not None")
    return _cstr(v, "addr")


def _stats_dict(st):
    d = {n: getattr(st, n) for n, _ in XferStats._fields_ if n not in ("sz", "nslow", "slow")}
    d["slowest"] = [{n: getattr(st.slow[i], n) for n, _ in XferSlow._fields_}
                    for i in range(st.nslow)]
    return d


class Peer:
    """A connection of an Endpoint (from connect() or accept())."""

    def __init__(self, ep, ptr):
        self._ep = ep
        self._ptr = ptr

    def _live(self):
        if not self._ptr:
            raise ValueError("operation on a closed hugekv.xfer.Peer")
        self._ep._live()
        return self._ptr

    @property
    def id(self):
        return xlib.hkv_xfer_peer_id(self._live())

    @property
    def name(self):
        """The name the peer proved (its keyring entry's), or None."""
        n = xlib.hkv_xfer_peer_name(self._live())
        return n.decode() if n is not None else None

    @property
    def npages(self):
        return xlib.hkv_xfer_peer_npages(self._live())

    @property
    def error(self):
        """0 while the connection is up, else its -errno."""
        return xlib.hkv_xfer_peer_error(self._live())

    @property
    def single_copy(self):
        """True when this side's transfers to the peer take the single copy
        (the peer, on this host, copies with process_vm_readv/writev)."""
        return bool(self.stats()["cma_out"])

    def _submit(self, fn, what, local, remote, pin_units, timeout_ms, per_page):
        loc, rem = as_extents(local), as_extents(remote)
        if not len(loc) or not len(rem):
            raise ValueError(f"{what}: empty extents")
        if (loc < 0).any() or (rem < 0).any():
            raise ValueError(f"{what}: negative extent values")
        units = _unit_ids(pin_units) if pin_units is not None else None
        rq = XferReq(sz=ctypes.sizeof(XferReq), local=loc.ctypes.data, nlocal=len(loc),
                     remote=rem.ctypes.data, nremote=len(rem),
                     pin_units=units.ctypes.data if units is not None and len(units) else None,
                     npin_units=len(units) if units is not None else 0,
                     flags=PER_PAGE if per_page else 0,
                     timeout_ms=_timeout(timeout_ms, "timeout_ms"))
        tid = c_u64()
        _check(fn(self._live(), ctypes.byref(rq), ctypes.byref(tid)), what)
        return tid.value

    def put(self, local, remote, *, pin_units=None, timeout_ms=0, per_page=False):
        """Write this pool's @local extents onto the peer's @remote extents
        (same total pages). Returns the transfer id for Endpoint.wait()."""
        return self._submit(xlib.hkv_xfer_put, "put", local, remote, pin_units, timeout_ms,
                            per_page)

    def get(self, local, remote, *, pin_units=None, timeout_ms=0, per_page=False):
        """Read the peer's @remote extents into this pool's @local extents."""
        return self._submit(xlib.hkv_xfer_get, "get", local, remote, pin_units, timeout_ms,
                            per_page)

    def stats(self):
        return self._ep.stats(self)

    def close(self):
        if self._ptr and self._ep._x:
            xlib.hkv_xfer_peer_close(self._ptr)
        self._ptr = None

    def __repr__(self):
        if not self._ptr:
            return "<hugekv.xfer.Peer closed>"
        return f"<hugekv.xfer.Peer id={self.id} name={self.name!r} error={self.error}>"


class Endpoint:
    """A transfer endpoint serving one hugekv.Pool (with page bytes).

    same_uid: admit (and be admitted by) peers of this uid on this host
    without a key (include/hugekv-xfer.h, HKV_XFER_SAME_UID).
    same_host: every peer is on this host: large messages go over shared
    memory, not tcp loopback (HKV_XFER_SAME_HOST; slower to remote peers).
    cma: the single copy with processes of this host whose pid the kernel
    proves (the target copies with process_vm_readv/writev); False is
    HKV_XFER_NO_CMA, the two-sided path only. Peer.single_copy and the
    cma_* stats say which path each peer takes."""

    def __init__(self, pool, *, key=None, key_file=None, name=None, timeout_ms=0,
                 grant_timeout_ms=0, max_inflight=0, max_grants=0, max_grant_mem=0,
                 max_grant_mem_all=0, max_peers=0, reg_chunk_bytes=0, spin=False,
                 same_uid=False, same_host=False, cma=True):
        self._x = None
        if not isinstance(pool, Pool):
            raise TypeError(f"pool must be a hugekv.Pool, not {type(pool).__name__}")
        self._pool = pool               # keeps the pool alive while the endpoint is
        self._peers = []
        self._access = None
        if isinstance(key, str):
            key = key.encode()
        if key is not None and not isinstance(key, (bytes, bytearray)):
            raise TypeError("key must be bytes or str")
        self._key = bytes(key) if key is not None else None
        # C strings the options point at (a plain int would be an address)
        self._keep = [_cstr(key_file, "key_file", path=True), _cstr(name, "name")]
        u32 = 0xFFFFFFFF      # the unsigned options: in range, not wrapped by ctypes
        max_inflight = _index(max_inflight, "max_inflight", 0, u32)
        max_grants = _index(max_grants, "max_grants", 0, u32)
        max_peers = _index(max_peers, "max_peers", 0, u32)
        reg_chunk_bytes = _index(reg_chunk_bytes, "reg_chunk_bytes")
        max_grant_mem = _index(max_grant_mem, "max_grant_mem")
        max_grant_mem_all = _index(max_grant_mem_all, "max_grant_mem_all")
        o = XferOpts(sz=ctypes.sizeof(XferOpts), max_inflight=max_inflight,
                     timeout_ms=_timeout(timeout_ms, "timeout_ms"),
                     reg_chunk_bytes=reg_chunk_bytes,
                     flags=((NO_WAIT_IDLE if spin else 0) | (SAME_UID if same_uid else 0)
                            | (SAME_HOST if same_host else 0) | (0 if cma else NO_CMA)),
                     max_grants=max_grants, name=self._keep[1], key_file=self._keep[0],
                     key=ctypes.cast(ctypes.c_char_p(self._key), c_void_p) if self._key else None,
                     key_len=len(self._key) if self._key else 0,
                     grant_timeout_ms=_timeout(grant_timeout_ms, "grant_timeout_ms"),
                     max_grant_mem=max_grant_mem, max_grant_mem_all=max_grant_mem_all,
                     max_peers=max_peers)
        x = c_void_p()
        _check(xlib.hkv_xfer_create(pool._live(), ctypes.byref(o), ctypes.byref(x)),
               "hkv_xfer_create")
        self._x = x.value

    def _live(self):
        if not self._x:
            raise ValueError("operation on a closed hugekv.xfer.Endpoint")
        return self._x

    def listen(self, addr):
        """Listen on "HOST:PORT" (port 0: any); returns the port."""
        port = c_uint()
        _check(xlib.hkv_xfer_listen(self._live(), _addr(addr), ctypes.byref(port)),
               f"listen on {addr}")
        return port.value

    def accept(self, timeout_ms=0):
        """The next peer that proved its key (progresses meanwhile)."""
        p = c_void_p()
        _check(xlib.hkv_xfer_accept(self._live(), _timeout(timeout_ms, "timeout_ms"),
                                    ctypes.byref(p)), "accept")
        peer = Peer(self, p.value)
        self._peers.append(peer)
        return peer

    def connect(self, addr, timeout_ms=0):
        """Connect to a listening endpoint; both sides prove their keys."""
        p = c_void_p()
        _check(xlib.hkv_xfer_connect(self._live(), _addr(addr),
                                     _timeout(timeout_ms, "timeout_ms"), ctypes.byref(p)),
               f"connect to {addr}")
        peer = Peer(self, p.value)
        self._peers.append(peer)
        return peer

    def progress(self):
        """One progress step (never blocks); the transfers it completed.
        Raises Error(ECHILD) in a fork() child (the parent's endpoint)."""
        return _check(xlib.hkv_xfer_progress(self._live()), "hkv_xfer_progress")

    def test(self, tid):
        """None while transfer @tid runs; True once it succeeded (raises if
        it failed). A result is collected once."""
        r = xlib.hkv_xfer_test(self._live(), _index(tid, "tid"))
        if r == -errno.EINPROGRESS:
            return None
        _check(r, f"transfer {tid}")
        return True

    def wait(self, tid=0, timeout_ms=0):
        """Progress until transfer @tid (0: every transfer) ends; raises its
        error. TimeoutError if @timeout_ms passes first (it still runs)."""
        r = xlib.hkv_xfer_wait(self._live(), _index(tid, "tid"),
                               _timeout(timeout_ms, "timeout_ms"))
        if r == -errno.EAGAIN:
            raise TimeoutError(f"transfer {tid} still running after {timeout_ms} ms")
        _check(r, f"transfer {tid}")

    def on_access(self, fn):
        """The target's say on grants: fn(peer_name, event, op, extents, result)
        with event ACCESS_BEGIN (return None/0 to grant, or a negative errno;
        an exception refuses with -EACCES) or ACCESS_END. None: every
        authenticated peer may use every allocated page."""
        if fn is None:
            xlib.hkv_xfer_set_access_fn(self._live(), None, None)
            self._access = None
            return

        def tramp(_ctx, peer, event, op, ext, n, result):
            try:
                name = xlib.hkv_xfer_peer_name(peer)
                e = np.ctypeslib.as_array(ctypes.cast(ext, ctypes.POINTER(ctypes.c_int64)),
                                          shape=(n, 2)).copy()
                r = fn(name.decode() if name else None, event, op, e, result)
                return int(r) if r else 0
            except Exception:   # noqa: BLE001 - a refusal, never a crash in C
                return -errno.EACCES
        cb = ACCESS_FN(tramp)
        xlib.hkv_xfer_set_access_fn(self._live(), ctypes.cast(cb, c_void_p), None)
        self._access = cb

    def stats(self, peer=None):
        """The endpoint's (or @peer's) counters and latencies, as a dict."""
        st = XferStats(sz=ctypes.sizeof(XferStats))
        _check(xlib.hkv_xfer_stats(self._live(), peer._live() if peer else None,
                                   ctypes.byref(st)), "hkv_xfer_stats")
        return _stats_dict(st)

    def stats_json(self):
        """hkv_xfer_stats_print(HKV_PRINT_JSON), parsed."""
        buf, size = c_void_p(), c_size_t()
        f = _libc.open_memstream(ctypes.byref(buf), ctypes.byref(size))
        if not f:
            raise MemoryError("open_memstream")
        try:
            err = xlib.hkv_xfer_stats_print(self._live(), f, _lib.PRINT_JSON)
        finally:
            _libc.fclose(f)
            text = ctypes.string_at(buf, size.value).decode()
            _libc.free(buf)
        _check(err, "hkv_xfer_stats_print")
        return json.loads(text)

    @property
    def nranges(self):
        return xlib.hkv_xfer_nregs(self._live())

    def close(self):
        """Close every connection (transfers in flight fail) and the endpoint."""
        if self._x:
            for p in self._peers:
                p._ptr = None
            xlib.hkv_xfer_destroy(self._x)
            self._x = None
        self._access = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()


__all__ = ["Endpoint", "Peer", "Error", "ACCESS_BEGIN", "ACCESS_END", "OP_PUT", "OP_GET"]
