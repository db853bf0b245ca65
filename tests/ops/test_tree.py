# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""test_tree.py - the tree-wide checks find what they are for:
scripts/check-layering a cycle among objects (and none where there is
none), scripts/check-version a Python version or a symbol-version node
that disagrees with the Makefile's VERSION, scripts/check-build-dirs a rule
that writes into a build directory it does not wait for."""
import os
import shutil
import subprocess
import tempfile

import pytest

from helpers import eq, run

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


@pytest.fixture
def tmp():
    d = tempfile.mkdtemp(prefix="hkv-tree-")
    yield d
    shutil.rmtree(d)


def objects(d, sources):
    """compile {name: C text} into d; return the object paths"""
    out = []
    for name, text in sources.items():
        c = os.path.join(d, name + ".c")
        with open(c, "w") as f:
            f.write(text)
        run(["cc", "-c", c, "-o", c[:-2] + ".o"], 0)
        out.append(c[:-2] + ".o")
    return out


def test_layering_finds_a_cycle(tmp):
    objs = objects(tmp, {"low": "int low(void) { return 1; }\n",
                         "mid": "int low(void); int mid(void) { return low(); }\n",
                         "top": "int mid(void); int top(void) { return mid(); }\n"})
    layering = os.path.join(SRC, "scripts", "check-layering")
    _, out, _ = run([layering, "t", *objs], 0)
    assert "3 objects, 2 dependencies, no cycle" in out, out
    # low calls top: low -> top -> mid -> low
    objs = objects(tmp, {"low": "int top(void); int low(void) { return top(); }\n"})
    _, _, err = run([layering, "t", *objs, os.path.join(tmp, "mid.o"),
                      os.path.join(tmp, "top.o")], 1)
    assert "a cycle among low.o mid.o top.o" in err, err
    assert "low.o -> top.o (top)" in err and "mid.o -> low.o (low)" in err, err
    _, _, err = run([layering, "--report-only", "t", os.path.join(tmp, "low.o"),
                      os.path.join(tmp, "mid.o"), os.path.join(tmp, "top.o")], 0)
    assert "a cycle among" in err and "reported only" in err, err
    run([layering, "t"], 2)
    run([layering, "t", os.path.join(tmp, "missing.o")], 2)


def copy_version_files(d):
    for p in ("Makefile", "scripts/check-version", "python/hugekv/__init__.py",
              "lib/libhugekv.map", "lib/xfer/libhugekv-xfer.map"):
        os.makedirs(os.path.join(d, os.path.dirname(p)), exist_ok=True)
        shutil.copy2(os.path.join(SRC, p), os.path.join(d, p))
    return os.path.join(d, "scripts", "check-version")


def edit(path, old, new):
    with open(path) as f:
        text = f.read()
    assert old in text, (path, old)
    with open(path, "w") as f:
        f.write(text.replace(old, new, 1))


def test_version_disagreements(tmp):
    check = copy_version_files(tmp)
    _, out, _ = run([check], 0)
    assert "check-version:" in out, out
    init = os.path.join(tmp, "python", "hugekv", "__init__.py")
    with open(init) as f:
        v = next(l.split('"')[1] for l in f if l.startswith("__version__"))
    edit(init, '"%s"' % v, '"9.9.9"')
    _, _, err = run([check], 1)
    assert "__version__ '9.9.9'" in err, err
    edit(init, '"9.9.9"', '"%s"' % v)
    major, minor = (int(x) for x in v.split(".")[:2])
    edit(os.path.join(tmp, "lib", "libhugekv.map"), "HUGEKV_0.1 {",
         "HUGEKV_%d.%d {" % (major, minor + 1))
    _, _, err = run([check], 1)
    eq("node HUGEKV_%d.%d is newer" % (major, minor + 1) in err, True, err)


TOY = """BUILD ?= build
all: $(BUILD)/a.txt $(BUILD)/sub/b.txt
$(BUILD)/a.txt: src.txt%s
\tcp $< $@
$(BUILD)/sub/b.txt: src.txt | $(BUILD)/sub
\tcp $< $@
$(BUILD) $(BUILD)/sub:
\tmkdir -p $@
"""


def test_build_dirs_finds_a_rule_without_its_directory(tmp):
    """a rule that writes into $(BUILD) without waiting for it fails the
    check; with the order-only prerequisite it passes"""
    check = os.path.join(SRC, "scripts", "check-build-dirs")
    with open(os.path.join(tmp, "src.txt"), "w") as f:
        f.write("x\n")
    with open(os.path.join(tmp, "Makefile"), "w") as f:
        f.write(TOY % "")
    p = subprocess.run([check], cwd=tmp, capture_output=True, text=True)
    eq(p.returncode, 1, p.stdout + p.stderr)
    assert "build/a.txt" in p.stderr and "1 of 2 leaf rules" in p.stdout, p.stdout + p.stderr
    with open(os.path.join(tmp, "Makefile"), "w") as f:
        f.write(TOY % " | $(BUILD)")
    p = subprocess.run([check, "BUILD=out"], cwd=tmp, capture_output=True, text=True)
    eq(p.returncode, 0, p.stdout + p.stderr)
    assert "2 of 2 leaf rules build from a tree without out/" in p.stdout, p.stdout
