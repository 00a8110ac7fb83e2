#!/usr/bin/env python3
"""The compact block map, version 2 (doc/data-format.md "Version 2: the
compact map", rt/mapcode.c, format/mapencode.c): decoded here from the documented layout,
independently of the C codec, and compared with what `tally dump` prints;
its size against version 1's; damaged version 2 maps refused by tally
report, tally merge and the runtime's %m merge with a clear message;
version 1 maps still read.

Usage: run-mapsize.py CASE --plugin P --runtime RT --tally T ...
                       (testsuite/meson.build's driver_args)
Exit status: 0 pass, 1 fail, 77 skip.
"""
import os
import re
import struct

from checklib import (build, case, expect, Failure, main, refix, report_json, run)

PROGS = ["s-abc.c", "recursion.c", "longjmp.c", "returns.c", "clones.c",
         "cxx-classes.cc", "threads.c"]




def block_maps(d):
    """[(offset, size, values)] of every non-empty block map of data file D."""
    u32 = lambda o: struct.unpack_from("<I", d, o)[0]
    pos = 48 + 4 + u32(48)
    maps = []
    for _ in range(u32(40)):
        nfns = u32(pos + 20)
        pos += 24
        for _ in range(2):
            pos += 4 + u32(pos)
        for _ in range(nfns):
            for _ in range(4):
                pos += 4 + u32(pos)
            nc = u32(pos + 8)
            pos += 16 + 8 * nc
            size = u32(pos)
            if size:
                maps.append((pos + 4, size, nc))
            pos += 4 + size
    return maps


class Bad(Failure):
    """A map that is not version 2 as the doc lays it out."""


def decode_v2(m):
    """(kind, files, blocks [(value, flags, [(file, line)])], edges [(src,
    dst, flags, value)], callers: kind 6's (complete, [(function, block)]),
    else None) of version 2 map M, as the doc lays it out."""
    pos = [4]

    def varint():
        x = shift = 0
        start = pos[0]
        while True:
            if pos[0] >= len(m):
                raise Bad("past the end")
            b = m[pos[0]]
            pos[0] += 1
            x |= (b & 0x7f) << shift
            if not b & 0x80:
                if b == 0 and pos[0] - start > 1:
                    raise Bad("overlong")
                return x
            shift += 7

    unzig = lambda z: (z >> 1) if z % 2 == 0 else -(z >> 1) - 1
    if struct.unpack_from("<I", m, 0)[0] != 2:
        raise Bad("not version 2")
    kind, nblocks, nedges, nfiles = (varint() for _ in range(4))
    files = []
    for _ in range(nfiles):
        n = varint()
        files.append(m[pos[0]:pos[0] + n].decode("utf-8", "replace"))
        pos[0] += n
    table = [varint() for _ in range(varint())]
    nxt = [0]

    def value():
        v = nxt[0] + unzig(varint())
        nxt[0] = v + 1
        return v

    blocks, line, file = [], 0, 0
    for _ in range(nblocks):
        head = varint()
        flags = varint() if head & 2 else 0
        v = value() if head & 1 else None
        locs = []
        for _ in range(head >> 2):
            x = varint()
            line += unzig(x >> 1)
            if x & 1:
                file = varint()
            locs.append((file, line))
        blocks.append((v, flags, locs))
    edges, src = [], 0
    for _ in range(nedges):
        h = varint()
        q = h >> 1
        src += unzig(q // len(table))
        dst = src + unzig(varint())
        edges.append((src, dst, table[q % len(table)], value() if h & 1 else None))
    callers = None
    if kind == 6:
        complete, nsites = varint(), varint()
        callers = (complete, [(varint(), varint()) for _ in range(nsites)])
    if pos[0] != len(m):
        raise Bad("bytes after the edges")
    return kind, files, blocks, edges, callers


def varints(*xs):
    """The shortest unsigned LEB128 varints of XS, one after another."""
    out = bytearray()
    for x in xs:
        assert x >= 0
        while True:
            b = x & 0x7f
            x >>= 7
            out.append(b | (0x80 if x else 0))
            if not x:
                break
    return bytes(out)


def encode_v2(kind, files, blocks, edges, callers=None):
    """Version 2 bytes of a decoded map (the shortest varints, as the doc
    says a writer must; the edge flag values in order of first use)."""
    out = bytearray(struct.pack("<I", 2))

    def varint(x):
        out.extend(varints(x))

    zig = lambda d: 2 * d if d >= 0 else -2 * d - 1
    for x in (kind, len(blocks), len(edges), len(files)):
        varint(x)
    for f in files:
        varint(len(f.encode()))
        out.extend(f.encode())
    table = []
    for e in edges:
        if e[2] not in table:
            table.append(e[2])
    varint(len(table))
    for t in table:
        varint(t)
    nxt = [0]

    def value(v):
        varint(zig(v - nxt[0]))
        nxt[0] = v + 1

    line = file = 0
    for v, flags, locs in blocks:
        varint((2 * len(locs) + (flags != 0)) * 2 + (v is not None))
        if flags:
            varint(flags)
        if v is not None:
            value(v)
        for f, l in locs:
            varint(2 * zig(l - line) + (f != file))
            if f != file:
                varint(f)
            line, file = l, f
    src = 0
    for s, d, flags, v in edges:
        varint((zig(s - src) * len(table) + table.index(flags)) * 2 + (v is not None))
        varint(zig(d - s))
        if v is not None:
            value(v)
        src = s
    if callers is not None:
        varint(callers[0])
        varint(len(callers[1]))
        for f, b in callers[1]:
            varint(f)
            varint(b)
    return bytes(out)


def v1_size(files, blocks, edges, callers=None):
    """Bytes of the same map in version 1 (doc/data-format.md)."""
    return (20 + sum(4 + len(f.encode()) for f in files)
            + sum(12 + 8 * len(l) for _, _, l in blocks) + 16 * len(edges)
            + (8 + 8 * len(callers[1]) if callers is not None else 0))


def encode_v1(kind, files, blocks, edges):
    """Version 1 bytes of a decoded map, up to its last edge."""
    v1 = struct.pack("<5I", 1, kind, len(blocks), len(edges), len(files))
    for f in files:
        v1 += struct.pack("<I", len(f.encode())) + f.encode()
    none = lambda v: 0xffffffff if v is None else v
    for v, fl, locs in blocks:
        v1 += struct.pack("<3I", none(v), fl, len(locs))
        for fi, line in locs:
            v1 += struct.pack("<2I", fi, line)
    for s, t, fl, v in edges:
        v1 += struct.pack("<4I", s, t, fl, none(v))
    return v1


def v1_map(m):
    """Version 2 map M in version 1."""
    kind, files, blocks, edges, callers = decode_v2(m)
    v1 = encode_v1(kind, files, blocks, edges)
    if callers is not None:
        v1 += struct.pack("<2I", callers[0], len(callers[1]))
        for f, b in callers[1]:
            v1 += struct.pack("<2I", f, b)
    expect(len(v1) == v1_size(files, blocks, edges, callers), "v1 size")
    return v1


def v1_file(good):
    """Data file GOOD with every version 2 map rewritten in version 1 (sizes
    and CRC fixed up)."""
    d = good
    for off, size, _ in reversed(block_maps(good)):
        if struct.unpack_from("<I", good, off)[0] != 2:
            continue
        v1 = v1_map(good[off:off + size])
        d = d[:off - 4] + struct.pack("<I", len(v1)) + v1 + d[off + size:]
    d = bytearray(d)
    struct.pack_into("<Q", d, 16, len(d))
    struct.pack_into("<Q", d, len(d) - 8, len(d))
    return refix(bytes(d))


def v2_map(v1):
    """Version 1 map V1 in version 2 (encode_v2): whatever its fields hold,
    damage included, so that a test can damage the simple layout and
    give the runtime (which takes kinds 4 to 6 in version 2 only) the
    compact one."""
    u32 = lambda o: struct.unpack_from("<I", v1, o)[0]
    none = lambda v: None if v == 0xffffffff else v
    kind, nblocks, nedges, nfiles = (u32(o) for o in (4, 8, 12, 16))
    pos, files, blocks, edges = 20, [], [], []
    for _ in range(nfiles):
        files.append(v1[pos + 4:pos + 4 + u32(pos)].decode())
        pos += 4 + u32(pos)
    for _ in range(nblocks):
        v, fl, n = struct.unpack_from("<3I", v1, pos)
        pos += 12
        blocks.append((none(v), fl, [struct.unpack_from("<2I", v1, pos + 8 * k)
                                     for k in range(n)]))
        pos += 8 * n
    for _ in range(nedges):
        s, t, fl, v = struct.unpack_from("<4I", v1, pos)
        pos += 16
        edges.append((s, t, fl, none(v)))
    callers = None
    if kind == 6:
        complete, nsites = struct.unpack_from("<2I", v1, pos)
        callers = (complete, [struct.unpack_from("<2I", v1, pos + 8 + 8 * k)
                              for k in range(nsites)])
    return encode_v2(kind, files, blocks, edges, callers)


def v2_file(d):
    """Data file D with every version 1 map rewritten in version 2 (sizes
    and CRC fixed up): v1_file undone."""
    for off, size, _ in reversed(block_maps(d)):
        if struct.unpack_from("<I", d, off)[0] == 1:
            d = damaged(d, off, size, v2_map(d[off:off + size]))
    return d


def moved_aside(exe, args, pattern, target, bad, name):
    """The runtime's %m (TALLY_OUTPUT=PATTERN) over TARGET holding BAD
    (bytes, a damaged map): EXE run with ARGS refuses it with "corrupt
    block map" and moves it aside to TARGET.bad as it was.  NAME names
    the damage."""
    open(target, "wb").write(bad)
    p = run([exe, *args], env={"TALLY_OUTPUT": pattern}, check=False)
    expect(p.returncode == 0
           and "corrupt block map; not merged, moved aside to " + target + ".bad" in p.stderr
           and open(target + ".bad", "rb").read() == bad,
           "%s: %%m over the damaged map: exit %d, %r" % (name, p.returncode, p.stderr))


def merge_aside(a, work, exe, args, bad, name):
    """The runtime's %m over data file BAD (bytes) with a damaged map: EXE
    run with ARGS refuses it with "corrupt block map", moves it aside to
    PATH.bad as it was, and writes this run's counts alone, as a run
    without the file does."""
    d = os.path.join(work, "m-" + name)
    os.mkdir(d)
    pattern = os.path.join(d, "%m.data")
    run([exe, *args], env={"TALLY_OUTPUT": pattern})
    target = os.path.join(d, [f for f in os.listdir(d) if f.endswith(".data")][0])
    fresh = report_json(a, target)["functions"]
    moved_aside(exe, args, pattern, target, bad, name)
    expect(report_json(a, target)["functions"] == fresh,
           "%s: %%m did not write this run's counts alone" % name)


def refused_both_versions(a, work, exe, args, good, bad, damage, what,
                          bad_v2=None):
    """Each damage HOW of BAD (HOW -> the message wanted) done by DAMAGE to
    GOOD (a data file with version 1 maps): tally report refuses the file;
    and the same damage in the compact map the plugin writes (BAD_V2's
    message where it differs) is refused alike by tally report, and by the
    runtime's %m, EXE run with ARGS (merge_aside), which moves the file
    aside rather than merge into what tally cannot read.  WHAT names the
    maps damaged."""
    for how, want in bad.items():
        bad1 = damage(good, how)
        expect(bad1 is not None, "%s: no %s to damage" % (how, what))
        path = os.path.join(work, how + ".data")
        open(path, "wb").write(bad1)
        p = run([a.tally, "report", path], check=False)
        expect(p.returncode != 0 and "bad block map" in p.stderr
               and re.search(want, p.stderr),
               "%s: tally report exit %d, %r; want /%s/" % (how, p.returncode,
                                                           p.stderr, want))
        bad2 = v2_file(bad1)
        path2 = os.path.join(work, how + "-v2.data")
        open(path2, "wb").write(bad2)
        p = run([a.tally, "report", path2], check=False)
        want = (bad_v2 or {}).get(how, want)
        expect(p.returncode != 0 and "bad block map" in p.stderr
               and re.search(want, p.stderr),
               "%s (map version 2): tally report exit %d, %r; want /%s/"
               % (how, p.returncode, p.stderr, want))
        merge_aside(a, work, exe, args, bad2, how)


def dump_text(kind, files, blocks, edges, callers=None):
    """The lines `tally dump` prints for a decoded map (tools/dump.c)."""
    kinds = {1: "block", 2: "tree", 3: "visited", 4: "visited", 5: "visited",
             6: "tree-callers"}
    fmt_v = lambda v: "-" if v is None else str(v)
    out = ["kind=%s blocks=%d edges=%d files: %s"
           % (kinds[kind], len(blocks), len(edges),
              " ".join('"%s"' % f for f in files))]
    for i, (v, fl, locs) in enumerate(blocks):
        out.append(("block %d value=%s flags=0x%x locations:" % (i, fmt_v(v), fl)
                    + "".join(" %d:%d" % l for l in locs)))
    for i, (s, d, fl, v) in enumerate(edges):
        out.append("edge %d %d->%d flags=0x%x value=%s" % (i, s, d, fl, fmt_v(v)))
    if callers is not None:
        out.append("callers complete=%d sites:%s"
                   % (callers[0], "".join(" %d:%d" % x for x in callers[1])))
    return out


def built(a, work, prog, extra=()):
    """PROG of progs/ built with blocks=count (or the options EXTRA), run;
    its data."""
    src = os.path.join(a.srcdir, "progs", prog)
    exe = os.path.join(work, os.path.splitext(prog)[0] + "-" + str(len(extra)))
    flags = ["-fplugin-arg-tally-blocks=count"] if not extra else list(extra)
    link = ["-lpthread"] if "threads" in prog else []
    build(a, exe, [src], flags=flags, link=link)
    data = exe + ".data"
    run([exe], env={"TALLY_OUTPUT": data}, check=False)
    return data


@case("decode")
def check_decode(a, work):
    """Every map the plugin writes is version 2, decodes by the documented
    layout to exactly what `tally dump` prints, and takes under 30%
    of the bytes version 1 would."""
    total1 = total2 = nmaps = 0
    for prog in PROGS:
        for extra in ([], ["-fplugin-arg-tally-blocks=visited"],
                      ["-fplugin-arg-tally-blocks=count",
                       "-fplugin-arg-tally-placement=block"]):
            data = built(a, work, prog, extra)
            d = open(data, "rb").read()
            dump = run([a.tally, "dump", data]).stdout.splitlines()
            maps = block_maps(d)
            expect(maps, "%s %s: no block maps" % (prog, extra))
            starts = [i for i, l in enumerate(dump) if l.strip().startswith("map ")]
            expect(len(starts) == len(maps), "%s: %d maps, dump shows %d"
                   % (prog, len(maps), len(starts)))
            for (off, size, _), at in zip(maps, starts):
                m = d[off:off + size]
                try:
                    kind, files, blocks, edges, callers = decode_v2(m)
                except Bad as e:
                    raise Failure("%s: map at %d: %s" % (prog, off, e))
                expect(encode_v2(kind, files, blocks, edges, callers) == m,
                       "%s: map at %d is not the shortest encoding" % (prog, off))
                want = dump_text(kind, files, blocks, edges, callers)
                got = [l.strip() for l in dump[at:at + len(want)]]
                got[0] = re.sub(r"^map \d+ bytes ", "", got[0])
                expect(got == want, "%s: map at %d decodes to\n%s\nbut tally dump "
                       "prints\n%s" % (prog, off, "\n".join(want), "\n".join(got)))
                total1 += v1_size(files, blocks, edges, callers)
                total2 += size
                nmaps += 1
    print("%d maps: %d bytes, %d in version 1 (%.2f)"
          % (nmaps, total2, total1, total2 / total1))
    expect(total2 * 10 < total1 * 3, "version 2 maps take %d bytes, version 1's %d: "
           "30%% or more" % (total2, total1))


def damaged(good, off, size, new):
    """GOOD with the map of SIZE bytes at OFF replaced by NEW (the map size
    field, the file size and the CRC fixed up)."""
    d = bytearray(good[:off - 4]) + struct.pack("<I", len(new)) + new + good[off + size:]
    struct.pack_into("<Q", d, 16, len(d))
    struct.pack_into("<Q", d, len(d) - 8, len(d))
    return refix(bytes(d))


@case("bad-v2")
def check_bad_v2(a, work):
    """A version 2 map damaged under a valid CRC (a varint running past the
    end, an overlong varint, counts that cannot fit, a line or file index
    out of range, a value index beyond the function's values) is refused by
    tally report and tally merge, naming the fault, and moved aside by the
    runtime's %m merge."""
    data = built(a, work, "s-abc.c")
    good = open(data, "rb").read()
    off, size, nvalues = max(block_maps(good), key=lambda t: t[1])
    m = good[off:off + size]
    kind, files, blocks, edges, callers = decode_v2(m)
    expect(len(files) == 1 and len(blocks) > 3 and blocks[2][2],
           "unexpected map %r" % ((files, blocks),))
    expect(encode_v2(kind, files, blocks, edges, callers) == m, "the map is not re-encoded")
    # The header varints of this map (kind, blocks, edges, files) are one
    # byte each.
    expect(all(x < 128 for x in (kind, len(blocks), len(edges), len(files))),
           "map too big for this test")
    head = m[:4]

    def with_loc(file=None, line=None):
        b = [list(x) for x in blocks]
        locs = list(b[2][2])
        f0, l0 = locs[0]
        locs[0] = (f0 if file is None else file, l0 if line is None else line)
        b[2][2] = locs
        return encode_v2(kind, files, [tuple(x) for x in b], edges, callers)

    bad = {
        # The last edge's value byte made to continue: it runs past the end.
        "past the end": (m[:-1] + b"\x80", r"varint runs past the end"),
        # The kind as 0x81 0x00: its value in two bytes.
        "overlong": (head + bytes([kind | 0x80, 0]) + m[5:], r"overlong varint"),
        # A varint of eleven bytes.
        "over 64 bits": (head + b"\xff" * 10 + b"\x01" + m[5:], r"does not fit in 64 bits"),
        # A block count of 2^32.
        "block count 2^32": (head + bytes([kind]) + b"\x80\x80\x80\x80\x10" + m[6:],
                             r"block count does not fit in 32 bits"),
        # Many more blocks than bytes.
        "counts cannot fit": (head + bytes([kind]) + b"\xff\xff\x03" + m[6:],
                              r"cannot fit in the bytes left"),
        # A location in file 1 of a map of one file.
        "file index": (with_loc(file=1), r"file index beyond the map's files"),
        # Block 2's first location on line -1.
        "line": (with_loc(line=-1), r"line out of range"),
        # A value index equal to the function's value count.
        "value index": (encode_v2(kind, files, blocks[:2] + [(nvalues,) + blocks[2][1:]]
                                  + blocks[3:], edges, callers), r"value index beyond"),
        "trailing": (m + b"\x00", r"unexpected bytes after the last edge"),
    }
    for name, (new, pattern) in bad.items():
        path = os.path.join(work, "bad-%s.data" % name.replace(" ", "-").replace("^", ""))
        d = damaged(good, off, size, new)
        open(path, "wb").write(d)
        for tool in (a.tally, a.tally_asan):
            p = run([tool, "report", path], check=False)
            expect(p.returncode == 1 and "bad block map" in p.stderr
                   and "version 2 map" in p.stderr and re.search(pattern, p.stderr),
                   "%s: %s report: exit %d, %r (want /%s/)"
                   % (name, os.path.basename(tool), p.returncode, p.stderr, pattern))
        out = os.path.join(work, "merged.data")
        p = run([a.tally, "merge", "-o", out, data, path], check=False)
        expect(p.returncode != 0 and re.search(pattern, p.stderr) and not os.path.exists(out),
               "%s: tally merge: exit %d, %r" % (name, p.returncode, p.stderr))
    # The runtime's %m: the damaged file is moved aside, this run written.
    d = os.path.join(work, "m")
    os.mkdir(d)
    exe = os.path.join(work, "s-abc-0")
    pattern_out = os.path.join(d, "%m.data")
    run([exe], env={"TALLY_OUTPUT": pattern_out})
    target = os.path.join(d, [f for f in os.listdir(d) if f.endswith(".data")][0])
    for name in ("overlong", "file index", "past the end"):
        moved_aside(exe, [], pattern_out, target,
                    damaged(good, off, size, bad[name][0]), name)
        os.unlink(target + ".bad")
        rows = report_json(a, target)
        expect(rows, "%s: %%m wrote no readable file" % name)


@case("v1-read")
def check_v1_read(a, work):
    """Maps of version 1 (older plugins, the fuzz corpus) are still read:
    a file whose maps are rewritten in version 1 here reports, solves and
    merges (with itself) exactly as the version 2 file does."""
    for prog in ("s-abc.c", "longjmp.c"):
        data = built(a, work, prog)
        good = open(data, "rb").read()
        old = os.path.join(work, prog + ".v1.data")
        open(old, "wb").write(v1_file(good))
        for args in (["report", "--json", "--blocks"], ["lcov"]):
            want = run([a.tally, *args, data]).stdout
            got = run([a.tally, *args, old]).stdout
            expect(got.replace(old, data) == want,
                   "%s %s of version 1 maps differs:\n%s\n---\n%s" % (prog, args, got, want))
        merged = os.path.join(work, prog + ".merged")
        run([a.tally, "merge", "-o", merged, old, old])
        run([a.tally, "report", merged])


if __name__ == "__main__":
    raise SystemExit(main("mapsize"))
