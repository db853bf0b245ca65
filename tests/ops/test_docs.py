# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""test_docs.py - the docs check fails where it should: a public function
without a kernel-doc comment, a comment that names a wrong argument or
misses one (the kernel's scripts/kernel-doc says so), a missing Return:
section, a function not described in core-api. Runs
Kbuild-docs/sphinx/kerneldoc.py on mutated copies of the
header and of core-api; the real ones must pass. Also the man pages parse."""
import os
import re
import shutil
import subprocess
import tempfile

from helpers import eq, run

KD = "Kbuild-docs/sphinx/kerneldoc.py"
HDR = "include/hugekv.h"
API = "Kbuild-docs/core-api"


def check(hdr=HDR, api=API):
    return run(["/usr/bin/python3", KD, "--check", hdr, api])


def mutated(fn):
    """a copy of the header with fn(text) applied"""
    with open(HDR) as f:
        text = f.read()
    new = fn(text)
    assert new != text, "mutation did not apply"
    d = tempfile.mkdtemp()
    p = os.path.join(d, "hugekv.h")
    with open(p, "w") as f:
        f.write(new)
    return d, p


def expect_failure(fn, message):
    d, p = mutated(fn)
    try:
        rc, _, err = check(p)
        eq(rc, 1, "check exit status")
        assert message in err, "wanted %r in:\n%s" % (message, err)
    finally:
        shutil.rmtree(d)


def test_real_header_passes():
    rc, out, err = check()
    eq(rc, 0, "docs check on the tree: " + err)
    n = len(re.findall(r"^HKV_API\b", open(HDR).read(), re.M))
    assert "%d public functions" % n in out, out


def test_missing_comment():
    expect_failure(lambda t: re.sub(r"/\*\*\n \* hkv_available\(\) - .*?\*/\n", "", t,
                                    flags=re.S),
                   "hkv_available() has no kernel-doc comment")


def test_wrong_and_missing_argument():
    expect_failure(lambda t: t.replace(" * @npages: pages wanted (> 0)",
                                       " * @count: pages wanted (> 0)", 1),
                   "Function parameter or member 'npages' not described in 'hkv_alloc'")
    expect_failure(lambda t: t.replace(" * @npages: pages wanted (> 0)",
                                       " * @count: pages wanted (> 0)", 1),
                   "Excess function parameter 'count' description in 'hkv_alloc'")


def test_missing_return_section():
    expect_failure(lambda t: re.sub(r"(hkv_available\(\) - .*?\n \*) Return: ", r"\1 Gives: ",
                                    t, count=1, flags=re.S),
                   "hkv_available() returns a value but has no 'Return:' section")


def test_new_function_not_in_core_api():
    add = ("/**\n * hkv_frobnicate() - a new call\n * @pool: the pool\n *\n"
           " * Return: 0.\n */\nHKV_API int hkv_frobnicate(struct hkv_pool *pool);\n\n"
           "#ifdef __cplusplus")
    def insert(t):
        head, sep, tail = t.rpartition("#ifdef __cplusplus")
        return head + add + tail
    expect_failure(insert, "hkv_frobnicate() is not described in the core-api documentation")


def test_man_pages_render():
    if not shutil.which("groff"):
        return
    pages = [os.path.join("man", f) for f in sorted(os.listdir("man")) if f.endswith(".1")]
    gen = os.path.join(os.environ.get("HKV_BUILD", "build"), "man")
    if os.path.isdir(gen):      # generated from --help (mk/hkvctl.mk)
        pages += [os.path.join(gen, f) for f in sorted(os.listdir(gen)) if f.endswith(".1")]
    assert "man/hkvctl.1" in pages, pages
    for f in pages:
        p = subprocess.run(["groff", "-man", "-Tutf8", "-ww", f],
                           capture_output=True, text=True)
        eq(p.returncode, 0, "groff %s: %s" % (f, p.stderr))
        assert "error" not in p.stderr, p.stderr
        assert "NAME" in re.sub(".\b", "", p.stdout), f
