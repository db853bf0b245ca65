#!/usr/bin/python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""hicache.py - a HiCache-shaped engine loop on hugekv, end to end.

A radix tree of cache units over two pools, as an SGLang-like engine keeps
them per rank:

  L1  an index-only pool: the GPU's KV page index (the bytes stand in as a
      numpy array, "device memory", here on the host);
  L2  a pool of 2 MiB hugepages: the host KV cache.

Each request walks a path of the tree (shared prefixes come from a skewed
choice of chunks). A node found on L1 is touched; one found only on L2 is
loaded back (L2 pinned while it is read, bytes verified against what was
written when it was computed); a missing one is computed on L1 and backed
up write-through to L2 (both pinned while the copy runs). L1 and L2 run
eviction through their callbacks (watermarks on allocation); a node that
lost both copies leaves the tree. Transfers go as runs contiguous on both
sides: the summary compares their number to one descriptor per page.

    hicache.py [--requests N] [--seed S] [--json] [--check]

--check exits 1 unless every loaded byte matched, both pools pass
hkv_check, and eviction and load-back both happened.
"""
import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import hugekv  # noqa: E402

PAGE_BYTES = 64 << 10


def pattern(node, npages):
    """The bytes a node's pages hold once computed: (npages, PAGE_BYTES)."""
    base = (np.arange(npages, dtype=np.uint64)[:, None] * 1000003 + node * 7919 +
            np.arange(PAGE_BYTES // 8, dtype=np.uint64)[None, :])
    return base.view(np.uint8).reshape(npages, PAGE_BYTES)


def runs_both(src, dst):
    """Descriptors for copying page src[i] -> dst[i]: runs contiguous on both sides."""
    if src.size == 0:
        return 0
    brk = (np.diff(src) != 1) | (np.diff(dst) != 1)
    return int(brk.sum()) + 1


class Node:
    __slots__ = ("id", "parent", "key", "children", "npages", "l1", "l2")

    def __init__(self, nid, parent, key, npages):
        self.id, self.parent, self.key, self.npages = nid, parent, key, npages
        self.children = {}
        self.l1 = None      # extents on L1 (a unit there) or None
        self.l2 = None      # extents on L2 (a unit there) or None


class HiCache:
    def __init__(self, l1_pages, l2_pages, seed):
        self.l1 = hugekv.Pool(l1_pages, free_room=(0.05, 0.15))
        backing = "2m" if self._have_2m(l2_pages) else "auto"
        self.l2 = hugekv.Pool(l2_pages, PAGE_BYTES, backing=backing, free_room=(0.05, 0.15))
        self.device = np.zeros((l1_pages, PAGE_BYTES), dtype=np.uint8)   # "GPU memory"
        self.host = self.l2.as_array()                                    # the L2 arena
        self.root = Node(0, None, None, 0)
        self.nodes = {}
        self.next_id = 1
        self.lost = []      # node ids that lost a copy in a callback, handled after
        self.l1.on_evict(lambda u, ext: self.lost.append((1, u)))
        self.l2.on_evict(lambda u, ext: self.lost.append((2, u)))
        self.rng = np.random.default_rng(seed)
        self.s = dict(requests=0, hits_l1=0, loads=0, computes=0, backups=0,
                      l1_evictions=0, l2_evictions=0, nodes_dropped=0,
                      transfers=0, pages_moved=0, descriptors=0, l2_extents=0,
                      bytes_verified=0, mismatches=0, backing=self.l2.stats()["backing_name"])

    @staticmethod
    def _have_2m(pages):
        try:
            with open("/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages") as f:
                return int(f.read()) * (2 << 20) >= pages * PAGE_BYTES + (4 << 20)
        except OSError:
            return False

    # --- eviction bookkeeping (after the pool call that evicted) --------

    def settle(self):
        lost, self.lost = self.lost, []
        for tier, nid in lost:
            node = self.nodes.get(nid)
            if node is None:
                continue
            if tier == 1:
                node.l1 = None
                self.s["l1_evictions"] += 1
            else:
                node.l2 = None
                self.s["l2_evictions"] += 1
        for tier, nid in lost:
            node = self.nodes.get(nid)
            if node is not None and node.l1 is None and node.l2 is None:
                self.drop(node)

    def drop(self, node):
        """Remove a node and its subtree (their copies are released)."""
        stack = [node]
        while stack:
            n = stack.pop()
            stack.extend(n.children.values())
            if n.l1 is not None:
                self.l1.unit_remove(n.id)
            if n.l2 is not None:
                self.l2.unit_remove(n.id)
            self.nodes.pop(n.id, None)
            self.s["nodes_dropped"] += 1
        del node.parent.children[node.key]

    # --- transfers ------------------------------------------------------

    def copy(self, src_ext, dst_ext, to_host):
        src = hugekv.extents_to_pages(src_ext)
        dst = hugekv.extents_to_pages(dst_ext)
        if to_host:
            self.host[dst] = self.device[src]
        else:
            self.device[dst] = self.host[src]
        self.s["transfers"] += 1
        self.s["pages_moved"] += int(src.size)
        self.s["descriptors"] += runs_both(src, dst)
        self.s["l2_extents"] += int((dst_ext if to_host else src_ext).shape[0])

    def alloc_l1(self, n):
        try:
            return self.l1.alloc(n, evict=True)
        finally:
            self.settle()

    def compute(self, node):
        """Prefill on "the GPU", then write-through backup to L2, pinned."""
        ext = self.alloc_l1(node.npages)
        self.device[hugekv.extents_to_pages(ext)] = pattern(node.id, node.npages)
        self.l1.unit_add(node.id, ext)
        node.l1 = ext
        self.s["computes"] += 1
        self.l1.unit_pin(node.id)               # the backup reads these pages
        try:
            try:
                hext = self.l2.alloc(node.npages, evict=True)
            finally:
                self.settle()
            self.l2.unit_add(node.id, hext)
            self.l2.unit_pin(node.id)           # transfer in flight
            self.copy(ext, hext, to_host=True)
            self.l2.unit_unpin(node.id)
            node.l2 = hext
            self.s["backups"] += 1
        except hugekv.OutOfPages:
            pass                                # L2 all pinned: stays device-only
        finally:
            self.l1.unit_unpin(node.id)

    def load(self, node):
        """L2 -> L1, then verify the bytes against what was computed."""
        self.l2.unit_pin(node.id)
        try:
            ext = self.alloc_l1(node.npages)
            if node.l2 is None:                 # evicted meanwhile: cannot happen pinned
                raise AssertionError(f"node {node.id} lost its pinned host copy")
            self.copy(node.l2, ext, to_host=False)
            self.l1.unit_add(node.id, ext)
            node.l1 = ext
            self.s["loads"] += 1
        finally:
            self.l2.unit_unpin(node.id)
        got = self.device[hugekv.extents_to_pages(ext)]
        want = pattern(node.id, node.npages)
        self.s["bytes_verified"] += got.size
        if not np.array_equal(got, want):
            self.s["mismatches"] += 1

    # --- the engine loop ------------------------------------------------

    def request(self, depth, fanout):
        self.s["requests"] += 1
        node, pinned = self.root, []
        try:
            for _ in range(depth):
                key = int(min(self.rng.zipf(1.6), fanout))
                child = node.children.get(key)
                if child is None:
                    child = Node(self.next_id, node, key, int(self.rng.integers(1, 9)))
                    self.next_id += 1
                    node.children[key] = child
                    self.nodes[child.id] = child
                    self.compute(child)
                elif child.l1 is not None:
                    self.l1.unit_touch(child.id)
                    if child.l2 is not None:
                        self.l2.unit_touch(child.id)
                    self.s["hits_l1"] += 1
                else:
                    self.load(child)
                if child.id not in self.nodes:      # dropped by an eviction meanwhile
                    break
                if child.l1 is not None:
                    self.l1.unit_pin(child.id)      # in use by this request
                    pinned.append(child.id)
                node = child
        finally:
            for nid in pinned:
                self.l1.unit_unpin(nid)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=1500)
    ap.add_argument("--l1-pages", type=int, default=384)
    ap.add_argument("--l2-pages", type=int, default=1024)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", action="store_true", help="print the summary as JSON")
    ap.add_argument("--check", action="store_true", help="exit 1 unless all checks pass")
    a = ap.parse_args()
    if a.requests < 1 or a.l1_pages < 64 or a.l2_pages < 64:
        ap.error("need --requests >= 1 and at least 64 pages per pool")
    t0 = time.perf_counter()
    hc = HiCache(a.l1_pages, a.l2_pages, a.seed)
    for i in range(a.requests):
        hc.request(depth=int(hc.rng.integers(1, 6)), fanout=12)
    hc.l1.check()
    hc.l2.check()
    s = hc.s
    s["seconds"] = round(time.perf_counter() - t0, 3)
    s["extents_per_transfer"] = round(s["l2_extents"] / max(s["transfers"], 1), 3)
    s["descriptors_per_page"] = round(s["descriptors"] / max(s["pages_moved"], 1), 3)
    s["descriptors_saved"] = s["pages_moved"] - s["descriptors"]
    s["l2_stats"] = {k: hc.l2.stats()[k] for k in ("extents_per_alloc", "multi_extent_share",
                                                     "evictions", "free_pages")}
    if a.json:
        print(json.dumps(s, indent=1))
    else:
        print(f"hicache: {s['requests']} requests on L1 {a.l1_pages} index pages, "
              f"L2 {a.l2_pages} x 64 KiB ({s['backing']}) in {s['seconds']} s")
        print(f"  L1 hits {s['hits_l1']}, computed {s['computes']}, backed up {s['backups']}, "
              f"loaded back {s['loads']}")
        print(f"  evictions: L1 {s['l1_evictions']}, L2 {s['l2_evictions']}; "
              f"nodes dropped {s['nodes_dropped']}")
        print(f"  transfers {s['transfers']}: {s['pages_moved']} pages in {s['descriptors']} "
              f"descriptors ({s['descriptors_per_page']} per page; {s['descriptors_saved']} "
              f"saved against one per page); {s['extents_per_transfer']} L2 extents per transfer")
        print(f"  verified {s['bytes_verified']} loaded bytes, {s['mismatches']} mismatching loads")
    if a.check:
        bad = []
        if s["mismatches"]:
            bad.append(f"{s['mismatches']} loads with wrong bytes")
        if not (s["loads"] and s["l1_evictions"] and s["l2_evictions"]):
            bad.append("no load-back or no eviction on both tiers")
        if bad:
            print("hicache: FAIL: " + "; ".join(bad), file=sys.stderr)
            return 1
        print("hicache-check: passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
