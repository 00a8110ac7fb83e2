#!/usr/bin/env python3
"""Block maps of kind 6, "tree, entry from callers" (doc/data-format.md
"Entry counts from callers"): the reader side, on maps made by hand from
an entries=counted build of callers/callers.c (a static callee called from
two functions of its unit), in both map versions, so that every good and
bad shape can be made (run-entries.py checks the maps the plugin writes).

  read        the callee's calls and blocks come out of its callers' blocks
              in report, dump, diff and merge; a chain of two kind 6
              functions is solved in order; a site listed twice counts
              twice.
  incomplete  complete=0 (and a site in an undetermined block) leaves the
              entry and the blocks it determines unknown, with the
              report's warning.
  bad         each malformed trailer, entry edge and call site is refused
              with its one-line message by report, merge and diff (and the
              runtime's %m for a damaged map), never a crash (ASan tally).

Usage: run-callers.py CASE --plugin P --runtime RT --tally T ...
                       (testsuite/meson.build's driver_args)
Exit status: 0 pass, 1 fail, 77 skip.
"""
import importlib.util
import json
import os
import re
import struct
import sys

from checklib import build, case, expect, main, refix, run

mapsize = importlib.util.module_from_spec(importlib.util.spec_from_file_location(
    "mapsize", os.path.join(os.path.dirname(os.path.abspath(__file__)), "run-mapsize.py")))
mapsize.__spec__.loader.exec_module(mapsize)

CALLEE, LOOP, TWICE, MAIN = 0, 1, 2, 3  # function indexes in the module


def u32(d, o):
    return struct.unpack_from("<I", d, o)[0]


def fn_maps(d):
    """[(offset of the map size field, map bytes)] per function of the
    one-module data file D, in record order."""
    pos = 48 + 4 + u32(d, 48)
    expect(u32(d, 40) == 1, "%d modules, want 1" % u32(d, 40))
    nfns = u32(d, pos + 20)
    pos += 24
    for _ in range(2):
        pos += 4 + u32(d, pos)
    out = []
    for _ in range(nfns):
        for _ in range(4):
            pos += 4 + u32(d, pos)
        pos += 16 + 8 * u32(d, pos + 8)
        size = u32(d, pos)
        out.append((pos, d[pos + 4:pos + 4 + size]))
        pos += 4 + size
    return out


def with_maps(d, new):
    """Data file D with the maps of {function index: bytes} NEW put in,
    sizes and CRC fixed up."""
    maps = fn_maps(d)
    for i in sorted(new, reverse=True):
        at, old = maps[i]
        d = d[:at] + struct.pack("<I", len(new[i])) + new[i] + d[at + 4 + len(old):]
    d = bytearray(d)
    struct.pack_into("<Q", d, 16, len(d))
    struct.pack_into("<Q", d, len(d) - 8, len(d))
    return refix(bytes(d))


varints = mapsize.varints


def encode(version, kind, files, blocks, edges, trailer=b""):
    """A map of VERSION (1 or 2) from decoded parts, TRAILER appended
    as it is."""
    if version == 2:
        return mapsize.encode_v2(kind, files, blocks, edges) + trailer
    return mapsize.encode_v1(kind, files, blocks, edges) + trailer


def trailer(version, complete, sites):
    flat = [x for s in sites for x in s]
    if version == 2:
        return varints(complete, len(sites), *flat)
    return struct.pack("<%dI" % (2 + len(flat)), complete, len(sites), *flat)


def kind6(version, m, sites, complete=1, drop_value=True):
    """Kind 2 map M (version 2 bytes) as kind 6 with SITES: its entry edge
    is counted by the callers, so one counter the tree had (the first
    block with a value) is dropped to keep the rest a spanning tree."""
    kind, files, blocks, edges, _ = mapsize.decode_v2(m)
    expect(kind == 2, "map of kind %d, want 2" % kind)
    entry = [e for e in edges if e[0] == 0 and not e[2] & 1]
    expect(len(entry) == 1 and entry[0][3] is None,
           "entry edges %s, want one without a value" % entry)
    blocks = list(blocks)
    if drop_value:
        b = next(i for i, blk in enumerate(blocks) if blk[0] is not None)
        blocks[b] = (None,) + tuple(blocks[b][1:])
    return encode(version, 6, files, blocks, edges, trailer(version, complete, sites))


def line_of(src, text):
    for n, line in enumerate(open(src), 1):
        if text in line:
            return n
    raise AssertionError(text)


def block_with(m, line):
    """The block of map M (version 2) whose locations have LINE."""
    _, _, blocks, _, _ = mapsize.decode_v2(m)
    got = [b for b, (_, _, locs) in enumerate(blocks) if any(l == line for _, l in locs)]
    expect(len(got) == 1, "blocks %s hold line %d, want one" % (got, line))
    return got[0]


def setup(a, work):
    """(good data file bytes, {name: function index}, the sites of callee
    [(fn, block)] and of twice, the callee's true calls, blocks)."""
    src = os.path.join(a.srcdir, "callers", "callers.c")
    exe = build(a, os.path.join(work, "callers"), src,
                flags=["-fplugin-arg-tally-blocks=count",
                       "-fplugin-arg-tally-entries=counted"])
    path = os.path.join(work, "good.data")
    run([exe], env={"TALLY_OUTPUT": path})
    good = open(path, "rb").read()
    maps = [m for _, m in fn_maps(good)]
    loop_site = (LOOP, block_with(maps[LOOP], line_of(src, "s += callee (i);")))
    twice_site = (TWICE, block_with(maps[TWICE], line_of(src, "return callee (n) + callee (n + 1);")))
    main_site = (MAIN, block_with(maps[MAIN], line_of(src, "loop (n) + twice (n) + twice (3)")))
    return exe, good, maps, [loop_site, twice_site, twice_site], [main_site, main_site]


def report(a, path, tool=None):
    """{symbol: (calls, [block counts])} of tally report --json --blocks."""
    p = run([tool or a.tally, "report", "--json", "--blocks", path])
    out = {}
    for fn in json.loads(p.stdout)["functions"]:
        for body in fn["blocks"]:
            out[body["symbol"]] = (fn["calls"], [b["count"] for b in body["blocks"]],
                                   body["placement"])
    return out, p.stderr


def write(work, name, d):
    path = os.path.join(work, name + ".data")
    open(path, "wb").write(d)
    return path


@case("read")
def check_read(a, work):
    exe, good, maps, sites, twice_sites = setup(a, work)
    want, _ = report(a, write(work, "orig", good))
    expect(want["callee"][0] == 12, "callee calls %s, want 12" % (want["callee"],))
    for version in (1, 2):
        d = with_maps(good, {CALLEE: kind6(version, maps[CALLEE], sites)})
        path = write(work, "v%d" % version, d)
        for tool in (a.tally, a.tally_asan):
            got, err = report(a, path, tool)
            expect(got["callee"][:2] == want["callee"][:2] and got["callee"][2] == "tree-callers",
                   "v%d: callee %s, want %s" % (version, got["callee"], want["callee"]))
            expect(all(got[s] == want[s] for s in ("loop", "twice", "main")),
                   "v%d: the callers changed: %s" % (version, got))
            expect("warning" not in err, "v%d: %s" % (version, err))
        dump = run([a.tally, "dump", path]).stdout
        line = "    callers complete=1 sites: %s" % " ".join("%d:%d" % s for s in sites)
        expect(line in dump.splitlines() and "kind=tree-callers" in dump,
               "v%d: dump lacks %r:\n%s" % (version, line, dump))
        p = run([a.tally, "diff", write(work, "orig", good), path])
        expect("callee" not in p.stdout or "+0" in p.stdout or "0" in p.stdout,
               "diff: %s" % p.stdout)
        # Merged with itself: twice the calls, the map copied as it is.
        out = os.path.join(work, "merged%d.data" % version)
        run([a.tally, "merge", "-o", out, path, path])
        got, _ = report(a, out)
        expect(got["callee"][0] == 24, "merged: callee %s, want 24 calls" % (got["callee"],))
        # A site listed once more counts once more: the entry is the sites'.
        more = with_maps(good, {CALLEE: kind6(version, maps[CALLEE], sites + [sites[0]])})
        got, _ = report(a, write(work, "more%d" % version, more))
        extra = want["loop"][1][sites[0][1] - 2]
        expect(got["callee"][0] == 12 + extra,
               "v%d: a site listed twice: callee %s, want %d calls"
               % (version, got["callee"], 12 + extra))
        # A chain: twice of kind 6 too, its entry from main; the callee's
        # sites in twice are solved after it.
        chain = with_maps(good, {CALLEE: kind6(version, maps[CALLEE], sites),
                                 TWICE: kind6(version, maps[TWICE], twice_sites)})
        got, _ = report(a, write(work, "chain%d" % version, chain))
        expect(got["callee"][:2] == want["callee"][:2] and got["twice"][:2] == want["twice"][:2],
               "v%d: chain: %s, want %s" % (version, got, want))
        p = run([a.tally, "diff", write(work, "orig", good), path, "--json"], check=False)
        expect(p.returncode == 0, "diff: %s" % p.stderr)


@case("incomplete")
def check_incomplete(a, work):
    exe, good, maps, sites, twice_sites = setup(a, work)
    for version in (1, 2):
        for what, new in (
                ("complete=0", {CALLEE: kind6(version, maps[CALLEE], sites, complete=0)}),
                # twice's entry is unknown, so its blocks and the callee's
                # entry are.
                ("a site in an undetermined block",
                 {CALLEE: kind6(version, maps[CALLEE], sites),
                  TWICE: kind6(version, maps[TWICE], twice_sites, complete=0)})):
            path = write(work, "inc%d" % version, with_maps(good, new))
            for tool in (a.tally, a.tally_asan):
                got, err = report(a, path, tool)
                expect(None in got["callee"][1],
                       "v%d %s: callee's blocks %s, want some unknown" % (version, what, got["callee"]))
                expect(re.search(r"warning: the entries of \d+ functions? cannot be derived", err),
                       "v%d %s: no warning: %r" % (version, what, err))
            text = run([a.tally, "report", "--blocks", path], check=False)
            expect("entries undetermined" in text.stdout, "v%d %s: %s" % (version, what, text.stdout))


def bad_cases(version, maps, sites):
    """{name: ({fn: map}, message pattern)}."""
    kind, files, blocks, edges, _ = mapsize.decode_v2(maps[CALLEE])
    tree = [list(b) for b in blocks]
    valued = next(i for i, b in enumerate(tree) if b[0] is not None)
    value = tree[valued][0]
    tree[valued][0] = None
    tree = [tuple(b) for b in tree]
    t = trailer(version, 1, sites)
    entry = next(i for i, e in enumerate(edges) if e[0] == 0)
    ent_valued = [e if i != entry else e[:3] + (value,) for i, e in enumerate(edges)]
    ent_fake = [e if i != entry else (e[0], e[1], e[2] | 1, e[3]) for i, e in enumerate(edges)]
    k6 = lambda s, **kw: {CALLEE: kind6(version, maps[CALLEE], s, **kw)}
    visited = mapsize.decode_v2(maps[LOOP])[:4]
    out = {
        "entry-value": ({CALLEE: encode(version, 6, files, tree, ent_valued, t)},
                        r"kind 6 map whose edge out of ENTRY has a value"),
        "entry-none": ({CALLEE: encode(version, 6, files, tree, ent_fake, t)},
                       r"kind 6 map without exactly one normal edge out of ENTRY"),
        "complete-2": ({CALLEE: encode(version, 6, files, tree, edges, trailer(version, 2, sites))},
                       r"callers complete flag above 1"),
        "no-trailer": ({CALLEE: encode(version, 6, files, tree, edges)},
                       r"runs past the end of the map"),
        "short-trailer": ({CALLEE: encode(version, 6, files, tree, edges, t[:-1])},
                          r"runs past the end of the map|cannot fit in the (\d+ )?bytes left"),
        "sites-cannot-fit": ({CALLEE: encode(version, 6, files, tree, edges,
                                             trailer(version, 1, [])[:-1]
                                             + (varints(1000) if version == 2
                                                else struct.pack("<I", 1000)))},
                             r"call sites cannot fit in the (\d+ )?bytes left"),
        "bytes-after": ({CALLEE: encode(version, 6, files, tree, edges, t + b"\0")},
                        r"unexpected bytes"),
        "function-range": (k6([(4, 2)]), r"call site 0: function 4, but the module has 4 functions"),
        "no-map": ({**k6(sites), LOOP: b""}, r"call site 0: function 1 has no block map"),
        "visited-map": ({**k6(sites), LOOP: encode(version, 3, *visited[1:])},
                        r"call site 0: function 1's map is not of a kind that counts blocks \(1, 2 or 6\)"),
        "block-entry": (k6([(LOOP, 0)]), r"call site 0: block 0 of function 1 is ENTRY"),
        "block-exit": (k6([(LOOP, 1)]), r"call site 0: block 1 of function 1 is EXIT"),
        "block-range": (k6([(LOOP, 99)]), r"call site 0: block 99, but function 1 has \d+ blocks"),
        "self-cycle": (k6([(CALLEE, 2)]), r"function 0 \(callee\): bad block map: its entry count "
                       r"depends, through call sites, on itself"),
        "cycle": ({**k6([(TWICE, 2)]), TWICE: kind6(version, maps[TWICE], [(CALLEE, 2)])},
                  r"function [02] \(\w+\): bad block map: its entry count depends, through call "
                  r"sites, on itself"),
    }
    return out


@case("bad")
def check_bad(a, work):
    exe, good, maps, sites, _ = setup(a, work)
    for version in (1, 2):
        for name, (new, pattern) in bad_cases(version, maps, sites).items():
            path = write(work, "bad-%s-%d" % (name, version), with_maps(good, new))
            what = "v%d %s" % (version, name)
            for tool in (a.tally, a.tally_asan):
                p = run([tool, "report", path], check=False)
                expect(p.returncode == 1 and p.stdout == "",
                       "%s: report exit %d\n%s%s" % (what, p.returncode, p.stdout, p.stderr))
                lines = p.stderr.strip().splitlines()
                expect(len(lines) == 1 and path in lines[0] and "bad block map" in lines[0]
                       and re.search(pattern, lines[0]) and lines[0].endswith("file is corrupt"),
                       "%s: report says %r, want /%s/" % (what, p.stderr, pattern))
            out = os.path.join(work, "merged.data")
            p = run([a.tally, "merge", "-o", out, path], check=False)
            expect(p.returncode != 0 and re.search(pattern, p.stderr) and not os.path.exists(out),
                   "%s: merge exit %d %r" % (what, p.returncode, p.stderr))
            p = run([a.tally_asan, "diff", path, path], check=False)
            expect(p.returncode == 1 and re.search(pattern, p.stderr),
                   "%s: diff exit %d %r" % (what, p.returncode, p.stderr))
            p = run([a.tally_asan, "dump", path], check=False)
            expect(p.returncode == 0, "%s: dump exit %d %r" % (what, p.returncode, p.stderr))
            p = run([a.tally_asan, "report", "--ranks", path], check=False)
            expect(p.returncode in (0, 1) and "ERROR" not in p.stderr,
                   "%s: ranks %d %r" % (what, p.returncode, p.stderr))
    # The runtime's %m checks a map the same way (tally_map2_walk) and the
    # sites against their module record (rt/merge.c, callers_ok): the file
    # is moved aside, and this run's counts are written.
    d = os.path.join(work, "m")
    os.mkdir(d)
    pattern = os.path.join(d, "%m.data")
    run([exe], env={"TALLY_OUTPUT": pattern})
    target = os.path.join(d, next(n for n in os.listdir(d) if n.endswith(".data")))
    bad = bad_cases(2, maps, sites)
    for name in ("complete-2", "function-range", "visited-map", "block-exit", "block-range",
                 "self-cycle", "cycle"):
        mapsize.moved_aside(exe, [], pattern, target, with_maps(good, bad[name][0]),
                            name)
        os.unlink(target + ".bad")
    # A good kind 6 file is merged into, not moved aside.
    open(target, "wb").write(with_maps(good, {CALLEE: kind6(2, maps[CALLEE], sites)}))
    p = run([exe], env={"TALLY_OUTPUT": pattern}, check=False)
    expect(p.returncode == 0 and not os.path.exists(target + ".bad")
           and "corrupt" not in p.stderr,
           "%%m over a good kind 6 file: exit %d, %r" % (p.returncode, p.stderr))
    run([a.tally, "report", target])


if __name__ == "__main__":
    sys.exit(main("tally-callers-"))
