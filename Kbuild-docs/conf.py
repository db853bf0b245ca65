# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Sphinx configuration of hugekv's documentation (`make docs`), laid out
# like the kernel's Documentation/: admin-guide, core-api, trace, dev-tools.
import os
import sys

sys.path.insert(0, os.path.join(os.path.abspath(os.path.dirname(__file__)), "sphinx"))

project = "hugekv"
copyright = "hugekv authors"
version = release = "0.1.0"
extensions = ["kerneldoc"]
kerneldoc_srctree = ".."          # `.. kernel-doc::` paths are from the tree
primary_domain = "c"
highlight_language = "none"
master_doc = "index"
exclude_patterns = ["_build", "sphinx"]
html_theme = "alabaster"
html_title = "hugekv documentation"
html_show_sourcelink = False
man_pages = []
