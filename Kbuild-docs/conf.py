# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Sphinx configuration of hugekv's documentation (`make docs`), laid out
# like the kernel's Documentation/: admin-guide, core-api, trace, dev-tools.
import os
import sys

sys.path.insert(0, os.path.join(os.path.abspath(os.path.dirname(__file__)), "sphinx"))

project = "hugekv"
copyright = "hugekv authors"
# the one version number is the Makefile's
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Makefile")) as _mk:
    version = release = next(l.split(":=")[1].strip() for l in _mk
                             if l.startswith("VERSION"))
extensions = ["kerneldoc"]
kerneldoc_srctree = ".."          # `.. kernel-doc::` paths are from the tree
primary_domain = "c"
c_id_attributes = ["HKV_API", "HKV_XFER_API"]   # visibility macros before a declaration
highlight_language = "none"
master_doc = "index"
exclude_patterns = ["_build", "sphinx"]
html_theme = "alabaster"
html_title = "hugekv documentation"
html_show_sourcelink = False
man_pages = []
