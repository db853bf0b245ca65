# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""The package installed: `make install` into a scratch prefix (with a
dist-info pip sees, and `make uninstall`), `pip install ./python` offline,
and the README's venv line, each imported from a fresh interpreter that is
given no HUGEKV_LIBRARY."""
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
                        "--no-index", "--no-deps", "--target", str(target), str(src)],
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


def test_make_install_leaves_a_dist_info_pip_sees(installed, tmp_path):
    prefix, site = installed
    env = _env(PYTHONPATH=str(site), PIP_DISABLE_PIP_VERSION_CHECK="1")
    r = subprocess.run([sys.executable, "-m", "pip", "show", "-f", "hugekv"], cwd=tmp_path,
                       env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "Version: 0.1.0" in r.stdout and "Requires: numpy" in r.stdout
    for f in ("hugekv/__init__.py", "hugekv/py.typed", "hugekv/_paths.py", "hugekv/_log.py"):
        assert f in r.stdout, f
    r = subprocess.run([sys.executable, "-m", "pip", "check"], cwd=tmp_path, env=env,
                       capture_output=True, text=True)
    assert "hugekv" not in r.stdout, r.stdout


def test_make_uninstall_removes_the_python_part(tmp_path):
    prefix = tmp_path / "prefix"
    mk = ["make", "-s", "-C", TOP, f"BUILD={BUILD}", f"PREFIX={prefix}", "DESTDIR="]
    subprocess.run(mk + ["install"], check=True, capture_output=True)
    ver = "%d.%d" % sys.version_info[:2]
    site = prefix / "lib" / f"python{ver}" / "dist-packages"
    _run(PROBE, tmp_path, PYTHONPATH=str(site))
    (site / "hugekv" / "__pycache__").mkdir(exist_ok=True)   # as python3 leaves it
    (site / "hugekv" / "__pycache__" / "pool.cpython-311.pyc").write_bytes(b"")
    subprocess.run(mk + ["uninstall"], check=True, capture_output=True)
    assert not (site / "hugekv").exists()
    assert not glob.glob(str(site / "hugekv-*.dist-info"))
    for f in ("lib/libhugekv.so", "lib/libhugekv.so.0", "lib/libhugekv.a",
              "include/hugekv.h", "lib/pkgconfig/hugekv.pc"):
        assert not os.path.lexists(prefix / f), f


def test_venv_install_as_the_readme_says(tmp_path):
    """python3 -m venv --system-site-packages; pip install --no-build-isolation
    ./python, from a built checkout: no HUGEKV_LIBRARY, no LD_LIBRARY_PATH."""
    top = tmp_path / "checkout"
    shutil.copytree(os.path.join(TOP, "python"), top / "python",
                    ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
    (top / "include").mkdir()
    shutil.copy(os.path.join(TOP, "include", "hugekv.h"), top / "include")
    (top / "build").mkdir()
    shutil.copy(os.path.join(TOP, BUILD, "libhugekv.so.0"), top / "build")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)],
                   check=True, capture_output=True)
    pip = [str(venv / "bin" / "pip"), "install", "-q", "--no-build-isolation", "--no-index",
           str(top / "python")]
    r = subprocess.run(pip, cwd=top, env=_env(PIP_DISABLE_PIP_VERSION_CHECK="1"),
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([str(venv / "bin" / "python"), "-c",
                        PROBE + "; import hugekv.sglang, hugekv.lmcache, hugekv.vllm"],
                       cwd=tmp_path, env=_env(), capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().startswith(str(venv)) and \
        r.stdout.strip().endswith("hugekv/libhugekv.so.0")      # the carried copy
    r = subprocess.run([str(venv / "bin" / "pip"), "show", "hugekv"], env=_env(),
                       capture_output=True, text=True)
    assert "Requires: numpy" in r.stdout, r.stdout
