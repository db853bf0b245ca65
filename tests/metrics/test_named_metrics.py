# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""test_named_metrics.py - a named pool's stats pages: every attached
process publishes one (named.NAME.PID.page); `hkvctl metrics`, `hkvctl top`,
`hkvctl pools`, hugekv.prometheus and a real Prometheus server see one pool
pool="NAME" (label: the name) with hugekv_pool_processes live publishers,
stale only once every attached process is gone; a process that attaches
again removes the dead ones' pages.

    HKV_BUILD=build /usr/bin/python3 tests/metrics/test_named_metrics.py
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

from test_metrics import (HKVCTL, ROOT, BUILD, Env, Skip, free_port, http_get,
                          metrics_json, prom_query, run, run_tests, wait_for)

NAME = "kv-named"
HOLD = """
import sys, hugekv
p = (hugekv.Pool(256, 4096, name=sys.argv[1]) if sys.argv[2] == "create"
     else hugekv.Pool.attach(sys.argv[1]))
if sys.argv[2] == "create":
    p.unit_add(1, p.alloc(5))
print("ready", flush=True)
sys.stdin.read()
p.close()
"""


def named_env():
    """Env with a named-pool directory on tmpfs and the Python package"""
    e = Env()
    d = tempfile.mkdtemp(prefix="hkv-metrics-named-", dir="/dev/shm")
    e.dirs.append(d)
    e.env.update(HUGEKV_NAMED_DIR=d, HUGEKV_LOG="error",
                 HUGEKV_LIBRARY=os.path.join(BUILD, "libhugekv.so"),
                 PYTHONPATH=os.path.join(ROOT, "python"))
    return e


def hold(e, how):
    p = e.spawn(["/usr/bin/python3", "-c", HOLD, NAME, how], stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready", how
    return p


def pool_of(e):
    pools = [x for x in metrics_json(e)["pools"] if x["pool"] == NAME]
    assert len(pools) <= 1, pools        # one entry, however many processes
    return pools[0] if pools else None


def pages(e):
    return sorted(f for f in os.listdir(e.rt) if f.startswith("named."))


def test_one_pool_many_processes():
    e = named_env()
    try:
        a = hold(e, "create")
        b = hold(e, "attach")
        assert pages(e) == sorted("named.%s.%d.page" % (NAME, p.pid) for p in (a, b))
        # the creator's page speaks for the pool; it was first published
        # before the unit was added, so its figures catch up at the next
        # publish (HUGEKV_STATS_INTERVAL_MS)
        j = wait_for("two publishers, the unit published", lambda: (
            lambda x: x if x and x["pids"] == sorted([a.pid, b.pid]) and x["units"] == 1
            else None)(pool_of(e)))
        assert (j["label"], j["name"], j["stale"], j["pid"]) == (NAME, NAME, False, a.pid), j
        assert j["npages"] == 256 and j["pages"]["cached"] == 5 and j["units"] == 1, j
        _, out, _ = run([HKVCTL, "metrics", "--dir", e.rt], 0)
        sel = 'pool="%s",label="%s"' % (NAME, NAME)
        assert "hugekv_pool_processes{%s} 2" % sel in out, out
        assert "hugekv_units{%s} 1" % sel in out and out.count("hugekv_units{") == 1, out
        _, out, _ = run([HKVCTL, "top", "--once", "--dir", e.rt], 0)
        assert NAME in out and "named, processes 2" in out, out
        # hkvctl pools: the pool's page state next to its processes
        pj = run_pools(e)
        assert (pj["stats_page"], pj["page_pids"]) == ("live", sorted([a.pid, b.pid])), pj
        # hugekv.prometheus reads the pages as one pool too
        code = ("import sys, hugekv.prometheus as hp\n"
                "pg, err = hp.host_pages(sys.argv[1])\n"
                "print([(x['pool'], x['label'], x['pids'], x['stale']) for x in pg], err)\n")
        out = subprocess.run(["/usr/bin/python3", "-c", code, e.rt], env=e.env, check=True,
                             capture_output=True, text=True).stdout.strip()
        assert out == "%s 0" % [(NAME, NAME, sorted([a.pid, b.pid]), False)], out
        # the creator killed: the attacher still publishes; the pool is live
        a.kill()
        a.wait()
        j = pool_of(e)
        assert (j["pids"], j["stale"], j["pid"]) == ([b.pid], False, b.pid), j
        # every process gone: stale, figures left out
        b.kill()
        b.wait()
        j = pool_of(e)
        assert (j["pids"], j["stale"]) == ([], True), j
        _, out, _ = run([HKVCTL, "metrics", "--dir", e.rt], 0)
        assert "hugekv_pool_stale{%s} 1" % sel in out and "hugekv_units{%s}" % sel not in out
        # attached again: the dead processes' pages are swept, live again
        c = hold(e, "attach")
        assert pages(e) == ["named.%s.%d.page" % (NAME, c.pid)], pages(e)
        j = pool_of(e)
        assert (j["pids"], j["stale"], j["units"]) == ([c.pid], False, 1), j
        c.stdin.close()
        assert c.wait(20) == 0
        assert pages(e) == [], pages(e)          # removed at detach
    finally:
        e.close()


def run_pools(e):
    out = subprocess.run([HKVCTL, "pools", "--json"], env=e.env, check=True,
                         capture_output=True, text=True).stdout
    (pool,) = [x for x in json.loads(out)["pools"] if x["name"] == NAME]
    return pool


def test_prometheus_sees_named_pool():
    pbin = shutil.which("prometheus")
    if not pbin:
        raise Skip("prometheus missing (Debian package prometheus; scripts/deps.sh)")
    e = named_env()
    try:
        a = hold(e, "create")
        b = hold(e, "attach")
        ex = e.spawn([HKVCTL, "metrics", "--listen", "127.0.0.1:0", "--dir", e.rt],
                     stderr=subprocess.PIPE, text=True)
        m = re.search(r"listening on 127\.0\.0\.1:(\d+)", ex.stderr.readline())
        assert m, "no 'listening on' line"
        pport = free_port()
        cfg = os.path.join(e.tmp, "prometheus.yml")
        with open(cfg, "w") as f:
            f.write("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: hugekv\n"
                    "    static_configs:\n      - targets: ['127.0.0.1:%s']\n" % m.group(1))
        log = open(os.path.join(e.tmp, "prom.log"), "w")
        prom = e.spawn([pbin, "--config.file=" + cfg,
                        "--storage.tsdb.path=" + os.path.join(e.tmp, "data"),
                        "--web.listen-address=127.0.0.1:%d" % pport],
                       stdout=subprocess.DEVNULL, stderr=log)

        def ready():
            try:
                return http_get("http://127.0.0.1:%d/-/ready" % pport, timeout=2)[0] == 200
            except OSError:
                assert prom.poll() is None, "prometheus exited"
                return False
        wait_for("prometheus ready", ready, 60, 0.3)
        q = 'hugekv_pool_processes{pool="%s"}' % NAME
        wait_for("two processes", lambda: prom_query(pport, q).get(
            (NAME, None, None, None, None)) == 2.0, 30, 0.5)
        wait_for("the unit scraped", lambda: prom_query(pport, 'hugekv_units{pool="%s"}' % NAME)
                 == {(NAME, None, None, None, None): 1.0}, 30, 0.5)
        b.send_signal(signal.SIGKILL)
        b.wait()
        wait_for("one process", lambda: prom_query(pport, q).get(
            (NAME, None, None, None, None)) == 1.0, 30, 0.5)
        a.stdin.close()
        a.wait(20)
    finally:
        e.close()


TESTS = [test_one_pool_many_processes, test_prometheus_sees_named_pool]


if __name__ == "__main__":
    sys.exit(run_tests(TESTS, "named metrics"))
