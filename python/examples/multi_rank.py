#!/usr/bin/python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""multi_rank.py - tensor-parallel ranks on one host cache instead of one each.

Rank 0 makes a named pool with one lane per rank; every rank (a process of
its own) attaches it, allocates on its own lane, writes its shard of each
block and publishes the block as a unit (id: block hash + rank). Any rank
reads any other rank's shard in place (the pages are mapped at the same
address in every process): one copy of the cache in host memory, not one
per rank.

    multi_rank.py [--ranks N] [--blocks N] [--check]

--check exits 1 unless every rank read every other rank's shards intact and
the pool ends with every page free and hkv_check clean.
"""
import argparse
import multiprocessing as mp
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import hugekv  # noqa: E402

NAME, PAGE_BYTES, PAGES_PER_SHARD = "multi-rank-example", 4096, 2


def shard(block, rank):
    return np.full(PAGES_PER_SHARD * PAGE_BYTES, (block * 31 + rank) % 251, dtype=np.uint8)


def rank_main(rank, ranks, blocks, write_done, read_done, out):
    pool = hugekv.Pool.attach(NAME)
    arr = pool.as_array(np.uint8, (pool.npages, PAGE_BYTES))
    for b in range(blocks):                       # write this rank's shards
        ext = pool.alloc(PAGES_PER_SHARD, lane=rank)
        rows = np.concatenate([np.arange(s, s + k) for s, k in ext.tolist()])
        arr[rows] = shard(b, rank).reshape(PAGES_PER_SHARD, PAGE_BYTES)
        pool.unit_add(b << 8 | rank, ext)
    write_done.wait()
    ok = 0
    for b in range(blocks):                       # read everyone's, in place
        for r in range(ranks):
            ext = pool.unit_extents(b << 8 | r)
            rows = np.concatenate([np.arange(s, s + k) for s, k in ext.tolist()])
            ok += bool((arr[rows].reshape(-1) == shard(b, r)).all())
    out.put((rank, ok))
    read_done.wait()
    for b in range(blocks):                       # each rank removes its own
        pool.unit_remove(b << 8 | rank)
    del arr
    pool.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--blocks", type=int, default=64)
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(dir="/dev/shm", prefix="hkv-ranks-") as d:
        os.environ["HUGEKV_NAMED_DIR"] = d
        pool = hugekv.Pool(a.ranks * a.blocks * PAGES_PER_SHARD * 2, PAGE_BYTES,
                           nlanes=a.ranks, backing="4k", name=NAME)
        ctx = mp.get_context("spawn")             # fresh processes, as ranks are
        write_done, read_done = ctx.Barrier(a.ranks), ctx.Barrier(a.ranks)
        out = ctx.Queue()
        procs = [ctx.Process(target=rank_main,
                             args=(r, a.ranks, a.blocks, write_done, read_done, out))
                 for r in range(a.ranks)]
        for p in procs:
            p.start()
        results = dict(out.get(timeout=120) for _ in procs)
        for p in procs:
            p.join(120)
        pool.check()
        free = pool.available == pool.npages
        pool.close()
        hugekv.Pool.unlink(NAME)
    want = a.ranks * a.blocks
    print(f"{a.ranks} ranks on one pool: each read {sorted(results.values())} of {want} "
          f"shards intact; every page free at the end: {free}")
    if a.check and not (free and all(v == want for v in results.values()) and
                        all(p.exitcode == 0 for p in procs)):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
