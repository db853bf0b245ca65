# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""helpers.py - what the operator-tool tests share: run a tool, parse its
JSON, read sysfs, copy a tool where another user can run it."""
import json
import os
import shutil
import subprocess
import tempfile


def run(cmd, check_rc=None, env=None, stdin=None, timeout=120):
    """run cmd (a list); return (rc, stdout, stderr)"""
    e = dict(os.environ)
    if env:
        e.update(env)
    p = subprocess.run(cmd, capture_output=True, text=True, env=e,
                       input=stdin, timeout=timeout)
    if check_rc is not None and p.returncode != check_rc:
        raise AssertionError("%s: exit %d, wanted %d\nstdout: %s\nstderr: %s" %
                             (" ".join(cmd), p.returncode, check_rc,
                              p.stdout[-2000:], p.stderr[-2000:]))
    return p.returncode, p.stdout, p.stderr


def run_json(cmd, check_rc=0, env=None):
    """run cmd and parse its stdout as one JSON object"""
    _, out, _ = run(cmd, check_rc, env)
    try:
        return json.loads(out)
    except ValueError as ex:
        raise AssertionError("%s: output is not JSON (%s):\n%s" %
                             (" ".join(cmd), ex, out[:2000]))


def read(path, default=None):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        if default is not None:
            return default
        raise


def read_int(path, default=None):
    v = read(path, None if default is None else str(default))
    return int(v)


def reachable_copy(*paths):
    """copy files (symlinks resolved) into a fresh directory every user can
    enter, for a test that runs them as another user: the checkout may sit
    below a directory that user cannot enter (a 0700 home). Returns the
    directory; the caller removes it. Copy a tool together with the
    libraries its $ORIGIN rpath finds beside it."""
    d = tempfile.mkdtemp(prefix="hkv-reachable-")
    os.chmod(d, 0o755)
    for p in paths:
        dst = os.path.join(d, os.path.basename(p))
        shutil.copy2(os.path.realpath(p), dst)
        os.chmod(dst, 0o755)
    return d


def is_root():
    return os.geteuid() == 0


def eq(a, b, what):
    if a != b:
        raise AssertionError("%s: %r != %r" % (what, a, b))
