# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""hugekv.prometheus: hugekv pools as metrics of an engine's own
prometheus_client registry, with the names and labels `hkvctl metrics`
exports (Kbuild-docs/admin-guide/metrics.rst).

    from prometheus_client import REGISTRY
    import hugekv.prometheus
    hugekv.prometheus.register(REGISTRY, pools=[l1_pool, l2_pool])

``pools`` are this process's hugekv.Pool objects, read through hkv_stats()
at each scrape. ``host=True`` adds every pool on the host that publishes a
stats page readable by this user (hkv_page_read(): the other processes are
never entered); pages of processes that are gone give only
hugekv_pool_stale 1. A pool read both ways is reported once.

A named pool is pool="NAME" (its label defaults to the name). Every process
attached to it publishes its own page of the shared figures; they are
reported as one pool (the longest-running live publisher's page) with
hugekv_pool_processes, the number of live publishers, and stale only when
all of them are gone.
"""
import ctypes
import os

from prometheus_client.core import (CounterMetricFamily, GaugeMetricFamily,
                                    HistogramMetricFamily, InfoMetricFamily)

from . import _lib
from ._lib import lib

__all__ = ["HugekvCollector", "register", "host_pages", "page_dir"]

LABELS = ["pool", "label"]
_EXT_LE = ["1.0", "2.0", "4.0", "8.0", "16.0", "+Inf"]
_AGE_LE = ["0.01", "0.1", "1.0", "10.0", "60.0", "600.0", "3600.0", "+Inf"]
_STATES = ("free", "allocated", "cached", "pinned")


def page_dir():
    """The directory where pools publish their stats pages (hkv_page_dir())."""
    buf = ctypes.create_string_buffer(4096)
    err = lib.hkv_page_dir(buf, len(buf))
    if err:
        raise _lib.error(err, "hkv_page_dir")
    return buf.value.decode()


def _stats_dict(st):
    nl = min(st.nlanes, _lib.STATS_LANES)
    out = {}
    for name, _ in _lib.Stats._fields_:
        v = getattr(st, name)
        if name.startswith("lane_"):
            v = list(v)[:nl]
        elif name == "region":
            v = [{f: getattr(r, f) for f, _ in _lib.RegionStats._fields_}
                 for r in list(v)[:min(st.nregions, _lib.STATS_REGIONS)]]
        elif isinstance(v, ctypes.Array):
            v = list(v)
        out[name] = v
    return out


def host_pages(directory=None):
    """Every readable stats page: a list of dicts (pool, name, label, pid,
    pid_start, pids, pool_id, stale, published_ns, free_room, stats, xfer),
    and the count of pages that could not be read. The pages of one named
    pool (one per attached process) are one dict; pids: the live ones."""
    d = directory or page_dir()
    try:
        names = sorted(n for n in os.listdir(d) if n.endswith(".page") and not n.startswith("."))
    except FileNotFoundError:
        return [], 0
    pages, errors = [], 0
    for n in names:
        pg = _lib.Page()
        pg.sz = ctypes.sizeof(pg)
        # fsencode: a name that is not UTF-8 is one unreadable page, not a
        # failed scrape
        err = lib.hkv_page_read(os.fsencode(os.path.join(d, n)), ctypes.byref(pg))
        if err == -2:           # -ENOENT: destroyed meanwhile
            continue
        if err:
            errors += 1
            continue
        name = pg.name.decode(errors="replace")
        x = pg.xfer
        pages.append({
            "pool": name or "%d.%d" % (pg.pid, pg.pool_id), "name": name,
            "pid_start": pg.pid_start,
            "label": pg.label.decode(errors="replace"),
            "pid": pg.pid, "pool_id": pg.pool_id,
            "stale": bool(pg.flags & _lib.PAGE_STALE),
            "published_ns": pg.published_ns,
            "free_room": (pg.free_room_low, pg.free_room_high),
            "stats": _stats_dict(pg.stats),
            "xfer": {f: (list(getattr(x, f)) if isinstance(getattr(x, f), ctypes.Array)
                         else getattr(x, f))
                     for f, _ in _lib.PageXfer._fields_ if f not in ("peer", "peer_grants")} | {
                "peer": [(p.peer, p.transfers, p.failures, p.bytes)
                         for p in list(x.peer)[:min(x.npeers, _lib.PAGE_XFER_PEERS)]],
                "peer_grants": [{f: getattr(g, f) for f, _ in _lib.PageGrants._fields_}
                                for g in list(x.peer_grants)[:min(x.npeers,
                                                                  _lib.PAGE_XFER_PEERS)]]},
        })
    return _merge_named(pages), errors


def _better(a, b):
    """which of two pages of one named pool speaks for it (as hkvctl):
    live first, then the longest-running process, else the last published"""
    if a["stale"] != b["stale"]:
        return not a["stale"]
    if a["stale"]:
        return a["published_ns"] > b["published_ns"]
    return (a["pid_start"], a["pid"]) < (b["pid_start"], b["pid"])


def _merge_named(pages):
    """one entry per named pool, with "pids": its live publishers"""
    out, named = [], {}
    for pg in pages:
        pg["pids"] = [] if pg["stale"] else [pg["pid"]]
        q = named.get(pg["name"]) if pg["name"] else None
        if q is None:
            if pg["name"]:
                named[pg["name"]] = pg
            out.append(pg)
            continue
        pids = sorted(q["pids"] + pg["pids"])
        if _better(pg, q):
            out[out.index(q)] = named[pg["name"]] = q = pg
        q["pids"] = pids
    return out


class _Families:
    """one family per metric name, filled pool by pool"""

    def __init__(self):
        self.fams = {}

    def get(self, cls, name, doc, extra=(), unit=""):
        f = self.fams.get(name)
        if f is None:
            kw = {"labels": LABELS + list(extra)}
            if unit:
                kw["unit"] = unit
            f = self.fams[name] = cls(name, doc, **kw)
        return f

    def gauge(self, name, doc, key, v, extra=(), values=(), unit=""):
        self.get(GaugeMetricFamily, name, doc, extra, unit).add_metric(list(key) + list(values), v)

    def counter(self, name, doc, key, v, extra=(), values=()):
        self.get(CounterMetricFamily, name, doc, extra).add_metric(list(key) + list(values), v)

    def hist(self, name, doc, key, les, counts, total, unit=""):
        buckets, acc = [], 0
        for le, c in zip(les, counts):
            acc += c
            buckets.append((le, acc))
        self.get(HistogramMetricFamily, name, doc, (), unit).add_metric(list(key), buckets, total)


def _pool_metrics(f, key, st, free_room):
    n = st["npages"]
    used = n - min(st["free_pages"], n)
    pages = {"free": st["free_pages"], "pinned": st["pinned_pages"],
             "cached": st["unit_pages"] - min(st["pinned_pages"], st["unit_pages"])}
    pages["allocated"] = used - min(st["unit_pages"], used)
    f.gauge("hugekv_pool_size_pages", "KV pages in the pool.", key, n)
    f.gauge("hugekv_page_size_bytes", "Bytes per KV page (0: index-only pool).", key,
            st["page_bytes"])
    for s in _STATES:
        f.gauge("hugekv_pages", "KV pages by state: free, allocated outside units, cached in "
                "unpinned units, pinned.", key, pages[s], ["state"], [s])
    f.gauge("hugekv_free_room_low_pages", "Low free-room watermark in pages (0: off).", key,
            int(free_room[0] * n))
    f.gauge("hugekv_free_room_high_pages", "High free-room watermark in pages.", key,
            int(free_room[1] * n))
    f.gauge("hugekv_free_extents", "Free extents (runs of free pages).", key, st["free_extents"])
    f.gauge("hugekv_largest_free_extent_pages", "Pages in the largest free extent.", key,
            st["largest_free_extent"])
    for r, u in zip(st["ufi_size"], st["ufi"]):
        f.gauge("hugekv_unusable_free_index", "Share of free pages that requests of "
                "request_pages contiguous pages cannot use.", key, u, ["request_pages"], [str(r)])
    for i, v in enumerate(st["lane_free_pages"]):
        f.gauge("hugekv_lane_free_pages", "Free pages per lane.", key, v, ["lane"], [str(i)])
    f.gauge("hugekv_units", "Cache units.", key, st["units"])
    f.gauge("hugekv_pinned_units", "Cache units with a pin held.", key, st["pinned_units"])
    f.counter("hugekv_allocations", "Successful allocations.", key, st["allocs"])
    nospc = st["alloc_failures_nospc"]
    for reason, v in (("no_room", st["alloc_failures"] - min(nospc, st["alloc_failures"])),
                      ("max_extents", nospc)):
        f.counter("hugekv_allocation_failures", "Failed allocations by reason.", key, v,
                  ["reason"], [reason])
    f.counter("hugekv_frees", "Successful frees.", key, st["frees"])
    f.counter("hugekv_allocated_pages", "Pages handed out.", key, st["pages_allocated"])
    f.counter("hugekv_freed_pages", "Pages given back (frees and evictions).", key,
              st["pages_freed"])
    f.hist("hugekv_allocation_extents", "Extents (DMA descriptors) per successful allocation.",
           key, _EXT_LE, st["extents_hist"], st["extents_returned"])
    f.counter("hugekv_evictions", "Cache units evicted.", key, st["evictions"])
    f.counter("hugekv_evicted_pages", "Pages of evicted units.", key, st["evicted_pages"])
    f.counter("hugekv_eviction_runs", "Planned eviction runs.", key, st["eviction_runs"])
    f.counter("hugekv_eviction_failures", "Eviction runs short of their target.", key,
              st["evict_failures"])
    f.hist("hugekv_evicted_unit_age_seconds", "Time from a unit's last add or touch to its "
           "eviction.", key, _AGE_LE, st["evict_age_hist"], st["evict_age_ns"] / 1e9,
           unit="seconds")
    f.counter("hugekv_served_calls", "Calls that found their lane busy and were run by its "
              "holder.", key, st["served_calls"])
    f.counter("hugekv_bias_revocations", "Times a lane used by one thread alone was taken by "
              "another.", key, st["bias_revocations"])
    f.counter("hugekv_deferred_frees", "Frees queued for a lane's holder.", key,
              st["deferred_frees"])
    sizes = {}
    for r in st["region"]:
        sizes[r["hugepage_bytes"]] = sizes.get(r["hugepage_bytes"], 0) + r["bytes"]
    for size, b in sizes.items():
        f.gauge("hugekv_arena_bytes", "Bytes mapped, by backing page size.", key, b,
                ["page_size"], [str(size)], unit="bytes")
    f.gauge("hugekv_backing_fallbacks", "Steps below the wanted page size taken at create.",
            key, st["fallbacks"])
    f.gauge("hugekv_prefault_seconds", "Time spent prefaulting at create.", key,
            st["prefault_ns"] / 1e9, unit="seconds")
    f.gauge("hugekv_metadata_bytes", "The allocator's own bookkeeping.", key,
            st["metadata_bytes"], unit="bytes")


def _xfer_metrics(f, key, x):
    if not x["endpoints"]:
        return
    f.counter("hugekv_transfers", "Transfers completed (either result).", key, x["transfers"])
    other = x["failures"] - min(x["failures"], x["timeouts"] + x["refused"])
    for reason, v in (("timeout", x["timeouts"]), ("refused", x["refused"]), ("error", other)):
        f.counter("hugekv_transfer_failures", "Failed transfers by reason.", key, v,
                  ["reason"], [reason])
    f.counter("hugekv_transfer_bytes", "Bytes moved by successful transfers.", key, x["bytes"])
    f.counter("hugekv_transfer_operations", "Transfer operations issued.", key, x["ops"])
    les = ["%g" % (ns / 1e9) for ns in x["lat_le_ns"]] + ["+Inf"]
    counts = [c - p for c, p in zip(x["lat_count"] + [x["lat_n"]], [0] + x["lat_count"])]
    f.hist("hugekv_transfer_latency_seconds", "Latency of successful transfers.", key, les,
           counts, x["lat_sum_ns"] / 1e9, unit="seconds")
    for peer, n, fails, b in x["peer"]:
        f.counter("hugekv_peer_transfers", "Transfers completed with each peer.", key, n,
                  ["peer"], [str(peer)])
        f.counter("hugekv_peer_transfer_failures", "Failed transfers with each peer.", key,
                  fails, ["peer"], [str(peer)])
        f.counter("hugekv_peer_transfer_bytes", "Bytes moved with each peer.", key, b,
                  ["peer"], [str(peer)])
    _grant_metrics(f, key, x)
    _cma_metrics(f, key, x)


def _refusals(refused, limit, busy):
    return (("limit", limit), ("busy", busy), ("denied", refused - min(refused, limit + busy)))


def _grant_metrics(f, key, x):
    """the pool as a transfer target: the grants its endpoint gives peers"""
    if x["sz"] <= _lib.PAGE_XFER_SZ0:
        return
    f.counter("hugekv_grants", "Grants the pool's endpoint gave peers.", key, x["grants"])
    f.gauge("hugekv_grants_active", "Grants peers hold on the pool now.", key,
            x["grants_active"])
    f.gauge("hugekv_granted_pages", "Pages the grants held now name.", key, x["grant_pages"])
    f.gauge("hugekv_granted_bytes", "Bytes the grants held now name.", key, x["grant_bytes"],
            unit="bytes")
    f.gauge("hugekv_grant_state_bytes", "Bytes of grant state held now.", key,
            x["grant_mem"], unit="bytes")
    for reason, v in _refusals(x["grants_refused"], x["grants_refused_limit"],
                               x["grants_refused_busy"]):
        f.counter("hugekv_grants_refused", "Grant requests refused by reason.", key, v,
                  ["reason"], [reason])
    f.counter("hugekv_grants_expired", "Grants that passed their deadline.", key,
              x["grants_expired"])
    f.counter("hugekv_transfer_auth_failures", "Connections that failed to authenticate.",
              key, x["auth_failures"])
    f.counter("hugekv_transfer_peers_rejected", "Connections rejected at max_peers.", key,
              x["peers_rejected"])
    for g in x["peer_grants"]:
        peer = [str(g["peer"])]
        f.counter("hugekv_peer_grants", "Grants given to each peer.", key, g["grants"],
                  ["peer"], peer)
        f.gauge("hugekv_peer_grants_active", "Grants each peer holds now.", key, g["active"],
                ["peer"], peer)
        f.gauge("hugekv_peer_granted_pages", "Pages each peer's grants name now.", key,
                g["pages"], ["peer"], peer)
        f.gauge("hugekv_peer_granted_bytes", "Bytes each peer's grants name now.", key,
                g["bytes"], ["peer"], peer, unit="bytes")
        for reason, v in _refusals(g["refused"], g["refused_limit"], g["refused_busy"]):
            f.counter("hugekv_peer_grants_refused", "Each peer's grant requests refused, "
                      "by reason.", key, v, ["peer", "reason"], peer + [reason])
        f.counter("hugekv_peer_grants_expired", "Each peer's grants that passed their "
                  "deadline.", key, g["expired"], ["peer"], peer)


def _cma_metrics(f, key, x):
    """the single copy between processes of one host"""
    if x["sz"] <= _lib.PAGE_XFER_SZ1:
        return
    f.gauge("hugekv_transfer_cma_out_peers", "Peers that copy for the pool's transfers "
            "(single copy on one host).", key, x["cma_out"])
    f.gauge("hugekv_transfer_cma_in_peers", "Peers the pool's endpoint copies for (single "
            "copy on one host).", key, x["cma_in"])
    f.counter("hugekv_transfer_cma_offers_refused", "Single-copy offers refused (those peers "
              "stay two-sided).", key, x["cma_refused"])
    f.counter("hugekv_transfer_cma_calls", "process_vm_readv/writev calls made as a target.",
              key, x["cma_calls"])
    f.counter("hugekv_transfer_cma_runs", "Runs (operations) copied as a target.", key,
              x["cma_runs"])
    f.counter("hugekv_transfer_cma_bytes", "Bytes copied as a target.", key, x["cma_bytes"])
    f.counter("hugekv_transfer_cma_faults", "Single-copy requests that failed (a buffer not "
              "mapped, the peer gone, past the deadline).", key, x["cma_faults"])


class HugekvCollector:
    """A prometheus_client collector of hugekv pools (see the module's text)."""

    def __init__(self, pools=(), host=False, runtime_dir=None):
        self.pools = list(pools)
        self.host = host
        self.runtime_dir = runtime_dir

    def collect(self):
        f = _Families()
        info = InfoMetricFamily("hugekv_pool", "A hugekv pool.", labels=LABELS)
        stale = GaugeMetricFamily("hugekv_pool_stale", "1 when the process that published "
                                  "the page is gone.", labels=LABELS)
        procs = GaugeMetricFamily("hugekv_pool_processes", "Live processes publishing the "
                                  "pool's page: those attached to a named pool, 1 for a "
                                  "private one.", labels=LABELS)
        seen = set()
        for p in self.pools:
            if p.closed:
                continue
            name = getattr(p, "name", None)
            key = (name, p.label or name) if name else ("%d.%d" % (os.getpid(), p.id), p.label)
            if key[0] in seen:
                continue
            seen.add(key[0])
            st = p.stats()
            info.add_metric(list(key), {"pid": str(os.getpid()), "backing": st["backing_name"]})
            stale.add_metric(list(key), 0)
            procs.add_metric(list(key), 1)
            _pool_metrics(f, key, st, getattr(p, "free_room", (0.0, 0.0)))
        if self.host:
            pages, _ = host_pages(self.runtime_dir)
            for pg in pages:
                if pg["pool"] in seen:
                    continue
                key = (pg["pool"], pg["label"])
                info.add_metric(list(key), {"pid": str(pg["pid"]), "backing":
                                            _lib.BACKING_NAMES.get(pg["stats"]["backing"], "?")})
                stale.add_metric(list(key), 1 if pg["stale"] else 0)
                procs.add_metric(list(key), len(pg["pids"]))
                if not pg["stale"]:
                    _pool_metrics(f, key, pg["stats"], pg["free_room"])
                    _xfer_metrics(f, key, pg["xfer"])
        yield info
        yield stale
        yield procs
        yield from f.fams.values()


def register(registry=None, pools=(), host=False, runtime_dir=None):
    """Register a HugekvCollector with @registry (prometheus_client's default
    REGISTRY when None) and return it."""
    if registry is None:
        from prometheus_client import REGISTRY as registry
    c = HugekvCollector(pools, host, runtime_dir)
    registry.register(c)
    return c
