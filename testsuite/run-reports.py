#!/usr/bin/env python3
"""What the reports show and compare: builds with other settings are not
summed silently, system-header functions and frames below main are hidden
by default, and `tally diff` compares two data files.

Usage: run-reports.py CHECK --plugin P --runtime RT --tally T --srcdir DIR
                          [--cc CC] [--cxx CXX]
Exit status: 0 pass, 1 fail, 77 skip.
"""
import csv
import io
import json
import os
import struct
import sys
import zlib

import checklib
from checklib import case, expect, main, report_csv, run, tally_opts, write_file


def build(a, work, name, src, flags=(), cxx=False):
    return checklib.build(a, os.path.join(work, name), src, tally_opts(*flags),
                          libs=[] if cxx else ["-lpthread"], cxx=cxx)


def run_data(exe, data, args=()):
    """Run EXE writing DATA; returns its standard output."""
    return checklib.run_data(exe, data, args).stdout


def csv_calls(a, *args):
    """Calls per function name of `tally report --csv ARGS`."""
    return {fn: c[0] for fn, c in report_csv(a, *args, sum_clones=True)[0].items()}


@case("mixed-builds")
def check_mixed_builds(a, work):
    """One source built at=late and at=early: report, lcov, flame, report
    --tree and merge refuse to sum the files, naming the source and both
    files; --force sums them with a warning.  Builds that count alike
    (hooks=inline and hooks=call) are summed without a word."""
    src = os.path.join(a.srcdir, "progs", "s-abc.c")
    data = {}
    paths = ["hooks=call", "measure=cycles", "paths=on"]
    for name, flags in (("late", ["at=late", *paths]),
                        ("early", ["at=early", *paths]),
                        ("inline", ["at=late", "hooks=inline"])):
        exe = build(a, work, name, src, flags)
        data[name] = os.path.join(work, name + ".data")
        run_data(exe, data[name])
    late, early = csv_calls(a, data["late"]), csv_calls(a, data["early"])
    # at=early counts b and c, which GCC inlines at -O2 (at=late does not).
    expect(early.get("c") == 10 and late.get("c", 0) == 0,
           "the builds should differ: late %s early %s" % (late, early))
    both = [data["late"], data["early"]]
    out = os.path.join(work, "out")
    for cmd in (["report"], ["report", "--tree"], ["lcov"], ["flame", "-o", out],
                ["merge", "-o", out]):
        p = run([a.tally, *cmd, *both], check=False)
        what = " ".join(cmd[:2] if cmd[1:2] == ["--tree"] else cmd[:1])
        expect(p.returncode == 1, "tally %s of at=late and at=early files: exit %d\n%s%s"
               % (what, p.returncode, p.stdout, p.stderr))
        expect(p.stdout == "" and not os.path.exists(out),
               "tally %s refused but wrote something: %r" % (what, p.stdout[:200]))
        expect("tally: %s: %s was built with at=late hooks=call blocks=none (%s) and with "
               "at=early hooks=call blocks=none (%s)" % (what, os.path.abspath(src), both[0],
                                                        both[1]) in p.stderr
               and "--force" in p.stderr,
               "tally %s: no message naming the source, the settings and the files:\n%s"
               % (what, p.stderr))
        p = run([a.tally, *cmd, "--force", *both])
        expect("tally: warning: %s: --force: their counts are summed" % what in p.stderr,
               "tally %s --force: no warning:\n%s" % (what, p.stderr))
        if os.path.exists(out):
            os.unlink(out)
    # --force sums: each row is the sum of the two files' rows.
    forced = csv_calls(a, "--force", *both)
    for fn in set(late) | set(early):
        expect(forced.get(fn) == late.get(fn, 0) + early.get(fn, 0),
               "%s: --force gives %s, the files %s + %s" % (fn, forced.get(fn),
                                                          late.get(fn), early.get(fn)))
    # One file holding both builds (merge --force keeps one record per
    # source; two programs' files merged without it are refused above).
    run([a.tally, "merge", "--force", "-o", out, *both])
    # Builds that count alike are summed without a word.
    p = run([a.tally, "report", "--csv", data["late"], data["inline"]])
    expect(p.stderr == "", "hooks=inline + hooks=call: %s" % p.stderr)
    inline = csv_calls(a, data["inline"])
    summed = csv_calls(a, data["late"], data["inline"])
    expect(all(summed[f] == late.get(f, 0) + inline.get(f, 0) for f in summed),
           "hooks=inline + hooks=call: %s, apart %s %s" % (summed, late, inline))


def csv_rows(a, *args):
    """[(calls, function, file)] of `tally report --csv ARGS`."""
    out = run([a.tally, "report", "--csv", *args]).stdout
    return [(int(r["calls"]), r["function"], r["file"])
            for r in csv.DictReader(io.StringIO(out))]


@case("system-headers")
def check_system_headers(a, work):
    """Functions of system headers never called are left out of report
    (at=early lists glibc's inline atol, C++ every library template it
    emitted), called ones are kept; lcov leaves out system headers
    altogether; report --tree and flame leave out the frames below main.
    --all shows them all.  A header included with -isystem is a system
    header (the plugin marks its functions), one included with -I is not."""
    # The README's demo: sample.c at=early emits glibc's atol (stdlib.h).
    exe = build(a, work, "sample", os.path.join(a.srcdir, os.pardir, "doc", "demo",
                                                "sample.c"), ["at=early", "hooks=call"])
    data = os.path.join(work, "sample.data")
    run_data(exe, data)
    text = run([a.tally, "report", data]).stdout
    expect("atol" not in text and "(1 never-called system-header function hidden; "
           "--all shows it)" in text.splitlines()[0], "report shows atol:\n" + text)
    rows = csv_rows(a, "--all", data)
    expect(("atol" in [r[1] for r in rows if r[0] == 0 and r[2].startswith("/usr/include/")]),
           "report --all: no 0-call atol: %s" % rows)
    expect(len(csv_rows(a, data)) == len(rows) - 1, "report --csv: %s" % csv_rows(a, data))
    # A file of a plugin before the mark (module flag 0x10000 clear): atol
    # is judged by its path, /usr/include/stdlib.h.
    with open(data, "rb") as f:
        raw = bytearray(f.read())
    at = 48 + 4 + struct.unpack_from("<I", raw, 48)[0]
    expect(raw[at:at + 4] == b"MODL", "sample.data: no module record at %d" % at)
    flags = struct.unpack_from("<I", raw, at + 16)[0]
    expect(flags & 0x10000, "sample.data: module flags %#x lack 0x10000" % flags)
    struct.pack_into("<I", raw, at + 16, flags & ~0x10000)
    struct.pack_into("<I", raw, len(raw) - 12, zlib.crc32(bytes(raw[:len(raw) - 16])))
    old = os.path.join(work, "old.data")
    with open(old, "wb") as f:
        f.write(raw)
    expect(csv_rows(a, old) == csv_rows(a, data) and csv_rows(a, "--all", old) == rows,
           "a file without the mark: %s" % csv_rows(a, old))
    js = json.loads(run([a.tally, "report", "--json", data]).stdout)
    expect("atol" not in [f["name"] for f in js["functions"]] and js["totals"]["hidden"] == 1,
           "report --json: %s" % js["totals"])

    # C++: library templates, an -isystem header and a user header.
    here = os.path.abspath(os.path.join(a.srcdir, "reports"))
    src = os.path.join(here, "sys-cxx.cc")
    inc = ["-isystem", os.path.join(here, "sysinc"), "-I", here]
    exe = os.path.join(work, "cxx")
    run([a.cxx, "-O0", "-fplugin=" + a.plugin, "-fplugin-arg-tally-at=early", *inc, src,
         "-o", exe, a.runtime])
    data = os.path.join(work, "cxx.data")
    printed = run_data(exe, data).split()
    pushes = int(printed[printed.index("push_back") + 1])
    shown, every = csv_rows(a, data), csv_rows(a, "--all", data)
    sysdir = os.path.join(here, "sysinc") + "/"

    def system(f):
        return f.startswith("/usr/include/") or f.startswith(sysdir)
    hidden = [r for r in every if r not in shown]
    expect(hidden and all(r[0] == 0 and system(r[2]) for r in hidden),
           "hidden rows are not all never-called system-header functions: %s" % hidden)
    expect(not [r for r in shown if r[0] == 0 and system(r[2])],
           "never-called system-header functions shown: %s"
           % [r for r in shown if r[0] == 0 and system(r[2])])
    names = {r[1]: r[0] for r in shown}
    push = [c for n, c in names.items() if "push_back" in n]
    expect(push == [pushes], "push_back: %s, the program called it %d times" % (push, pushes))
    expect(names.get("int sys_helper_used(int)") == 1
           and names.get("int user_helper_unused(int)") == 0
           and "int sys_helper_unused(int)" not in names,
           "the -isystem and -I helpers: %s" % {n: c for n, c in names.items() if "helper" in n})
    expect(any(r[1] == "int sys_helper_unused(int)" and r[0] == 0 for r in every),
           "report --all lacks sys_helper_unused")

    # lcov: -O2 blocks=count inlines library code into main.
    exe = os.path.join(work, "cxx-blocks")
    run([a.cxx, "-O2", "-fplugin=" + a.plugin, "-fplugin-arg-tally-blocks=count", *inc,
         src, "-o", exe, a.runtime])
    data = os.path.join(work, "cxx-blocks.data")
    run_data(exe, data)

    def sources(*args):
        out = run([a.tally, "lcov", *args, data]).stdout
        return [l[3:] for l in out.splitlines() if l.startswith("SF:")]
    files, every = sources(), sources("--all")
    expect(src in files and not [f for f in files if system(f)],
           "lcov lists system headers: %s" % files)
    expect([f for f in every if f.startswith("/usr/include/")] and sysdir + "sys-helpers.h" in every,
           "lcov --all lists no system header: %s" % every)

    # report --tree and flame: the frames libunwind finds below main.
    exe = build(a, work, "paths", os.path.join(a.srcdir, "progs", "s-abc.c"),
                ["hooks=call", "measure=cycles", "paths=on"])
    data = os.path.join(work, "paths.data")
    run_data(exe, data)
    for cmd in (["report", "--tree"], ["flame", "--folded"]):
        out = run([a.tally, *cmd, data]).stdout
        expect("[uninstrumented]" not in out, "tally %s shows frames below main:\n%s"
               % (" ".join(cmd), out))
        expect(("main" if cmd[0] == "flame" else "main  ") in out.splitlines()[1 if cmd[0] == "report" else 0],
               "tally %s: main is not first:\n%s" % (" ".join(cmd), out))
        out_all = run([a.tally, *cmd, "--all", data]).stdout
        if "[uninstrumented]" not in out_all:
            print("note: the runtime found no frames below main (no libunwind): "
                  "--all not checked")
        else:
            expect(out_all.count("\n") >= out.count("\n"), "--all: %s" % out_all)


@case("diff")
def check_diff(a, work):
    """tally diff A B of two runs of diff-prog.c with other inputs: the
    calls and line counts differ by what the program says it did, sorted
    by the largest change; functions match across builds (-O0 blocks=count
    against -O2 hooks=call); cycles (measure=cycles) differ by what each
    file's report says; --json, --csv and the text agree."""
    src = os.path.abspath(os.path.join(a.srcdir, "reports", "diff-prog.c"))

    def build_run(name, flags, opt, inputs):
        return diff_prog_runs(a, work, name, inputs, flags=flags, src=src, opt=opt)

    (fa, pa), (fb, pb) = build_run("counts", ["at=early", "blocks=count"], "-O0", [3, 10])

    def diff(*args, check=True):
        return run([a.tally, "diff", *args], check=check)

    def csv_of(*args):
        return list(csv.DictReader(io.StringIO(diff("--csv", *args).stdout)))
    rows = csv_of(fa, fb)
    want = sorted(((fn, pa[fn], pb[fn]) for fn in pa if pa[fn] != pb[fn]),
                  key=lambda t: (-abs(t[2] - t[1]), t[0]))
    got = [(r["function"], int(r["calls_a"]), int(r["calls_b"])) for r in rows]
    expect(got == want, "tally diff --csv: %s, the program says %s" % (got, want))
    for r in rows:
        expect(int(r["delta_calls"]) == int(r["calls_b"]) - int(r["calls_a"])
               and (r["ratio_calls"] == "" if r["calls_a"] == "0" else
                    abs(float(r["ratio_calls"]) - int(r["calls_b"]) / int(r["calls_a"])) < 1e-4)
               and r["file"] == src,
               "tally diff --csv row %s" % r)
    every = {r["function"]: r for r in csv_of("--all", fa, fb)}
    expect(every["fixed"]["delta_calls"] == "0" and every["main"]["delta_calls"] == "0"
           and len(every) == len(rows) + 2, "tally diff --all: %s" % every)
    expect([r["function"] for r in csv_of("--top=1", fa, fb)] == [want[0][0]],
           "tally diff --top=1")
    text = diff(fa, fb).stdout
    expect("%d functions differ, 2 unchanged" % len(want) in text,
           "tally diff text:\n" + text)
    js = json.loads(diff("--json", fa, fb).stdout)
    expect([(f["name"], f["calls_a"], f["calls_b"], f["delta_calls"]) for f in js["functions"]]
           == [(n, x, y, y - x) for n, x, y in want] and js["unchanged"] == 2
           and js["measured"] is False, "tally diff --json: %s" % js)

    # Lines: the marked lines run as often as their function is called.
    marks = {}
    with open(src) as f:
        for no, line in enumerate(f, 1):
            for m in ("LOOP-STEP", "LOOP-BIG"):
                if m in line:
                    marks[m] = no
    lines = {int(r["line"]): r for r in csv.DictReader(io.StringIO(
        diff("--csv", "--lines", fa, fb).stdout))}
    for m, fn in (("LOOP-STEP", "step"), ("LOOP-BIG", "big")):
        r = lines.get(marks[m])
        expect(r and (int(r["count_a"]), int(r["count_b"]), int(r["delta"]))
               == (pa[fn], pb[fn], pb[fn] - pa[fn]),
               "tally diff --lines: line %d (%s): %s, the program says %d -> %d"
               % (marks[m], m, r, pa[fn], pb[fn]))
    expect(all(r["count_a"] != r["count_b"] for r in lines.values()),
           "tally diff --lines lists unchanged lines")

    # Another build of the same source with the same input: the program's
    # functions match and do not differ (at -O2 glibc's inline atoi from
    # <stdlib.h> is instrumented too, a function of the B side only).
    [(fo, po)] = build_run("other", ["at=early", "hooks=call"], "-O2", [3])
    rows = csv_of(fa, fo)
    expect(po == pa and [r for r in rows if r["file"] != "/usr/include/stdlib.h"] == []
           and all(r["calls_a"] == "" for r in rows),
           "tally diff across builds: %s" % rows)

    # Cycles: the deltas of what each file's own report says.
    (ma, qa), (mb, qb) = build_run("cycles", ["at=early", "measure=cycles"], "-O0", [3, 10])
    js = json.loads(diff("--json", "--sort=cycles", "--all", ma, mb).stdout)
    expect(js["measured"] is True, "tally diff --json of measured files: %s" % js)
    rep = [{f["name"]: f for f in json.loads(run([a.tally, "report", "--json", d]).stdout)["functions"]}
           for d in (ma, mb)]
    for f in js["functions"]:
        xa, xb = rep[0][f["name"]]["excl_cycles"], rep[1][f["name"]]["excl_cycles"]
        expect((f["excl_cycles_a"], f["excl_cycles_b"], f["delta_excl_cycles"]) == (xa, xb, xb - xa)
               and f["calls_a"] == qa.get(f["name"], 1) and f["calls_b"] == qb.get(f["name"], 1),
               "tally diff --json cycles of %s: %s, the reports say %d -> %d" % (f["name"], f, xa, xb))
    d = [abs(f["delta_excl_cycles"]) for f in js["functions"]]
    expect(d == sorted(d, reverse=True), "tally diff --sort=cycles order: %s" % d)

    # Usage and data errors.
    for args, code in (([fa], 2), ([fa, fb, fb], 2), (["--sort=size", fa, fb], 2),
                       (["--json", "--csv", fa, fb], 2), (["--sort=cycles", fa, fb], 1),
                       ([fa, os.path.join(work, "missing.data")], 1)):
        p = diff(*args, check=False)
        expect(p.returncode == code and p.stdout == "" and p.stderr.startswith("tally: "),
               "tally diff %s: exit %d (want %d) %r %r" % (args, p.returncode, code,
                                                         p.stdout, p.stderr))


def diff_prog_runs(a, work, name, inputs, flags=("at=early", "blocks=count"), src=None, cwd=None,
                   opt="-O0"):
    """reports/diff-prog.c (or SRC) built at OPT with FLAGS as WORK/NAME,
    run once per N of INPUTS: [(data file, {function: calls the program
    counted})]."""
    src = src or os.path.abspath(os.path.join(a.srcdir, "reports", "diff-prog.c"))
    exe = os.path.join(work, name)
    run([a.cc, opt, "-fplugin=" + a.plugin, *["-fplugin-arg-tally-" + f for f in flags],
         src, "-o", exe, a.runtime], cwd=cwd)
    res = []
    for n in inputs:
        data = os.path.join(work, "%s-%d.data" % (name, n))
        words = run_data(exe, data, [str(n)]).split()
        res.append((data, {words[i]: int(words[i + 1]) for i in range(0, len(words), 2)}))
    return res


@case("diff-all")
def check_diff_all(a, work):
    """tally diff --all's summary counts the rows whose calls differ, not
    every row it lists: runs of diff-prog.c with N = 3 and 4 differ in
    the functions the program says (step, twice), the others (fixed, big,
    main) unchanged, with and without --all, in text and JSON; the rows
    --all adds have delta 0."""
    (fa, pa), (fb, pb) = diff_prog_runs(a, work, "prog", [3, 4])
    differ = sorted(fn for fn in pa if pa[fn] != pb[fn])
    same = len(pa) - len(differ) + 1  # and main
    expect(differ == ["step", "twice"], "the program says %s -> %s" % (pa, pb))
    for opts in ([], ["--all"]):
        text = run([a.tally, "diff", *opts, fa, fb]).stdout
        want = "%d functions differ, %d unchanged%s;" % (len(differ), same,
                                                         "" if opts else " (--all lists them)")
        expect(want in text, "tally diff %s: want %r in:\n%s" % (opts, want, text))
        js = json.loads(run([a.tally, "diff", "--json", *opts, fa, fb]).stdout)
        deltas = {f["name"]: f["delta_calls"] for f in js["functions"]}
        expect(js["unchanged"] == same and sorted(n for n, d in deltas.items() if d) == differ
               and list(deltas.values()).count(0) == (same if opts else 0),
               "tally diff --json %s: %s" % (opts, js))


def checkout(work, name):
    """WORK/NAME/src/prog.c, a copy of reports/diff-prog.c, and an empty
    WORK/NAME/build: one checkout of the program.  Returns the tree."""
    tree = os.path.join(work, name)
    os.makedirs(os.path.join(tree, "src"))
    os.makedirs(os.path.join(tree, "build"))
    return tree


@case("checkouts")
def check_checkouts(a, work):
    """One program in two checkouts (WORK/main and WORK/wt-2, built in
    their build directories from ../src/prog.c, and from the absolute
    path): tally diff pairs every function and line (the calls those of
    the program's own counts with N = 3 and 4), says how it paired them
    (A's tree with B's), and --map gives the same pairing without the
    note; a --map to elsewhere, or another program, pairs nothing and
    says so; the ASan/UBSan tool is clean doing it.  report, lcov and
    merge refuse an at=late build of one
    checkout with an at=early build of the other, naming both paths, and
    sum them with --force; files of one checkout sum as before."""
    src = os.path.abspath(os.path.join(a.srcdir, "reports", "diff-prog.c"))
    trees = [checkout(work, "main"), checkout(work, "wt-2")]
    for t in trees:
        with open(src) as f, open(os.path.join(t, "src", "prog.c"), "w") as g:
            g.write(f.read())
    for how in ("relative", "absolute"):
        runs = []
        for t, n in zip(trees, (3, 4)):
            build = os.path.join(t, "build")
            prog = "../src/prog.c" if how == "relative" else os.path.join(t, "src", "prog.c")
            [run_] = diff_prog_runs(a, build, how, [n], src=prog, cwd=build)
            runs.append(run_)
        (fa, pa), (fb, pb) = runs
        differ = sorted(fn for fn in pa if pa[fn] != pb[fn])
        same = len(pa) - len(differ) + 1
        p = run([a.tally, "diff", fa, fb])
        want = "%d functions differ, %d unchanged" % (len(differ), same)
        note = "tally: note: diff: A's files under %s are paired with B's under %s" % tuple(trees)
        expect(want in p.stdout and note in p.stderr,
               "%s: tally diff: want %r and %r:\n%s%s" % (how, want, note, p.stdout, p.stderr))
        rows = list(csv.DictReader(io.StringIO(run([a.tally, "diff", "--all", "--csv", fa, fb]).stdout)))
        got = {r["function"]: (int(r["calls_a"]), int(r["calls_b"])) for r in rows}
        wanted = {fn: (pa[fn], pb[fn]) for fn in pa}
        wanted["main"] = (1, 1)
        expect(got == wanted, "%s: tally diff --all --csv: %s, the programs say %s" % (how, got, wanted))
        mapped = run([a.tally, "diff", "--all", "--csv", "--map", "%s=%s" % tuple(trees), fa, fb])
        expect(list(csv.DictReader(io.StringIO(mapped.stdout))) == rows and "note" not in mapped.stderr,
               "%s: tally diff --map: %s%s" % (how, mapped.stdout, mapped.stderr))
        lines = list(csv.DictReader(io.StringIO(run([a.tally, "diff", "--lines", "--csv", fa, fb]).stdout)))
        expect(lines and all(r["count_a"] and r["count_b"] for r in lines),
               "%s: tally diff --lines pairs no line: %s" % (how, lines))
        step = [r for r in lines if int(r["count_a"]) == pa["step"] and int(r["count_b"]) == pb["step"]]
        expect(step, "%s: tally diff --lines has no line run step's %d and %d times: %s"
               % (how, pa["step"], pb["step"], lines))
        for args in (["--lines", "--json"], ["--all", "--csv"]):
            p = run([a.tally_asan, "diff", *args, fa, fb], check=False)
            expect(p.returncode == 0 and "Sanitizer" not in p.stderr and "runtime error" not in p.stderr,
                   "%s: the ASan/UBSan tally diff %s: exit %d\n%s" % (how, args, p.returncode, p.stderr))
        p = run([a.tally, "diff", "--map", "%s=%s" % (trees[0], work), fa, fb])
        expect("tally: warning: diff: no function of A is in B" in p.stderr,
               "%s: a --map to elsewhere: %s" % (how, p.stderr))
    other = write_file(os.path.join(work, "other.c"), "int main (void) { return 0; }\n")
    exe = os.path.join(work, "other")
    run([a.cc, "-O0", "-fplugin=" + a.plugin, other, "-o", exe, a.runtime])
    od = os.path.join(work, "other.data")
    checklib.run_data(exe, od)
    p = run([a.tally, "diff", od, fa])
    expect("tally: warning: diff: no function of A is in B (A's files are under %s, B's under %s/src)"
           % (work, trees[0]) in p.stderr, "another program: %s" % p.stderr)

    # at=late in one checkout, at=early in the other: refused.
    files = []
    for t, at in zip(trees, ("late", "early")):
        build = os.path.join(t, "build")
        [(data, _)] = diff_prog_runs(a, build, "at-" + at, [3], flags=("at=" + at,),
                                     src="../src/prog.c", cwd=build)
        files.append(data)
    want = ("%s/src/prog.c was built with at=late hooks=inline blocks=none (%s) and %s/src/prog.c, "
            "the same file in another checkout, with at=early hooks=inline blocks=none (%s)"
            % (trees[0], files[0], trees[1], files[1]))
    for cmd in (["report"], ["lcov"], ["merge", "-o", os.path.join(work, "m.data")]):
        p = run([a.tally, *cmd, *files], check=False)
        expect(p.returncode == 1 and p.stdout == "" and want in p.stderr,
               "tally %s of two checkouts' at=late and at=early: exit %d\n%s%s"
               % (cmd[0], p.returncode, p.stdout, p.stderr))
        p = run([a.tally, *cmd, "--force", *files], check=False)
        expect(p.returncode == 0 and "tally: warning: %s: %s" % (cmd[0], want) in p.stderr,
               "tally %s --force: exit %d\n%s" % (cmd[0], p.returncode, p.stderr))
    # One checkout's files (two runs) sum as ever.
    build = os.path.join(trees[0], "build")
    both = diff_prog_runs(a, build, "late", [3, 4], flags=("at=late",), src="../src/prog.c", cwd=build)
    rows = csv_calls(a, both[0][0], both[1][0])
    expect(rows.get("step") == both[0][1]["step"] + both[1][1]["step"],
           "one checkout's files: step %s" % rows.get("step"))


if __name__ == "__main__":
    sys.exit(main("tally-reports-"))
