#!/usr/bin/env python3
"""MPI jobs (doc/mpi.md): %r naming under mpirun, libtally-mpi's in-job
reduction (sums, per-rank min/max/rank of the max, records aligned by
checksum across dlopen and MPMD), `tally report --ranks`.  Skipped with
the reason where mpicc or mpirun is missing or libtally-mpi was not built.

Usage: run-mpi.py CHECK --plugin P --runtime RT --runtime-shared RTS
                  --tally-mpi LIB --tally T --include DIR --srcdir DIR
Exit status: 0 pass, 1 fail, 77 skip.
"""
import os
import re
import shutil
import struct
import subprocess
import sys

from checklib import Failure, Skip, expect, parse_args, run, run_check
from measurelib import papi_sources

RANK_VARS = ["OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "MV2_COMM_WORLD_RANK",
             "SLURM_PROCID", "FLUX_TASK_RANK", "PALS_RANKID", "ALPS_APP_PE"]


def need_mpi(a):
    for tool in ("mpicc", "mpirun"):
        if not shutil.which(tool):
            raise Skip("no %s (Debian: openmpi-bin libopenmpi-dev; ./dev installs them)" % tool)
    if a.tally_mpi and not os.path.exists(a.tally_mpi):
        raise Skip("libtally-mpi was not built (meson feature 'mpi')")
    # mpicc (Open MPI's wrapper) compiles with the compilers under test, the
    # ones the plugin was built for, not the system's gcc.
    os.environ["OMPI_CC"] = a.cc
    os.environ["OMPI_CXX"] = a.cxx


def mpirun(a, np_or_apps, env, work, check=True):
    """mpirun as root too, oversubscribed (this machine has 2 cores);
    NP_OR_APPS: a rank count and argv, or a list of (count, argv)."""
    cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe"]
    full = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
            "OMPI_MCA_btl": "self,vader", "OMPI_MCA_rmaps_base_oversubscribe": "1"}
    full.update(env)
    for k in env:
        cmd += ["-x", k]
    apps = np_or_apps
    for i, (n, argv) in enumerate(apps):
        if i:
            cmd.append(":")
        cmd += ["-np", str(n), *argv]
    return run(cmd, env=full, check=check, cwd=work, timeout=120)


def both_env(d, **more):
    """The environment of a TALLY_MPI=both job writing into D: each rank's
    file rR.data and the reduced file reduced.data; MORE adds to it."""
    env = {"TALLY_MPI": "both", "TALLY_OUTPUT": os.path.join(d, "r%r.data"),
           "TALLY_MPI_OUTPUT": os.path.join(d, "reduced.data")}
    env.update(more)
    return env


def build(a, work, name, srcs, libs=(), mpi_lib=True, shared_rt=True, extra=()):
    exe = os.path.join(work, name)
    rt = ["-L" + os.path.dirname(a.runtime_shared), "-ltally-rt",
          "-Wl,-rpath," + os.path.dirname(a.runtime_shared)] if shared_rt else [a.runtime]
    ml = ["-L" + os.path.dirname(a.tally_mpi), "-ltally-mpi",
          "-Wl,-rpath," + os.path.dirname(a.tally_mpi)] if mpi_lib else []
    run(["mpicc", "-O2", "-fplugin=" + a.plugin, "-I", a.include,
         *[os.path.join(a.srcdir, "mpi", s) for s in srcs], "-o", exe, *extra, *libs,
         *ml, *rt])
    return exe


# A reader of version 2 files, apart from format/datafile.c, so that the
# checks do not trust the code they check.
def parse(path):
    b = open(path, "rb").read()
    pos = [48]

    def u32():
        v = struct.unpack_from("<I", b, pos[0])[0]
        pos[0] += 4
        return v

    def u64():
        v = struct.unpack_from("<Q", b, pos[0])[0]
        pos[0] += 8
        return v

    def s():
        n = u32()
        v = b[pos[0]:pos[0] + n].decode()
        pos[0] += n
        return v

    assert b[:8] == b"TALLYDAT"
    nmod = struct.unpack_from("<I", b, 40)[0]
    d = {"program": s(), "modules": [], "meas": None, "ranks": None}
    seen = {}
    for _ in range(nmod):
        assert u32() == 0x4c444f4d
        u32()
        ck = u64()
        u32()
        nf = u32()
        src = s()
        s()
        fns = []
        for _ in range(nf):
            name = s()
            s(), s(), s()
            u32(), u32()
            nv = u32()
            u32()
            vals = [u64() for _ in range(nv)]
            mapsize = u32()
            pos[0] += mapsize
            fns.append((name, vals))
        occ = seen.get(ck, 0)
        seen[ck] = occ + 1
        d["modules"].append({"key": (ck, occ), "source": src, "fns": fns})
    if struct.unpack_from("<I", b, pos[0])[0] == 0x5341454d:
        u32()
        v = u32()
        names = [s() for _ in range(v)]
        assert u32() == nmod
        d["meas"] = names
        for m in d["modules"]:
            nf = u32()
            m["meas"] = [[u64() for _ in range(2 * v)] for _ in range(nf)]
    if struct.unpack_from("<I", b, pos[0])[0] == 0x534b4e52:
        u32()
        assert u32() == 1
        size = u32()
        assert u32() == nmod
        d["ranks"] = size
        for m in d["modules"]:
            m["nranks"] = u32()
            u32()
            nv = u64()
            m["stats"] = [(u64(), u64(), u32()) for _ in range(nv)]
    assert u32() == 0x444e4554
    return d


def flat(m):
    """A module's values in the RNKS order: counters, then MEAS pairs."""
    v = [x for _, vals in m["fns"] for x in vals]
    for pairs in m.get("meas", []):
        v += pairs
    return v


def check_reduction(reduced, per_rank):
    """REDUCED's records are the per-key sums of PER_RANK ({rank: parsed
    file}) and its RNKS statistics their min, max and lowest rank of the
    max over the ranks holding the record."""
    keys = {}
    for r, d in per_rank.items():
        for m in d["modules"]:
            keys.setdefault(m["key"], {})[r] = flat(m)
    got = {m["key"]: m for m in reduced["modules"]}
    expect(set(got) == set(keys), "reduced file's modules %s, per-rank files' %s"
           % (sorted(got), sorted(keys)))
    expect(reduced["ranks"] == len(per_rank), "job size %s, want %d"
           % (reduced["ranks"], len(per_rank)))
    for k, by_rank in keys.items():
        m = got[k]
        vals = flat(m)
        n = len(vals)
        expect(m["nranks"] == len(by_rank), "module %x: %d ranks, want %d"
               % (k[0], m["nranks"], len(by_rank)))
        for i in range(n):
            col = {r: v[i] for r, v in by_rank.items()}
            mx = max(col.values())
            want = (sum(col.values()), min(col.values()), mx,
                    min(r for r, v in col.items() if v == mx))
            have = (vals[i], *m["stats"][i])
            expect(have == want, "module %x value %d: sum/min/max/rank %s, want %s"
                   % (k[0], i, have, want))


def build_common(a, work, extra=()):
    obj = os.path.join(work, "common.o")
    run(["mpicc", "-O2", "-fPIC", "-fplugin=" + a.plugin, *extra, "-c",
         os.path.join(a.srcdir, "mpi", "common.c"), "-o", obj])
    return obj


def after_finalize(per_rank):
    """main's return comes after MPI_Finalize: counted in each rank's own
    file (written at exit), not in the reduced one (doc/mpi.md); so is the
    time of main's activation.  Take them out of the per-rank files."""
    for f in per_rank.values():
        for m in f["modules"]:
            for i, (name, v) in enumerate(m["fns"]):
                if name == "main":
                    expect(v[1] == 1, "main returned %d times" % v[1])
                    v[1] = 0
                    if m.get("meas"):
                        m["meas"][i] = None


def strip_main_meas(reduced, per_rank):
    """main's measured values (voided by after_finalize) as zeros on both
    sides."""
    for d in [reduced] + list(per_rank.values()):
        width = 2 * len(d["meas"] or [])
        for m in d["modules"]:
            for i, (name, _) in enumerate(m["fns"]):
                if name == "main" and m.get("meas"):
                    m["meas"][i] = [0] * width


def check_mpmd(a, work):
    """mpirun -np 2 mixed : -np 3 other: the unit both link is one record
    held by 5 ranks, each program's own unit one held by 2 and by 3; rank 0
    lacks other.c's record and gets it from rank 2; every value is the
    sum, min, max and rank of the max of the per-rank files'."""
    need_mpi(a)
    obj = build_common(a, work)
    mixed = build(a, work, "mixed", ["mixed.c"], libs=[obj, "-ldl"])
    other = build(a, work, "other", ["other.c"], libs=[obj])
    mpirun(a, [(2, [mixed]), (3, [other])], both_env(work), work)
    per = rank_files(work, "r")
    expect(sorted(per) == list(range(5)), "per-rank files %s" % sorted(per))
    after_finalize(per)
    red = parse(os.path.join(work, "reduced.data"))
    check_reduction(red, per)
    holders = {os.path.basename(m["source"]): m["nranks"] for m in red["modules"]}
    expect(holders == {"common.c": 5, "mixed.c": 2, "other.c": 3},
           "records and their holders: %s" % holders)
    # common_step: ranks 0 and 1 (mixed) call it rank + 1 times and once
    # more from mixed_only, ranks 2..4 (other) 3 + rank times.
    m = [m for m in red["modules"] if m["source"].endswith("common.c")][0]
    stats = m["stats"][0]
    expect((m["fns"][0][1][0], stats) == (2 + 3 + 5 + 6 + 7, (2, 7, 4)),
           "common_step: sum %d, min/max/rank %s" % (m["fns"][0][1][0], stats))


def check_dlopen(a, work):
    """Rank 2 of 4 alone dlopens an instrumented library: its record is in
    the reduced file, held by 1 rank, with rank 2's counts as sum, min and
    max; rank 0, which lacks it, got it from rank 2."""
    need_mpi(a)
    obj = build_common(a, work)
    mixed = build(a, work, "mixed", ["mixed.c"], libs=[obj, "-ldl"])
    plug = os.path.join(work, "plug.so")
    run(["mpicc", "-O2", "-fPIC", "-shared", "-fplugin=" + a.plugin,
         os.path.join(a.srcdir, "mpi", "plug.c"), "-o", plug,
         "-L" + os.path.dirname(a.runtime_shared), "-ltally-rt",
         "-Wl,-rpath," + os.path.dirname(a.runtime_shared)])
    mpirun(a, [(4, [mixed, plug, "2"])], both_env(work), work)
    per = rank_files(work, "r")
    after_finalize(per)
    red = parse(os.path.join(work, "reduced.data"))
    check_reduction(red, per)
    m = [m for m in red["modules"] if m["source"].endswith("plug.c")]
    expect(len(m) == 1 and m[0]["nranks"] == 1, "plug.c records: %s" % m)
    inner = [v for name, v in m[0]["fns"] if name == "plug_inner"][0]
    i = [name for name, _ in m[0]["fns"]].index("plug_inner")
    nv = sum(len(v) for _, v in m[0]["fns"][:i])
    expect(inner[0] == 21 and m[0]["stats"][nv] == (21, 21, 2),
           "plug_inner: %d calls, stats %s, want 21 and (21, 21, 2)"
           % (inner[0], m[0]["stats"][nv]))


def check_measured(a, work):
    """measure=cycles: the MEAS values are reduced too (sum, min, max,
    rank of the max per function's inclusive and exclusive cycles), equal
    to those of the per-rank files."""
    need_mpi(a)
    exe = build(a, work, "imbalance-cycles", ["imbalance.c"],
                extra=["-fplugin-arg-tally-hooks=call", "-fplugin-arg-tally-measure=cycles"])
    mpirun(a, [(4, [exe, "3"])], both_env(work), work)
    per = rank_files(work, "r")
    after_finalize(per)
    red = parse(os.path.join(work, "reduced.data"))
    expect(red["meas"] == ["cycles"], "reduced MEAS names %s" % red["meas"])
    strip_main_meas(red, per)
    check_reduction(red, per)
    m = red["modules"][0]
    names = [n for n, _ in m["fns"]]
    i = names.index("work")
    nc = sum(len(v) for _, v in m["fns"])
    incl = m["stats"][nc + 2 * i]
    expect(incl[2] == 3, "work's inclusive cycles largest on rank %d, want the slow rank 3"
           % incl[2])


def check_dying_rank(a, work):
    """A rank that ends before MPI_Finalize (exit) or reaches it late:
    no rank hangs, and every rank's counts reach its own file.  Late: the
    others give up after TALLY_MPI_TIMEOUT=1 and say so.  Exit: Open
    MPI's mpirun ends the job: the dead rank's file is written by its exit
    dump; the others' by TALLY_DUMP_ON=SIGTERM when mpirun's SIGTERM comes
    before its SIGKILL (usually), checked when written."""
    import time
    need_mpi(a)
    exe = build(a, work, "dies", ["dies.c"])
    for how in ("late", "exit"):
        d = os.path.join(work, how)
        os.mkdir(d)
        t0 = time.time()
        p = mpirun(a, [(3, [exe, how])],
                   dict({"TALLY_OUTPUT": os.path.join(d, "r%r.data"),
                         "TALLY_DUMP_ON": "SIGTERM"},
                        **({"TALLY_MPI_TIMEOUT": "1"} if how == "late" else {})),
                   d, check=False)
        took = time.time() - t0
        expect(took < 30, "%s: the job took %.1f s" % (how, took))
        per = rank_files(d, "r")
        # Exit: rank 1's own exit dump writes its file; the others' depend
        # on how the launcher ends them (Open MPI: SIGTERM, and SIGKILL
        # soon after, which may come first), so they are checked if there.
        want = [0, 1, 2] if how == "late" else [1]
        expect(all(r in per for r in want), "%s: files of ranks %s (stderr %r)"
               % (how, sorted(per), p.stderr))
        for r, f in per.items():
            steps = [v[0] for m in f["modules"] for name, v in m["fns"] if name == "step"]
            expect(steps == [r + 1], "%s: rank %d counted step %s" % (how, r, steps))
            expect(f["ranks"] is None, "%s: rank %d's file is a reduced one" % (how, r))
        if how == "late":
            expect(p.returncode == 0, "late: exit %d" % p.returncode)
            expect(p.stderr.count("timed out (TALLY_MPI_TIMEOUT)") >= 2,
                   "late: no timeout reported: %r" % p.stderr)


def check_rank_names(a, work):
    """%r and %R under mpirun, without libtally-mpi: one file per rank,
    named by its rank and the job size, holding that rank's counts."""
    need_mpi(a)
    exe = build(a, work, "imbalance-plain", ["imbalance.c"], mpi_lib=False)
    p = mpirun(a, [(4, [exe, "2"])], {"TALLY_OUTPUT": os.path.join(work, "p.%r-of-%R.data")}, work)
    names = sorted(f for f in os.listdir(work) if f.endswith(".data"))
    expect(names == ["p.%d-of-4.data" % r for r in range(4)], "files: %s" % names)
    did = {int(r): int(n) for r, n in re.findall(r"rank (\d+) work (\d+)", p.stdout)}
    for r in range(4):
        f = parse(os.path.join(work, "p.%d-of-4.data" % r))
        got = [v[0] for m in f["modules"] for name, v in m["fns"] if name == "work"]
        expect(got == [did[r]], "rank %d's file: work %s, the program says %d"
               % (r, got, did[r]))


def check_ranks_report(a, work):
    """`tally report --ranks` of an 8-rank run where rank 5 calls work 500
    times and rank R otherwise 10 (R + 1): on the reduced file and on the
    per-rank files alike, work comes first (sorted by imbalance) with the
    slow rank as the rank of the max, the max, min and mean the program's
    own figures give, and the imbalance max / mean exactly; --csv says the
    same; --rank 5 reports rank 5's file alone."""
    import csv
    import io
    import json
    need_mpi(a)
    exe = build(a, work, "imbalance", ["imbalance.c"])
    slow = 5
    p = mpirun(a, [(8, [exe, str(slow)])], both_env(work), work)
    did = {int(r): int(n) for r, n in re.findall(r"rank (\d+) work (\d+)", p.stdout)}
    expect(sorted(did) == list(range(8)), "program output %r" % p.stdout)
    total, mx = sum(did.values()), max(did.values())
    want = {"sum": total, "min": min(did.values()), "max": mx,
            "max_rank": min(r for r, n in did.items() if n == mx),
            "mean": total / 8, "imbalance": mx / (total / 8)}
    expect(want["max_rank"] == slow, "the program's slow rank is %d" % want["max_rank"])
    # Per-rank files in a shuffled, unpadded order: r10 would sort before
    # r2 as text; here r0..r7 given backwards.
    files = [os.path.join(work, "r%d.data" % r) for r in reversed(range(8))]
    outs = {}
    for what, args in [("reduced", [os.path.join(work, "reduced.data")]), ("files", files)]:
        j = json.loads(run([a.tally, "report", "--ranks", "--json", *args]).stdout)
        expect(j["ranks"] == 8, "%s: %s ranks" % (what, j["ranks"]))
        first = j["functions"][0]
        expect(first["name"] == "work", "%s: first row %s, want work (most imbalanced)"
               % (what, first["name"]))
        got = first["calls"]
        for k, v in want.items():
            expect(abs(got[k] - v) <= 1e-12 * max(1, abs(v)),
                   "%s: work %s = %s, want %s" % (what, k, got[k], v))
        outs[what] = [(f["name"], f["calls"]) for f in j["functions"]]
        text = run([a.tally, "report", "--ranks", *args]).stdout.splitlines()
        row = text[2].split()
        expect(row[:3] == ["%.3f" % want["imbalance"], str(slow), str(mx)] and row[5] == "work",
               "%s: text row %r" % (what, text[2]))
        rows = list(csv.DictReader(io.StringIO(
            run([a.tally, "report", "--ranks", "--csv", *args]).stdout)))
        w = [r for r in rows if r["function"] == "work"][0]
        expect((int(w["calls_max"]), int(w["calls_max_rank"]), int(w["calls_min"]))
               == (mx, slow, want["min"]), "%s: csv row %s" % (what, w))
    expect(outs["reduced"] == outs["files"], "reduced and per-rank reports differ:\n%s\n%s"
           % (outs["reduced"], outs["files"]))
    # The same commands under ASan/UBSan (leaks included).
    if a.tally_asan:
        for args in (["--ranks", "--json", os.path.join(work, "reduced.data")],
                     ["--ranks", "--csv", *files], ["--ranks", *files],
                     ["--rank", "5", *files], ["--rank=2", "--json", *files]):
            p = run([a.tally_asan, "report", *args], check=False)
            expect(p.returncode == 0 and "Sanitizer" not in p.stderr,
                   "tally-asan report %s: %d %r" % (" ".join(args[:2]), p.returncode, p.stderr))
    out = run([a.tally, "report", "--csv", "--rank", "5", *files]).stdout
    expect(re.search(r"^%d,%d,work," % (did[5], did[5]), out, re.M),
           "--rank 5:\n%s" % out)
    p = run([a.tally, "report", "--rank", "8", *files], check=False)
    expect(p.returncode == 2 and "ranks 0 to 7" in p.stderr, "--rank 8: %r" % p.stderr)
    p = run([a.tally, "report", "--ranks", os.path.join(work, "reduced.data"), *files],
            check=False)
    expect(p.returncode == 2 and "reduced from 8 ranks" in p.stderr,
           "reduced and per-rank files mixed: %r" % p.stderr)


def check_preload(a, work):
    """LD_PRELOAD=libtally-mpi.so: a program with the shared runtime is
    reduced into one file; one with the static runtime (whose functions
    it cannot reach) is told so on rank 0 and every rank writes its own
    file, nothing lost."""
    need_mpi(a)
    shared = build(a, work, "imb-shared", ["imbalance.c"], mpi_lib=False)
    static = build(a, work, "imb-static", ["imbalance.c"], mpi_lib=False, shared_rt=False)
    d = os.path.join(work, "shared")
    os.mkdir(d)
    mpirun(a, [(3, [shared, "1"])], {"LD_PRELOAD": a.tally_mpi,
                                      "TALLY_OUTPUT": os.path.join(d, "p.%r.data")}, d)
    expect(os.listdir(d) == ["p.0.data"], "shared runtime, preloaded: %s" % os.listdir(d))
    expect(parse(os.path.join(d, "p.0.data"))["ranks"] == 3, "not reduced")
    d = os.path.join(work, "static")
    os.mkdir(d)
    p = mpirun(a, [(3, [static, "1"])], {"LD_PRELOAD": a.tally_mpi,
                                          "TALLY_OUTPUT": os.path.join(d, "p.%r.data")}, d)
    expect(sorted(os.listdir(d)) == ["p.%d.data" % r for r in range(3)],
           "static runtime, preloaded: %s" % os.listdir(d))
    expect(p.stderr.count("no tally runtime that libtally-mpi can reach") == 1,
           "static runtime, preloaded: %r" % p.stderr)


def check_ranks_derived(a, work):
    """hooks=none blocks=count (calls derived from block counts): report
    --ranks of per-rank files derives each rank's calls (rank 2 of 4 calls
    work 500 times); of the reduced file, which keeps no extremes of the
    derived calls, it shows none and says why."""
    import json
    need_mpi(a)
    exe = build(a, work, "imb-derived", ["imbalance.c"],
                extra=["-fplugin-arg-tally-hooks=none", "-fplugin-arg-tally-blocks=count"])
    mpirun(a, [(4, [exe, "2"])], both_env(work), work)
    files = [os.path.join(work, "r%d.data" % r) for r in range(4)]
    j = json.loads(run([a.tally, "report", "--ranks", "--json", *files]).stdout)
    w = [f for f in j["functions"] if f["name"] == "work"][0]["calls"]
    expect((w["max"], w["max_rank"], w["min"], w["sum"]) == (500, 2, 10, 10 + 20 + 500 + 40),
           "per-rank files, derived calls of work: %s" % w)
    p = run([a.tally, "report", "--ranks", "--json", os.path.join(work, "reduced.data")])
    j = json.loads(p.stdout)
    expect(all(f["calls"] is None for f in j["functions"]),
           "reduced file: derived calls given: %s" % j["functions"])
    expect("keeps the extremes of each block's count" in p.stderr, "no note: %r" % p.stderr)


PATHS = ["-fplugin-arg-tally-hooks=call", "-fplugin-arg-tally-measure=cycles",
         "-fplugin-arg-tally-paths=on"]


def tree_lines(a, path, extra=()):
    """`tally report --tree --all PATH` as (calls, incl, excl, path) rows,
    and `tally flame --folded` as {stack: value}."""
    out = run([a.tally, "report", "--tree", "--all", *extra, path]).stdout.splitlines()
    rows = []
    col = out[0].index("call path")
    for line in out[1:]:
        f = line[:col].split()
        rows.append((int(f[0]), int(f[1]), int(f[2]), line[col:]))
    fl = {}
    for line in run([a.tally, "flame", "--folded", "--all", *extra, path]).stdout.splitlines():
        stack, v = line.rsplit(" ", 1)
        fl[stack] = int(v)
    return rows, fl


def by_top_path(rows):
    """ROWS with the subtrees of main's level in the order of their first
    line's text: the tree orders them by cycles, and main's paths (several in
    an MPMD job) have 0 cycles in the reduced file but the ranks' measured
    ones merged, so their order between the two is a matter of timing."""
    indent = lambda row: len(row[3]) - len(row[3].lstrip())
    mains = [indent(row) for row in rows if row[3].strip().startswith("main ")]
    top = min(mains) if mains else -1
    groups = []
    for row in rows:
        if not groups or indent(row) <= top:
            groups.append([])
        groups[-1].append(row)
    return [row for g in sorted(groups, key=lambda g: g[0][3]) for row in g]


def check_paths_equal(a, work, reduced, files, mains, what, extra=()):
    """`report --tree` and `flame` of REDUCED print what they print for
    `tally merge` of the per-rank FILES, but for the paths of main
    (MAINS: its call path lines), whose activation is still running at
    MPI_Finalize: 0 calls and cycles in the reduced file; in the per-rank
    files it ended at exit (doc/mpi.md)."""
    merged = os.path.join(work, "merged-" + what + ".data")
    run([a.tally, "merge", "-o", merged, *files])
    red_rows, red_flame = tree_lines(a, reduced, extra)
    mer_rows, mer_flame = tree_lines(a, merged, extra)
    expect(len(red_rows) == len(mer_rows) and len(red_rows) > mains,
           "%s: %d call paths in the reduced file, %d merged:\n%s\n%s"
           % (what, len(red_rows), len(mer_rows), red_rows, mer_rows))
    seen = 0
    for r, m in zip(by_top_path(red_rows), by_top_path(mer_rows)):
        expect(r[3] == m[3], "%s: path %r in the reduced file, %r merged" % (what, r[3], m[3]))
        if r[3].strip().startswith("main "):
            seen += 1
            expect(r[:3] == (0, 0, 0) and m[0] >= 1,
                   "%s: main: %s reduced, %s merged" % (what, r[:3], m[:3]))
        else:
            expect(r == m, "%s: reduced %s, merged %s" % (what, r, m))
    expect(seen == mains, "%s: %d paths of main, want %d" % (what, seen, mains))
    # main's own line (its exclusive value, 0 in the reduced file) aside.
    mer_flame = {k: v for k, v in mer_flame.items() if not k.endswith("main")}
    red_flame = {k: v for k, v in red_flame.items() if not k.endswith("main")}
    expect(red_flame == mer_flame and red_flame,
           "%s: flame of the reduced file %s, of the merged %s" % (what, red_flame, mer_flame))
    return red_rows


def check_paths(a, work):
    """paths=on: `report --tree --all` (frames below main included) and
    `flame` of the reduced file equal those of `tally merge` of the
    per-rank files (TALLY_MPI=both), at 1, 2, 4 and 8 ranks where the
    last rank alone dlopens a module, and in an MPMD job of two programs
    (each one's main a path of its own); and the sums are the program's:
    common_step under main is called rank + 1 times a rank, plug_inner
    under plug_run 7 (rank + 1) times on the dlopening rank."""
    need_mpi(a)
    obj = build_common(a, work, PATHS)
    mixed = build(a, work, "mixed", ["mixed.c"], libs=[obj, "-ldl"], extra=PATHS)
    other = build(a, work, "other", ["other.c"], libs=[obj], extra=PATHS)
    plug = os.path.join(work, "plug.so")
    run(["mpicc", "-O2", "-fPIC", "-shared", "-fplugin=" + a.plugin, *PATHS,
         os.path.join(a.srcdir, "mpi", "plug.c"), "-o", plug,
         "-L" + os.path.dirname(a.runtime_shared), "-ltally-rt",
         "-Wl,-rpath," + os.path.dirname(a.runtime_shared)])
    jobs = [("np%d" % n, [(n, [mixed, plug, str(n - 1)])], n) for n in (1, 2, 4, 8)]
    jobs.append(("mpmd", [(2, [mixed, plug, "1"]), (3, [other])], 5))
    for what, apps, np in jobs:
        d = os.path.join(work, what)
        os.mkdir(d)
        mpirun(a, apps, both_env(d), d)
        files = [os.path.join(d, "r%d.data" % r) for r in range(np)]
        rows = check_paths_equal(a, work, os.path.join(d, "reduced.data"), files,
                                 2 if what == "mpmd" else 1, what)
        nmixed = 2 if what == "mpmd" else np
        by = {}
        depth = {}
        for c, _, _, p in rows:
            name = p.split()[0]
            indent = len(p) - len(p.lstrip())
            depth[indent] = name
            key = "/".join(depth[i] for i in sorted(depth) if i <= indent
                           and not depth[i].startswith("["))
            for i in [i for i in depth if i > indent]:
                del depth[i]
            by[key] = by.get(key, 0) + c
        # mixed: common_step rank + 1 times from main, plug_inner 7 (R + 1)
        # times on the dlopening rank R; other: common_step 3 + rank times
        # from other_only.
        plug_rank = np - 1 if what != "mpmd" else 1
        want = {"main/common_step": sum(r + 1 for r in range(nmixed)),
                "main/mixed_only/common_step": nmixed,
                "main/plug_run/plug_inner": 7 * (plug_rank + 1),
                "main/other_only/common_step": sum(3 + r for r in range(2, 5))
                if what == "mpmd" else None}
        got = {k: by.get(k) for k in want}
        expect(got == want, "%s: calls per path %s, want %s" % (what, got, want))


def check_merge_output(a, work):
    """TALLY_MPI_OUTPUT with %m: two jobs (3 ranks, then 2, paths=on) merge
    their reduced files into one, by the runtime's merge-on-write: its
    counts and call paths are those of `tally merge` of the five per-rank
    files (main's exits and path aside: after MPI_Finalize), with no
    per-rank statistics (RNKS: one job's do not add up with another's).
    The runtime's rules hold: a damaged existing file is moved to .bad,
    not merged; a symbolic link at the path is not followed (its target
    is untouched, the error said, and every rank writes its own file)."""
    need_mpi(a)
    obj = build_common(a, work, PATHS)
    mixed = build(a, work, "mixed", ["mixed.c"], libs=[obj, "-ldl"], extra=PATHS)
    pattern = os.path.join(work, "sum.%m.data")

    def job(tag, np, out=pattern):
        return mpirun(a, [(np, [mixed])],
                      {"TALLY_MPI": "both", "TALLY_OUTPUT": os.path.join(work, tag + ".r%r.data"),
                       "TALLY_MPI_OUTPUT": out}, work)
    job("j1", 3)
    sums = [f for f in os.listdir(work) if f.startswith("sum.") and f.endswith(".data")]
    expect(len(sums) == 1, "files: %s" % os.listdir(work))
    total = os.path.join(work, sums[0])
    expect(b"RNKS" not in open(total, "rb").read(), "%m: the file has per-rank statistics")
    job("j2", 2)
    files = [os.path.join(work, "j1.r%d.data" % r) for r in range(3)] + \
        [os.path.join(work, "j2.r%d.data" % r) for r in range(2)]
    check_paths_equal(a, work, total, files, 1, "merged")
    merged = os.path.join(work, "merged-merged.data")
    rows = {}
    for what, path in (("sum", total), ("merge", merged)):
        out = run([a.tally, "report", "--csv", path]).stdout.splitlines()[1:]
        rows[what] = sorted(tuple(l.split(",")) for l in out)
    for (s_row, m_row) in zip(rows["sum"], rows["merge"]):
        if s_row[2] == "main":
            expect(s_row[0] == m_row[0] == "5" and s_row[1] == "0" and m_row[1] == "5",
                   "main: %s in the merged reduced file, %s by tally merge" % (s_row, m_row))
        else:
            expect(s_row == m_row, "%s in the merged reduced file, %s by tally merge"
                   % (s_row, m_row))
    expect(len(rows["sum"]) == len(rows["merge"]) == 3, "rows %s" % rows)
    # A damaged file at the path: moved aside, a fresh file written.
    with open(total, "r+b") as f:
        f.seek(60)
        f.write(b"\xff\xff\xff\xff")
    p = job("j3", 2)
    expect(os.path.exists(total + ".bad") and "moved aside to" in p.stderr,
           "damaged file: %s, stderr %r" % (sorted(os.listdir(work)), p.stderr))
    out = run([a.tally, "report", "--csv", total]).stdout
    expect(re.search(r"^2,2,mixed_only,", out, re.M), "after .bad: one job's counts:\n" + out)
    # A symbolic link at the path: not followed.
    d = os.path.join(work, "link")
    os.mkdir(d)
    victim = os.path.join(d, "victim")
    with open(victim, "w") as f:
        f.write("not yours\n")
    os.symlink(victim, os.path.join(d, sums[0]))  # the name %m gives mixed
    p = mpirun(a, [(2, [mixed])], {"TALLY_OUTPUT": os.path.join(d, "own.r%r.data"),
                                   "TALLY_MPI_OUTPUT": os.path.join(d, "sum.%m.data")}, d)
    expect(open(victim).read() == "not yours\n", "the link's target was written")
    expect(sorted(f for f in os.listdir(d) if f.startswith("own.")) == ["own.r0.data", "own.r1.data"],
           "symlink: files %s, stderr %r" % (sorted(os.listdir(d)), p.stderr))
    expect("symbolic link (not followed)" in p.stderr, "symlink: stderr %r" % p.stderr)


def check_routines(a, work):
    """TALLY_MPI_ROUTINES=1: the reduced file has a record of the MPI
    routines (libtally-mpi's own unit) whose counts are the program's
    (routines.c: 2 barriers and 3 allreduces a rank, rank R sends R
    messages, rank 0 receives them all), with sum, min, max and rank of
    the max per routine, and (measure=cycles) cycles spent in MPI_Recv;
    report --ranks names rank 3 for MPI_Send.  Unset: no such record."""
    import json
    need_mpi(a)
    exe = build(a, work, "routines", ["routines.c"],
                extra=["-fplugin-arg-tally-hooks=call", "-fplugin-arg-tally-measure=cycles"])
    src = "libtally-mpi (MPI routines)"
    off = os.path.join(work, "off.data")
    mpirun(a, [(4, [exe])], {"TALLY_OUTPUT": off}, work)
    expect(not [m for m in parse(off)["modules"] if m["source"] == src],
           "a routines record without TALLY_MPI_ROUTINES")
    on = os.path.join(work, "on.data")
    p = mpirun(a, [(4, [exe])], {"TALLY_OUTPUT": on, "TALLY_MPI_ROUTINES": "1"}, work)
    said = dict(re.findall(r"(\w+) (\d+)", p.stdout))
    d = parse(on)
    m = [m for m in d["modules"] if m["source"] == src]
    expect(len(m) == 1 and m[0]["nranks"] == 4, "routines records: %s" % m)
    m = m[0]
    names = [n for n, _ in m["fns"]]
    nc = sum(len(v) for _, v in m["fns"])

    def stat(name):
        i = names.index(name)
        return (m["fns"][i][1][0], *m["stats"][2 * i])
    want = {"MPI_Barrier": (int(said["barrier"]), 2, 2, 0),
            "MPI_Allreduce": (int(said["allreduce"]), 3, 3, 0),
            "MPI_Send": (int(said["send"]), 0, 3, 3),
            "MPI_Recv": (int(said["recv"]), 0, int(said["recv"]), 0),
            "MPI_Bcast": (0, 0, 0, 0)}
    got = {k: stat(k) for k in want}
    expect(got == want, "routines: sum/min/max/rank %s, want %s" % (got, want))
    i = names.index("MPI_Recv")
    incl, excl = m["meas"][i][0], m["meas"][i][1]
    expect(incl > 0 and incl == excl and m["stats"][nc + 2 * i][2] == 0,
           "MPI_Recv cycles: %d/%d, stats %s" % (incl, excl, m["stats"][nc + 2 * i]))
    j = json.loads(run([a.tally, "report", "--ranks", "--json", on]).stdout)
    send = [f for f in j["functions"] if f["name"] == "MPI_Send"][0]["calls"]
    expect((send["max"], send["max_rank"], send["sum"]) == (3, 3, 6), "report --ranks: %s" % send)


def check_paths_papi(a, work):
    """measure=papi paths=on: the PEVT events per
    call path of the reduced file equal those of `tally merge` of the
    per-rank files, shown by report --tree --event and flame --event; with
    the fake PAPI and, where it can measure, the machine's (report --tree
    --event's columns once did not line up with their headings for an
    event name longer than 11 characters, such as perf::TASK-CLOCK)."""
    need_mpi(a)
    # The shared runtime has measure=papi's hooks built in.
    exe = build(a, work, "imb-papi", ["imbalance.c"],
                extra=PATHS[:1] + ["-fplugin-arg-tally-measure=papi",
                                   "-fplugin-arg-tally-paths=on"])
    for source, events, src_env, cpu_ev in papi_sources(a, work):
        d = os.path.join(work, source.replace(" ", "-"))
        os.mkdir(d)
        env = both_env(d, TALLY_PAPI_EVENTS=cpu_ev, **src_env)
        p = mpirun(a, [(4, [exe, "2"])], env, d)
        red = os.path.join(d, "reduced.data")
        expect(cpu_ev in run([a.tally, "dump", red]).stdout,
               "%s: no %s in the reduced file: %s" % (source, cpu_ev, p.stderr.strip()[:300]))
        files = [os.path.join(d, "r%d.data" % r) for r in range(4)]
        rows = check_paths_equal(a, d, red, files, 1, "papi " + source,
                                 ["--event=" + cpu_ev])
        work_row = [r for r in rows if r[3].strip().startswith("work ")]
        expect(work_row and work_row[0][0] == 10 + 20 + 500 + 40 and work_row[0][1] > 0,
               "%s: work's path: %s" % (source, work_row))


def rank_files(work, prefix):
    out = {}
    for f in os.listdir(work):
        mm = re.fullmatch(re.escape(prefix) + r"(\d+)\.data", f)
        if mm:
            out[int(mm.group(1))] = parse(os.path.join(work, f))
    return out


def check_reduce(a, work):
    """At 1, 2, 4 and 8 ranks (TALLY_MPI=both): the reduced file holds the
    sums of the per-rank files exactly, and per value their min, max and
    rank of the max; the per-rank files hold what the program did."""
    need_mpi(a)
    exe = build(a, work, "imbalance", ["imbalance.c"])
    for np in (1, 2, 4, 8):
        d = os.path.join(work, "np%d" % np)
        os.mkdir(d)
        p = mpirun(a, [(np, [exe, str(np - 1)])], both_env(d), d)
        expect(sorted(os.listdir(d)) == sorted(["reduced.data"] + ["r%d.data" % r for r in range(np)]),
               "%d ranks wrote %s" % (np, sorted(os.listdir(d))))
        per = rank_files(d, "r")
        after_finalize(per)
        did = {int(r): int(n) for r, n in re.findall(r"rank (\d+) work (\d+)", p.stdout)}
        for r, f in per.items():
            work_calls = [v[0] for m in f["modules"] for name, v in m["fns"] if name == "work"]
            expect(work_calls == [did[r]], "rank %d: work counted %s, the program says %d"
                   % (r, work_calls, did[r]))
        check_reduction(parse(os.path.join(d, "reduced.data")), per)
        # The reduced file is an ordinary one for tally.
        out = run([a.tally, "report", "--csv", os.path.join(d, "reduced.data")]).stdout
        total = sum(did.values())
        expect(re.search(r"^%d,%d,work," % (total, total), out, re.M),
               "%d ranks: report of the reduced file:\n%s" % (np, out))


def check_modes(a, work):
    """TALLY_MPI: reduce (default) writes one file in the whole job, files
    one per rank and no reduced one, both the two (the reduced one as
    TALLY_OUTPUT.reduced, not replaced by rank 0's own); a bad value is
    reported."""
    need_mpi(a)
    exe = build(a, work, "imbalance", ["imbalance.c"])
    for mode, want in [(None, ["one.data"]),
                       ("files", ["one.data.%d" % r for r in range(4)]),
                       ("both", ["one.data", "one.data.reduced"]),
                       ("nonsense", ["one.data"])]:
        d = os.path.join(work, mode or "default")
        os.mkdir(d)
        env = {"TALLY_OUTPUT": os.path.join(d, "one.data" + (".%r" if mode == "files" else ""))}
        if mode == "both":  # rank 0's own file: the others' go elsewhere
            env = {"TALLY_OUTPUT": os.path.join(d, "one.data"), "TALLY_MPI": "both"}
        if mode:
            env["TALLY_MPI"] = mode
        p = mpirun(a, [(4, [exe])], env, d)
        expect(sorted(os.listdir(d)) == want, "TALLY_MPI=%s wrote %s, want %s"
               % (mode, sorted(os.listdir(d)), want))
        if mode == "nonsense":
            expect("TALLY_MPI=nonsense is not one of reduce, files, both" in p.stderr,
                   "bad TALLY_MPI not reported: %r" % p.stderr)
    f = parse(os.path.join(work, "default", "one.data"))
    expect(f["ranks"] == 4, "default mode: job size %s" % f["ranks"])
    f = parse(os.path.join(work, "both", "one.data.reduced"))
    expect(f["ranks"] == 4, "both: the reduced file's job size %s" % f["ranks"])


def check_static_runtime(a, work):
    """A program linked with the static runtime and -ltally-mpi is
    reduced too (the runtime's image functions are exported to it)."""
    need_mpi(a)
    exe = build(a, work, "imbalance-static", ["imbalance.c"], shared_rt=False)
    mpirun(a, [(3, [exe])], {"TALLY_OUTPUT": os.path.join(work, "s.data")}, work)
    expect(os.listdir(work).count("s.data") == 1, "files: %s" % os.listdir(work))
    expect(parse(os.path.join(work, "s.data"))["ranks"] == 3, "not a reduced file")


def rewrap(body):
    """BODY (a whole file, trailer included) with its size and CRC redone."""
    import zlib
    b = bytearray(body[:-16])
    size = len(b) + 16
    b[16:24] = struct.pack("<Q", size)
    return bytes(b) + struct.pack("<IIQ", 0x444e4554, zlib.crc32(bytes(b)), size)


def ranks_variants(good):
    """Damaged RNKS records of GOOD (a reduced file of one module)."""
    at = good.rindex(b"RNKS")
    b = good[:-16]

    def patch(off, fmt, v):
        x = bytearray(b)
        struct.pack_into(fmt, x, at + off, v)
        return bytes(x) + good[-16:]
    size = struct.unpack_from("<I", b, at + 8)[0]
    nv = struct.unpack_from("<Q", b, at + 24)[0]
    first = at + 32
    yield "version 2", patch(4, "<I", 2), r"ranks record .* version 2"
    yield "job size 0", patch(8, "<I", 0), r"job of 0 ranks"
    yield "record count 2", patch(12, "<I", 2), r"covers 2 modules"
    yield "held by 0 ranks", patch(16, "<I", 0), r"held by 0 ranks"
    yield "held by more ranks than the job", patch(16, "<I", size + 1), r"held by"
    yield "value count plus 1", patch(24, "<Q", nv + 1), r"values"
    yield "value count huge", patch(24, "<Q", 1 << 60), r"values"
    yield "min above max", patch(32, "<Q", 1 << 40), r"min .* max"
    yield "rank out of range", patch(48, "<I", size), r"rank %d of %d" % (size, size)
    yield "truncated", b[:first + 10] + good[-16:], r"past the end|values"
    yield "bytes after it", b + b"\0\0\0\0" + good[-16:], r"unexpected bytes"


def reduced_sample(a, work):
    exe = build(a, work, "imbalance", ["imbalance.c"])
    mpirun(a, [(3, [exe, "1"])], {"TALLY_OUTPUT": os.path.join(work, "red.data")}, work)
    with open(os.path.join(work, "red.data"), "rb") as f:
        return f.read()


def check_bad_ranks(a, work):
    """Each damaged RNKS record makes `tally report` exit 1 with a message
    naming the file and the fault; the good file reads."""
    need_mpi(a)
    good = reduced_sample(a, work)
    run([a.tally, "report", os.path.join(work, "red.data")])
    # tally dump shows the record: rank 1 (of 3) is the slow one.
    dump = run([a.tally, "dump", os.path.join(work, "red.data")]).stdout
    expect(re.search(r"^ranks version=1 size=3 records=1$", dump, re.M)
           and re.search(r"^  module 0 holders=3 values=\d+ \(min/max@rank\): 10/500@1 ", dump, re.M),
           "tally dump of a reduced file:\n%s" % dump)
    names = []
    for name, body, pattern in ranks_variants(good):
        names.append(name)
        path = os.path.join(work, "bad.data")
        with open(path, "wb") as f:
            f.write(rewrap(body))
        p = run([a.tally, "report", path], check=False)
        expect(p.returncode == 1 and "bad.data" in p.stderr
               and re.search(pattern, p.stderr), "%s: exit %d, stderr %r"
               % (name, p.returncode, p.stderr))
        expect(p.stdout == "", "%s: partial report" % name)
    expect(len(names) >= 10, "variants: %s" % names)


def write_corpus(a, out_dir):
    """Regenerate the RNKS fuzz seeds of tools/fuzz-corpus (by hand:
    run-mpi.py write-corpus ... with --srcdir, seeds into OUT_DIR)."""
    import tempfile
    work = tempfile.mkdtemp()
    good = reduced_sample(a, work)
    with open(os.path.join(out_dir, "ranks-valid"), "wb") as f:
        f.write(good)
    for name, body, _ in ranks_variants(good):
        if name in ("min above max", "rank out of range", "value count huge"):
            with open(os.path.join(out_dir, "ranks-" + name.replace(" ", "-")), "wb") as f:
                f.write(rewrap(body))


CHECKS = {
    "reduce": check_reduce,
    "modes": check_modes,
    "static-runtime": check_static_runtime,
    "bad-ranks": check_bad_ranks,
    "mpmd": check_mpmd,
    "dlopen": check_dlopen,
    "measured": check_measured,
    "dying-rank": check_dying_rank,
    "rank-names": check_rank_names,
    "ranks-report": check_ranks_report,
    "preload": check_preload,
    "ranks-derived": check_ranks_derived,
    "paths": check_paths,
    "paths-papi": check_paths_papi,
    "merge-output": check_merge_output,
    "routines": check_routines,
}


def main():
    a = parse_args(CHECKS, ["write-corpus"])
    if a.papi != "1":
        a.runtime_papi = ""
    for v in RANK_VARS:
        os.environ.pop(v, None)
    if a.check == "write-corpus":
        write_corpus(a, os.path.join(a.srcdir, "..", "tools", "fuzz-corpus"))
        return 0
    return run_check(CHECKS, a.check, a, "tally-mpi-")


if __name__ == "__main__":
    sys.exit(main())
