#!/usr/bin/python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""bench.py - per-call alloc/free latency from Python: hugekv against a
model of SGLang's host KV pool, side by side in one process.

The workload: a host pool of --slots token slots in pages of --page-size
tokens, filled to --occupancy with requests of heavy-tailed size (1..256
pages, log-normal), then churned: each step frees a random live request and
allocates a new one. Every design replays the same sequence; the designs
run interleaved, in rounds, so drift on the machine hits them alike. Each
alloc and free call is timed on its own (time.perf_counter_ns).

Designs:
  hugekv          hugekv.Pool.alloc/free on an index-only pool of pages
                  (extents in, extents out)
  hugekv_host     hugekv.sglang.HostPoolMixin: SGLang's host-pool surface
                  (token index tensors in and out, checks included); its
                  pair p50 against hugekv's is host_vs_pool_pair_p50, held
                  to <= 2 (goal host_pair_p50_le_2x_pool)
  sglang_host     a model of SGLang's HostKVCache allocator as upstream has
                  it: a torch free_slots tensor sliced on alloc, frees
                  appended to release_slots and merged (torch.cat) only when
                  an allocation needs them, slot_used double-alloc/free
                  checks, an RLock around each call
  sglang_nocheck  the same without the slot_used checks: the best case of
                  that design

Prints one JSON object (--out FILE writes it there too), with the load
average before and after the run: figures from a loaded machine say so.
"""
import argparse
import gc
import json
import os
import sys
import threading
import time
from functools import wraps

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hugekv  # noqa: E402
from hugekv.sglang import HostPoolMixin  # noqa: E402


def synchronized(func):
    @wraps(func)
    def wrapper(self, *args, **kwargs):
        with self.lock:
            return func(self, *args, **kwargs)
    return wrapper


class SGLangHostModel:
    """SGLang's host-pool allocation as upstream writes it (lazy merge)."""

    def __init__(self, size, page_size, checks=True):
        self.size, self.page_size, self.checks = size, page_size, checks
        self.lock = threading.RLock()
        self.clear()

    @synchronized
    def clear(self):
        self.free_slots = torch.arange(self.size, dtype=torch.int64)
        self.release_slots = []
        self.num_release_slots = 0
        self.slot_used = torch.zeros(self.size, dtype=torch.bool)

    def available_size(self):
        return len(self.free_slots) + self.num_release_slots

    def _merge_release_slots(self):
        if self.num_release_slots == 0:
            return
        if len(self.free_slots) == 0 and len(self.release_slots) == 1:
            self.free_slots = self.release_slots[0]
        else:
            self.free_slots = torch.cat([self.free_slots, *self.release_slots])
        self.release_slots = []
        self.num_release_slots = 0

    @synchronized
    def alloc(self, need_size):
        assert need_size % self.page_size == 0
        if need_size > self.available_size():
            return None
        if need_size > len(self.free_slots):
            self._merge_release_slots()
        select_index = self.free_slots[:need_size]
        self.free_slots = self.free_slots[need_size:]
        if self.checks:
            assert not self.slot_used[select_index].any(), "Double-alloc detected"
            self.slot_used[select_index] = True
        return select_index

    @synchronized
    def free(self, indices):
        indices_cpu = indices.cpu()
        if indices_cpu.numel() == 0:
            return 0
        if self.checks:
            assert self.slot_used[indices_cpu].all(), "Double-free detected"
            self.slot_used[indices_cpu] = False
        self.release_slots.append(indices_cpu)
        self.num_release_slots += len(indices_cpu)
        return len(indices)


class _HostBase:
    """Just what HostKVCache gives the mixin: sizes, a lock, clear()."""

    def __init__(self, size, page_size):
        self.page_size = page_size
        self.page_num = size // page_size
        self.size = self.page_num * page_size
        self.lock = threading.RLock()
        self.clear()


class HugekvHost(HostPoolMixin, _HostBase):
    pass


def workload(slots, page_size, occupancy, steps, seed):
    """(fill sizes, churn steps): sizes in pages; a step is (victim, size)
    where victim is a uniform draw in [0, 1) mapped onto the live list."""
    rng = np.random.default_rng(seed)
    pages = slots // page_size
    target = int(pages * occupancy)
    fill = []
    total = 0
    while True:
        n = int(np.clip(np.round(rng.lognormal(2.0, 1.1)), 1, 256))
        if total + n > target:
            break
        fill.append(n)
        total += n
    churn = [(float(rng.random()), int(np.clip(np.round(rng.lognormal(2.0, 1.1)), 1, 256)))
             for _ in range(steps)]
    return fill, churn


class Runner:
    """One design's state: its allocator, its live requests, its timings."""

    def __init__(self, name, slots, page_size):
        self.name, self.ps = name, page_size
        if name == "hugekv":
            self.pool = hugekv.Pool(slots // page_size)
            self.alloc = self.pool.alloc
            self.free = self.pool.free
            self.unit = 1                    # alloc takes pages
        elif name == "hugekv_host":
            self.pool = HugekvHost(slots, page_size)
            self.alloc, self.free, self.unit = self.pool.alloc, self.pool.free, page_size
        else:
            self.pool = SGLangHostModel(slots // page_size * page_size, page_size,
                                        checks=(name == "sglang_host"))
            self.alloc, self.free, self.unit = self.pool.alloc, self.pool.free, page_size
        self.live, self.sizes, self.used = [], [], 0
        self.ta, self.tf, self.runs, self.fails = [], [], [], 0

    def fill(self, sizes):
        for n in sizes:
            r = self.alloc(n * self.unit)
            assert r is not None, f"{self.name}: fill failed"
            self.live.append(r)
            self.sizes.append(n)
            self.used += n

    def churn(self, steps, target):
        """Each step frees a random live request, more while the new one
        would pass the occupancy target, then allocates the new one."""
        pc = time.perf_counter_ns
        live, sizes, alloc, free, unit = self.live, self.sizes, self.alloc, self.free, self.unit
        ta, tf = self.ta, self.tf
        for victim, n in steps:
            while True:
                i = int(victim * len(live))
                x = live[i]
                live[i] = live[-1]
                live.pop()
                self.used -= sizes[i]
                sizes[i] = sizes[-1]
                sizes.pop()
                t0 = pc()
                free(x)
                tf.append(pc() - t0)
                if self.used + n <= target or not live:
                    break
                victim = (victim * 7.31) % 1.0
            t1 = pc()
            try:
                r = alloc(n * unit)
            except hugekv.OutOfPages:
                r = None
            ta.append(pc() - t1)
            if r is None:
                self.fails += 1
            else:
                live.append(r)
                sizes.append(n)
                self.used += n

    def descriptor_sample(self, k=2000):
        """Runs (transfer descriptors) per live allocation, for the last k."""
        out = []
        for r in self.live[-k:]:
            if self.name == "hugekv":
                out.append(r.shape[0])
            else:
                p = r.numpy()[::self.ps] // self.ps
                out.append(int((np.diff(p) != 1).sum()) + 1 if p.size else 0)
        return float(np.mean(out))


def pct(a, q):
    return float(np.percentile(np.asarray(a, dtype=np.float64), q))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--slots", type=int, default=6_600_000, help="token slots (6.6 M)")
    ap.add_argument("--page-size", type=int, default=64, help="tokens per page")
    ap.add_argument("--occupancy", type=float, default=0.95)
    ap.add_argument("--steps", type=int, default=20000, help="churn steps per round")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--designs", default="hugekv,hugekv_host,sglang_host,sglang_nocheck")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", help="also write the JSON here")
    a = ap.parse_args()
    if a.slots < a.page_size * 1000 or a.page_size < 1 or not 0 < a.occupancy < 1 \
            or a.steps < 1 or a.rounds < 1:
        ap.error("need --slots >= 1000 pages, --page-size >= 1, 0 < --occupancy < 1, "
                 "--steps and --rounds >= 1")
    names = a.designs.split(",")
    known = ("hugekv", "hugekv_host", "sglang_host", "sglang_nocheck")
    if not names or any(n not in known for n in names) or len(set(names)) != len(names):
        ap.error(f"--designs: a comma-separated subset of {', '.join(known)}")
    fill, churn = workload(a.slots, a.page_size, a.occupancy, a.steps * a.rounds, a.seed)
    runners = [Runner(n, a.slots, a.page_size) for n in names]
    target = int(a.slots // a.page_size * a.occupancy)
    for r in runners:
        r.fill(fill)
        print(f"bench: {r.name} filled {len(fill)} requests", file=sys.stderr)
    load_before = os.getloadavg()
    gc.disable()
    try:
        for rnd in range(a.rounds):
            block = churn[rnd * a.steps:(rnd + 1) * a.steps]
            order = runners if rnd % 2 == 0 else runners[::-1]
            for r in order:
                r.churn(block, target)
            print(f"bench: round {rnd + 1}/{a.rounds} done", file=sys.stderr)
    finally:
        gc.enable()
    res = {"benchmark": "python alloc+free per call", "slots": a.slots,
           "page_size": a.page_size, "pages": a.slots // a.page_size,
           "occupancy": a.occupancy, "steps": a.steps * a.rounds, "rounds": a.rounds,
           "request_pages": "lognormal(2.0, 1.1) clipped to 1..256", "unit": "ns",
           "python": sys.version.split()[0], "torch": torch.__version__,
           "library": hugekv.library_path, "loadavg_before": list(load_before),
           "loadavg_after": list(os.getloadavg()), "cpus": os.cpu_count(), "designs": {}}
    for r in runners:
        m = min(len(r.ta), len(r.tf))
        pair = np.asarray(r.ta[:m]) + np.asarray(r.tf[:m])
        res["designs"][r.name] = {
            "alloc_p50": pct(r.ta, 50), "alloc_p99": pct(r.ta, 99),
            "free_p50": pct(r.tf, 50), "free_p99": pct(r.tf, 99),
            "pair_p50": pct(pair, 50), "pair_p99": pct(pair, 99), "pair_p999": pct(pair, 99.9),
            "pair_mean": float(pair.mean()), "alloc_failures": r.fails,
            "descriptors_per_alloc": r.descriptor_sample()}
    d = res["designs"]
    base = [n for n in ("sglang_nocheck", "sglang_host") if n in d]
    if "hugekv" in d and base:
        best = min(base, key=lambda n: d[n]["pair_p99"])
        res["ratio_vs"] = best
        res["ratio_pair_p50"] = d[best]["pair_p50"] / d["hugekv"]["pair_p50"]
        res["ratio_pair_p99"] = d[best]["pair_p99"] / d["hugekv"]["pair_p99"]
        res["ratio_pair_p999"] = d[best]["pair_p999"] / d["hugekv"]["pair_p999"]
        for n in base:
            res[f"ratios_vs_{n}"] = {q: d[n][f"pair_{q}"] / d["hugekv"][f"pair_{q}"]
                                     for q in ("p50", "p99", "p999", "mean")}
        res["goal"] = {"pair_p50_le_2000ns": d["hugekv"]["pair_p50"] <= 2000,
                       "p99_ratio_ge_50_vs_" + best: res["ratio_pair_p99"] >= 50}
    if "hugekv" in d and "hugekv_host" in d:
        r = d["hugekv_host"]["pair_p50"] / d["hugekv"]["pair_p50"]
        res["host_vs_pool_pair_p50"] = r
        res.setdefault("goal", {})["host_pair_p50_le_2x_pool"] = r <= 2.0
    if "hugekv" in d:
        st = runners[names.index("hugekv")].pool.stats()
        res["hugekv_extents_per_alloc"] = st["extents_per_alloc"]
    text = json.dumps(res, indent=1)
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
