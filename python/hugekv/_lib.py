# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""ctypes binding of libhugekv.so: the library, the C structs, the prototypes.

The structs mirror include/hugekv.h field for field. Every call that takes a
struct passes sizeof() of the mirror in its ``sz`` field, so a newer library
with fields appended still reads and writes only what this mirror knows.

Where the library is found, first match wins:
  1. $HUGEKV_LIBRARY (a path to libhugekv.so*),
  2. the build tree this package sits in (<top>/build/libhugekv.so), when
     python/hugekv is inside a hugekv checkout,
  3. a copy inside the package (hugekv/libhugekv.so.0), which ``pip install``
     from a built checkout carries,
  4. the library directory ``make install`` recorded in _paths.py,
  5. the soname libhugekv.so.0 through the dynamic loader (LD_LIBRARY_PATH,
     ldconfig),
  6. the usual install directories (/usr/local/lib, ...) by path, for an
     install that ldconfig has not been run after.
"""
import ctypes
import errno as _errno
import os

c_u64 = ctypes.c_uint64
c_uint = ctypes.c_uint
c_int = ctypes.c_int
c_void_p = ctypes.c_void_p

SONAME = "libhugekv.so.0"

# constants of include/hugekv.h
BACKING_AUTO, BACKING_HUGE_1G, BACKING_HUGE_2M = 0, 1, 2
BACKING_THP, BACKING_SMALL, BACKING_NONE = 3, 4, 5
POOL_STRICT, POOL_NO_PREFAULT = 1 << 0, 1 << 1
LANE_ANY = 0xFFFFFFFF
ALLOC_CONTIG, ALLOC_EVICT = 1 << 0, 1 << 1
UNIT_FREE = 1 << 0
PRINT_JSON = 1 << 0
REGION_THP, REGION_FALLBACK, REGION_MISPLACED = 1 << 0, 1 << 1, 1 << 2
STATS_LANES, STATS_REGIONS, UFI_SIZES = 64, 16, 4
UNLINK_FORCE = 1 << 0
NAME_MAX, NAMED_SLOTS = 63, 64
EXTENTS_HIST, AGE_HIST, LABEL_MAX = 6, 8, 64
PAGE_NAME_MAX, PAGE_XFER_PEERS, PAGE_XFER_LAT, PAGE_STALE = 128, 8, 12, 1 << 0

# the spelling of HUGEKV_BACKING, and "none" for index-only pools
BACKINGS = {"auto": BACKING_AUTO, "1g": BACKING_HUGE_1G, "2m": BACKING_HUGE_2M,
            "thp": BACKING_THP, "4k": BACKING_SMALL, "none": BACKING_NONE}
BACKING_NAMES = {v: k for k, v in BACKINGS.items()}


class Extent(ctypes.Structure):
    _fields_ = [("start", c_u64), ("len", c_u64)]


class PoolOpts(ctypes.Structure):
    _fields_ = [("sz", ctypes.c_size_t), ("npages", c_u64), ("page_bytes", c_u64),
                ("nlanes", c_uint), ("backing", c_int), ("numa_node", c_int),
                ("flags", c_uint), ("prefault_threads", c_uint),
                ("free_room_low", ctypes.c_double), ("free_room_high", ctypes.c_double),
                ("chunk_bytes", c_u64), ("evict_window", c_uint),
                ("name", ctypes.c_char_p), ("label", ctypes.c_char_p)]


class Region(ctypes.Structure):
    _fields_ = [("base", c_void_p), ("bytes", c_u64), ("first_page", c_u64),
                ("npages", c_u64), ("node", c_int), ("hugepage_bytes", c_u64),
                ("flags", c_uint)]


class RegionStats(ctypes.Structure):
    _fields_ = [("node", c_int), ("hugepage_bytes", c_u64), ("wanted_bytes", c_u64),
                ("bytes", c_u64), ("prefault_ns", c_u64), ("misplaced_pages", c_u64),
                ("flags", c_uint), ("fallback_errno", c_int)]


class Stats(ctypes.Structure):
    _fields_ = [("sz", ctypes.c_size_t),
                ("npages", c_u64), ("free_pages", c_u64), ("free_extents", c_u64),
                ("largest_free_extent", c_u64),
                ("nlanes", c_uint), ("page_bytes", c_u64),
                ("units", c_u64), ("unit_pages", c_u64), ("pinned_units", c_u64),
                ("pinned_pages", c_u64),
                ("allocs", c_u64), ("alloc_failures", c_u64), ("frees", c_u64),
                ("extents_returned", c_u64),
                ("multi_extent_allocs", c_u64), ("pages_allocated", c_u64),
                ("pages_freed", c_u64),
                ("evictions", c_u64), ("evicted_pages", c_u64), ("eviction_runs", c_u64),
                ("evict_failures", c_u64),
                ("extents_per_alloc", ctypes.c_double),
                ("multi_extent_share", ctypes.c_double),
                ("ufi_size", c_u64 * UFI_SIZES), ("ufi", ctypes.c_double * UFI_SIZES),
                ("lane_free_pages", c_u64 * STATS_LANES),
                ("lane_free_extents", c_u64 * STATS_LANES),
                ("lane_largest_free_extent", c_u64 * STATS_LANES),
                ("backing", c_int), ("backing_wanted", c_int), ("numa_node", c_int),
                ("prefault_threads", c_uint), ("flags", c_uint),
                ("arena_bytes", c_u64), ("arena_round_up_bytes", c_u64),
                ("prefault_ns", c_u64), ("prefault_gbps", ctypes.c_double),
                ("misplaced_pages", c_u64), ("fallbacks", c_uint),
                ("metadata_bytes", c_u64), ("nregions", c_uint),
                ("region", RegionStats * STATS_REGIONS),
                ("served_calls", c_u64), ("bias_revocations", c_u64),
                ("deferred_frees", c_u64), ("deferred_free_errors", c_u64),
                ("alloc_failures_nospc", c_u64), ("extents_hist", c_u64 * EXTENTS_HIST),
                ("evict_age_hist", c_u64 * AGE_HIST), ("evict_age_ns", c_u64),
                ("oldest_pin_ns", c_u64)]


class PagePeer(ctypes.Structure):
    _fields_ = [("peer", c_u64), ("transfers", c_u64), ("failures", c_u64), ("bytes", c_u64)]


class PageGrants(ctypes.Structure):
    _fields_ = [(n, c_u64) for n in ("peer", "grants", "active", "pages", "bytes", "refused",
                                     "refused_limit", "refused_busy", "expired")]


class PageXfer(ctypes.Structure):
    _fields_ = [("sz", ctypes.c_size_t), ("endpoints", c_u64), ("transfers", c_u64),
                ("failures", c_u64), ("timeouts", c_u64), ("refused", c_u64),
                ("ops", c_u64), ("bytes", c_u64), ("pages", c_u64), ("peer_failures", c_u64),
                ("lat_le_ns", c_u64 * PAGE_XFER_LAT), ("lat_count", c_u64 * PAGE_XFER_LAT),
                ("lat_n", c_u64), ("lat_sum_ns", c_u64), ("npeers", c_uint),
                ("peer", PagePeer * PAGE_XFER_PEERS)] + [(n, c_u64) for n in (
                    "grants", "grants_active", "grant_pages", "grant_bytes", "grant_mem",
                    "grants_refused", "grants_refused_limit", "grants_refused_busy",
                    "grants_expired", "auth_failures", "peers_rejected")] + [
                ("peer_grants", PageGrants * PAGE_XFER_PEERS)] + [(n, c_u64) for n in (
                    "cma_out", "cma_in", "cma_refused", "cma_calls", "cma_runs",
                    "cma_bytes", "cma_faults")]


PAGE_XFER_SZ0 = PageXfer.grants.offset      # the first layout: up to peer
PAGE_XFER_SZ1 = PageXfer.cma_out.offset     # the second: up to peer_grants


class Page(ctypes.Structure):
    _fields_ = [("sz", ctypes.c_size_t), ("name", ctypes.c_char * PAGE_NAME_MAX),
                ("label", ctypes.c_char * LABEL_MAX), ("pid", c_int), ("flags", c_uint),
                ("pool_id", c_u64), ("pid_start", c_u64), ("created_ns", c_u64),
                ("published_ns", c_u64), ("interval_ns", c_u64), ("publishes", c_u64),
                ("free_room_low", ctypes.c_double), ("free_room_high", ctypes.c_double),
                ("stats", Stats), ("xfer", PageXfer)]


class NamedInfo(ctypes.Structure):
    _fields_ = [("sz", ctypes.c_size_t), ("name", ctypes.c_char * (NAME_MAX + 1)),
                ("npages", c_u64), ("page_bytes", c_u64), ("nlanes", c_uint),
                ("backing", c_int), ("hugepage_bytes", c_u64), ("meta_bytes", c_u64),
                ("layout_version", c_uint), ("nattached", c_uint),
                ("pids", c_int * NAMED_SLOTS),
                ("recoveries", c_u64), ("reclaimed_pages", c_u64), ("dropped_pins", c_u64),
                ("dead_slots", c_u64), ("created_ns", c_u64)]


EVICT_FN = ctypes.CFUNCTYPE(None, c_void_p, c_u64, ctypes.POINTER(Extent), c_uint)
LOG_FN = ctypes.CFUNCTYPE(None, c_void_p, c_int, ctypes.c_char_p)

_P = c_void_p           # struct hkv_pool *
_PROTOS = {
    "hkv_pool_create": (c_int, [ctypes.POINTER(PoolOpts), ctypes.POINTER(c_void_p)]),
    "hkv_pool_destroy": (None, [_P]),
    "hkv_pool_id": (c_u64, [_P]),
    "hkv_alloc": (c_int, [_P, c_u64, c_uint, c_uint, c_void_p, c_uint]),
    "hkv_alloc_lanes": (c_int, [_P, c_void_p, c_uint, c_void_p, c_uint]),
    "hkv_free": (c_int, [_P, c_void_p, c_uint]),
    "hkv_extents_allocated": (c_int, [_P, c_void_p, c_uint]),
    "hkv_lane_range": (c_int, [_P, c_uint, ctypes.POINTER(Extent)]),
    "hkv_available": (c_u64, [_P]),
    "hkv_stats": (c_int, [_P, ctypes.POINTER(Stats)]),
    "hkv_check": (c_int, [_P]),
    "hkv_page_ptr": (c_void_p, [_P, c_u64]),
    "hkv_regions": (c_int, [_P, c_void_p, c_uint]),
    "hkv_unit_add": (c_int, [_P, c_u64, c_void_p, c_uint]),
    "hkv_unit_touch": (c_int, [_P, c_u64]),
    "hkv_unit_pin": (c_int, [_P, c_u64]),
    "hkv_unit_unpin": (c_int, [_P, c_u64]),
    "hkv_unit_split": (c_int, [_P, c_u64, c_u64, c_u64]),
    "hkv_unit_remove": (c_int, [_P, c_u64, c_uint]),
    "hkv_set_evict_fn": (None, [_P, EVICT_FN, c_void_p]),
    "hkv_evict": (ctypes.c_int64, [_P, c_u64]),
    "hkv_free_slots": (c_int, [_P, ctypes.POINTER(ctypes.POINTER(c_u64)),
                               ctypes.POINTER(c_u64)]),
    "hkv_strerror": (ctypes.c_char_p, [c_int]),
    "hkv_set_log_fn": (None, [LOG_FN, c_void_p]),
    # named pools
    "hkv_pool_attach": (c_int, [ctypes.c_char_p, c_uint, ctypes.POINTER(c_void_p)]),
    "hkv_pool_unlink_flags": (c_int, [ctypes.c_char_p, c_uint]),
    "hkv_pool_info": (c_int, [_P, ctypes.POINTER(NamedInfo)]),
    "hkv_unit_list": (ctypes.c_int64, [_P, c_void_p, c_u64]),
    "hkv_unit_extents": (c_int, [_P, c_u64, c_void_p, c_uint]),
    "hkv_unit_seal": (c_int, [_P, c_u64]),
    "hkv_unit_verify": (c_int, [_P, c_u64]),
    "hkv_pool_label": (ctypes.c_char_p, [_P]),
    "hkv_stats_publish": (c_int, [_P]),
    "hkv_page_dir": (c_int, [ctypes.c_char_p, ctypes.c_size_t]),
    "hkv_page_read": (c_int, [ctypes.c_char_p, ctypes.POINTER(Page)]),
}


# where `make install` puts the library, when the loader's cache lacks it
_LIBDIRS = ("/usr/local/lib", "/usr/local/lib64", "/usr/lib64",
            "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu")


def _candidates():
    env = os.environ.get("HUGEKV_LIBRARY")
    if env:
        return [env], True
    out = []
    here = os.path.dirname(os.path.abspath(__file__))
    top = os.path.dirname(os.path.dirname(here))
    if os.path.isfile(os.path.join(top, "include", "hugekv.h")):
        out.append(os.path.join(top, "build", "libhugekv.so"))
    carried = os.path.join(here, SONAME)
    if os.path.exists(carried):
        out.append(carried)
    try:
        from . import _paths
        out.append(os.path.join(_paths.LIBDIR, SONAME))
    except ImportError:
        pass
    out.append(SONAME)
    out += [os.path.join(d, SONAME) for d in _LIBDIRS]
    return out, False


def _load():
    names, forced = _candidates()
    tried = []
    for name in names:
        if os.sep in name and not os.path.exists(name):
            if forced or not name.startswith(_LIBDIRS):
                tried.append(f"{name} (missing)")
            continue
        try:
            return ctypes.CDLL(name), name
        except OSError as e:
            tried.append(f"{name} ({e})")
            if forced:
                break
    raise ImportError("hugekv: cannot load libhugekv: tried " + "; ".join(tried) +
                      ". Build it with `make`, install it with `make install`, "
                      "or set HUGEKV_LIBRARY to the library's path")


lib, path = _load()
for _name, (_res, _args) in _PROTOS.items():
    _f = getattr(lib, _name)
    _f.restype = _res
    _f.argtypes = _args


def strerror(err):
    """hkv_strerror() text for a (negative or positive) errno."""
    return lib.hkv_strerror(int(err)).decode()


class Error(OSError):
    """A hugekv call failed: ``errno`` and the hkv_strerror() text, plus
    what was asked (``strerror`` starts with the library's text)."""


class OutOfPages(Error, MemoryError):
    """-ENOMEM: not enough free pages (nothing was taken)."""


class CallbackError(Error):
    """The eviction callback raised. The operation itself completed:
    ``result`` holds what it returned (pages freed, or the extents of an
    allocation, which the caller owns), ``errors`` the exceptions raised."""

    def __init__(self, msg, result, errors):
        super().__init__(_errno.ECANCELED, msg)
        self.result = result
        self.errors = errors


def error(err, what):
    """The exception for a -errno returned by the call described by @what."""
    e = -err if err < 0 else err
    cls = OutOfPages if e == _errno.ENOMEM else Error
    return cls(e, f"{strerror(e)}: {what}")
