# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""kerneldoc.py - the kernel's own scripts/kernel-doc, for Sphinx and for
`make check`.

The comment format and its checks are the kernel's: this file only runs
scripts/kernel-doc (Debian's linux-kbuild-6.1 ships it; $KERNELDOC names
another copy) and adds what kernel-doc cannot know about this project.

As a Sphinx extension it provides ``.. kernel-doc:: include/hugekv.h`` with
``:functions: a b c`` (the kernel's directive and option), running
``kernel-doc -rst -function a -function b ...`` and parsing its RST. A
struct named like a function (struct hkv_stats, hkv_stats()) is shown
under a rubric: Sphinx's C domain has one namespace for both.

As a program, ``kerneldoc.py --check HEADER... DOCDIR`` fails when
``kernel-doc -none -Werror`` reports anything for a header (undocumented
arguments or members, excess ones, malformed comments), when an exported
function (HKV_API) has no kernel-doc comment or returns a value without a
``Return:`` section, or when a public function or struct is not listed in
a ``:functions:`` option under DOCDIR.
"""
import glob
import os
import re
import subprocess
import sys

API_RE = re.compile(r"^HKV_(?:XFER_)?API\b[^;]*?\b(hkv_\w+)\s*\(", re.M | re.S)
COMMENT_RE = re.compile(r"/\*\*\n(.*?)\*/", re.S)
NAME_RE = re.compile(r"^\s*\*\s+(?:(struct|union|enum|typedef)\s+)?(\w+)(\(\))?\s+-\s")


def kernel_doc():
    """path of the kernel's kernel-doc script"""
    env = os.environ.get("KERNELDOC")
    if env:
        return env
    found = sorted(glob.glob("/usr/lib/linux-kbuild-*/scripts/kernel-doc"))
    if not found:
        raise RuntimeError("kernel-doc: scripts/kernel-doc not found: install "
                           "linux-kbuild-6.1 (apt-get install linux-kbuild-6.1) or set KERNELDOC")
    return found[-1]


def comments(text):
    """{name: comment text} of every kernel-doc comment"""
    out = {}
    for m in COMMENT_RE.finditer(text):
        first = m.group(1).split("\n", 1)[0]
        n = NAME_RE.match(first)
        if n:
            out[n.group(2)] = (n.group(1) or ("function" if n.group(3) else "macro"),
                               m.group(1), m.end())
    return out


def returns_value(text, name):
    m = re.search(r"^HKV_(?:XFER_)?API\s+([^;(]*?)\b%s\s*\(" % re.escape(name), text, re.M)
    return m is not None and not re.fullmatch(r"\s*void\s*", m.group(1))


def listed(docdir):
    """names in every :functions: option under docdir"""
    names = set()
    for path in glob.glob(os.path.join(docdir, "**", "*.rst"), recursive=True):
        lines = open(path).read().split("\n")
        for i, line in enumerate(lines):
            m = re.match(r"\s*:functions:(.*)", line)
            if not m:
                continue
            names.update(m.group(1).split())
            for cont in lines[i + 1:]:
                if not re.match(r"\s{4,}\S", cont) or re.match(r"\s*:", cont):
                    break
                names.update(cont.split())
    return names


def check(headers, docdir):
    errors, nfunc = [], 0
    documented = listed(docdir)
    for hdr in headers:
        p = subprocess.run([kernel_doc(), "-none", "-Werror", hdr], capture_output=True,
                           text=True)
        if p.returncode or p.stdout.strip() or p.stderr.strip():
            errors.append("%s: kernel-doc -none -Werror:\n%s%s" % (hdr, p.stdout, p.stderr))
        text = open(hdr).read()
        docs = comments(text)
        for name in API_RE.findall(text):
            nfunc += 1
            if name not in docs:
                errors.append("%s: %s() has no kernel-doc comment" % (hdr, name))
                continue
            if returns_value(text, name) and not re.search(r"^\s*\*\s*Return:", docs[name][1],
                                                           re.M):
                errors.append("%s: %s() returns a value but has no 'Return:' section"
                              % (hdr, name))
            if name not in documented:
                errors.append("%s: %s() is not described in the core-api documentation "
                              "(add it to a :functions: list under %s)" % (hdr, name, docdir))
        for name, (kind, _, _) in docs.items():
            if kind == "struct" and name not in documented:
                errors.append("%s: struct %s is not described in the core-api documentation"
                              % (hdr, name))
    for e in errors:
        print("kernel-doc check: " + e, file=sys.stderr)
    if not errors:
        print("docs-check: kernel-doc clean, %d public functions documented in %s"
              % (nfunc, docdir))
    return 1 if errors else 0


def rst(path, names):
    """kernel-doc's RST for names (all when empty)"""
    cmd = [kernel_doc(), "-rst", "-sphinx-version", "5.0.0"]
    for n in names:
        cmd += ["-function", n]
    p = subprocess.run(cmd + [path], capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError("kernel-doc %s: %s" % (path, p.stderr))
    text = open(path).read()
    funcs = set(API_RE.findall(text))
    # one C namespace: a struct named like a function becomes a rubric
    def rubric(m):
        if m.group(1) not in funcs:
            return m.group(0)
        return ".. rubric:: struct %s\n\n.. container:: kernel-doc\n" % m.group(1)
    return re.sub(r"^\.\. c:struct:: (\w+)\n", rubric, p.stdout, flags=re.M)


def setup(app):
    from docutils.parsers.rst import Directive, directives
    from docutils.statemachine import ViewList
    from sphinx.util.nodes import nested_parse_with_titles
    from docutils import nodes

    class KernelDoc(Directive):
        required_arguments = 1
        option_spec = {"functions": directives.unchanged}

        def run(self):
            env = self.state.document.settings.env
            top = os.path.abspath(os.path.join(env.srcdir, app.config.kerneldoc_srctree))
            path = os.path.join(top, self.arguments[0])
            env.note_dependency(path)
            out = rst(path, self.options.get("functions", "").split())
            lines = ViewList()
            for i, line in enumerate(out.split("\n")):
                lines.append(line, path, i)
            node = nodes.section()
            node.document = self.state.document
            nested_parse_with_titles(self.state, lines, node)
            return node.children

    app.add_config_value("kerneldoc_srctree", "..", "env")
    app.add_directive("kernel-doc", KernelDoc)
    return {"parallel_read_safe": True}


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "--check":
        sys.exit(check(sys.argv[2:-1], sys.argv[-1]))
    if len(sys.argv) >= 3 and sys.argv[1] == "--rst":
        print(rst(sys.argv[2], sys.argv[3:]))
        sys.exit(0)
    print("usage: kerneldoc.py --check HEADER... DOCDIR | --rst HEADER [NAME...]",
          file=sys.stderr)
    sys.exit(2)
