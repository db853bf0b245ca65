#!/usr/bin/python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""dist_info.py - the .dist-info directory `make install` writes beside the
installed hugekv package, so that pip (list, show, check, uninstall) sees
the package as installed, with a RECORD of every file it owns.

    dist_info.py SITE_DIR VERSION [INSTALLER]

SITE_DIR is the directory that holds hugekv/ (with DESTDIR prefixed).
"""
import base64
import hashlib
import os
import sys

METADATA = """Metadata-Version: 2.1
Name: hugekv
Version: {version}
Summary: Python binding of libhugekv (host KV-cache pages on NUMA-local hugepage arenas) and SGLang/LMCache/vLLM adapters
License: LGPL-2.1 OR BSD-2-Clause
Requires-Python: >=3.9
Requires-Dist: numpy
Provides-Extra: torch
Requires-Dist: torch; extra == "torch"
"""


def _hash(path):
    with open(path, "rb") as f:
        data = f.read()
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}", len(data)


def main(argv):
    if len(argv) not in (3, 4):
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 2
    site, version = argv[1], argv[2]
    installer = argv[3] if len(argv) == 4 else "make"
    pkg = os.path.join(site, "hugekv")
    if not os.path.isdir(pkg):
        print(f"dist_info.py: {pkg} is not a directory", file=sys.stderr)
        return 1
    name = f"hugekv-{version}.dist-info"
    dist = os.path.join(site, name)
    os.makedirs(dist, exist_ok=True)
    files = {"METADATA": METADATA.format(version=version), "INSTALLER": installer + "\n",
             "top_level.txt": "hugekv\n"}
    for fn, text in files.items():
        with open(os.path.join(dist, fn), "w") as f:
            f.write(text)
    rows = []
    for d in (pkg, dist):
        for root, dirs, names in os.walk(d):
            dirs[:] = [x for x in dirs if x != "__pycache__"]
            for n in sorted(names):
                if n == "RECORD":
                    continue
                p = os.path.join(root, n)
                h, size = _hash(p)
                rows.append(f"{os.path.relpath(p, site)},{h},{size}")
    rows.append(f"{name}/RECORD,,")
    with open(os.path.join(dist, "RECORD"), "w") as f:
        f.write("\n".join(sorted(rows)) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
