# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""hugekv.prometheus: the collector in an engine's own registry gives the
figures of hkv_stats (this process's pools) and of the stats pages (every
pool on the host); labels are the pools' own copies; stale pages."""
import os
import signal
import subprocess
import sys
import textwrap

import pytest

prometheus_client = pytest.importorskip(
    "prometheus_client", reason="python3-prometheus-client missing (scripts/deps.sh)")
from prometheus_client import CollectorRegistry, generate_latest  # noqa: E402
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

import hugekv  # noqa: E402
import hugekv.prometheus as hp  # noqa: E402


@pytest.fixture
def runtime(tmp_path, monkeypatch):
    """a private page directory; pools created meanwhile publish there"""
    d = tmp_path / "rt"
    monkeypatch.setenv("HUGEKV_RUNTIME_DIR", str(d))
    monkeypatch.setenv("HUGEKV_STATS_INTERVAL_MS", "100")
    return d


def samples(reg):
    text = generate_latest(reg).decode()
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out, text


def busy_pool(label):
    p = hugekv.Pool(512, 0, free_room=(0.1, 0.2), label=label, nlanes=2)
    held = []
    for i in range(200):
        ext = p.alloc(1 + i % 7, evict=True)
        p.unit_add(i, ext)
        held.append(i)
    p.unit_pin(199)
    with pytest.raises(hugekv.Error):
        p.alloc(100000)
    return p


def value(s, name, pool, label, **extra):
    lab = dict(pool=pool, label=label, **extra)
    return s[(name, tuple(sorted(lab.items())))]


def check_figures(s, key, label, st):
    assert value(s, "hugekv_allocations_total", key, label) == st["allocs"]
    assert value(s, "hugekv_pages", key, label, state="free") == st["free_pages"]
    assert value(s, "hugekv_pages", key, label, state="pinned") == st["pinned_pages"]
    assert value(s, "hugekv_pages", key, label, state="cached") == \
        st["unit_pages"] - st["pinned_pages"]
    assert sum(value(s, "hugekv_pages", key, label, state=x)
               for x in ("free", "allocated", "cached", "pinned")) == st["npages"]
    assert value(s, "hugekv_evictions_total", key, label) == st["evictions"] > 0
    assert value(s, "hugekv_allocation_failures_total", key, label, reason="no_room") == \
        st["alloc_failures"] - st["alloc_failures_nospc"] > 0
    assert value(s, "hugekv_allocation_extents_count", key, label) == st["allocs"]
    assert value(s, "hugekv_allocation_extents_bucket", key, label, le="+Inf") == st["allocs"]
    assert value(s, "hugekv_evicted_unit_age_seconds_count", key, label) == st["evictions"]
    assert value(s, "hugekv_largest_free_extent_pages", key, label) == st["largest_free_extent"]
    assert value(s, "hugekv_free_room_low_pages", key, label) == 51


def test_collector_of_own_pools(runtime):
    label = 'L1 "gpu" tier'
    p = busy_pool(label)
    try:
        assert p.label == label
        reg = CollectorRegistry()
        hp.register(reg, pools=[p])
        s, text = samples(reg)
        st = p.stats()
        key = "%d.%d" % (os.getpid(), p.id)
        check_figures(s, key, label, st)
        assert value(s, "hugekv_pool_info", key, label, pid=str(os.getpid()),
                     backing="none") == 1
        assert value(s, "hugekv_pool_stale", key, label) == 0
        assert 'label="L1 \\"gpu\\" tier"' in text
    finally:
        p.close()


def test_collector_of_host_pages(runtime):
    p = busy_pool("L2 host tier")
    try:
        p.publish()
        st = p.stats()
        reg = CollectorRegistry()
        hp.register(reg, host=True)        # read through the page, as another process would
        s, _ = samples(reg)
        check_figures(s, "%d.%d" % (os.getpid(), p.id), "L2 host tier", st)
        # the page's file: 0600 in the runtime directory; gone with the pool
        (page,) = os.listdir(runtime)
        assert os.stat(runtime / page).st_mode & 0o777 == 0o600
    finally:
        p.close()
    assert os.listdir(runtime) == []
    s, _ = samples(reg)
    assert not any(k[0] == "hugekv_allocations_total" for k in s)


def test_stale_page_of_a_killed_process(runtime):
    code = textwrap.dedent("""
        import os, sys, time
        sys.path.insert(0, %r)
        import hugekv
        p = hugekv.Pool(64, 0, label="doomed")
        p.alloc(5)
        p.publish()
        print("ready", flush=True)
        time.sleep(60)
    """ % os.path.join(os.path.dirname(hugekv.__file__), ".."))
    c = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert c.stdout.readline().strip() == "ready"
        pages, errors = hp.host_pages()
        assert errors == 0 and [(x["label"], x["stale"]) for x in pages] == [("doomed", False)]
        c.send_signal(signal.SIGKILL)
        c.wait()
        pages, _ = hp.host_pages()
        assert [(x["label"], x["stale"], x["pid"]) for x in pages] == [("doomed", True, c.pid)]
        reg = CollectorRegistry()
        hp.register(reg, host=True)
        s, _ = samples(reg)
        key = "%d.%d" % (c.pid, pages[0]["pool_id"])
        assert value(s, "hugekv_pool_stale", key, "doomed") == 1
        assert not any(k[0] == "hugekv_allocations_total" for k in s)   # no dead figures
    finally:
        if c.poll() is None:
            c.kill()
            c.wait()


def test_label_checks(runtime):
    with pytest.raises(hugekv.Error):
        hugekv.Pool(16, label="x" * 64)              # HKV_LABEL_MAX - 1 bytes at most
    with pytest.raises(hugekv.Error):
        hugekv.Pool(16, label="tab\there")
    with pytest.raises(TypeError):
        hugekv.Pool(16, label=5)
    with pytest.raises(ValueError, match="NUL"):       # not cut short to "a"
        hugekv.Pool(16, label="a\0b")
    with hugekv.Pool(16, label="y" * 63) as p:
        assert p.label == "y" * 63
    with hugekv.Pool(16) as p:
        assert p.label == ""


def test_no_page_when_disabled(tmp_path, monkeypatch):
    monkeypatch.setenv("HUGEKV_RUNTIME_DIR", str(tmp_path / "rt"))
    monkeypatch.setenv("HUGEKV_STATS_INTERVAL_MS", "0")
    with hugekv.Pool(16) as p:
        with pytest.raises(hugekv.Error) as e:
            p.publish()
        assert e.value.errno == 2
        assert not (tmp_path / "rt").exists()
    assert hp.host_pages(str(tmp_path / "rt")) == ([], 0)


def test_a_stray_page_name_is_one_error(tmp_path):
    """a file whose name is not UTF-8 (or not a page) in the page directory
    counts as one unreadable page; the scrape goes on"""
    d = tmp_path / "rt"
    d.mkdir()
    open(os.path.join(os.fsencode(d), b"\xff\xfe.page"), "wb").close()
    (d / "junk.page").write_bytes(b"not a stats page")
    assert hp.host_pages(str(d)) == ([], 2)


def test_named_pool_by_name(runtime, monkeypatch):
    """a named pool of this process is pool="NAME" (label: the name), once,
    though its page is on the host too"""
    import shutil
    import tempfile
    d = tempfile.mkdtemp(prefix="hkv-prom-", dir="/dev/shm")
    monkeypatch.setenv("HUGEKV_NAMED_DIR", d)
    try:
        p = hugekv.Pool(64, 4096, name="kv-prom")
        p.unit_add(1, p.alloc(3))
        p.publish()
        reg = CollectorRegistry()
        hp.register(reg, pools=[p], host=True)
        s, text = samples(reg)
        assert value(s, "hugekv_pool_processes", "kv-prom", "kv-prom") == 1
        assert value(s, "hugekv_units", "kv-prom", "kv-prom") == 1
        assert text.count("hugekv_units{") == 1, text
        pages, errors = hp.host_pages()
        assert errors == 0 and [(x["pool"], x["label"], x["pids"]) for x in pages] == [
            ("kv-prom", "kv-prom", [os.getpid()])]
        p.close()
        hugekv.Pool.unlink("kv-prom")
    finally:
        shutil.rmtree(d, ignore_errors=True)
