#!/usr/bin/python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Move one cache unit between two processes with hugekv.xfer.

    xfer_unit.py [--check] [--pages N] [--addr HOST]

The parent makes a keyring (mode 0600) and starts the target, a second
process with its own hugekv.Pool: it allocates room for the unit, pins it
for every grant it gives (the access callback), and serves. The parent
writes a unit of N pages into its pool, puts it onto the target's pages,
reads it back into other pages and compares every byte. --check exits 1
if anything differs or either side's pool does not check clean.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import hugekv                                   # noqa: E402
from hugekv.xfer import Endpoint, ACCESS_BEGIN  # noqa: E402

PAGE = 64 << 10
UNIT = 7


def target(npages, addr):
    pool = hugekv.Pool(4 * npages, PAGE, backing="2m")
    room = pool.alloc(npages)
    pool.unit_add(UNIT, room)
    ep = Endpoint(pool, name="target")
    pins = []

    def access(peer, event, op, ext, result):
        if event == ACCESS_BEGIN:
            pool.unit_pin(UNIT)
            pins.append(1)
        else:
            pool.unit_unpin(UNIT)
            pins.pop()
        return 0
    ep.on_access(access)
    port = ep.listen(f"{addr}:0")
    print(port, ";".join(f"{s},{n}" for s, n in room), flush=True)
    peer = ep.accept(timeout_ms=20000)
    while not peer.error:
        ep.progress()
    pool.check()                # raises if the pool is not clean
    ok = not pins
    ep.close()
    pool.unit_remove(UNIT)
    pool.close()
    return 0 if ok else 1


def initiator(npages, addr):
    with tempfile.TemporaryDirectory() as d:
        keyring = os.path.join(d, "key")
        fd = os.open(keyring, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, os.urandom(24).hex().encode() + b"\n")
        os.close(fd)
        env = dict(os.environ, HUGEKV_XFER_KEY_FILE=keyring)
        tgt = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--target",
                                "--pages", str(npages), "--addr", addr],
                               stdout=subprocess.PIPE, text=True, env=env)
        line = tgt.stdout.readline().split()
        if len(line) != 2:
            tgt.kill()
            raise SystemExit("xfer_unit: the target did not start")
        port = int(line[0])
        remote = np.array([[int(v) for v in e.split(",")] for e in line[1].split(";")])
        with hugekv.Pool(4 * npages, PAGE, backing="2m") as pool:
            src, back = pool.alloc(npages), pool.alloc(npages)
            pool.unit_add(1, src)
            view = pool.as_array().reshape(-1)
            rng = np.random.default_rng(5)
            for s, n in src:
                view[s * PAGE:(s + n) * PAGE] = rng.integers(0, 256, n * PAGE, dtype=np.uint8)
            ep = Endpoint(pool, name="initiator", key_file=keyring)
            peer = ep.connect(f"{addr}:{port}", timeout_ms=20000)
            ep.wait(peer.put(src, remote, pin_units=[1]))
            ep.wait(peer.get(back, remote))
            a = np.concatenate([view[s * PAGE:(s + n) * PAGE] for s, n in src])
            b = np.concatenate([view[s * PAGE:(s + n) * PAGE] for s, n in back])
            same = bool((a == b).all())
            st = ep.stats()
            print(f"moved unit of {npages} pages there and back: {st['bytes']} bytes, "
                  f"{st['ops_per_transfer']:.1f} ops per transfer, "
                  f"{'identical' if same else 'DIFFERENT'}")
            del view
            peer.close()
            ep.close()
            pool.check()
            ok = same
            pool.unit_remove(1)
            pool.free(back)
        ok = tgt.wait(timeout=60) == 0 and ok
        return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=int, default=48)
    ap.add_argument("--addr", default="127.0.0.1")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--target", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.pages < 1 or a.pages > 1 << 20:
        ap.error("--pages must be in [1, 1048576]")
    rc = target(a.pages, a.addr) if a.target else initiator(a.pages, a.addr)
    return rc if a.check or a.target else 0


if __name__ == "__main__":
    sys.exit(main())
