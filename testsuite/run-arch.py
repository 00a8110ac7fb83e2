#!/usr/bin/env python3
"""Check the layering of the source tree (doc/architecture.md, "The rules"),
and that the documentation's links lead somewhere.

The plugin reaches the runtime and the tools only through the contract in
include/tally/ and the format library (format/): no file under plugin/
includes a header of tools/ or rt/, and plugin/meson.build compiles no file
of theirs.

  run-arch.py CASE --srcdir DIR/testsuite [the other options of checklib.py]

CASE is one of:
  plugin-includes  every #include of every file under plugin/ names a header
                   that is not in tools/ or rt/: neither by a path that goes
                   there (../tools/select.h, rt/rt.h) nor by a bare name
                   found only there (through an include directory)
  plugin-build     plugin/meson.build names no file or directory of tools/
                   or rt/ (../tools/select.c, include_directories('../rt'))
  doc-links        every relative link of README.md and doc/**/*.md names a
                   file or directory that exists, and a #fragment names a
                   heading of its Markdown file (GitHub's anchors: lower
                   case, punctuation dropped, spaces as hyphens, -1, -2 for
                   repeats); links inside code blocks and spans are text

Exit status: 0 pass, 1 fail (each offending line printed as FILE:LINE).
"""
import os
import re
import sys

from checklib import parse_args

FORBIDDEN = ("tools", "rt")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
# Where a bare header name may legitimately come from besides plugin/.
ALLOWED_DIRS = ("plugin", "format", "include")


def plugin_files(src):
    for root, dirs, files in os.walk(os.path.join(src, "plugin")):
        dirs.sort()
        for name in sorted(files):
            yield os.path.join(root, name)


def headers_in(src, top):
    """Every file name below SRC/TOP."""
    names = set()
    for _, _, files in os.walk(os.path.join(src, top)):
        names.update(files)
    return names


def bad_include(src, path, quote, name):
    """Why the include of NAME (with QUOTE) in PATH reaches tools/ or rt/,
    or None."""
    if name.startswith("tally/"):
        return None  # include/tally/: the contract
    # A path: where it lands from the including file's folder, and whether
    # any of its folders is tools or rt.
    parts = name.split("/")
    if len(parts) > 1:
        here = os.path.dirname(path)
        landed = os.path.relpath(os.path.normpath(os.path.join(here, name)), src)
        top = landed.split(os.sep)[0]
        if top in FORBIDDEN or any(p in FORBIDDEN for p in parts[:-1]):
            return "names a header of %s/" % (top if top in FORBIDDEN else
                                               next(p for p in parts[:-1]
                                                    if p in FORBIDDEN))
        return None
    if quote != '"':
        return None  # <stdio.h>, GCC's headers
    # A bare name: fine if plugin/, format/ or include/ has it; a name that
    # only tools/ or rt/ have can come only through an include directory
    # pointing there.
    if any(name in headers_in(src, d) for d in ALLOWED_DIRS):
        return None
    for d in FORBIDDEN:
        if name in headers_in(src, d):
            return "names %s, a header only %s/ has" % (name, d)
    return None


def case_plugin_includes(src):
    bad = []
    for path in plugin_files(src):
        try:
            lines = open(path, encoding="utf-8").read().splitlines()
        except UnicodeDecodeError:
            continue
        for no, line in enumerate(lines, 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            why = bad_include(src, path, m.group(1), m.group(2))
            if why:
                bad.append("%s:%d: %s (%s)" % (os.path.relpath(path, src), no,
                                                line.strip(), why))
    return bad


def case_plugin_build(src):
    bad = []
    path = os.path.join(src, "plugin", "meson.build")
    word = re.compile(r"""['"](\.\./(?:%s)(?:/[^'"]*)?)['"]""" % "|".join(FORBIDDEN))
    for no, line in enumerate(open(path, encoding="utf-8").read().splitlines(), 1):
        code = line.split("#", 1)[0]
        for m in word.finditer(code):
            bad.append("plugin/meson.build:%d: names %s" % (no, m.group(1)))
    return bad


FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
# [text](target) and ![alt](target); the target up to a space or ")".
LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HTML_ID = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"")


def markdown_lines(path):
    """(line number, text) of PATH's lines outside fenced code blocks,
    with inline code spans blanked."""
    fenced = False
    for no, line in enumerate(open(path, encoding="utf-8").read().splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield no, re.sub(r"`+[^`]*`+", lambda m: " " * len(m.group(0)), line)


def slug(text):
    """GitHub's anchor of a heading's TEXT (github-slugger): the text as
    rendered (link targets and code marks dropped), lower case, every
    character but letters, digits, "-", "_" and spaces dropped, spaces as
    hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = text.replace("`", "").lower()
    return "".join(c for c in text if c.isalnum() or c in "-_ ").replace(" ", "-")


def anchors(path, cache={}):
    """The anchors of the Markdown file PATH."""
    if path not in cache:
        seen, out = {}, set()
        fenced = False
        for line in open(path, encoding="utf-8").read().splitlines():
            if FENCE.match(line):
                fenced = not fenced
                continue
            if fenced:
                continue
            out.update(HTML_ID.findall(line))
            m = HEADING.match(line)
            if not m:
                continue
            s = slug(m.group(2))
            n = seen.get(s, 0)
            seen[s] = n + 1
            out.add(s if n == 0 else "%s-%d" % (s, n))
        cache[path] = out
    return cache[path]


def doc_files(src):
    yield os.path.join(src, "README.md")
    for root, dirs, files in os.walk(os.path.join(src, "doc")):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(".md"):
                yield os.path.join(root, name)


def case_doc_links(src):
    bad = []
    for path in doc_files(src):
        rel = os.path.relpath(path, src)
        for no, line in markdown_lines(path):
            for target in LINK.findall(line):
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                    continue  # https:, mailto:
                name, _, frag = target.partition("#")
                dest = os.path.normpath(os.path.join(os.path.dirname(path), name)) if name else path
                if not os.path.exists(dest):
                    bad.append("%s:%d: %s: no such file" % (rel, no, target))
                elif frag and dest.endswith(".md") and frag not in anchors(dest):
                    bad.append("%s:%d: %s: no heading #%s in %s"
                               % (rel, no, target, frag, os.path.relpath(dest, src)))
    return bad


CASES = {
    "plugin-includes": case_plugin_includes,
    "plugin-build": case_plugin_build,
    "doc-links": case_doc_links,
}

HINT = {
    "doc-links": "a link names a file or a heading that is not there (a heading "
                 "renamed or moved: link to its new place)",
}


def main():
    args = parse_args(CASES)
    bad = CASES[args.check](os.path.dirname(args.srcdir))
    for line in bad:
        print(line)
    if bad:
        print("FAIL %s: %d offending line(s); %s" % (
            args.check, len(bad), HINT.get(args.check, "plugin/ may use include/tally/ "
                                           "and the format library (format/) only")))
        return 1
    print("ok %s" % args.check)
    return 0


if __name__ == "__main__":
    sys.exit(main())
