# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""test_tools.py - what every tool does the same way (tools/lib): --version
with the project's version, --help on stdout with exit 0, exit 2 for bad
usage, and the shared number parser's refusals (hex, signs, NaN, values
that wrap near 2^64) in each tool that takes numbers."""
import os
import re
import shutil
import tempfile

import pytest

from helpers import eq, run

BUILD = os.environ.get("HKV_BUILD", "build")
SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def project_version():
    with open(os.path.join(SRC, "Makefile")) as f:
        return re.search(r"^VERSION\s*:=\s*(\S+)", f.read(), re.M).group(1)


def tools():
    """every tools/NAME that is built (tools/lib is the shared code)"""
    names = sorted(d for d in os.listdir(os.path.join(SRC, "tools"))
                   if d != "lib" and os.path.isdir(os.path.join(SRC, "tools", d)))
    built = [n for n in names if os.path.exists(os.path.join(BUILD, n))]
    if not built:
        pytest.skip("no tool built in " + BUILD)
    return built


def test_version_help_usage():
    v = project_version()
    for t in tools():
        exe = os.path.join(BUILD, t)
        rc, out, _ = run([exe, "--version"])
        eq(rc, 0, t + " --version exit status")
        words = out.split()
        assert words and words[0] == t and v in words, "%s --version: %r" % (t, out)
        rc, out, _ = run([exe, "--help"])
        eq(rc, 0, t + " --help exit status")
        assert "usage" in out.lower(), t + " --help: no usage on stdout"
        rc, _, err = run([exe, "--no-such-option"])
        eq(rc, 2, t + " exit status for an unknown option")
        assert err.strip(), t + ": bad usage says nothing on stderr"
    for t in ("hkvctl", "hkv-trace", "hkv-bench"):
        if os.path.exists(os.path.join(BUILD, t)):
            rc, out, _ = run([os.path.join(BUILD, t), "--version"])
            eq(out.strip(), "%s (hugekv) %s" % (t, v), t + " --version (tool_version)")


def test_numbers_refused_everywhere():
    """one parser: hex, signs, NaN and wrapping values are bad usage"""
    cases = [
        ("hkvctl", ["plan", "--size", "0x10G"]),
        ("hkvctl", ["plan", "--size", "16E"]),
        ("hkvctl", ["verify", "--pid", "1", "--min-size", "-1"]),
        ("hkv-trace", ["-d", "nan"]),
        ("hkv-trace", ["-i", "0x1"]),
        ("hkv-bench", ["churn", "--pages", "0x10000"]),
        ("hkv-bench", ["churn", "--ops", "1e6"]),
        ("hkv-bench", ["churn", "--pages", "99999999999999999999"]),
        ("hkv-bench", ["scale", "--from", "0x4000"]),
        ("hkv-example", ["--requests", "0x10"]),
        ("hkv-example", ["--l2-pages", "-1"]),
        ("hkv-example", ["--page-bytes", "18446744073709551616"]),
        ("hkv-example", ["--hit", "nan"]),
    ]
    done = 0
    for t, args in cases:
        exe = os.path.join(BUILD, t)
        if not os.path.exists(exe):
            continue
        rc, out, err = run([exe] + args, timeout=30)
        eq(rc, 2, "%s %s: exit status" % (t, " ".join(args)))
        done += 1
    if not done:
        pytest.skip("no tool built")


def test_bench_sizes_file_refuses_wrapping_numbers():
    """hkv-bench --sizes FILE: each line two whole numbers; "-1" (which
    wrapped to 2^64 - 1 and was dropped silently) and hex are refused"""
    exe = os.path.join(BUILD, "hkv-bench")
    if not os.path.exists(exe):
        pytest.skip("hkv-bench not built")
    d = tempfile.mkdtemp(prefix="hkv-sizes-")
    try:
        for text, rc in (("1 500\n8 200\n", 0), ("1 500\n-1 200\n", 2),
                         ("1 500\n0x10 5\n", 2), ("1 500 7\n", 2), ("4 -3\n", 2)):
            p = os.path.join(d, "hist.txt")
            with open(p, "w") as f:
                f.write(text)
            got, _, err = run([exe, "churn", "--quick", "--sizes", p, "--baselines", "none",
                               "--ops", "2K", "--json"], timeout=120)
            eq(got, rc, "churn --sizes %r" % text)
            if rc:
                assert "want \"pages count\"" in err, err
    finally:
        shutil.rmtree(d)


def test_bench_csv_not_through_symlink():
    """hkv-bench writes no files by path (JSON goes to stdout): --csv DIR is
    refused as bad usage and nothing is written through a symlink there"""
    exe = os.path.join(BUILD, "hkv-bench")
    if not os.path.exists(exe):
        pytest.skip("hkv-bench not built")
    d = tempfile.mkdtemp(prefix="hkv-csv-")
    try:
        victim = os.path.join(d, "victim")
        with open(victim, "w") as f:
            f.write("keep\n")
        os.symlink(victim, os.path.join(d, "scale.csv"))
        rc, _, err = run([exe, "scale", "--from", "2K", "--to", "2K", "--ops", "2K",
                          "--burnin", "1", "--repeat", "1", "--baselines", "none",
                          "--csv", d], timeout=120)
        with open(victim) as f:
            eq(f.read(), "keep\n", "file behind the symlink")
        assert rc == 2 and "csv" in err, (rc, err)
    finally:
        shutil.rmtree(d)
