# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""test_hkvctl_pools.py - `hkvctl pools` and `hkvctl pool rm` against real
named pools made by other processes (one that exited, one alive, one in a
layout this library does not read), and a short `hkv-bench named` run."""
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time

import pytest

from helpers import eq, run, run_json

BUILD = os.environ.get("HKV_BUILD", "build")
CTL = os.path.join(BUILD, "hkvctl")
BENCH = os.path.join(BUILD, "hkv-bench")
TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DIR = tempfile.mkdtemp(prefix="hkv-ops-named-", dir="/dev/shm")
ENV = {"HUGEKV_NAMED_DIR": DIR, "HUGEKV_LOG": "error",
       "HUGEKV_LIBRARY": os.path.join(BUILD, "libhugekv.so"),
       "PYTHONPATH": os.path.join(TOP, "python")}

MAKE = """
import sys, hugekv
p = hugekv.Pool(int(sys.argv[2]), int(sys.argv[3]), name=sys.argv[1])
p.unit_add(1, p.alloc(5))
print("ready", flush=True)
if len(sys.argv) > 4:
    sys.stdin.read()                # held until stdin closes
"""


@pytest.fixture(autouse=True, scope="module")
def named_dir():
    """the pools' directory, removed after the module's tests when empty"""
    yield DIR
    if os.path.isdir(DIR) and not os.listdir(DIR):
        os.rmdir(DIR)


def make(name, npages, page_bytes, hold=False):
    env = dict(os.environ, **ENV)
    args = [sys.executable, "-c", MAKE, name, str(npages), str(page_bytes)]
    if hold:
        p = subprocess.Popen(args + ["hold"], env=env, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
        eq(p.stdout.readline().strip(), "ready", "holder")
        return p
    subprocess.run(args, env=env, check=True, capture_output=True)
    return None


def wait_zombie(pid, timeout=60.0):
    """until process pid (a child not reaped) is a zombie"""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        with open("/proc/%d/stat" % pid) as f:
            if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                return
        time.sleep(0.01)
    raise AssertionError("process %d is no zombie after %.0f s" % (pid, timeout))


def test_usage():
    for sub in ("pools", "pool"):
        _, out, _ = run([CTL, sub, "--help"], 0)
        assert out.startswith("usage: hkvctl " + sub), out
    run([CTL, "pools", "extra"], 2)
    run([CTL, "pool"], 2)
    run([CTL, "pool", "ls", "x"], 2)
    run([CTL, "pool", "rm", "bad/name"], 2)
    run([CTL, "pool", "rm"], 2)


def test_empty():
    j = run_json([CTL, "pools", "--json"], env=ENV)
    eq(j["pools"], [], "no pools")
    eq(j["dir"], DIR, "directory")
    _, out, _ = run([CTL, "pools"], 0, env=ENV)
    assert "no named pools" in out, out
    rc, _, err = run([CTL, "pool", "rm", "nothing"], 1, env=ENV)
    assert "nothing" in err, err


def test_list_and_remove():
    make("gone", 1000, 0)
    holder = make("live", 64, 4096, hold=True)
    # a pool of another layout version
    make("old", 100, 0)
    with open(os.path.join(DIR, "hugekv.old.meta"), "r+b") as f:
        f.seek(8)
        f.write(struct.pack("<I", 999))
    try:
        j = run_json([CTL, "pools", "--json"], env=ENV)
        pools = {p["name"]: p for p in j["pools"]}
        eq(sorted(pools), ["gone", "live", "old"], "names")
        g, lv = pools["gone"], pools["live"]
        eq((g["npages"], g["page_bytes"], g["backing"], g["pids"]), (1000, 0, "none", []),
           "index-only pool of an exited process")
        eq((g["units"], g["unit_pages"], g["free_pages"]), (1, 5, 995), "its units")
        eq(g["dead_slots"], 0, "the exited creator detached (Pool closed at exit)")
        eq((lv["npages"], lv["page_bytes"], lv["pids"]), (64, 4096, [holder.pid]),
           "the live holder")
        eq(pools["old"]["errno"], 71, "EPROTO for another layout")     # EPROTO
        _, out, _ = run([CTL, "pools"], 0, env=ENV)
        assert "live" in out and str(holder.pid) in out and "not readable" in out, out
        # removal: refused while attached, forced; another layout only forced
        rc, _, err = run([CTL, "pool", "rm", "live"], 1, env=ENV)
        assert "--force" in err, err
        j = run_json([CTL, "pool", "rm", "live", "--json"], 1, env=ENV)
        eq((j["removed"], j["errno"]), (False, 16), "EBUSY as JSON")
        run([CTL, "pool", "rm", "live", "--force"], 0, env=ENV)
        run([CTL, "pool", "rm", "old"], 1, env=ENV)
        run([CTL, "pool", "rm", "old", "--force"], 0, env=ENV)
        j = run_json([CTL, "pool", "rm", "gone", "--json"], 0, env=ENV)
        eq(j["removed"], True, "removed")
        eq(run_json([CTL, "pools", "--json"], env=ENV)["pools"], [], "all gone")
    finally:
        holder.stdin.close()
        holder.wait(60)
    eq(os.listdir(DIR), [], "no files left")


def test_stats_page_state():
    """each attached process publishes the pool's page; pools shows it, and
    stale once every publisher died; the momentary attach publishes none"""
    rt = tempfile.mkdtemp(prefix="hkv-ops-rt-")
    env = dict(ENV, HUGEKV_RUNTIME_DIR=rt, HUGEKV_STATS_INTERVAL_MS="100")
    args = [sys.executable, "-c", MAKE, "paged", "64", "4096", "hold"]
    holder = subprocess.Popen(args, env=dict(os.environ, **env), stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        eq(holder.stdout.readline().strip(), "ready", "holder")
        (p,) = run_json([CTL, "pools", "--json"], env=env)["pools"]
        eq((p["stats_page"], p["page_pids"], p["pids"]), ("live", [holder.pid], [holder.pid]),
           "one live page, the holder's")
        eq(os.listdir(rt), ["named.paged.%d.page" % holder.pid], "no page of hkvctl's attach")
        holder.kill()
        # not reaped yet: a zombie publishes no more, so it is gone too
        wait_zombie(holder.pid)
        (p,) = run_json([CTL, "pools", "--json"], env=env)["pools"]
        eq((p["stats_page"], p["page_pids"], p["pids"]), ("stale", [], []), "a zombie: stale")
        holder.wait(60)
        (p,) = run_json([CTL, "pools", "--json"], env=env)["pools"]
        eq((p["stats_page"], p["page_pids"], p["pids"]), ("stale", [], []), "all gone: stale")
        _, out, _ = run([CTL, "pools"], 0, env=env)
        assert re.search(r"^paged .* stale +-$", out, re.M), out
        run([CTL, "pool", "rm", "paged"], 0, env=env)
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(60)
        shutil.rmtree(rt, ignore_errors=True)
    eq(os.listdir(DIR), [], "no files left")


def test_bench_named():
    if not os.path.exists(BENCH):
        return
    run([BENCH, "named", "--help"], 0)
    run([BENCH, "named", "--repeat", "99"], 2)
    j = run_json([BENCH, "named", "--index-pages", "20000", "--mem-pages", "32",
                  "--page-bytes", "4096", "--units", "16", "--repeat", "3",
                  "--procs", "2", "--pairs", "2000", "--json"], env=ENV)
    for k in ("attach_index_ns", "attach_mem_ns", "restart_to_first_hit_ns",
              "alloc_free_private_ns", "alloc_free_named_ns",
              "named_n_procs_pairs_per_s", "private_n_procs_pairs_per_s"):
        assert j[k] > 0, (k, j)
    eq(os.listdir(DIR), [], "the bench removed its pools")
