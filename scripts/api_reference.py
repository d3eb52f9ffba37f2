#!/usr/bin/env python3
"""Generate docs/api.md, the API reference, from its two sources (issue 18, item 5):
include/graphdirect.h (each section of the header; each public function with the comment above
it, which is its documentation) and the Python package's docstrings and signatures.

    python3 scripts/api_reference.py            # rewrite docs/api.md
    python3 scripts/api_reference.py --check    # exit 1 if docs/api.md is not what it would write

The Python part imports graphdirect (python/ is put on the path; the library is found as the
package finds it, e.g. GRAPHDIRECT_LIB=build/libgraphdirect.so.0). tests/CMakeLists.txt runs
--check, so a change of the header or of a docstring without the reference fails the tests.
"""
import argparse
import inspect
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADER = os.path.join(ROOT, "include", "graphdirect.h")
OUT = os.path.join(ROOT, "docs", "api.md")

# Classes whose objects the library hands out (their constructors are internal).
HANDED_OUT = {"Array", "Batch", "Block"}
SECTION = re.compile(r"^/\* -{5,} (.+?) \*/\s*$")
FUNC = re.compile(r"^[A-Za-z_][A-Za-z0-9_ \*]*?\b(gd_[a-z0-9_]+)\s*\(")


def c_reference():
    """Markdown for the header: a heading per section, each function's declaration (all its
    lines) and the comment right above it."""
    lines = open(HEADER).read().splitlines()
    out, comment, i = [], [], 0
    while i < len(lines):
        line = lines[i]
        m = SECTION.match(line)
        if m:
            out.append("\n### %s\n" % m.group(1).strip())
            comment = []
            i += 1
            continue
        s = line.strip()
        if s.startswith("/*"):
            block = [line]
            while "*/" not in lines[i] and i + 1 < len(lines):
                i += 1
                block.append(lines[i])
            comment = [re.sub(r"^\s*/?\*+/?\s?", "", b).rstrip("*/ ").rstrip() for b in block]
            comment = [c for c in comment if c]
            i += 1
            continue
        f = FUNC.match(line)
        if f and not line.startswith("typedef") and not line.startswith("#"):
            decl = [line.strip()]
            while not decl[-1].endswith(";") and i + 1 < len(lines):
                i += 1
                decl.append(lines[i].strip())
            out.append("- `%s`" % " ".join(decl).rstrip(";"))
            if comment:
                out.append("  " + " ".join(comment))
            comment = []
            i += 1
            continue
        if s == "" or s.startswith("#") or s.startswith("}") or s.startswith("typedef"):
            comment = [] if s == "" else comment
        i += 1
    return "\n".join(out)


def plain_signature(fn):
    """The parameters and defaults of fn, without annotations (their text differs between Python
    versions, and the reference must be the same wherever the tests run)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return "(...)"
    parts, star = [], False
    for p in sig.parameters.values():
        if p.kind == p.KEYWORD_ONLY and not star:
            parts.append("*")
            star = True
        text = {p.VAR_POSITIONAL: "*", p.VAR_KEYWORD: "**"}.get(p.kind, "") + p.name
        if p.kind == p.VAR_POSITIONAL:
            star = True
        if p.default is not p.empty:
            text += "=" + repr(p.default)
        parts.append(text)
    return "(" + ", ".join(parts) + ")"


def py_reference():
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import graphdirect
    out = []
    names = [n for n in dir(graphdirect) if not n.startswith("_")]
    for name in sorted(names, key=str.lower):
        obj = getattr(graphdirect, name)
        if inspect.ismodule(obj):
            continue
        if inspect.isclass(obj):
            if issubclass(obj, BaseException):
                out.append("\n### `graphdirect.%s` (exception)\n" % name)
                out.append(inspect.getdoc(obj) or "")
                continue
            out.append("\n### `graphdirect.%s`\n" % name)
            out.append((inspect.getdoc(obj) or "").strip())
            for meth, fn in sorted(vars(obj).items()):
                if meth.startswith("_") and meth not in ("__init__", "__getitem__", "__iter__"):
                    continue
                if meth == "__init__" and name in HANDED_OUT:
                    continue  # made by the library, not by users
                target = fn.__func__ if isinstance(fn, (classmethod, staticmethod)) else fn
                if isinstance(fn, property):
                    doc = inspect.getdoc(fn) or ""
                    out.append("- `%s` (property)%s" % (meth, (": " + doc.splitlines()[0]) if doc else ""))
                    continue
                if not callable(target):
                    continue
                sig = plain_signature(target)
                doc = inspect.getdoc(target) or ""
                if doc.startswith("Initialize self"):
                    doc = ""  # object's, not ours: the class's text documents the constructor
                out.append("- `%s%s`%s" % (meth, sig, (": " + " ".join(doc.split())) if doc else ""))
        elif callable(obj):
            out.append("\n### `graphdirect.%s%s`\n" % (name, plain_signature(obj)))
            out.append((inspect.getdoc(obj) or "").strip())
    return "\n".join(out)


def render():
    return ("# API reference\n\n"
            "Generated by `scripts/api_reference.py` from `include/graphdirect.h` and the Python\n"
            "package's docstrings; `make test` fails when it is out of date. The guides are\n"
            "[python.md](python.md), [train.md](train.md), [sampling.md](sampling.md) and\n"
            "[feature_store.md](feature_store.md).\n\n"
            "## C (`include/graphdirect.h`)\n" + c_reference() + "\n\n"
            "## Python (`import graphdirect`)\n" + py_reference() + "\n")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--check", action="store_true")
    a = p.parse_args()
    text = render()
    if a.check:
        have = open(OUT).read() if os.path.exists(OUT) else ""
        if have != text:
            sys.exit("docs/api.md is out of date: run python3 scripts/api_reference.py")
        print("docs/api.md is up to date")
        return
    with open(OUT, "w") as f:
        f.write(text)
    print("wrote %s" % OUT)


if __name__ == "__main__":
    main()
