# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""test_hkvctl.py - hkvctl against this machine's sysfs, against a faked
two-node machine with 1 GiB pages and a GPU (HKVCTL_ROOT), and `verify`
against a real process that holds a 2 MiB pool. The reserve test changes
the 2 MiB pool by 4 pages up and back (root only; skipped otherwise)."""
import os
import shutil
import subprocess
import tempfile
import time

import pytest

from helpers import eq, is_root, reachable_copy, read, read_int, run, run_json

BUILD = os.environ.get("HKV_BUILD", "build")
CTL = os.path.join(BUILD, "hkvctl")
HOLDER = os.path.join(BUILD, "tests", "ops-pool-holder")
NODE = "/sys/devices/system/node"
MM = "/sys/kernel/mm/hugepages"
MB2 = 2 << 20


def sizes_kb():
    return sorted(int(d[len("hugepages-"):-2]) for d in os.listdir(MM))


def test_help_and_usage():
    for sub in ("topology", "plan", "reserve", "verify"):
        _, out, _ = run([CTL, sub, "--help"], 0)
        assert out.startswith("usage: hkvctl " + sub), out
        assert "--json" in out, sub + " --help does not name --json"
    run([CTL, "--help"], 0)
    run([CTL], 2)
    run([CTL, "frobnicate"], 2)
    run([CTL, "topology", "extra"], 2)
    run([CTL, "plan"], 2)                       # --size missing
    run([CTL, "plan", "--size", "12Q"], 2)
    run([CTL, "plan", "--size", "1G", "--backing", "5g"], 2)
    run([CTL, "reserve", "--size", "-1"], 2)
    run([CTL, "verify"], 2)                     # --pid missing
    run([CTL, "verify", "--pid", "abc"], 2)


def topo_matches_sysfs():
    t = run_json([CTL, "topology", "--json"])
    online = read(NODE + "/online")
    ids = [n["node"] for n in t["nodes"]]
    eq(ids, parse_list(online), "nodes vs %s/online" % NODE)
    for n in t["nodes"]:
        d = "%s/node%d" % (NODE, n["node"])
        eq(n["cpus"], parse_list(read(d + "/cpulist")), "cpus of node %d" % n["node"])
        eq(n["distances"], [int(x) for x in read(d + "/distance").split()], "distances")
        eq([h["page_bytes"] for h in n["hugepages"]], [k << 10 for k in sizes_kb()],
           "page sizes")
        for h in n["hugepages"]:
            hp = "%s/hugepages/hugepages-%dkB/" % (d, h["page_bytes"] >> 10)
            for k, f in (("total", "nr_hugepages"), ("free", "free_hugepages"),
                         ("surplus", "surplus_hugepages")):
                eq(h[k], read_int(hp + f), "node %d %s %s" % (n["node"], hp, k))
    for z in t["hugepage_sizes"]:
        hp = "%s/hugepages-%dkB/" % (MM, z["page_bytes"] >> 10)
        eq(z["total"], read_int(hp + "nr_hugepages"), "global total")
        eq(z["free"], read_int(hp + "free_hugepages"), "global free")
        eq(z["reserved"], read_int(hp + "resv_hugepages"), "global resv")
        assert z["libhugetlbfs"], "libhugetlbfs does not list %d" % z["page_bytes"]
    thp = read("/sys/kernel/mm/transparent_hugepage/enabled")
    eq(t["thp"]["enabled"], thp[thp.index("[") + 1:thp.index("]")], "THP mode")
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    eq(t["memlock"]["soft_bytes"], soft if soft != resource.RLIM_INFINITY else -1, "memlock")
    pci = []
    for dev in sorted(os.listdir("/sys/bus/pci/devices")):
        cls = int(read("/sys/bus/pci/devices/%s/class" % dev), 16) >> 16
        if cls in (0x02, 0x03, 0x12):
            pci.append((dev, read_int("/sys/bus/pci/devices/%s/numa_node" % dev, -1)))
    eq([(d["address"], d["numa_node"]) for d in t["pci"]], pci, "PCI devices")


def parse_list(s):
    out = []
    for part in s.split(","):
        if "-" in part:
            a, b = part.split("-")
            out += range(int(a), int(b) + 1)
        elif part:
            out.append(int(part))
    return out


def test_topology_json_agrees_with_sysfs():
    # other engineers' tests move the pools meanwhile: one retry
    try:
        topo_matches_sysfs()
    except AssertionError:
        time.sleep(0.5)
        topo_matches_sysfs()
    _, out, _ = run([CTL, "topology"], 0)
    assert "node 0 cpus:" in out and "hugepage pools" in out, out


def fake_tree():
    """a two-node machine with 2 MiB and 1 GiB pools, a GPU on node 1, a NIC
    on node 0, and a cgroup v2 hugetlb limit"""
    root = tempfile.mkdtemp(prefix="hkvctl-fake-")

    def w(path, text):
        p = root + path
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(text + "\n")
    w(NODE + "/online", "0-1")
    for n, cpus in ((0, "0-3"), (1, "4-7")):
        d = "%s/node%d" % (NODE, n)
        w(d + "/cpulist", cpus)
        w(d + "/distance", "10 21" if n == 0 else "21 10")
        w(d + "/meminfo", "Node %d MemTotal:       %d kB\nNode %d MemFree:        %d kB"
          % (n, 64 << 20, n, 32 << 20))
        for kb, tot, free in ((2048, 100 + n, 50 + n), (1048576, 4 * n, 2 * n)):
            hp = "%s/hugepages/hugepages-%dkB/" % (d, kb)
            w(hp + "nr_hugepages", str(tot))
            w(hp + "free_hugepages", str(free))
            w(hp + "surplus_hugepages", "0")
    for kb in (2048, 1048576):
        hp = "%s/hugepages-%dkB/" % (MM, kb)
        for f, v in (("nr_hugepages", 201 if kb == 2048 else 4), ("free_hugepages", 101),
                     ("resv_hugepages", 3), ("surplus_hugepages", 0),
                     ("nr_overcommit_hugepages", 0)):
            w(hp + f, str(v))
    w("/sys/kernel/mm/transparent_hugepage/enabled", "always madvise [never]")
    w("/sys/kernel/mm/transparent_hugepage/defrag", "[always] defer madvise never")
    for dev, cls, node in (("0000:17:00.0", "0x030200", 1), ("0000:3b:00.0", "0x020700", 0),
                           ("0000:00:1f.0", "0x060100", 0)):
        d = "/sys/bus/pci/devices/" + dev
        w(d + "/class", cls)
        w(d + "/vendor", "0x10de")
        w(d + "/device", "0x2330")
        w(d + "/numa_node", str(node))
    os.makedirs(root + "/sys/bus/pci/devices/0000:3b:00.0/infiniband/mlx5_0")
    w("/proc/self/cgroup", "0::/serving/rank0")
    w("/sys/fs/cgroup/serving/rank0/hugetlb.2MB.max", str(64 << 30))
    w("/sys/fs/cgroup/serving/rank0/hugetlb.2MB.current", str(2 << 30))
    w("/sys/fs/cgroup/serving/rank0/hugetlb.1GB.max", "max")
    w("/sys/fs/cgroup/serving/rank0/hugetlb.1GB.current", "0")
    return root


def test_topology_fake_two_nodes():
    root = fake_tree()
    try:
        t = run_json([CTL, "topology", "--json"], env={"HKVCTL_ROOT": root})
        eq([n["node"] for n in t["nodes"]], [0, 1], "nodes")
        eq(t["nodes"][1]["cpus"], [4, 5, 6, 7], "node 1 cpus")
        eq(t["nodes"][0]["distances"], [10, 21], "distances")
        eq(t["nodes"][1]["mem_total_bytes"], 64 << 30, "node 1 memory")
        eq([h["page_bytes"] for h in t["nodes"][1]["hugepages"]], [MB2, 1 << 30], "sizes")
        eq(t["nodes"][1]["hugepages"][1], {"page_bytes": 1 << 30, "total": 4, "free": 2,
                                           "surplus": 0}, "node 1 1G pool")
        eq(t["hugepage_sizes"][0]["reserved"], 3, "reserved")
        eq(t["thp"], {"enabled": "never", "defrag": "always"}, "thp")
        eq([(c["size"], c["limit_bytes"], c["usage_bytes"]) for c in t["hugetlb_cgroup"]],
           [("2MB", 64 << 30, 2 << 30), ("1GB", None, 0)], "hugetlb cgroup")
        eq([(d["address"], d["kind"], d["numa_node"], d["interfaces"]) for d in t["pci"]],
           [("0000:17:00.0", "gpu", 1, None), ("0000:3b:00.0", "nic", 0, "mlx5_0")], "pci")
        _, out, _ = run([CTL, "topology"], 0, env={"HKVCTL_ROOT": root})
        assert "available: 2 nodes (0,1)" in out and "gpu" in out, out
    finally:
        shutil.rmtree(root)


def node0_pool():
    hp = "%s/node0/hugepages/hugepages-2048kB/" % NODE
    return read_int(hp + "nr_hugepages"), read_int(hp + "free_hugepages")


def usable_2m(free):
    """free 2 MiB pages a create can take: reservations are global (a
    mapping's reserved pages count as free but are promised)"""
    g = "%s/hugepages-2048kB/" % MM
    return max(0, min(free, read_int(g + "free_hugepages") - read_int(g + "resv_hugepages")))


def test_plan_agrees_with_sysfs():
    for attempt in (0, 1):
        total, free = node0_pool()
        use = usable_2m(free)
        p = run_json([CTL, "plan", "--size", "%dM" % (2 * max(use, 1)), "--node", "0",
                      "--backing", "2m", "--json"], None)
        if node0_pool() == (total, free) and usable_2m(free) == use:
            break
    n = p["nodes"][0]
    eq((n["node"], n["wanted_bytes"], n["wanted_total"], n["wanted_free"]),
       (0, MB2, total, free), "plan vs node0 2M pool")
    eq(n["wanted_needed"], max(use, 1), "pages needed")
    if use:
        eq((p["ok"], n["backing"], n["shortfall"]), (True, "2m", 0), "plan fits")
    eq(p["npages"], (2 * max(use, 1) << 20) // 65536, "KV pages of 64K")


def test_plan_reports_shortfall():
    for attempt in (0, 1):
        total, free = node0_pool()
        want = free + 300
        rc, out, _ = run([CTL, "plan", "--size", "%dM" % (2 * want), "--backing", "2m",
                          "--node", "0", "--json"])
        if node0_pool() == (total, free):
            break
    import json
    p = json.loads(out)
    eq(rc, 1, "plan exit status on a shortfall")
    n = p["nodes"][0]
    eq((p["ok"], n["shortfall"], n["reserve_total"], n["backing"]),
       (False, 300, total + 300, "thp" if p["thp_mode"] != "never" else "4k"), "shortfall")
    eq((n["reserve"]["shortfall"], n["reserve"]["nr_hugepages"]), (300, total + 300), "reserve")
    _, txt, _ = run([CTL, "plan", "--size", "%dM" % (2 * want), "--backing", "2m", "--node",
                     "0"], 1)
    assert "short 300" in txt and "hkvctl reserve --node 0 --page 2M" in txt, txt
    p = run_json([CTL, "plan", "--size", "%dM" % (2 * want), "--backing", "2m", "--node", "0",
                  "--strict", "--json"], 1)
    eq(p["would_fail"], True, "strict plan would fail")
    run([CTL, "plan", "--size", "1G", "--node", "77"], 1)


def test_plan_parts():
    """the parts of mixed page sizes, as the library plans them: in address
    order, covering the pool, each a whole number of its pages"""
    for size in ("2300M", "3G", "64M"):
        p = run_json([CTL, "plan", "--size", size, "--node", "0", "--json"], None)
        parts = p["parts"]
        assert parts, p
        eq(sum(x["bytes"] for x in parts), p["arena_bytes"], "parts cover the arena (%s)" % size)
        eq(parts[0]["first_page"], 0, "first part starts at page 0")
        for a, b in zip(parts, parts[1:]):
            assert a["hugepage_bytes"] >= b["hugepage_bytes"], ("largest pages first", parts)
            assert b["first_page"] <= p["npages"], parts
        for x in parts:
            eq(x["bytes"] % max(x["hugepage_bytes"], 2 << 20 if x["backing"] == "thp" else 1), 0,
               "part of whole pages")
            eq(x["node"], 0, "part node")
        _, txt, _ = run([CTL, "plan", "--size", size, "--node", "0"])
        eq(txt.count("    part: "), len(parts) if len(parts) > 1 else 0, "text parts (%s)" % size)


def test_reserve_changes_and_restores():
    if not is_root():
        pytest.skip("needs root: changes the 2 MiB pool of node 0")
    if not os.path.exists(MM + "/hugepages-2048kB"):
        pytest.skip("no 2 MiB hugepages")
    for attempt in (0, 1):          # others may move the pool meanwhile
        before, _ = node0_pool()
        up = run_json([CTL, "reserve", "--node", "0", "--page", "2M", "--size",
                       "%dM" % (2 * (before + 4)), "--json"], None)
        after, _ = node0_pool()
        cur = after
        down = run_json([CTL, "reserve", "--node", "0", "--size", "%dM" % (2 * (cur - 4)),
                         "--json", "--quiet"], None)
        if up["before"] == before and after == before + 4:
            break
    eq((up["before"], up["requested"], up["granted"], up["ok"]),
       (before, before + 4, before + 4, True), "reserve +4")
    eq(after, before + 4, "node0 nr_hugepages after reserve")
    eq((down["requested"], down["granted"]), (cur - 4, cur - 4), "restore")


def test_reserve_errors():
    run([CTL, "reserve", "--node", "0"], 2)                 # no --size
    _, _, err = run([CTL, "reserve", "--size", "1G", "--page", "1G"], None)
    if not os.path.exists(MM + "/hugepages-1048576kB"):
        assert "hugepages-setup" in err, err
    _, _, err = run([CTL, "reserve", "--size", "2M", "--node", "999"], 1)
    assert "no node 999" in err, err
    if is_root() and shutil.which("setpriv"):
        # as nobody, from a copy nobody can reach (the checkout may be in a
        # directory only its owner can enter)
        d = reachable_copy(CTL, os.path.join(BUILD, "libhugekv.so.0"))
        try:
            _, _, err = run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                             os.path.join(d, "hkvctl"), "reserve", "--node", "0",
                             "--size", "2M"], 1)
            assert "needs root" in err, err
        finally:
            shutil.rmtree(d)


def fake_nr(root, node, kb=2048):
    return read_int(root + NODE + "/node%d/hugepages/hugepages-%dkB/nr_hugepages" % (node, kb))


def test_reserve_size_overflow_and_hex():
    """sizes near 2^64 must not wrap to a small page count (it emptied the
    pool and said ok), and hex is not a size; on a faked machine, so a
    regression cannot empty a real pool"""
    root = fake_tree()
    env = {"HKVCTL_ROOT": root}
    try:
        before = fake_nr(root, 1)
        for size, rc, why in (("18446744073709551615", 1, "more than the node's memory"),
                              ("18446744073709551615B", 1, "more than the node's memory"),
                              ("17179869183G", 1, "more than the node's memory"),
                              ("16E", 2, "2^64"), ("99999999999999999999", 2, "2^64"),
                              ("0x10M", 2, "not a size"), ("0x10", 2, "not a size"),
                              ("1e3M", 2, "not a size"), ("-1", 2, "not a size")):
            got, out, err = run([CTL, "reserve", "--node", "1", "--size", size, "--json"],
                                env=env)
            eq(got, rc, "exit status of reserve --size %s" % size)
            assert why in err, "reserve --size %s: %r" % (size, err)
            assert '"ok": true' not in out, out
            eq(fake_nr(root, 1), before, "pool after reserve --size %s" % size)
        for sub in (["plan", "--size", "16E"], ["plan", "--size", "0x10G"],
                    ["plan", "--size", "1G", "--kv-page", "0x10K"],
                    ["verify", "--pid", "1", "--page", "0x200000"],
                    ["reserve", "--size", "2M", "--page", "0x200000"]):
            got, _, err = run([CTL] + sub, env=env)
            eq(got, 2, " ".join(sub))
        # near 2^64 the plan must not wrap to a tiny pool either
        got, out, err = run([CTL, "plan", "--size", "18446744073709551615", "--json"])
        assert got != 0 and '"ok": true' not in out, (got, out, err)
    finally:
        shutil.rmtree(root)


def test_reserve_1g_at_run_time():
    """the 1 GiB pool of node 0 at run time: one page more, what the kernel
    granted said in JSON and text, then that page given back (only it)"""
    if not is_root():
        pytest.skip("needs root: changes the 1 GiB pool of node 0")
    hp = NODE + "/node0/hugepages/hugepages-1048576kB/nr_hugepages"
    if not os.path.exists(hp):
        pytest.skip("no 1 GiB hugepages on this machine")
    before = read_int(hp)
    added = 0
    try:
        rc, out, err = run([CTL, "reserve", "--node", "0", "--page", "1G", "--size",
                            "%dG" % (before + 1), "--json", "--quiet"])
        import json
        r = json.loads(out)
        now = read_int(hp)
        added = max(0, r["granted"] - r["before"])
        eq((r["node"], r["page_bytes"], r["before"], r["requested"]),
           (0, 1 << 30, before, before + 1), "1G reserve request")
        eq(r["granted"], now, "granted is what sysfs says")
        assert before <= now <= before + 1, (before, now)
        eq((rc, r["ok"], r["short_pages"]), (0, True, 0) if now == before + 1 else
           (1, False, 1), "verdict follows the grant")
        if now < before + 1:
            assert "short by 1 pages" in err and "boot" in err, err
        # the text report of the same state (asking what is there changes nothing)
        rc, txt, _ = run([CTL, "reserve", "--node", "0", "--page", "1G", "--size",
                          "%dG" % now])
        eq(rc, 0, "reserve of the current size")
        assert ("node 0 1G pool: %d -> %d pages" % (now, now)) in txt, txt
    finally:
        # take back only the page this test added: other suites may move the
        # pool meanwhile (test-env raises it for its run), and writing back
        # the count read at the start would undo their change
        if added:
            cur = read_int(hp)
            r = run_json([CTL, "reserve", "--node", "0", "--page", "1G", "--size",
                          "%dG" % (cur - added), "--json", "--quiet"], None)
            eq(r["granted"], cur - added, "1 GiB pool given back")


def test_reserve_fake_shortfall_and_progress():
    root = fake_tree()
    env = {"HKVCTL_ROOT": root, "HKVCTL_FAKE_GRANT_MAX": "10"}
    try:
        rc, out, err = run([CTL, "reserve", "--node", "1", "--page", "1G", "--size", "40G",
                            "--json"], env=env)
        import json
        r = json.loads(out)
        eq(rc, 1, "exit status when short")
        eq((r["before"], r["requested"], r["granted"], r["short_pages"], r["ok"]),
           (4, 40, 10, 30, False), "1G shortfall")
        assert "hugepages=1:40" in err and "boot" in err, err
        assert "pages (" in err, "no progress line: " + err
        eq(read_int(root + NODE + "/node1/hugepages/hugepages-1048576kB/nr_hugepages"), 10,
           "fake pool")
        r = run_json([CTL, "reserve", "--node", "1", "--page", "1G", "--size", "8G",
                      "--json"], 0, env=env)
        eq((r["before"], r["granted"]), (10, 8), "shrink")
    finally:
        shutil.rmtree(root)


def holder(mib, backing="2m"):
    p = subprocess.Popen([HOLDER, str(mib), backing, "0"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    regions = []
    for line in p.stdout:
        if line.startswith("region"):
            _, base, size, page, node = line.split()
            regions.append((int(base, 16), int(size), int(page), int(node)))
        elif line.strip() == "ready":
            return p, regions
    p.wait()
    raise AssertionError("pool-holder failed: " + p.stderr.read())


def test_verify_pool_on_2m_node0():
    _, free = node0_pool()
    if free < 8:
        pytest.skip("fewer than 8 free 2 MiB pages on node 0 (run under scripts/test-env)")
    p, regions = holder(16)
    try:
        v = run_json([CTL, "verify", "--pid", str(p.pid), "--node", "0", "--page", "2M",
                      "--json"], 0)
        maps = [m for m in v["mappings"] if m["hugetlb"]]
        eq(len(maps), 1, "hugetlb mappings of the holder")
        m = maps[0]
        eq((m["start"], m["bytes"]), (regions[0][0], regions[0][1]), "mapping vs hkv_regions")
        eq((m["page_bytes"], m["node_bytes"], m["status"], m["policy"]),
           (MB2, {"0": 16 << 20}, "ok", "bind:0"), "2M on node 0")
        eq((v["ok"], v["problems"]), (True, 0), "verdict")
        # expecting another node flags every page as misplaced
        v = run_json([CTL, "verify", "--pid", str(p.pid), "--node", "1", "--json"], 1)
        m = [m for m in v["mappings"] if m["hugetlb"]][0]
        eq((m["status"], m["misplaced_bytes"]), ("misplaced", 16 << 20), "misplaced")
        _, out, _ = run([CTL, "verify", "--pid", str(p.pid)], 0)
        assert "bind:0" in out and "2M" in out and " ok" in out, out
    finally:
        p.communicate("")


def test_verify_flags_downgraded_4k():
    p, _ = holder(8, "4k")
    try:
        v = run_json([CTL, "verify", "--pid", str(p.pid), "--json"], 1)
        bound = [m for m in v["mappings"] if m["policy"] == "bind:0"]
        assert bound, v
        eq((bound[0]["page_bytes"], bound[0]["status"]), (4096, "downgraded"), "4K pool")
    finally:
        p.communicate("")


MAPPER = r"""
import mmap, os, sys
path = os.fsencode(sys.argv[1])
fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
os.ftruncate(fd, 4 << 20)
m = mmap.mmap(fd, 4 << 20)
m[0:1] = b"x"
with open("/proc/self/comm", "wb") as f:
    f.write(b"hk\xff\x01v")
print("ready", flush=True)
sys.stdin.read()
"""


def test_verify_json_non_utf8_path():
    """a mapping whose path is not UTF-8 (and holds control characters),
    and a process name that is not, must still give valid JSON, the bad
    bytes as U+FFFD"""
    d = tempfile.mkdtemp(prefix="hkvctl-paths-")
    name = b"hugekv-\xff\xfe-\x01\t\"q\"-\xc3\xa9.bin"
    path = os.path.join(os.fsencode(d), name)
    p = subprocess.Popen(["/usr/bin/python3", "-c", MAPPER, os.fsdecode(path)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert p.stdout.readline().strip() == b"ready", "mapper did not start"
        out = subprocess.run([CTL, "verify", "--pid", str(p.pid), "--all", "--min-size",
                              "4K", "--json"], capture_output=True).stdout
        import json
        v = json.loads(out)         # bytes: must be valid UTF-8 and JSON
        want = path.decode("utf-8", "replace")
        got = [m["path"] for m in v["mappings"] if m["path"].endswith(".bin")]
        eq(got, [want], "path of the mapping, bad bytes as U+FFFD")
        eq(v["comm"], "hk\ufffd\x01v", "comm, not UTF-8 either")
    finally:
        p.communicate(b"")
        shutil.rmtree(d)


def test_verify_errors():
    run([CTL, "verify", "--pid", "999999999"], 1)
    # a process with no hugepage mapping: nothing to verify, exit 1
    p = subprocess.Popen(["sleep", "30"])
    try:
        rc, out, _ = run([CTL, "verify", "--pid", str(p.pid)])
        eq(rc, 1, "verify exit status with no pool")
        assert "no hugekv pool" in out, out
    finally:
        p.kill()
        p.wait()
