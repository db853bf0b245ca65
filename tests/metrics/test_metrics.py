# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""test_metrics.py - the stats pages, `hkvctl metrics` and `hkvctl top`
against real processes: a workload (workload.c) serves two labelled pools
under churn; a real Prometheus server (Debian's) scrapes `hkvctl metrics
--listen` on loopback and its HTTP API must return the figures hkv_stats
gives; promtool checks the exposition and the alerting rules; `hkvctl top`
runs in tmux and its screen is read; a workload killed with SIGKILL leaves
pages that are reported stale.

    HKV_BUILD=build /usr/bin/python3 tests/metrics/test_metrics.py
"""
import importlib.util
import json
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ops"))
from helpers import reachable_copy, run, run_json  # noqa: E402


class Skip(Exception):
    """a test that cannot run on this machine, with the reason"""

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.path.abspath(os.environ.get("HKV_BUILD", os.path.join(ROOT, "build")))
HKVCTL = os.path.join(BUILD, "hkvctl")
WORKLOAD = os.path.join(BUILD, "tests", "metrics-workload")
RULES = os.path.join(ROOT, "contrib", "prometheus", "hugekv-rules.yml")
RULES_TEST = os.path.join(ROOT, "contrib", "prometheus", "hugekv-rules.test.yml")
DASHBOARD = os.path.join(ROOT, "contrib", "grafana", "hugekv-dashboard.json")
L2, GPU = "L2 host tier", 'GPU "index"'


class Env:
    """a private runtime directory and the environment that names it"""

    def __init__(self):
        self.tmp = tempfile.mkdtemp(prefix="hkv-metrics-")
        self.rt = os.path.join(self.tmp, "rt")
        self.env = dict(os.environ, HUGEKV_RUNTIME_DIR=self.rt,
                        HUGEKV_STATS_INTERVAL_MS="200")
        self.procs = []
        self.dirs = []		# more directories to remove at close

    def spawn(self, cmd, **kw):
        p = subprocess.Popen(cmd, env=self.env, **kw)
        self.procs.append(p)
        return p

    def close(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        for d in self.dirs + [self.tmp]:
            shutil.rmtree(d, ignore_errors=True)


def wait_for(what, fn, timeout=30.0, step=0.1):
    end = time.time() + timeout
    while True:
        v = fn()
        if v:
            return v
        if time.time() > end:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(step)


def start_workload(e, stats="stats.json"):
    p = e.spawn([WORKLOAD, os.path.join(e.tmp, stats)], stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline().split()
    assert line and line[0] == "ready", line
    return p, int(line[1]), int(line[2]), int(line[3])


def metrics_json(e):
    return run_json([HKVCTL, "metrics", "--json", "--dir", e.rt])


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def http_get(url, headers=None, timeout=10):
    req = urllib.request.Request(url, headers=headers or {})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return r.status, r.headers.get("Content-Type", ""), r.read().decode()


# ---- the page itself ---------------------------------------------------------
def test_pages_published_and_removed():
    e = Env()
    try:
        p, pid, a, b = start_workload(e)
        files = sorted(os.listdir(e.rt))
        assert files == ["pool.%d.%d.page" % (pid, a), "pool.%d.%d.page" % (pid, b)], files
        for f in files:
            st = os.stat(os.path.join(e.rt, f))
            assert stat.S_IMODE(st.st_mode) == 0o600, oct(st.st_mode)
            assert st.st_uid == os.geteuid()
        assert stat.S_IMODE(os.stat(e.rt).st_mode) == 0o700
        j = wait_for("publications", lambda: (lambda j: j if all(
            x["publishes"] >= 3 for x in j["pools"]) else None)(metrics_json(e)))
        labels = sorted(x["label"] for x in j["pools"])
        assert labels == sorted([L2, GPU]), labels     # the pool's copy, not the caller's
        for x in j["pools"]:
            assert not x["stale"] and x["pid"] == pid
            pg = x["pages"]
            assert pg["free"] + pg["allocated"] + pg["cached"] + pg["pinned"] == x["npages"]
        mem = [x for x in j["pools"] if x["label"] == L2][0]
        assert mem["pages"]["pinned"] >= 4 and mem["oldest_pin_s"] > 0
        p.send_signal(signal.SIGTERM)
        assert p.wait(timeout=20) == 0
        assert os.listdir(e.rt) == [], os.listdir(e.rt)
        assert metrics_json(e)["pools"] == []
    finally:
        e.close()


def test_stale_after_kill9():
    e = Env()
    try:
        p, pid, a, _ = start_workload(e)
        wait_for("a publication", lambda: all(x["publishes"] >= 2 for x in metrics_json(e)["pools"]))
        p.kill()                        # SIGKILL: no destroy, the pages stay
        p.wait()
        j = metrics_json(e)
        assert len(j["pools"]) == 2 and all(x["stale"] for x in j["pools"]), j
        _, out, _ = run([HKVCTL, "metrics", "--dir", e.rt], 0)
        key = "%d.%d" % (pid, a)
        assert 'hugekv_pool_stale{pool="%s",label="%s"} 1' % (key, L2) in out, out
        assert "hugekv_allocations_total{pool=\"%s\"" % key not in out   # figures left out
        _, out, _ = run([HKVCTL, "top", "--once", "--interval", "0.1", "--dir", e.rt], 0)
        assert "STALE" in out and "2 stale" in out, out
        # a live process of the same user next to them is not stale
        p2, pid2, _, _ = start_workload(e, "stats2.json")
        j = metrics_json(e)
        live = [x for x in j["pools"] if x["pid"] == pid2]
        assert len(live) == 2 and not any(x["stale"] for x in live), j
        p2.send_signal(signal.SIGTERM)
        p2.wait(timeout=20)
    finally:
        e.close()


# ---- promtool -------------------------------------------------------------------
def promtool():
    path = shutil.which("promtool")
    if not path:
        raise Skip("promtool missing (Debian package prometheus; scripts/deps.sh)")
    return path


def test_promtool_metrics_and_textfile():
    pt = promtool()
    e = Env()
    try:
        p, _, _, _ = start_workload(e)
        wait_for("publications", lambda: all(x["publishes"] >= 3 for x in metrics_json(e)["pools"]))
        _, text, _ = run([HKVCTL, "metrics", "--format", "prometheus", "--dir", e.rt], 0)
        rc, out, err = run([pt, "check", "metrics"], stdin=text)
        assert rc == 0 and not out.strip() and not err.strip(), (rc, out, err)
        for fam in ("hugekv_pages", "hugekv_allocations_total", "hugekv_allocation_failures_total",
                    "hugekv_allocation_extents_bucket", "hugekv_largest_free_extent_pages",
                    "hugekv_unusable_free_index", "hugekv_evictions_total",
                    "hugekv_evicted_pages_total", "hugekv_eviction_runs_total",
                    "hugekv_evicted_unit_age_seconds_bucket", "hugekv_oldest_pin_seconds",
                    "hugekv_arena_bytes", "hugekv_backing_fallbacks", "hugekv_prefault_seconds",
                    "hugekv_lane_free_pages"):
            assert re.search(r"^%s\{" % fam, text, re.M), fam
        _, om, _ = run([HKVCTL, "metrics", "--dir", e.rt], 0)
        assert om.endswith("# EOF\n") and "# TYPE hugekv_allocations counter" in om
        assert 'le="1.0"' in om and "# UNIT hugekv_oldest_pin_seconds seconds" in om
        tf = os.path.join(e.tmp, "textfile")
        os.mkdir(tf)
        run([HKVCTL, "metrics", "--textfile", tf, "--dir", e.rt], 0)
        assert os.listdir(tf) == ["hugekv.prom"], os.listdir(tf)     # no temporary left
        with open(os.path.join(tf, "hugekv.prom")) as f:
            body = f.read()
        rc, out, err = run([pt, "check", "metrics"], stdin=body)
        assert rc == 0 and not out.strip(), (out, err)
        assert 'label="GPU \\"index\\""' in body, body[:500]
        rc, _, err = run([HKVCTL, "metrics", "--textfile", os.path.join(e.tmp, "nodir"),
                          "--dir", e.rt])
        assert rc == 1 and "nodir" in err, (rc, err)
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=20)
    finally:
        e.close()


def test_promtool_rules():
    pt = promtool()
    run([pt, "check", "rules", RULES], 0)
    rc, out, err = run([pt, "test", "rules", RULES_TEST], None)
    assert rc == 0 and "SUCCESS" in out, (out, err)


def dashboard_exprs():
    with open(DASHBOARD) as f:
        d = json.load(f)
    return [t["expr"].replace("$pool", ".*") for p in d["panels"] for t in p.get("targets", [])]


def test_dashboard_json():
    exprs = dashboard_exprs()
    assert len(exprs) >= 10, exprs
    with open(os.path.join(ROOT, "tools", "hkvctl", "om.c")) as f:
        names = set(re.findall(r'"(hugekv_[a-z_]+)"', f.read()))
    for ex in exprs:        # every metric a panel reads is one hkvctl exports
        for m in re.findall(r"hugekv_[a-z_]+", ex):
            base = re.sub(r"_(total|bucket|sum|count|info)$", "", m)
            assert base in names or m in names, (m, ex)


# ---- a real Prometheus server ---------------------------------------------------
def prom_query(port, q):
    url = "http://127.0.0.1:%d/api/v1/query?%s" % (port, urllib.parse.urlencode({"query": q}))
    _, _, body = http_get(url)
    j = json.loads(body)
    assert j["status"] == "success", j
    return {(r["metric"].get("label"), r["metric"].get("state"), r["metric"].get("reason"),
             r["metric"].get("lane"), r["metric"].get("le")): float(r["value"][1])
            for r in j["data"]["result"]}


def expected(st):
    """what the metrics of one pool must read, from its hkv_stats JSON"""
    lab = st["label"]
    used = st["npages"] - st["free_pages"]
    e = {
        ("hugekv_allocations_total", (lab, None, None, None, None)): st["allocs"],
        ("hugekv_frees_total", (lab, None, None, None, None)): st["frees"],
        ("hugekv_allocation_failures_total", (lab, None, "no_room", None, None)):
            st["alloc_failures"] - st["alloc_failures_nospc"],
        ("hugekv_allocation_failures_total", (lab, None, "max_extents", None, None)):
            st["alloc_failures_nospc"],
        ("hugekv_pages", (lab, "free", None, None, None)): st["free_pages"],
        ("hugekv_pages", (lab, "pinned", None, None, None)): st["pinned_pages"],
        ("hugekv_pages", (lab, "cached", None, None, None)): st["unit_pages"] - st["pinned_pages"],
        ("hugekv_pages", (lab, "allocated", None, None, None)): used - st["unit_pages"],
        ("hugekv_units", (lab, None, None, None, None)): st["units"],
        ("hugekv_pinned_units", (lab, None, None, None, None)): st["pinned_units"],
        ("hugekv_evictions_total", (lab, None, None, None, None)): st["evictions"],
        ("hugekv_evicted_pages_total", (lab, None, None, None, None)): st["evicted_pages"],
        ("hugekv_eviction_runs_total", (lab, None, None, None, None)): st["eviction_runs"],
        ("hugekv_largest_free_extent_pages", (lab, None, None, None, None)):
            st["largest_free_extent"],
        ("hugekv_free_extents", (lab, None, None, None, None)): st["free_extents"],
        ("hugekv_pool_size_pages", (lab, None, None, None, None)): st["npages"],
        ("hugekv_allocation_extents_count", (lab, None, None, None, None)): st["allocs"],
        ("hugekv_allocation_extents_sum", (lab, None, None, None, None)): st["extents_returned"],
        ("hugekv_allocation_extents_bucket", (lab, None, None, None, "1.0")):
            st["extents_hist"][0],
        ("hugekv_evicted_unit_age_seconds_count", (lab, None, None, None, None)):
            st["evictions"],
        ("hugekv_metadata_bytes", (lab, None, None, None, None)): st["metadata_bytes"],
    }
    for i, ln in enumerate(st["lanes"]):
        e[("hugekv_lane_free_pages", (lab, None, None, str(i), None))] = ln["free_pages"]
    return e


def test_prometheus_scrapes_listen():
    pbin = shutil.which("prometheus")
    if not pbin:
        raise Skip("prometheus missing (Debian package prometheus; scripts/deps.sh)")
    e = Env()
    try:
        w, _, _, _ = start_workload(e)
        ex = e.spawn([HKVCTL, "metrics", "--listen", "127.0.0.1:0", "--dir", e.rt],
                     stderr=subprocess.PIPE, text=True)
        m = re.search(r"listening on 127\.0\.0\.1:(\d+)", ex.stderr.readline())
        assert m, "no 'listening on' line"
        xport = int(m.group(1))
        st, ctype, body = http_get("http://127.0.0.1:%d/metrics" % xport)
        assert st == 200 and ctype.startswith("text/plain; version=0.0.4"), ctype
        st, ctype, body = http_get("http://127.0.0.1:%d/metrics" % xport,
                                   {"Accept": "application/openmetrics-text; version=1.0.0"})
        assert ctype.startswith("application/openmetrics-text") and body.endswith("# EOF\n")
        try:
            http_get("http://127.0.0.1:%d/nothing" % xport)
            raise AssertionError("404 expected")
        except urllib.error.HTTPError as err:
            assert err.code == 404
        pport = free_port()
        cfg = os.path.join(e.tmp, "prometheus.yml")
        with open(cfg, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                    "rule_files:\n  - %s\n"
                    "scrape_configs:\n  - job_name: hugekv\n    static_configs:\n"
                    "      - targets: ['127.0.0.1:%d']\n" % (RULES, xport))
        prom = e.spawn([pbin, "--config.file=" + cfg,
                        "--storage.tsdb.path=" + os.path.join(e.tmp, "data"),
                        "--web.listen-address=127.0.0.1:%d" % pport],
                       stdout=subprocess.DEVNULL, stderr=open(os.path.join(e.tmp, "prom.log"), "w"))

        def ready():
            try:
                return http_get("http://127.0.0.1:%d/-/ready" % pport, timeout=2)[0] == 200
            except OSError:
                return prom.poll() is not None and (_ for _ in ()).throw(
                    AssertionError("prometheus exited: " + open(os.path.join(e.tmp, "prom.log")).read()[-2000:]))
        wait_for("prometheus ready", ready, 60, 0.3)
        # scraped while the churn runs: the counters grow from scrape to scrape
        wait_for("a scrape", lambda: prom_query(pport, 'up{job="hugekv"}').get(
            (None, None, None, None, None)) == 1.0, 30, 0.5)
        first = wait_for("allocations", lambda: prom_query(
            pport, "hugekv_allocations_total").get((L2, None, None, None, None)), 30, 0.5)
        wait_for("growth", lambda: prom_query(pport, "hugekv_allocations_total").get(
            (L2, None, None, None, None), 0) > first, 30, 0.5)
        # quiesce: the workload stops, publishes, and writes hkv_stats
        w.send_signal(signal.SIGUSR1)
        path = os.path.join(e.tmp, "stats.json")
        wait_for("stats.json", lambda: os.path.exists(path), 20)
        with open(path) as f:
            stats = [json.loads(line) for line in f if line.strip()]
        want = {}
        for s in stats:
            want.update(expected(s))
        assert stats[0]["evictions"] > 0 and stats[0]["alloc_failures"] > 0, stats[0]
        names = sorted({k[0] for k in want})

        def same():
            got = {n: prom_query(pport, n) for n in names}
            bad = [(k, v, got[k[0]].get(k[1])) for k, v in want.items()
                   if got[k[0]].get(k[1]) != float(v)]
            return True if not bad else (same.__dict__.update(bad=bad) or None)
        try:
            wait_for("the figures of hkv_stats", same, 30, 1.0)
        except AssertionError:
            raise AssertionError("differ (metric, labels, hkv_stats, prometheus): %s"
                                 % same.__dict__.get("bad"))
        # the oldest pin: the held pin of the workload, as old as the run
        pin = prom_query(pport, "hugekv_oldest_pin_seconds")[(L2, None, None, None, None)]
        assert pin >= 1.0, pin
        # every dashboard query parses and evaluates in the real server
        for ex in dashboard_exprs():
            prom_query(pport, ex)
        # the alerting rules load and evaluate in the real server
        _, _, body = http_get("http://127.0.0.1:%d/api/v1/rules" % pport)
        groups = json.loads(body)["data"]["groups"]
        assert groups and all(r["health"] == "ok" for g in groups for r in g["rules"]), groups
        w.send_signal(signal.SIGTERM)
        w.wait(timeout=20)
    finally:
        e.close()


# ---- hkvctl top in tmux ---------------------------------------------------------
def test_top_in_tmux():
    tmux = shutil.which("tmux")
    if not tmux:
        raise Skip("tmux missing (scripts/deps.sh)")
    e = Env()
    sock = "hkv-top-%d" % os.getpid()
    try:
        w, pid, a, _ = start_workload(e)
        cmd = "env HUGEKV_RUNTIME_DIR=%s %s top --interval 0.3" % (e.rt, HKVCTL)
        run([tmux, "-L", sock, "new-session", "-d", "-s", "top", "-x", "200", "-y", "30", cmd], 0)
        key = "%d.%d" % (pid, a)

        def screen():
            _, out, _ = run([tmux, "-L", sock, "capture-pane", "-p", "-t", "top"], None)
            return out

        def drawn():
            s = screen()
            row = [ln for ln in s.splitlines() if ln.startswith(key)]
            # the rates column holds a number once two frames were drawn
            return s if row and re.search(r"L2 host tier\s+2048\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+"
                                          r"[\d.]+\s+\d[\d.kM]*\s", row[0]) else None
        s = wait_for("top's screen", drawn, 20, 0.3)
        assert "hkvctl top" in s and "POOL" in s and "ALLOC/s" in s and "PINAGE" in s, s
        assert 'GPU "index"' in s and "pools 2 (0 stale)" in s, s
        first = s
        wait_for("a redraw", lambda: screen() != first, 10, 0.2)   # in place, not scrolled
        assert len([ln for ln in screen().splitlines() if "hkvctl top" in ln]) == 1
        run([tmux, "-L", sock, "send-keys", "-t", "top", "q"], 0)
        wait_for("top to quit on q", lambda: run([tmux, "-L", sock, "has-session", "-t", "top"],
                                                 None)[0] != 0, 10, 0.2)
        w.send_signal(signal.SIGTERM)
        w.wait(timeout=20)
    finally:
        run([tmux, "-L", sock, "kill-server"], None)
        e.close()


def test_top_json_once():
    e = Env()
    try:
        w, pid, a, _ = start_workload(e)
        wait_for("publications", lambda: all(x["publishes"] >= 2 for x in metrics_json(e)["pools"]))
        j = run_json([HKVCTL, "top", "--json", "--interval", "0.5", "--dir", e.rt])
        mem = [x for x in j["pools"] if x["label"] == L2][0]
        assert mem["rates_valid"] and mem["allocs_per_s"] > 0, mem
        assert mem["free"] + mem["allocated"] + mem["cached"] + mem["pinned"] == mem["npages"]
        w.send_signal(signal.SIGTERM)
        w.wait(timeout=20)
    finally:
        e.close()


# ---- transfers ----------------------------------------------------------------------
def test_transfer_metrics():
    """hkv-xfer send's endpoint publishes into its pool's page while it runs"""
    xfer = os.path.join(BUILD, "hkv-xfer")
    if not os.path.exists(xfer):
        raise Skip("hkv-xfer not built (libucx-dev missing)")
    e = Env()
    try:
        common = ["--pages", "512", "--xfer-pages", "16", "--total-pages", "128"]
        key = os.path.join(e.tmp, "key")        # both ends prove one key
        with open(os.open(key, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write("metrics-test-key-%d\n" % os.getpid())
        e.env["HUGEKV_XFER_KEY_FILE"] = key
        out = os.path.join(e.tmp, "serve.out")
        with open(out, "w") as f:
            srv = e.spawn([xfer, "serve", "--listen", "127.0.0.1:0"] + common,
                          stdout=f, stderr=subprocess.STDOUT)

        def port():
            with open(out) as f:
                m = re.search(r"listening on port (\d+)", f.read())
            assert m or srv.poll() is None, "hkv-xfer serve exited: " + open(out).read()
            return m
        m = wait_for("the port of hkv-xfer serve", port, 30, 0.1)
        snd = e.spawn([xfer, "send", "--connect", "127.0.0.1:" + m.group(1), "--rounds", "400"]
                      + common, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        def sender_text():
            _, t, _ = run([HKVCTL, "metrics", "--format", "prometheus", "--dir", e.rt], 0)
            n = re.search(r'^hugekv_transfers_total\{pool="%d\.\d+",label=""\} (\d+)$'
                          % snd.pid, t, re.M)
            return t if n and int(n.group(1)) >= 10 else None
        text = wait_for("transfers in the sender's page", sender_text, 60, 0.2)

        def val(name, extra=""):
            m = re.search(r'^%s\{pool="%d\.\d+",label=""%s\} (\S+)$' % (name, snd.pid,
                                                                        re.escape(extra)),
                          text, re.M)
            assert m, (name, extra)
            return float(m.group(1))
        n = val("hugekv_transfers_total")
        fails = sum(val("hugekv_transfer_failures_total", ',reason="%s"' % r)
                    for r in ("timeout", "refused", "error"))
        assert fails == 0, fails
        assert val("hugekv_transfer_bytes_total") == n * 16 * 65536
        assert val("hugekv_transfer_pages_total") == n * 16
        assert val("hugekv_transfer_latency_seconds_count") == n
        assert val("hugekv_transfer_latency_seconds_bucket", ',le="+Inf"') == n
        assert 0 < val("hugekv_transfer_latency_seconds_sum") < n * 10
        assert val("hugekv_peer_transfers_total", ',peer="1"') == n
        assert val("hugekv_peer_transfer_bytes_total", ',peer="1"') == n * 16 * 65536
        assert val("hugekv_transfer_operations_total") >= n
        pt = shutil.which("promtool")
        if pt:
            rc, out, err = run([pt, "check", "metrics"], stdin=text)
            assert rc == 0 and not out.strip(), (out, err)
        snd.kill()
        srv.kill()
    finally:
        e.close()


GRANTS = os.path.join(BUILD, "tests", "metrics-grants")

# the exported families of a target's grants, and the library's figure of each
GRANT_FIGURES = [
    ("hugekv_grants_total", "", "grants"),
    ("hugekv_grants_active", "", "grants_active"),
    ("hugekv_granted_pages", "", "grant_pages"),
    ("hugekv_granted_bytes", "", "grant_bytes"),
    ("hugekv_grant_state_bytes", "", "grant_mem"),
    ("hugekv_grants_refused_total", ',reason="limit"', "grants_over_limit"),
    ("hugekv_grants_refused_total", ',reason="busy"', "grants_busy"),
    ("hugekv_grants_expired_total", "", "grants_expired"),
    ("hugekv_transfer_auth_failures_total", "", "auth_failures"),
    ("hugekv_transfer_peers_rejected_total", "", "peers_rejected"),
    ("hugekv_transfer_peer_failures_total", "", "peer_failures"),
]
PEER_FIGURES = [
    ("hugekv_peer_grants_total", "", "grants"),
    ("hugekv_peer_grants_active", "", "grants_active"),
    ("hugekv_peer_granted_pages", "", "grant_pages"),
    ("hugekv_peer_granted_bytes", "", "grant_bytes"),
    ("hugekv_peer_grants_refused_total", ',reason="limit"', "grants_over_limit"),
    ("hugekv_peer_grants_refused_total", ',reason="busy"', "grants_busy"),
    ("hugekv_peer_grants_expired_total", "", "grants_expired"),
]


def _denied(st):
    return st["grants_refused"] - st["grants_over_limit"] - st["grants_busy"]


def test_grant_metrics():
    """a transfer target under a grant flood (metrics-grants): at each of its
    checkpoints the exported grant figures, per pool and per peer, equal
    its library's hkv_xfer_stats; promtool accepts them; hugekv.prometheus
    reads the same figures"""
    if not os.path.exists(GRANTS):
        raise Skip("metrics-grants not built (libucx-dev missing)")
    e = Env()
    e.env.update(HUGEKV_LIBRARY=os.path.join(BUILD, "libhugekv.so"),
                 PYTHONPATH=os.path.join(ROOT, "python"))
    try:
        tgt = e.spawn([GRANTS], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        for phase in ("flood", "revoked"):
            line = tgt.stdout.readline()
            assert line, "metrics-grants ended before its %s checkpoint" % phase
            lib = json.loads(line)
            st = lib["endpoint"]
            assert st["auth_failures"] == 1 and st["peers_rejected"] >= 1, st
            assert st["grants_over_limit"] > 0 and st["grants_busy"] > 0 and _denied(st) == 1
            if phase == "flood":
                assert st["grants_active"] == 8 and st["grant_pages"] > 0, st
                assert st["grants_expired"] == 0, st
            else:
                assert st["grants_active"] == 0 and st["grants_expired"] == 1, st
            sel = 'pool="%d.%d",label="grant target"' % (tgt.pid, lib["pool"])

            def val(t, name, extra=""):
                m = re.search(r"^%s\{%s%s\} (\S+)$" % (re.escape(name), re.escape(sel),
                                                      re.escape(extra)), t, re.M)
                return float(m.group(1)) if m else None

            def exported():
                _, t, _ = run([HKVCTL, "metrics", "--format", "prometheus", "--dir", e.rt], 0)
                for name, extra, f in GRANT_FIGURES:
                    if val(t, name, extra) != st[f]:
                        return None
                if val(t, "hugekv_grants_refused_total", ',reason="denied"') != _denied(st):
                    return None
                for q in lib["per_peer"]:
                    peer = ',peer="%d"' % q["peer"]
                    for name, extra, f in PEER_FIGURES:
                        if val(t, name, peer + extra) != q["stats"][f]:
                            return None
                return t
            text = wait_for("the %s figures in hkvctl metrics" % phase, exported, 30, 0.1)
            assert lib["per_peer"], lib
            pt = shutil.which("promtool")
            if pt:
                rc, out, err = run([pt, "check", "metrics"], stdin=text)
                assert rc == 0 and not out.strip(), (out, err)
            _, om, _ = run([HKVCTL, "metrics", "--dir", e.rt], 0)    # OpenMetrics
            assert "# TYPE hugekv_grants counter" in om and om.endswith("# EOF\n"), om[-200:]
            # hugekv.prometheus reads the same page
            code = ("import sys, json, hugekv.prometheus as hp\n"
                    "pg, err = hp.host_pages(sys.argv[1])\n"
                    "print(json.dumps([p['xfer'] for p in pg if p['label'] == 'grant target']))\n")
            out = subprocess.run(["/usr/bin/python3", "-c", code, e.rt], env=e.env, check=True,
                                 capture_output=True, text=True).stdout
            (px,) = json.loads(out)
            assert (px["grants"], px["grants_active"], px["grant_pages"], 
                    px["grants_refused_busy"],
                    px["grants_refused_limit"], px["grants_expired"], px["auth_failures"]) == (
                st["grants"], st["grants_active"], st["grant_pages"], st["grants_busy"],
                st["grants_over_limit"], st["grants_expired"], st["auth_failures"]), (px, st)
            assert [g["active"] for g in px["peer_grants"]] == [
                q["stats"]["grants_active"] for q in lib["per_peer"]], px
            # hkvctl top: the grants held now
            j = run_json([HKVCTL, "top", "--json", "--interval", "0.3", "--dir", e.rt])
            (tp,) = [x for x in j["pools"] if x["label"] == "grant target"]
            assert (tp["grants_active"], tp["granted_pages"]) == (
                st["grants_active"], st["grant_pages"]), tp
            _, out, _ = run([HKVCTL, "top", "--once", "--dir", e.rt], 0)
            want = "xfer: grants %d (%d pages)" % (st["grants_active"], st["grant_pages"])
            assert want in out, out
            tgt.stdin.write("\n")
            tgt.stdin.flush()
        tgt.stdin.close()
        assert tgt.wait(60) == 0, "metrics-grants: the target's pool did not check clean"
    finally:
        e.close()


CMA = os.path.join(BUILD, "tests", "metrics-cma")

# the exported single-copy families, and the library's figure of each
CMA_FIGURES = [
    ("hugekv_transfer_cma_out_peers", "cma_out"),
    ("hugekv_transfer_cma_in_peers", "cma_in"),
    ("hugekv_transfer_cma_offers_refused_total", "cma_refused"),
    ("hugekv_transfer_cma_calls_total", "cma_calls"),
    ("hugekv_transfer_cma_runs_total", "cma_runs"),
    ("hugekv_transfer_cma_bytes_total", "cma_bytes"),
    ("hugekv_transfer_cma_faults_total", "cma_faults"),
]

# hugekv.prometheus's exposition of a page directory (text 0.0.4)
PY_EXPOSITION = ("import sys\n"
                 "from prometheus_client import CollectorRegistry, generate_latest\n"
                 "import hugekv.prometheus as hp\n"
                 "reg = CollectorRegistry()\n"
                 "hp.register(reg, host=True, runtime_dir=sys.argv[1])\n"
                 "sys.stdout.write(generate_latest(reg).decode())\n")


def cma_families(text):
    """the single-copy families of an exposition: type, help, samples"""
    from prometheus_client.parser import text_string_to_metric_families
    return {f.name: (f.type, f.documentation, sorted(
        (s.name, tuple(sorted(s.labels.items())), s.value) for s in f.samples))
        for f in text_string_to_metric_families(text) if f.name.startswith("hugekv_transfer_cma_")}


def test_cma_metrics():
    """two processes of this host on the single-copy path (metrics-cma), a
    copy fault and a refused offer among them: the single-copy figures
    hkvctl exports (metrics and top) for each side's pool equal its
    library's hkv_xfer_stats; hugekv.prometheus writes the same families;
    a page of the layout before them has none (in any writer)"""
    if not os.path.exists(CMA):
        raise Skip("metrics-cma not built (libucx-dev missing)")
    e = Env()
    e.env.update(HUGEKV_LIBRARY=os.path.join(BUILD, "libhugekv.so"),
                 PYTHONPATH=os.path.join(ROOT, "python"))
    e.env.pop("HUGEKV_XFER_CMA", None)      # single copy: the default on one host
    try:
        tgt = e.spawn([CMA], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        lib = {}
        for label in ("cma initiator", "cma target"):       # in the order they report
            line = tgt.stdout.readline()
            assert line, "metrics-cma ended before the %s's checkpoint" % label
            lib[label] = json.loads(line)
        side = {label: j["endpoint"] for label, j in lib.items()}
        ini, st = side["cma initiator"], side["cma target"]
        # 12 moved, then a put from a hugepage the initiator made unreadable:
        # the target's copy faulted, the put failed, nothing counted moved
        assert ini["cma_out"] == 1 and ini["transfers"] == 13 and ini["failures"] == 1, ini
        assert st["cma_in"] == 1 and st["cma_refused"] == 1 and st["cma_faults"] == 1, st
        assert st["cma_runs"] >= 12 and st["cma_calls"] >= 12, st
        assert st["cma_bytes"] == ini["bytes"] == 12 * 16 * 65536, (st, ini)

        def val(t, name, label):
            m = re.search(r'^%s\{pool="\d+\.\d+",label="%s"\} (\S+)$' % (
                re.escape(name), re.escape(label)), t, re.M)
            return float(m.group(1)) if m else None

        def exported():
            _, t, _ = run([HKVCTL, "metrics", "--format", "prometheus", "--dir", e.rt], 0)
            for label, s in side.items():
                # the last transfers of a burst reach the page too
                for name, f in CMA_FIGURES + [("hugekv_transfers_total", "transfers"),
                                              ("hugekv_transfer_bytes_total", "bytes")]:
                    if val(t, name, label) != s[f]:
                        exported.bad = (label, name, val(t, name, label), s[f])
                        return None
            return t
        try:
            text = wait_for("the single-copy figures in hkvctl metrics", exported, 30, 0.1)
        except AssertionError:
            raise AssertionError("differ (pool, metric, exported, hkv_xfer_stats): %s"
                                 % (getattr(exported, "bad", None),))
        pt = shutil.which("promtool")
        if pt:
            rc, out, err = run([pt, "check", "metrics"], stdin=text)
            assert rc == 0 and not out.strip(), (out, err)
        # hkvctl metrics --json: the same figures under transfer.single_copy
        pools = {p["label"]: p for p in run_json([HKVCTL, "metrics", "--json", "--dir",
                                                   e.rt])["pools"]}
        for label, s in side.items():
            x = pools[label]["transfer"]
            assert x["transfers"] == s["transfers"] and x["bytes"] == s["bytes"], (x, s)
            assert x["single_copy"] == {f: s[f] for _, f in CMA_FIGURES}, (label, x, s)
        # hkvctl top: the peers on the single copy each way, refusals, faults
        tops = {p["label"]: p for p in run_json([HKVCTL, "top", "--json", "--interval",
                                                 "0.2", "--dir", e.rt])["pools"]}
        for label, s in side.items():
            sc = tops[label]["single_copy"]
            assert (sc["out_peers"], sc["in_peers"], sc["offers_refused"], sc["faults"]) == (
                s["cma_out"], s["cma_in"], s["cma_refused"], s["cma_faults"]), (label, sc, s)
            assert sc["bytes_per_s"] >= 0, sc
        _, screen, _ = run([HKVCTL, "top", "--once", "--interval", "0.1", "--dir", e.rt], 0)
        assert "single copy out %d in %d" % (st["cma_out"], st["cma_in"]) in screen, screen
        _, om, _ = run([HKVCTL, "metrics", "--dir", e.rt], 0)     # OpenMetrics
        assert "# TYPE hugekv_transfer_cma_bytes counter" in om, om
        assert "# TYPE hugekv_transfer_cma_in_peers gauge" in om and om.endswith("# EOF\n")
        # a page of the layout before the single copy: its grants, no single copy
        sz1 = int(subprocess.run(["/usr/bin/python3", "-c", "import hugekv._lib as l; "
                                  "print(l.PAGE_XFER_SZ1)"], env=e.env, check=True,
                                 capture_output=True, text=True).stdout)
        old = os.path.join(e.tmp, "old")
        os.mkdir(old, 0o700)
        page = "pool.%d.%d.page" % (tgt.pid, lib["cma target"]["pool"])
        with open(os.path.join(e.rt, page), "rb") as f:
            body = bytearray(f.read())
        body[20:24] = sz1.to_bytes(4, sys.byteorder)       # the header's xfer_bytes
        with open(os.path.join(old, page), "wb") as f:
            f.write(body)
        _, oldtext, _ = run([HKVCTL, "metrics", "--format", "prometheus", "--dir", old], 0)
        assert val(oldtext, "hugekv_grants_total", "cma target") == st["grants"], oldtext
        assert "hugekv_transfer_cma_" not in oldtext, oldtext
        x = run_json([HKVCTL, "metrics", "--json", "--dir", old])["pools"][0]["transfer"]
        assert x["grants"]["grants"] == st["grants"] and "single_copy" not in x, x
        x = run_json([HKVCTL, "top", "--json", "--interval", "0.1", "--dir", old])["pools"][0]
        assert x["grants_active"] == st["grants_active"] and "single_copy" not in x, x
        # hugekv.prometheus: the same families, types, help and samples
        if importlib.util.find_spec("prometheus_client") is None:
            raise Skip("python3-prometheus-client missing (scripts/deps.sh); hkvctl checked")
        for d, want in ((e.rt, text), (old, oldtext)):
            py = subprocess.run(["/usr/bin/python3", "-c", PY_EXPOSITION, d], env=e.env,
                                check=True, capture_output=True, text=True).stdout
            assert cma_families(py) == cma_families(want), (cma_families(py),
                                                             cma_families(want))
        assert len(cma_families(text)) == len(CMA_FIGURES), cma_families(text)
        tgt.stdin.write("\n")
        tgt.stdin.close()
        assert tgt.wait(60) == 0, "metrics-cma: a side failed at the end"
    finally:
        e.close()


# ---- hkv-trace names pools by their labels -------------------------------------------
def test_trace_shows_labels():
    trace = os.path.join(BUILD, "hkv-trace")
    if os.geteuid() != 0 or not os.path.exists(trace):
        raise Skip("hkv-trace needs root (BPF) and its build")
    e = Env()
    try:
        w, pid, a, b = start_workload(e)
        rc, out, err = run([trace, "live", "-p", str(pid), "-d", "2", "--json"], env=e.env)
        if rc != 0 and "BTF" in err:
            raise Skip("no BPF here: " + err.strip()[-200:])
        assert rc == 0, err
        j = json.loads(out)
        labels = {p["pool"]: p["label"] for p in j["pools"]}
        assert labels.get(a) == L2 and labels.get(b, GPU) == GPU, labels
        rc, out, err = run([trace, "live", "-p", str(pid), "-d", "1"], env=e.env)
        assert rc == 0 and "LABEL" in out and L2 in out, out
        w.send_signal(signal.SIGTERM)
        w.wait(timeout=20)
    finally:
        e.close()


# ---- without root ---------------------------------------------------------------------
def test_unprivileged_reader():
    """a user's pools publish under its XDG_RUNTIME_DIR; hkvctl of the same
    user reads them, another user cannot"""
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or not setpriv:
        raise Skip("needs root to become another user (setpriv)")
    e = Env()
    try:
        xdg = os.path.join(e.tmp, "xdg")
        os.mkdir(xdg, 0o700)
        os.chown(xdg, 65534, 65534)
        os.chmod(e.tmp, 0o755)
        # copies another user can reach: the checkout may sit in a directory
        # only its owner can enter
        d = reachable_copy(WORKLOAD, HKVCTL, os.path.join(BUILD, "libhugekv.so.0"))
        e.dirs.append(d)
        nobody = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "env", "-i",
                  "PATH=/usr/bin:/bin", "XDG_RUNTIME_DIR=" + xdg, "HUGEKV_STATS_INTERVAL_MS=200",
                  "LD_LIBRARY_PATH=" + d]
        w = e.spawn(nobody + [os.path.join(d, os.path.basename(WORKLOAD)),
                              os.path.join(xdg, "stats.json")],
                    stdout=subprocess.PIPE, text=True)
        line = w.stdout.readline().split()
        assert line and line[0] == "ready", line
        j = run_json(nobody + [os.path.join(d, "hkvctl"), "metrics", "--json"])
        assert j["dir"] == os.path.join(xdg, "hugekv"), j["dir"]
        assert sorted(x["label"] for x in j["pools"]) == sorted([L2, GPU]), j
        assert not any(x["stale"] for x in j["pools"])
        other = [setpriv, "--reuid=65533", "--regid=65533", "--clear-groups", "env", "-i",
                 "PATH=/usr/bin:/bin", "LD_LIBRARY_PATH=" + d]
        rc, _, err = run(other + [os.path.join(d, "hkvctl"), "metrics", "--dir",
                                  os.path.join(xdg, "hugekv")])
        assert rc == 1 and "Permission denied" in err, (rc, err)
        w.send_signal(signal.SIGTERM)
        assert w.wait(timeout=20) == 0
        assert os.listdir(os.path.join(xdg, "hugekv")) == []
    finally:
        e.close()


# ---- usage ------------------------------------------------------------------------
def test_usage():
    for sub in ("metrics", "top"):
        rc, out, _ = run([HKVCTL, sub, "--help"])
        assert rc == 0 and out.startswith("usage: hkvctl " + sub), out
    rc, out, _ = run([HKVCTL, "--version"])
    assert rc == 0 and "hkvctl (hugekv)" in out
    for args in (["metrics", "--format", "xml"], ["metrics", "--listen", "127.0.0.1:99999"],
                 ["metrics", "--listen", "x:y"], ["metrics", "--interval", "5"],
                 ["metrics", "--textfile", "/tmp", "--interval", "0"],
                 ["metrics", "--json", "--listen", "1"], ["metrics", "stray"],
                 ["top", "--interval", "0"], ["top", "--interval", "abc"], ["top", "stray"]):
        rc, _, err = run([HKVCTL] + args)
        assert rc == 2 and err, (args, rc, err)
    e = Env()
    try:
        # nothing published yet: an empty set, not an error
        j = metrics_json(e)
        assert j["pools"] == [] and j["errors"] == 0
        os.makedirs(e.rt)
        with open(os.path.join(e.rt, "junk.page"), "w") as f:
            f.write("not a page" * 100)
        j = metrics_json(e)
        assert j["pools"] == [] and j["errors"] == 1, j
        _, out, _ = run([HKVCTL, "metrics", "--dir", e.rt], 0)
        assert "hugekv_exporter_page_errors 1" in out
    finally:
        e.close()


TESTS = [test_usage, test_pages_published_and_removed, test_stale_after_kill9,
         test_promtool_rules, test_dashboard_json, test_promtool_metrics_and_textfile,
         test_top_json_once, test_top_in_tmux, test_transfer_metrics, test_grant_metrics,
         test_cma_metrics,
         test_trace_shows_labels, test_unprivileged_reader, test_prometheus_scrapes_listen]


def run_tests(tests, what):
    """run each test, print ok/SKIP/FAIL; exit status 1 if any failed"""
    failed = 0
    for t in tests:
        t0 = time.time()
        try:
            t()
            print("    ok   %s (%.1f s)" % (t.__name__, time.time() - t0))
        except Skip as s:
            print("    SKIP %s: %s" % (t.__name__, s))
        except Exception as ex:  # noqa: BLE001
            import traceback
            failed += 1
            print("    FAIL %s: %s" % (t.__name__, ex))
            traceback.print_exc()
        sys.stdout.flush()
    print("  %s: %d of %d failed" % (what, failed, len(tests)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(run_tests(TESTS, "metrics"))
