# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""The whole Python surface under hostile arguments (hostile_child.py, in a
process of its own): every call succeeds or raises a clear exception; no
ctypes error, no AttributeError, no crash."""
import json
import os
import resource
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
# a run of 2^31 pages is a fair argument and a 16 GiB array: with the
# address space capped, numpy refuses it (MemoryError) instead of filling
# the machine's memory
CHILD_AS = 6 << 30


def cap_address_space():
    resource.setrlimit(resource.RLIMIT_AS, (CHILD_AS, CHILD_AS))


@pytest.mark.parametrize("seed", [1, 2])
def test_hostile_arguments_get_clear_exceptions(seed):
    env = dict(os.environ, HUGEKV_LOG="quiet")
    c = subprocess.run([sys.executable, os.path.join(HERE, "hostile_child.py"), str(seed)],
                       cwd=HERE, env=env, capture_output=True, text=True, timeout=300,
                       preexec_fn=cap_address_space)
    assert c.returncode == 0, f"the child ended with {c.returncode}:\n{c.stderr[-3000:]}"
    out = json.loads(c.stdout.strip().splitlines()[-1])
    assert out["calls"] > 12000
    assert out["unexpected"] == [], "\n".join(out["unexpected"])
