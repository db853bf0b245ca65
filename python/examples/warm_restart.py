#!/usr/bin/python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""warm_restart.py - a host KV cache that survives a kill -9 of its server.

A "server" process makes a named pool, serves requests (each request's KV
pages become a unit whose id is its block hash, the bytes written and
sealed with a checksum), then is
killed with SIGKILL in the middle of its work. A new server attaches the
pool by name, lists the units, verifies each against its checksum (and
this example compares every byte too) and serves the same
requests again: every one is a hit, with no recomputation. The dead
server's pages outside units (its work in flight) come back to the pool.

    warm_restart.py [--requests N] [--check]

--check exits 1 unless every request hits after the restart with the
bytes it had, and the pool passes hkv_check.
"""
import argparse
import hashlib
import os
import signal
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import hugekv  # noqa: E402

NAME, PAGE_BYTES = "warm-restart-example", 4096


def block_hash(req):
    return int.from_bytes(hashlib.blake2b(b"prompt-%d" % req, digest_size=8).digest(),
                          "little")


def kv_bytes(req, npages):
    rng = np.random.default_rng(req)
    return rng.integers(0, 255, npages * PAGE_BYTES, dtype=np.uint8)


def server(requests):
    """The first server: fills the cache, then is killed mid-request."""
    pool = hugekv.Pool(4096, PAGE_BYTES, nlanes=2, backing="4k", name=NAME)
    arr = pool.as_array(np.uint8, (pool.npages, PAGE_BYTES))
    for req in range(requests):
        n = 1 + req % 8
        ext = pool.alloc(n)
        rows = np.concatenate([np.arange(s, s + k) for s, k in ext.tolist()])
        arr[rows] = kv_bytes(req, n).reshape(n, PAGE_BYTES)
        pool.unit_add(block_hash(req), ext)
        pool.unit_seal(block_hash(req))      # a checksum kept with the unit
    pool.alloc(100)                  # a request in flight when the kill comes
    os.kill(os.getpid(), signal.SIGKILL)


def restart(requests):
    """The next server: attach, list, hit."""
    pool = hugekv.Pool.attach(NAME)
    cached = set(pool.unit_list().tolist())
    arr = pool.as_array(np.uint8, (pool.npages, PAGE_BYTES))
    hits = good = 0
    for req in range(requests):
        h = block_hash(req)
        if h not in cached:
            continue
        if not pool.unit_verify(h):   # never serve bytes that changed
            continue
        hits += 1
        ext = pool.unit_extents(h)
        rows = np.concatenate([np.arange(s, s + k) for s, k in ext.tolist()])
        good += bool((arr[rows].reshape(-1) == kv_bytes(req, len(rows))).all())
        pool.unit_touch(h)
    pool.check()                     # also gives back the dead server's pages
    info = pool.info()
    del arr
    pool.close()
    return hits, good, info


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(dir="/dev/shm", prefix="hkv-warm-") as d:
        os.environ["HUGEKV_NAMED_DIR"] = d
        pid = os.fork()
        if pid == 0:
            server(a.requests)
            os._exit(1)
        _, status = os.waitpid(pid, 0)
        killed = os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
        hits, good, info = restart(a.requests)
        hugekv.Pool.unlink(NAME)
    print(f"server killed: {killed}; after the restart {hits}/{a.requests} requests hit, "
          f"{good} with the same bytes; {info['reclaimed_pages']} pages of the dead server "
          f"given back")
    if a.check and not (killed and hits == good == a.requests and
                        info["reclaimed_pages"] == 100):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
