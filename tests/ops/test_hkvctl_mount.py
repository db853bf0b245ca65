# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""test_hkvctl_mount.py - `hkvctl mount`: a real 2 MiB hugetlbfs mount that
a named pool then uses (root), a mount already there, another filesystem
refused; 1 GiB pages refused where the kernel offers none and, with a
captured tree that offers them (HKVCTL_ROOT), the kernel's own refusal."""
import os
import subprocess
import sys
import tempfile

import pytest

from helpers import eq, is_root, run, run_json

BUILD = os.environ.get("HKV_BUILD", "build")
CTL = os.path.join(BUILD, "hkvctl")
TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
G1 = "/sys/kernel/mm/hugepages/hugepages-1048576kB"


def mounts(d):
    with open("/proc/self/mounts") as f:
        return [ln.split() for ln in f if ln.split()[1] == d]


def test_usage():
    run([CTL, "mount", "--help"], 0)
    for bad in ([], ["a", "b"], ["--page-size", "4M", "d"], ["--page-size", "x", "d"],
                ["--mode", "0999", "d"], ["--mode", "", "d"], ["--uid", "no-such-user-x", "d"],
                ["--gid", "no-such-group-x", "d"], ["--bogus", "d"]):
        _, _, err = run([CTL, "mount"] + bad, 2)
        assert "hkvctl mount" in err or "usage" in err, (bad, err)


def test_1g_refused_without_pages():
    if os.path.exists(G1):
        pytest.skip("this kernel offers 1 GiB pages")
    d = tempfile.mkdtemp(prefix="hkv-mount-")
    try:
        _, _, err = run([CTL, "mount", "--page-size", "1G", d + "/m"], 1)
        assert "1G pages: this kernel offers none" in err and "nothing mounted" in err, err
        j = run_json([CTL, "mount", "--page-size", "1G", "--json", d + "/m"], 1)
        eq((j["mounted"], j["errno"]), (False, 95), "EOPNOTSUPP as JSON")
        eq(os.listdir(d), [], "nothing made")
        eq(mounts(os.path.realpath(d) + "/m"), [], "nothing mounted")
    finally:
        os.rmdir(d)


def fake_1g():
    """a captured tree whose kernel offers 1 GiB pages"""
    root = tempfile.mkdtemp(prefix="hkv-mount-root-")
    for kb in (2048, 1048576):
        p = root + "/sys/kernel/mm/hugepages/hugepages-%dkB" % kb
        os.makedirs(p)
        with open(p + "/nr_hugepages", "w") as f:
            f.write("0\n")
    return root


def test_1g_injected():
    root, d = fake_1g(), tempfile.mkdtemp(prefix="hkv-mount-")
    env = {"HKVCTL_ROOT": root}
    try:
        j = run_json([CTL, "mount", "--page-size", "1G", "--uid", "0", "--gid", "0",
                      "--mode", "750", "--dry-run", "--json", d], env=env)
        eq((j["options"], j["page_size"], j["mounted"], j["dry_run"]),
           ("pagesize=1G,mode=0750,uid=0,gid=0", 1 << 30, False, True), "dry run")
        if not is_root():
            return
        # the tree says yes, this kernel says no: its refusal, clearly
        rc, _, err = run([CTL, "mount", "--page-size", "1G", d], env=env)
        if os.path.exists(G1):
            eq(rc, 0, err)
            run(["umount", d], 0)
        else:
            eq(rc, 1, err)
            assert "the kernel refused the page size" in err, err
            eq(mounts(os.path.realpath(d)), [], "nothing mounted")
    finally:
        os.rmdir(d)
        subprocess.run(["rm", "-rf", root])


def test_2m_real_mount_used_by_a_named_pool():
    if not is_root():
        pytest.skip("mount(2) needs root")
    d = tempfile.mkdtemp(prefix="hkv-mount-")
    m, shm = os.path.join(d, "hp"), tempfile.mkdtemp(prefix="hkv-mount-", dir="/dev/shm")
    try:
        j = run_json([CTL, "mount", "--json", m])
        eq((j["mounted"], j["already"], j["page_size"]), (True, False, 2 << 20), "mounted")
        (ent,) = mounts(os.path.realpath(m))
        assert ent[2] == "hugetlbfs" and "pagesize=2M" in ent[3], ent
        eq(oct(os.stat(m).st_mode & 0o7777), "0o700", "mode")
        # again: already there, success
        j = run_json([CTL, "mount", "--json", m])
        eq((j["mounted"], j["already"]), (True, True), "already")
        _, out, _ = run([CTL, "mount", m], 0)
        assert "already mounted" in out, out
        # another page size on it: refused
        if os.path.exists(G1):
            run([CTL, "mount", "--page-size", "1G", m], 1)
        # a named pool on 2 MiB pages, strict: its memory file lands here
        env = dict(os.environ, HUGEKV_NAMED_DIR=shm, HUGEKV_LOG="error",
                   HUGEKV_LIBRARY=os.path.join(BUILD, "libhugekv.so"),
                   PYTHONPATH=os.path.join(TOP, "python"), HUGEKV_STATS_INTERVAL_MS="0")
        code = ("import hugekv\n"
                "p = hugekv.Pool(4, 2 << 20, name='mnt', backing='2m', strict=True)\n"
                "p.close()\n")
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        eq(os.listdir(m), ["hugekv.mnt.mem"], "the memory file on the mount")
        run([CTL, "pool", "rm", "mnt"], 0, env={"HUGEKV_NAMED_DIR": shm})
        eq(os.listdir(m), [], "removed")
    finally:
        subprocess.run(["umount", m], capture_output=True)
        subprocess.run(["rm", "-rf", d, shm])


def test_other_filesystem_refused():
    if not is_root():
        pytest.skip("mount(2) needs root")
    d = tempfile.mkdtemp(prefix="hkv-mount-")
    try:
        run(["mount", "-t", "tmpfs", "none", d], 0)
        _, _, err = run([CTL, "mount", d], 1)
        assert "tmpfs" in err and "nothing mounted" in err, err
        j = run_json([CTL, "mount", "--json", d], 1)
        eq((j["mounted"], j["errno"]), (False, 16), "EBUSY as JSON")
    finally:
        subprocess.run(["umount", d], capture_output=True)
        os.rmdir(d)
