# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""The package installed: `make install` into a scratch prefix, and
`pip install ./python` offline, each imported from a fresh interpreter
that is given no HUGEKV_LIBRARY."""
import glob
import os
import shutil
import subprocess
import sys

import pytest

from conftest import TOP, BUILD

PROBE = ("import hugekv, sys; p = hugekv.Pool(100); e = p.alloc(10); p.free(e); "
         "assert p.available == 100; print(hugekv.library_path)")


def _env(**extra):
    env = {k: v for k, v in os.environ.items()
           if k not in ("HUGEKV_LIBRARY", "PYTHONPATH", "LD_LIBRARY_PATH")}
    env.update(extra)
    return env


def _run(code, cwd, **env):
    r = subprocess.run([sys.executable, "-c", code], cwd=cwd, env=_env(**env),
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    prefix = tmp_path_factory.mktemp("prefix")
    subprocess.run(["make", "-s", "-C", TOP, f"BUILD={BUILD}", "install",
                    f"PREFIX={prefix}", "DESTDIR="], check=True, capture_output=True)
    ver = "%d.%d" % sys.version_info[:2]
    site = prefix / "lib" / f"python{ver}" / "dist-packages"   # as for /usr/local
    assert (site / "hugekv" / "__init__.py").is_file()
    return prefix, site


def test_make_install_finds_its_library(installed, tmp_path):
    prefix, site = installed
    got = _run(PROBE, tmp_path, PYTHONPATH=str(site))
    assert got == str(prefix / "lib" / "libhugekv.so.0")


def test_make_install_through_ld_library_path(installed, tmp_path):
    prefix, site = installed
    copy = tmp_path / "site"
    shutil.copytree(site, copy)
    os.remove(copy / "hugekv" / "_paths.py")      # only the soname is left to find
    got = _run(PROBE, tmp_path, PYTHONPATH=str(copy), LD_LIBRARY_PATH=str(prefix / "lib"))
    assert got == "libhugekv.so.0"
    r = subprocess.run([sys.executable, "-c", "import hugekv"], cwd=tmp_path,
                       env=_env(PYTHONPATH=str(copy)), capture_output=True, text=True)
    assert r.returncode != 0 and "cannot load libhugekv" in r.stderr


def test_pip_install_offline(installed, tmp_path):
    prefix, _ = installed
    target = tmp_path / "target"
    src = tmp_path / "src"
    shutil.copytree(os.path.join(TOP, "python"), src,
                    ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-build-isolation",
                        "--no-index", "--target", str(target), str(src)],
                       env=_env(PIP_DISABLE_PIP_VERSION_CHECK="1"), capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert glob.glob(str(target / "hugekv-*.dist-info"))
    got = _run(PROBE + "; import hugekv.sglang, hugekv.lmcache, hugekv.vllm", tmp_path,
               PYTHONPATH=str(target), LD_LIBRARY_PATH=str(prefix / "lib"))
    assert got == "libhugekv.so.0"


@pytest.mark.parametrize("prefix", ["/usr/local", "/usr"])
def test_default_install_dir_is_on_debians_path(prefix):
    out = subprocess.run(["make", "-s", "-n", "-C", TOP, f"BUILD={BUILD}", "install-python",
                          f"PREFIX={prefix}", "DESTDIR="], check=True, capture_output=True,
                         text=True).stdout.splitlines()
    d = next(l.split()[-1] for l in out if l.startswith("install -d"))
    assert os.path.dirname(d) in sys.path, (d, sys.path)
