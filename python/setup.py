# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""setup.py - what pyproject.toml cannot say: the package carries
libhugekv.so.0 when one is at hand at build time ($HUGEKV_LIBRARY, or the
build/ of the hugekv checkout this python/ sits in, after `make`), so that
an install from a built checkout finds its library without HUGEKV_LIBRARY
or LD_LIBRARY_PATH. Without one, hugekv finds the installed library (see
hugekv/_lib.py)."""
import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))
SONAME = "libhugekv.so.0"


def library():
    """The library to carry, or None."""
    env = os.environ.get("HUGEKV_LIBRARY")
    if env:
        return env if os.path.isfile(env) else None
    top = os.path.dirname(HERE)
    cand = os.path.join(top, "build", SONAME)
    if os.path.isfile(os.path.join(top, "include", "hugekv.h")) and os.path.isfile(cand):
        return cand
    return None


class BuildPy(build_py):
    def run(self):
        super().run()
        lib = library()
        if lib:
            shutil.copyfile(lib, os.path.join(self.build_lib, "hugekv", SONAME))


class Dist(Distribution):
    def has_ext_modules(self):      # a carried library makes the wheel platform-specific
        return library() is not None


setup(cmdclass={"build_py": BuildPy}, distclass=Dist)
