# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""hugekv.xfer: two real endpoints over real UCX (loopback), real 2 MiB
hugepage pools; the target runs in its own thread (ctypes releases the GIL
in every call), the example in two processes."""
import errno
import json
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

from conftest import need_2m, TOP

xfer = pytest.importorskip("hugekv.xfer", reason="libhugekv-xfer not built (no UCX)")
import hugekv  # noqa: E402

PAGE = 64 << 10
KEY = b"test_xfer: the key both sides know"


class Target(threading.Thread):
    """A serving endpoint in its own thread: one peer, until it goes."""

    def __init__(self, key=KEY, access=None, **kw):
        super().__init__(daemon=True)
        self.pool = hugekv.Pool(256, PAGE, backing="2m")
        self.room = self.pool.alloc(64, contig=True)
        self.ep = xfer.Endpoint(self.pool, key=key, name="target", timeout_ms=5000, **kw)
        if access:
            self.ep.on_access(access)
        self.port = self.ep.listen("127.0.0.1:0")
        self.error = None
        self.stop = False
        self.start()

    def run(self):
        try:
            peer = self.ep.accept(timeout_ms=10000)
            while not peer.error and not self.stop:
                self.ep.progress()
            self.stats = self.ep.stats_json()
        except Exception as e:      # noqa: BLE001 - reported by the test
            self.error = e

    def close(self):
        self.stop = True
        self.join(20)
        self.ep.close()
        self.pool.check()
        self.pool.close()


@pytest.fixture
def pools():
    need_2m(64)
    with hugekv.Pool(256, PAGE, backing="2m") as pool:
        yield pool


def pattern(pool, ext, seed):
    view = pool.as_array().reshape(-1)
    rng = np.random.default_rng(seed)
    for s, n in ext:
        view[s * PAGE:(s + n) * PAGE] = rng.integers(0, 256, n * PAGE, dtype=np.uint8)
    return np.concatenate([view[s * PAGE:(s + n) * PAGE] for s, n in ext])


def read(pool, ext):
    view = pool.as_array().reshape(-1)
    return np.concatenate([view[s * PAGE:(s + n) * PAGE] for s, n in ext])


@pytest.mark.parametrize("same_host,cma", [(False, True), (True, True), (True, False)])
def test_put_get_roundtrip(pools, same_host, cma):
    tgt = Target(same_host=same_host)
    try:
        ep = xfer.Endpoint(pools, key=KEY, name="initiator", same_host=same_host, cma=cma)
        peer = ep.connect(f"127.0.0.1:{tgt.port}", timeout_ms=10000)
        assert peer.name == "target" and peer.npages == 256 and peer.error == 0
        # the target (this process, another thread) proved our pid: single copy
        assert peer.single_copy is cma
        src = pools.alloc(40)
        back = pools.alloc(40)
        want = pattern(pools, src, 1)
        ep.wait(peer.put(src, np.array([[tgt.room[0, 0], 40]])))
        ep.wait(peer.get(back, np.array([[tgt.room[0, 0], 40]])))
        assert (read(pools, back) == want).all()
        st = ep.stats()
        assert st["puts"] == 1 and st["gets"] == 1 and st["bytes"] == 2 * 40 * PAGE
        assert st["ops_per_transfer"] == 1.0
        assert st["cma_out"] == int(cma)
        js = ep.stats_json()
        assert js["endpoint"]["transfers"] == 2 and len(js["per_peer"]) == 1
        assert js["per_peer"][0]["stats"]["cma_out"] == int(cma)
        json.dumps(js)
        peer.close()
        ep.close()
        pools.free(src)
        pools.free(back)
    finally:
        tgt.close()
    assert tgt.error is None


def test_fork_child_leaves_the_connection_alone(pools):
    """In a fork() child every call on the parent's endpoint and peer raises
    Error(ECHILD) and close() touches nothing the parent shares: its
    connection moves every byte afterwards, with no peer error."""
    tgt = Target()
    try:
        ep = xfer.Endpoint(pools, key=KEY, name="initiator")
        peer = ep.connect(f"127.0.0.1:{tgt.port}", timeout_ms=10000)
        src = pools.alloc(16)
        back = pools.alloc(16)
        remote = np.array([[tgt.room[0, 0], 16]])
        want = pattern(pools, src, 7)
        ep.wait(peer.put(src, remote))
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:                    # the child: a verdict, then out, whatever happens
            try:
                os.close(r)
                bad = []
                for name, call in (("progress", ep.progress),
                                   ("put", lambda: peer.put(src, remote)),
                                   ("get", lambda: peer.get(back, remote)),
                                   ("wait", lambda: ep.wait(0, timeout_ms=10)),
                                   ("stats", ep.stats)):
                    try:
                        call()
                        bad.append(name + ": no error")
                    except hugekv.Error as e:
                        if e.errno != errno.ECHILD:
                            bad.append(f"{name}: {e!r}")
                    except Exception as e:  # noqa: BLE001 - the verdict says
                        bad.append(f"{name}: {e!r}")
                peer.close()
                ep.close()
                os.write(w, "; ".join(bad).encode() or b"ok")
            finally:
                os._exit(0)             # never back into pytest in the child
        os.close(w)
        with os.fdopen(r, "rb") as f:
            verdict = f.read().decode()
        assert os.waitpid(pid, 0)[1] == 0
        assert verdict == "ok", verdict
        assert peer.error == 0
        ep.wait(peer.get(back, remote))
        assert (read(pools, back) == want).all()
        want = pattern(pools, src, 8)
        ep.wait(peer.put(src, remote))
        ep.wait(peer.get(back, remote))
        assert (read(pools, back) == want).all() and peer.error == 0
        peer.close()
        ep.close()
        pools.free(src)
        pools.free(back)
    finally:
        tgt.close()
    assert tgt.error is None


def test_put_remote_sizes_must_match(pools):
    tgt = Target()
    try:
        ep = xfer.Endpoint(pools, key=KEY)
        peer = ep.connect(f"127.0.0.1:{tgt.port}", timeout_ms=10000)
        src = pools.alloc(8)
        with pytest.raises(hugekv.Error) as ei:
            peer.put(src, [[0, 9]])
        assert ei.value.errno == errno.EINVAL
        with pytest.raises(ValueError):
            peer.put(src, [[-1, 8]])
        with pytest.raises(ValueError):
            peer.put(src, np.zeros((0, 2), dtype=np.int64))
        with pytest.raises(hugekv.Error) as ei:
            peer.put(src, [[300, 8]])           # beyond the peer's 256 pages
        assert ei.value.errno == errno.ERANGE
        with pytest.raises(ValueError):
            ep.wait(0, timeout_ms=-5)
        for units, exc in (([1.5], TypeError), (["3"], TypeError), ([-1], ValueError)):
            with pytest.raises(exc, match="pin_units"):   # no unit pinned in its place
                peer.put(src, [[0, 8]], pin_units=units)
        assert ep.stats()["transfers"] == 0
        peer.close()
        ep.close()
        pools.free(src)
    finally:
        tgt.close()


def test_wrong_key_refused(pools):
    tgt = Target()
    try:
        ep = xfer.Endpoint(pools, key=b"not the target's key, sorry")
        with pytest.raises(hugekv.Error) as ei:
            ep.connect(f"127.0.0.1:{tgt.port}", timeout_ms=10000)
        assert ei.value.errno == errno.EACCES
        ep.close()
        good = xfer.Endpoint(pools, key=KEY)
        peer = good.connect(f"127.0.0.1:{tgt.port}", timeout_ms=10000)
        peer.close()
        good.close()
    finally:
        tgt.close()
    assert tgt.stats["endpoint"]["auth_failures"] == 1


def test_no_key(pools, monkeypatch):
    monkeypatch.delenv("HUGEKV_XFER_KEY", raising=False)
    monkeypatch.delenv("HUGEKV_XFER_KEY_FILE", raising=False)
    with pytest.raises(hugekv.Error) as ei:
        xfer.Endpoint(pools)
    assert ei.value.errno == errno.ENOKEY
    with pytest.raises(hugekv.Error) as ei:
        xfer.Endpoint(pools, key=b"short")
    assert ei.value.errno == errno.EINVAL
    with pytest.raises(TypeError):
        xfer.Endpoint("not a pool", key=KEY)


def test_options_and_arguments_checked_before_c(pools):
    """What ctypes would wrap, truncate or take for an address: refused,
    no endpoint made (a name given as an int was read at that address)."""
    for kw, exc in ((dict(name=5), TypeError), (dict(name="a\0b"), ValueError),
                    (dict(key_file="/tmp/k\0y"), ValueError), (dict(key_file=3), TypeError),
                    (dict(max_grants=2 ** 32), ValueError), (dict(max_inflight=-1), ValueError),
                    (dict(max_peers=1.5), TypeError), (dict(reg_chunk_bytes=-1), ValueError),
                    (dict(max_grant_mem=2 ** 64), ValueError),
                    (dict(max_grant_mem_all=True), TypeError)):
        with pytest.raises(exc):
            xfer.Endpoint(pools, key=KEY, **kw)
    with xfer.Endpoint(pools, key=KEY, name=b"bytes-name", max_grants=2 ** 32 - 1) as ep:
        for addr, exc in ((5, TypeError), (None, TypeError), ("127.0.0.1:0\0x", ValueError)):
            with pytest.raises(exc, match="addr"):
                ep.listen(addr)
            with pytest.raises(exc, match="addr"):
                ep.connect(addr, timeout_ms=100)
        for tid, exc in (("1", TypeError), (1.0, TypeError), (-1, ValueError),
                         (2 ** 64, ValueError)):
            with pytest.raises(exc, match="tid"):
                ep.test(tid)
            with pytest.raises(exc, match="tid"):
                ep.wait(tid, timeout_ms=1)
        assert ep.listen("127.0.0.1:0") > 0


def test_access_callback_sees_the_peer_and_refuses(pools):
    seen = []

    def access(name, event, op, ext, result):
        seen.append((name, event, op, ext.tolist(), result))
        if event == xfer.ACCESS_BEGIN and op == xfer.OP_GET:
            return -errno.EPERM
        return 0
    tgt = Target(access=access)
    try:
        ep = xfer.Endpoint(pools, key=KEY, name="tenant-a")
        peer = ep.connect(f"127.0.0.1:{tgt.port}", timeout_ms=10000)
        src = pools.alloc(4)
        start = int(tgt.room[0, 0])
        ep.wait(peer.put(src, [[start, 4]]))
        with pytest.raises(hugekv.Error) as ei:
            ep.wait(peer.get(src, [[start, 4]]))
        assert ei.value.errno == errno.EPERM
        peer.close()
        ep.close()
        pools.free(src)
    finally:
        tgt.close()
    assert seen[0] == ("tenant-a", xfer.ACCESS_BEGIN, xfer.OP_PUT, [[start, 4]], 0)
    assert seen[1][:3] == ("tenant-a", xfer.ACCESS_END, xfer.OP_PUT) and seen[1][4] == 0
    assert seen[2][:3] == ("tenant-a", xfer.ACCESS_BEGIN, xfer.OP_GET)
    assert len(seen) == 3


def test_example_two_processes():
    need_2m(32)
    r = subprocess.run([sys.executable, os.path.join(TOP, "python", "examples", "xfer_unit.py"),
                        "--check"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "identical" in r.stdout
