# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""kerneldoc.py - kernel-doc comments of a C header, for Sphinx and for
`make check`.

The kernel's scripts/kernel-doc is not installed here, so this is a small
reader of the same comment format::

    /**
     * name() - one line
     * @arg: what it is
     *
     * Body.
     *
     * Return: what it returns.
     */

As a Sphinx extension it provides ``.. kernel-doc:: include/hugekv.h`` with
``:functions: a b c`` (default: everything), ``:doc: structs|functions|
typedefs``. As a program, ``kerneldoc.py --check HEADER DOCDIR`` fails when
an exported function (HKV_API) has no kernel-doc comment, documents an
argument it does not take or misses one it takes, lacks ``Return:`` while
returning a value, or is not named anywhere in DOCDIR/*.rst.
"""
import os
import re
import sys

DOC_RE = re.compile(r"/\*\*\n(.*?)\*/\s*\n(.*?)(?=;|\{)", re.S)
HEAD_RE = re.compile(r"^(?:(struct|union|enum|typedef)\s+)?([A-Za-z_]\w*)(\(\))?\s+-\s+(.*)$")
SECT_RE = re.compile(r"^(Return|Returns|Context|Note|Example):\s*(.*)$")


class Doc:
    """one kernel-doc comment and the declaration after it"""

    def __init__(self, kind, name, brief, params, body, sections, decl, line):
        self.kind, self.name, self.brief = kind, name, brief
        self.params, self.body, self.sections = params, body, sections
        self.decl, self.line = decl, line

    def args(self):
        """argument names of a function or function-pointer typedef"""
        m = re.search(r"\((.*)\)\s*(?:__attribute__.*)?$", self.decl.strip(), re.S)
        if self.kind == "typedef":
            m = re.search(r"\)\s*\((.*)\)\s*$", self.decl.strip(), re.S)
        if not m or m.group(1).strip() in ("", "void"):
            return []
        out = []
        for a in split_args(m.group(1)):
            n = re.findall(r"[A-Za-z_]\w*", a.split("[")[0])
            out.append(n[-1] if n else "")
        return out


def split_args(s):
    depth, cur, out = 0, "", []
    for c in s:
        if c == "," and depth == 0:
            out.append(cur)
            cur = ""
            continue
        depth += c == "("
        depth -= c == ")"
        cur += c
    if cur.strip():
        out.append(cur)
    return out


def parse_comment(text):
    """(head match, params, body, sections) of the inside of a comment"""
    lines = [re.sub(r"^\s*\* ?", "", ln) for ln in text.rstrip().split("\n")]
    head = HEAD_RE.match(lines[0].strip()) if lines else None
    params, body, sections, cur = [], [], [], None
    for ln in lines[1:]:
        pm = re.match(r"^@(\w+|\.\.\.):\s*(.*)$", ln)
        sm = SECT_RE.match(ln)
        if pm and cur in (None, "param"):
            params.append([pm.group(1), pm.group(2)])
            cur = "param"
        elif sm:
            sections.append([sm.group(1), sm.group(2)])
            cur = "section"
        elif cur == "param" and ln.strip() and ln[:1] in (" ", "\t"):
            params[-1][1] += " " + ln.strip()
        elif cur == "section" and ln.strip():
            sections[-1][1] += "\n" + ln
        elif cur == "section":
            sections[-1][1] += "\n"
        else:
            cur = "body" if (ln.strip() or cur == "body") else cur
            if cur == "body":
                body.append(ln)
    return head, params, "\n".join(body).strip(), sections


def parse(path):
    """every kernel-doc comment of a header, in order"""
    with open(path) as f:
        src = f.read()
    docs = []
    for m in DOC_RE.finditer(src):
        head, params, body, sections = parse_comment(m.group(1))
        if not head:
            continue
        decl = m.group(2).strip()
        kind = head.group(1) or ("function" if head.group(3) else "other")
        docs.append(Doc(kind, head.group(2), head.group(4).strip(), params, body, sections,
                        decl, src.count("\n", 0, m.start()) + 1))
    return docs, src


def exported(src):
    """names of the HKV_API functions the header declares"""
    return re.findall(r"^HKV_API\b[^;(]*?\b(hkv_\w+)\s*\(", src, re.M)


def check(header, docdir):
    """list of problems (strings); empty when docs and header agree"""
    docs, src = parse(header)
    byname = {d.name: d for d in docs}
    rst = ""
    for root, _, files in os.walk(docdir):
        for fn in files:
            if fn.endswith(".rst"):
                with open(os.path.join(root, fn)) as f:
                    rst += f.read()
    probs = []
    for fn in exported(src):
        d = byname.get(fn)
        if not d or d.kind != "function":
            probs.append("%s: %s() has no kernel-doc comment ('/**' + ' * %s() - ...')"
                         % (header, fn, fn))
            continue
        if fn not in d.decl:
            probs.append("%s:%d: the comment of %s() is not right above its declaration"
                         % (header, d.line, fn))
        args = d.args()
        documented = [p[0] for p in d.params]
        for a in args:
            if a not in documented:
                probs.append("%s:%d: %s(): argument @%s is not documented"
                             % (header, d.line, fn, a))
        for a in documented:
            if a not in args:
                probs.append("%s:%d: %s(): documents @%s, which it does not take"
                             % (header, d.line, fn, a))
        returns_value = not re.match(r"^HKV_API\s+void\s+[^*]", d.decl)
        if returns_value and not any(s[0].startswith("Return") for s in d.sections):
            probs.append("%s:%d: %s() returns a value but has no 'Return:' section"
                         % (header, d.line, fn))
        if not re.search(r"\b%s\b" % re.escape(fn), rst):
            probs.append("%s/: %s() is not described in the core-api documentation"
                         % (docdir, fn))
    return probs


# ---- rendering ------------------------------------------------------------

TOKEN_RE = re.compile(r"@(\w+)(->\w+)*|%(\w+)|\b(\w+)\(\)|(\S)", re.S)


def inline(text):
    """kernel-doc prose to RST: @arg and %CONST literal, func() linked, the
    rest with RST's special characters escaped"""
    out = []
    pos = 0
    for m in re.finditer(r"@(\w+(?:->\w+)*)|%(\w+)|\b(hkv_\w+)\(\)|\b(\w*_\w*\*?)", text):
        out.append(escape(text[pos:m.start()]))
        if m.group(1):
            out.append("``%s``" % m.group(1))
        elif m.group(2):
            out.append("``%s``" % m.group(2))
        elif m.group(3):
            out.append(":c:func:`%s`" % m.group(3))
        else:
            out.append("``%s``" % m.group(4))
        pos = m.end()
    out.append(escape(text[pos:]))
    return "".join(out)


def escape(s):
    for c in "\\*`|_":
        s = s.replace(c, "\\" + c)
    return s


def c_decl(decl):
    d = re.sub(r"\bHKV_API\s+", "", decl)
    d = re.sub(r"__attribute__\s*\(\(.*?\)\)", "", d)
    return " ".join(d.split())


def indent(text, n=3):
    return "\n".join((" " * n + ln) if ln.strip() else "" for ln in text.split("\n"))


def render(d, src_struct=None, functions=()):
    """RST for one Doc; a struct named like a function (struct hkv_stats,
    hkv_stats()) gets a rubric: Sphinx's C domain has one namespace"""
    out = []
    if d.kind in ("struct", "union") and d.name in functions:
        out += [".. rubric:: %s %s" % (d.kind, d.name), "", ".. container:: kernel-doc", ""]
    elif d.kind == "function":
        out.append(".. c:function:: " + c_decl(d.decl))
    elif d.kind == "typedef":
        m = re.search(r"\(\s*\*\s*(\w+)\s*\)", d.decl)
        out.append(".. c:type:: " + (m.group(1) if m else d.name))
    elif d.kind in ("struct", "union", "enum"):
        out.append(".. c:%s:: %s" % (d.kind, d.name))
    else:
        out.append(".. c:macro:: " + d.name)
    out.append("")
    out.append(indent(inline(d.brief)))
    out.append("")
    if d.kind == "typedef":
        out += [indent("``%s``" % c_decl(d.decl)), ""]
    if src_struct:
        out += [indent("::"), "", indent(src_struct, 6), ""]
    if d.params:
        out += [indent("**%s**" % ("Members" if d.kind in ("struct", "union") else
                                   "Parameters")), ""]
        for name, desc in d.params:
            out += [indent("``%s``" % name), indent(inline(desc), 5), ""]
    if d.body:
        out += [indent("**Description**"), "", indent(inline(d.body)), ""]
    for name, text in d.sections:
        out += [indent("**%s**" % ("Return" if name.startswith("Return") else name)), "",
                indent(inline(text.strip())), ""]
    return "\n".join(out)


def struct_source(src, name):
    m = re.search(r"^struct %s \{.*?^\};" % re.escape(name), src, re.M | re.S)
    return m.group(0) if m else None


def render_all(header, names=None, kinds=None):
    docs, src = parse(header)
    out = []
    for d in docs:
        if names and d.name not in names:
            continue
        if kinds and d.kind not in kinds:
            continue
        out.append(render(d, struct_source(src, d.name) if d.kind == "struct" else None,
                          {x.name for x in docs if x.kind == "function"}))
    if names:
        missing = set(names) - {d.name for d in docs}
        if missing:
            raise ValueError("kernel-doc: %s: no comment for %s" %
                             (header, ", ".join(sorted(missing))))
    return "\n".join(out)


# ---- Sphinx ---------------------------------------------------------------

def setup(app):
    from docutils import nodes
    from docutils.parsers.rst import Directive, directives
    from docutils.statemachine import ViewList
    from sphinx.util.nodes import nested_parse_with_titles

    class KernelDoc(Directive):
        required_arguments = 1
        option_spec = {"functions": directives.unchanged,
                       "doc": directives.unchanged}

        def run(self):
            env = self.state.document.settings.env
            top = os.path.abspath(os.path.join(env.srcdir, app.config.kerneldoc_srctree))
            path = os.path.join(top, self.arguments[0])
            env.note_dependency(path)
            names = self.options.get("functions", "").split() or None
            kinds = self.options.get("doc", "").split() or None
            kinds = [{"functions": "function", "structs": "struct",
                      "typedefs": "typedef"}.get(k, k) for k in kinds] if kinds else None
            try:
                text = render_all(path, names, kinds)
            except (OSError, ValueError) as e:
                return [self.state.document.reporter.error(str(e), line=self.lineno)]
            vl = ViewList()
            for i, ln in enumerate(text.split("\n")):
                vl.append(ln, path, i)
            node = nodes.section()
            node.document = self.state.document
            nested_parse_with_titles(self.state, vl, node)
            return node.children

    app.add_config_value("kerneldoc_srctree", "..", "env")
    app.add_directive("kernel-doc", KernelDoc)
    return {"version": "1", "parallel_read_safe": True}


def main(argv):
    if len(argv) == 4 and argv[1] == "--check":
        probs = check(argv[2], argv[3])
        for p in probs:
            print("docs-check: " + p, file=sys.stderr)
        n = len(exported(parse(argv[2])[1]))
        if not probs:
            print("docs-check: %d public functions of %s documented and in %s" %
                  (n, argv[2], argv[3]))
        return 1 if probs else 0
    if len(argv) >= 3 and argv[1] == "--rst":
        print(render_all(argv[2], argv[3:] or None))
        return 0
    print("usage: kerneldoc.py --check HEADER DOCDIR | --rst HEADER [NAME...]",
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
