#!/usr/bin/env python3
"""benchmarks/merge-scale.py - `tally merge` of many per-rank files (issue
17's "merging at scale without MPI"): files/s, MB/s and peak memory for
1,000 and 10,000 generated files of a real program's size, at -j 1 and -j 2.

Usage: benchmarks/merge-scale.py [--base FILE] [--counts LIST] [--jobs LIST]
                                 [--work DIR] [--tally PATH]

  --base FILE   the data file the generated ones are copies of (default:
                Debian's lua5.4 built with -fplugin=tally
                -fplugin-arg-tally-blocks=count, run on a short script;
                the source is fetched with `apt-get source --download-only`)
  --counts LIST comma-separated file counts (default 1000,10000)
  --jobs LIST   comma-separated -j values (default 1,2)
  --work DIR    where lua is built and the files generated (default
                build/merge-bench; not tracked; 10,000 files of lua take
                7.3 GB)
  --tally PATH  the tally command (default build/tools/tally)

Generated file K is the base file with every function's entry and exit
counts ([0], [1]) raised by K and its own pid, CRC and size redone, so the
merge sums different values (its result is checked: entries of each
function N x base + N(N-1)/2).  The files are in the page cache when
merged (written just before, and one unmeasured merge first): the figures
are the command's own cost, not the disk's.  Peak memory is the merge
process's maximum resident set (wait4's ru_maxrss).  The table goes to
stdout (markdown), progress to stderr.
"""
import argparse
import os
import resource
import shutil
import struct
import subprocess
import sys
import time
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def log(msg):
    print("merge-scale: " + msg, file=sys.stderr, flush=True)


def build_lua(work, plugin, runtime):
    src = os.path.join(work, "src")
    os.makedirs(src, exist_ok=True)
    if not any(f.endswith(".orig.tar.gz") for f in os.listdir(src)):
        log("fetching Debian's lua5.4 source")
        subprocess.run(["apt-get", "source", "--download-only", "lua5.4"], cwd=src,
                       check=True, stdout=subprocess.DEVNULL)
    tar = [f for f in os.listdir(src) if f.startswith("lua5.4_") and f.endswith(".orig.tar.gz")][0]
    subprocess.run(["tar", "xzf", tar], cwd=src, check=True)
    d = os.path.join(src, [f for f in os.listdir(src) if f.startswith("lua-5.4")][0], "src")
    objs = []
    for f in sorted(os.listdir(d)):
        if f.endswith(".c") and f not in ("luac.c",):
            o = os.path.join(work, f[:-2] + ".o")
            subprocess.run(["gcc", "-O2", "-fplugin=" + plugin,
                            "-fplugin-arg-tally-blocks=count", "-DLUA_USE_LINUX",
                            "-c", os.path.join(d, f), "-o", o], check=True)
            objs.append(o)
    exe = os.path.join(work, "lua")
    subprocess.run(["gcc", *objs, "-o", exe, runtime, "-lm", "-ldl"], check=True)
    base = os.path.join(work, "lua.data")
    env = dict(os.environ, TALLY_OUTPUT=base)
    subprocess.run([exe, "-e", "local t = {} for i = 1, 1000 do t[i] = tostring(i) end "
                    "table.sort(t) print(#t)"], env=env, check=True, stdout=subprocess.DEVNULL)
    return base


def entry_offsets(b):
    """Byte offsets of every function's [0] value in version 2 file B."""
    pos = 48
    n = struct.unpack_from("<I", b, pos)[0]
    pos += 4 + n
    nmod = struct.unpack_from("<I", b, 40)[0]
    offs = []
    for _ in range(nmod):
        pos += 4 + 4 + 8 + 4
        nf = struct.unpack_from("<I", b, pos)[0]
        pos += 4
        for _ in range(2):
            pos += 4 + struct.unpack_from("<I", b, pos)[0]
        for _ in range(nf):
            for _ in range(4):
                pos += 4 + struct.unpack_from("<I", b, pos)[0]
            pos += 8
            nv = struct.unpack_from("<I", b, pos)[0]
            pos += 8
            offs.append(pos)
            pos += 8 * nv
            pos += 4 + struct.unpack_from("<I", b, pos)[0]
    return offs


def generate(base, out_dir, count):
    with open(base, "rb") as f:
        b = f.read()
    offs = entry_offsets(b)
    os.makedirs(out_dir, exist_ok=True)
    body = bytearray(b[:-16])
    orig = [struct.unpack_from("<QQ", b, o) for o in offs]
    paths = []
    for k in range(count):
        struct.pack_into("<Q", body, 24, 100000 + k)  # pid
        for o, (e, x) in zip(offs, orig):
            struct.pack_into("<QQ", body, o, e + k, x + k)
        path = os.path.join(out_dir, "r%d.data" % k)
        with open(path, "wb") as f:
            f.write(body)
            f.write(struct.pack("<IIQ", 0x444e4554, zlib.crc32(body), len(b)))
        paths.append(path)
    return paths, len(b), orig, offs


def merge(tally, jobs, paths, out):
    t0 = time.perf_counter()
    p = subprocess.Popen([tally, "merge", "-j", str(jobs), "-o", out, *paths])
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    if status != 0:
        sys.exit("merge-scale: tally merge failed (%d)" % status)
    return wall, ru.ru_maxrss, ru.ru_utime + ru.ru_stime


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base")
    ap.add_argument("--counts", default="1000,10000")
    ap.add_argument("--jobs", default="1,2")
    ap.add_argument("--work", default=os.path.join(ROOT, "build", "merge-bench"))
    ap.add_argument("--tally", default=os.path.join(ROOT, "build", "tools", "tally"))
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    base = a.base or build_lua(a.work, os.path.join(ROOT, "build", "plugin", "tally.so"),
                               os.path.join(ROOT, "build", "rt", "libtally-rt.a"))
    rows = []
    for count in [int(c) for c in a.counts.split(",")]:
        d = os.path.join(a.work, "files-%d" % count)
        shutil.rmtree(d, ignore_errors=True)
        log("generating %d files" % count)
        t0 = time.perf_counter()
        paths, size, orig, offs = generate(base, d, count)
        log("  %.1f s" % (time.perf_counter() - t0))
        out = os.path.join(a.work, "merged.data")
        merge(a.tally, 1, paths, out)  # warm-up, unmeasured
        for jobs in [int(j) for j in a.jobs.split(",")]:
            wall, rss_kb, cpu = merge(a.tally, jobs, paths, out)
            got = entry_offsets(open(out, "rb").read())
            m = open(out, "rb").read()
            for o, o2, (e, _) in list(zip(offs, got, orig))[:50]:
                v = struct.unpack_from("<Q", m, o2)[0]
                if v != count * e + count * (count - 1) // 2:
                    sys.exit("merge-scale: wrong sum %d at %d" % (v, o2))
            rows.append((count, jobs, size, wall, cpu, rss_kb))
            log("  %d files -j %d: %.2f s, %.0f files/s, %.0f MB/s, %.1f MiB peak"
                % (count, jobs, wall, count / wall, count * size / wall / 1e6, rss_kb / 1024))
        shutil.rmtree(d)
    print("| files | -j | file size | wall s | CPU s | files/s | MB/s | peak RSS MiB |")
    print("|------:|---:|----------:|-------:|------:|--------:|-----:|-------------:|")
    for count, jobs, size, wall, cpu, rss in rows:
        print("| %d | %d | %d | %.2f | %.2f | %.0f | %.0f | %.1f |"
              % (count, jobs, size, wall, cpu, count / wall, count * size / wall / 1e6, rss / 1024))


if __name__ == "__main__":
    main()
