#!/usr/bin/env python3
"""The dump's cost and the record blobs it writes from (rt/mapblob.c,
include/tally/abi.h "The record blob"): a dump costs O(values), not
O(bytes of block map), and writes the same bytes as the runtime that
writes every record part by part from the descriptors (libtally-rt-noblob.a).

Usage: run-perf.py CHECK --plugin P --runtime RT --runtime-noblob RT
                         --tally T --include DIR --cc CC ... (checklib.py's options)
Exit status: 0 pass, 1 fail, 77 skip.
"""
import os
import random
import re
import shutil
import struct
import sys
import zlib

from checklib import (Failure, Skip, callgrind_ir, case, crc_mulmod as mulmod, expect,
                      main, run)

# Offsets in a data file that differ between two runs of one program: the
# pid and the time (header), and the CRC (trailer), which covers them.
PID_TIME = (24, 40)


def program(n_fns, lines, big, seed=1):
    """A unit of N_FNS functions of LINES statements on lines of their own
    (block maps of about 8 bytes a line), every third never called; BIG:
    main also calls big () of BIG_UNIT."""
    rnd = random.Random(seed)
    out = ["#include <tally/tally.h>", "#include <tally/image.h>",
           "#include <stdio.h>", "#include <stdlib.h>",
           "volatile int sink;"]
    for i in range(n_fns):
        out.append("__attribute__ ((noinline)) int f%d (int x) {" % i)
        for k in range(lines):
            out.append("  sink = x + %d;" % rnd.randrange(1000))
        out.append("  if (x & 1) sink = 3; else sink = 4;")
        out.append("  return x + %d; }" % i)
    if big:
        out.append("int big (int x);")
    out.append("int main (int argc, char **argv) { int s = 0; (void) argv;")
    out.append("  for (int r = 0; r < 3; r++) {")
    for i in range(n_fns):
        if i % 3:
            out.append("  s += f%d (argc + r);" % i)
    if big:
        out.append("  for (int k = 0; k < 9000; k += 7) s += big (k);")
    out.append("  }")
    out.append("  if (getenv (\"PERF_MID\")) { tally_dump (); tally_exit_dump_off (); }")
    out.append("  if (getenv (\"PERF_IMAGE\")) { size_t len; void *im = tally_image (&len);")
    out.append("    FILE *f = fopen (getenv (\"PERF_IMAGE\"), \"wb\");")
    out.append("    fwrite (im, 1, len, f); fclose (f); }")
    out.append("  printf (\"%d\\n\", s); return 0; }")
    return "\n".join(out) + "\n"


# A second unit: one function with more values than the runtime's staging
# buffer holds (8192), built at -O0 (GCC -O2 takes minutes over it).
BIG_UNIT = ("extern volatile int sink;\nint big (int x) { int s = 0;\n"
            + "".join("  if (x == %d) s += sink;\n" % k for k in range(9000))
            + "  return s; }\n")


def records(data):
    """(functions, values, map bytes, all-zero functions, the most values
    of a function) of a data file."""
    p = 40
    nmod = struct.unpack_from("<I", data, p)[0]
    p += 8

    def skip_str(p):
        return p + 4 + struct.unpack_from("<I", data, p)[0]

    p = skip_str(p)
    fns = values = maps = zero = most = 0
    for _ in range(nmod):
        p += 20
        nf = struct.unpack_from("<I", data, p)[0]
        p = skip_str(skip_str(p + 4))
        for _ in range(nf):
            for _ in range(4):
                p = skip_str(p)
            nv = struct.unpack_from("<I", data, p + 8)[0]
            vals = struct.unpack_from("<%dQ" % nv, data, p + 16)
            p += 16 + 8 * nv
            size = struct.unpack_from("<I", data, p)[0]
            p += 4 + size
            fns += 1
            values += nv
            maps += size
            zero += not any(vals)
            most = max(most, nv)
    return fns, values, maps, zero, most


def build(a, work, name, src_text, flags, runtime, objs=None):
    """Compile SRC_TEXT (once per NAME and FLAGS) and link it with RUNTIME
    into WORK/NAME/prog; the same path for every runtime, so the files
    name the same program."""
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    src = os.path.join(d, "prog.c")
    obj = os.path.join(d, "prog.o")
    objs = [obj]
    if not os.path.exists(obj):
        with open(src, "w") as f:
            f.write(src_text)
        run([a.cc, "-O2", "-I" + a.include, "-fplugin=" + a.plugin,
             *["-fplugin-arg-tally-" + f for f in flags], "-c", src, "-o", obj],
            cwd=d)
    if "int big (int x);" in src_text:
        objs.append(os.path.join(d, "big.o"))
        if not os.path.exists(objs[1]):
            with open(os.path.join(d, "big.c"), "w") as f:
                f.write(BIG_UNIT)
            run([a.cc, "-O0", "-fplugin=" + a.plugin,
                 *["-fplugin-arg-tally-" + f for f in flags], "-c", "big.c",
                 "-o", objs[1]], cwd=d)
    exe = os.path.join(d, "prog")
    run([a.cc, *objs, "-o", exe, "-Wl,--whole-archive", runtime,
         "-Wl,--no-whole-archive", "-lpthread", "-ldl"])
    return exe


def same_but_pid_time(x, y, what):
    expect(len(x) == len(y), "%s: %d bytes with the blobs, %d without"
           % (what, len(x), len(y)))
    n = len(x)
    a0, a1 = PID_TIME
    diff = [i for i in range(n) if x[i] != y[i]
            and not a0 <= i < a1 and not n - 12 <= i < n - 8]
    expect(not diff, "%s: the files differ at bytes %s" % (what, diff[:10]))


@case("identical")
def check_identical(a, work):
    """In every mode, at tally_dump (mid-run, writev), at exit, into
    memory (tally_image) and merged (%m): the file written from the blobs
    equals, byte for byte but for pid, time and CRC, the one the runtime
    without blobs writes part by part; both pass the reader's checks
    (CRC included).  The program has 700 functions (more pieces than one
    writev takes), a third never run (their values all 0: the shortcut
    of the CRC), and one function with more values than the staging
    buffer."""
    src = program(700, 3, big=True)
    modes = {"count": ["blocks=count"],
             "visited": ["blocks=visited"],
             "tls": ["blocks=count", "update=tls"],
             "mapped": ["blocks=count", "counters=mapped"],
             "inline": ["hooks=inline"]}
    for mode, flags in modes.items():
        got = {}
        for rt_name, rt in (("blob", a.runtime), ("noblob", a.runtime_noblob)):
            exe = build(a, work, mode, src, flags, rt)
            d = os.path.dirname(exe)
            files = {}
            for how, env in (("exit", {}), ("mid", {"PERF_MID": "1"})):
                out = os.path.join(d, "%s-%s.data" % (rt_name, how))
                run([exe], env={"TALLY_OUTPUT": out, **env})
                files[how] = out
            image = os.path.join(d, "%s.image" % rt_name)
            run([exe], env={"TALLY_OUTPUT": os.path.join(d, "x.data"),
                            "PERF_IMAGE": image})
            files["image"] = image
            mdir = os.path.join(d, "%s-merged" % rt_name)
            os.makedirs(mdir)
            for _ in range(2):
                run([exe], env={"TALLY_OUTPUT": os.path.join(mdir, "%m.data")})
            names = [n for n in os.listdir(mdir) if n.endswith(".data")]
            expect(len(names) == 1, "%s: %%m made %s" % (mode, names))
            files["merged"] = os.path.join(mdir, names[0])
            for how, path in files.items():
                run([a.tally, "dump", path])  # the reader's checks, CRC included
                with open(path, "rb") as f:
                    got.setdefault(how, []).append(f.read())
        for how, (x, y) in got.items():
            same_but_pid_time(x, y, "%s, %s" % (mode, how))
        if mode == "count":
            fns, values, maps, zero, most = records(got["exit"][0])
            expect(fns == 702 and zero >= 200 and most > 8192,
                   "count: %d functions, %d all 0, at most %d values: not what "
                   "the program should have" % (fns, zero, most))


def blob_of(a, obj):
    """The bytes of the unit's __tally.blob in object file OBJ."""
    syms = run(["readelf", "-sW", obj]).stdout
    m = re.search(r"^\s*\d+:\s+([0-9a-f]+)\s+(\d+)\s+OBJECT\s+\w+\s+\w+\s+(\d+)\s+__tally\.blob$",
                  syms, re.M)
    expect(m, "%s: no __tally.blob symbol" % obj)
    value, size, shndx = int(m.group(1), 16), int(m.group(2)), int(m.group(3))
    secs = run(["readelf", "-SW", obj]).stdout
    for line in secs.splitlines():
        s = re.match(r"^\s*\[\s*(\d+)\]\s+(\S+)\s+(\S+)\s+([0-9a-f]+)\s+([0-9a-f]+)", line)
        if s and int(s.group(1)) == shndx:
            off = int(s.group(5), 16) + value
            with open(obj, "rb") as f:
                f.seek(off)
                return f.read(size)
    raise Failure("%s: no section %d" % (obj, shndx))


def shift_op(n):
    """x^(8N) mod the CRC-32 polynomial, reflected."""
    p, sq = 1 << 31, 1 << 23
    while n:
        if n & 1:
            p = mulmod(sq, p)
        sq = mulmod(sq, sq)
        n >>= 1
    return p


@case("blob-crc")
def check_blob_crc(a, work):
    """The CRCs and shifts the plugin stores per segment of a blob are
    those of its bytes (zlib's crc32; the shift is checked by appending
    the segment to a random prefix: crc32_combine); the segments together
    are the module record of a data file written by the program, values
    left out."""
    src = program(40, 5, big=False)
    exe = build(a, work, "crc", src, ["blocks=count"], a.runtime)
    blob = blob_of(a, os.path.join(work, "crc", "prog.o"))
    magic, nseg, nvalues, nconst = struct.unpack_from("<IIQQ", blob, 0)
    expect(magic == 0x42594c54 and nseg == 42, "magic %#x, %d segments" % (magic, nseg))
    rnd = random.Random(5)
    segs, total = [], 0
    for i in range(nseg):
        off, ln, crc, op, zcrc, zop = struct.unpack_from("<6I", blob, 24 + 24 * i)
        seg = blob[off:off + ln]
        expect(len(seg) == ln, "segment %d runs past the blob" % i)
        expect(zlib.crc32(seg) == crc, "segment %d: CRC %#x, its bytes' %#x"
               % (i, crc, zlib.crc32(seg)))
        prefix = rnd.randbytes(rnd.randrange(1, 100))
        expect(mulmod(op, zlib.crc32(prefix)) ^ crc == zlib.crc32(prefix + seg)
               and op == shift_op(ln), "segment %d: shift %#x wrong" % (i, op))
        segs.append(seg)
        total += ln
    expect(total == nconst, "constant bytes %d, segments %d" % (nconst, total))
    out = os.path.join(work, "crc.data")
    run([exe], env={"TALLY_OUTPUT": out})
    with open(out, "rb") as f:
        data = f.read()
    # The record follows the header and the program name.
    p = 52 + struct.unpack_from("<I", data, 48)[0]
    values = 0
    for i, seg in enumerate(segs):
        expect(data[p:p + len(seg)] == seg, "segment %d differs from the file" % i)
        p += len(seg)
        if i < nseg - 1:
            nv = struct.unpack_from("<I", seg, len(seg) - 8)[0]
            zeros = bytes(8 * nv)
            _, _, _, _, zcrc, zop = struct.unpack_from("<6I", blob, 24 + 24 * i)
            expect(zcrc == zlib.crc32(seg + zeros) and zop == shift_op(len(seg) + 8 * nv),
                   "segment %d: CRC or shift with the zeros wrong" % i)
            p += 8 * nv
            values += nv
    expect(values == nvalues, "values %d, blob says %d" % (values, nvalues))


@case("crc-combine")
def check_crc_combine(a, work):
    """The runtime's CRC arithmetic (tally_rt_crc_mulmod, tally_rt_crc_shift)
    against zlib: crc (A + B) = mulmod (shift (len B), crc (A)) ^ crc (B),
    for random A and B, B up to 70000 bytes, and for the lengths 0 and 1."""
    test = os.path.join(work, "comb.c")
    with open(test, "w") as f:
        f.write("""
#include <stdint.h>
#include <stdio.h>
uint32_t tally_rt_crc_mulmod (uint32_t, uint32_t);
uint32_t tally_rt_crc_shift (uint64_t);
int main (void) {
  unsigned long long n; unsigned a, b;
  while (scanf ("%llu %x %x", &n, &a, &b) == 3)
    printf ("%08x\\n", tally_rt_crc_mulmod (tally_rt_crc_shift (n), a) ^ b);
  return 0; }
""")
    exe = os.path.join(work, "comb")
    run([a.cc, test, "-o", exe, a.runtime, "-lpthread", "-ldl"])
    rnd = random.Random(7)
    cases, want = [], []
    for k in range(300):
        x = rnd.randbytes(rnd.randrange(0, 64))
        y = rnd.randbytes(k if k < 2 else rnd.randrange(0, 70000))
        cases.append("%d %x %x" % (len(y), zlib.crc32(x), zlib.crc32(y)))
        want.append("%08x" % zlib.crc32(x + y))
    got = run([exe], input="\n".join(cases) + "\n").stdout.split()
    bad = [i for i in range(len(want)) if i >= len(got) or got[i] != want[i]]
    expect(not bad, "combined CRCs wrong in cases %s" % bad[:10])


def dump_ir(a, exe, work):
    """Instructions of the program's tally_dump () (callgrind, inclusive)."""
    return callgrind_ir(exe, "tally_dump", work,
                        env={"TALLY_OUTPUT": os.path.join(work, "dump-%s.data" % os.path.basename(
                            os.path.dirname(exe))), "PERF_MID": "1"})


@case("dump-cost")
def check_dump_cost(a, work):
    """A dump costs O(values), not O(map bytes): two programs with the same
    functions and values, one with block maps several times larger (more
    source lines a block); the instructions of tally_dump () (callgrind)
    grow by less than 0.1 a map byte (the field-by-field writer spent
    several a byte: copies and the CRC)."""
    if not shutil.which("valgrind"):
        raise Skip("(no valgrind)")
    progs = {}
    for name, lines in (("small", 1), ("large", 400)):
        exe = build(a, work, name, program(100, lines, big=False),
                    ["blocks=count"], a.runtime)
        data = os.path.join(work, "dump-%s.data" % name)
        ir = dump_ir(a, exe, work)
        with open(data, "rb") as f:
            progs[name] = (ir, records(f.read()))
    (ir_s, (f_s, v_s, m_s, _, _)), (ir_l, (f_l, v_l, m_l, _, _)) = \
        progs["small"], progs["large"]
    expect(f_s == f_l and v_s == v_l, "the programs should differ in maps only: "
           "%d/%d functions, %d/%d values" % (f_s, f_l, v_s, v_l))
    expect(m_l > 5 * m_s, "maps %d and %d bytes: not different enough" % (m_s, m_l))
    per_byte = (ir_l - ir_s) / (m_l - m_s)
    print("tally_dump: %d instructions with %d map bytes, %d with %d: %.3f a map byte"
          % (ir_s, m_s, ir_l, m_l, per_byte))
    expect(per_byte < 0.1, "tally_dump costs %.2f instructions a map byte" % per_byte)


if __name__ == "__main__":
    sys.exit(main("tally-perf-"))
