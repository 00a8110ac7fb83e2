#!/usr/bin/env python3
"""paths=on: the call tree of measure=cycles and measure=papi.

Each program is built with paths=on (hooks=call, measure=cycles), run, and
its call tree (report --tree, flame graphs) checked against what
-finstrument-functions sees per path and against the flat profile; the
limits of the tree (TALLY_PATH_DEPTH, a full tree), dumps racing with
threads, libunwind's roots, PAPI events per path, and merging measured
files (%m and tally merge).  Helpers shared with run-measure.py are
measurelib.py's.

Usage: run-paths.py CASE --plugin P --runtime RT --tally T --cc CC
                    --cxx CXX --srcdir DIR ... (testsuite/meson.build's
                    driver_args)
Exit status: 0 pass, 1 fail, 77 skip.
"""
import os
import shutil
import sys

from checklib import case, expect, main, report_rows, run, Skip
from measurelib import (build, check_sums, check_tree_sums, measure, measure_exe,
                        OUTSIDE, papi_sources, parse_tree, paths_build,
                        PATHS_ON, rewrap, tree_rows, x86_64)


def oracle_paths(a, work, src):
    """Call paths and their calls from -finstrument-functions and
    oracle/cyg-oracle.c, as {path of names: calls}."""
    exe = os.path.join(work, os.path.splitext(src)[0] + "-cyg")
    obj = os.path.join(work, "cyg-oracle.o")
    run([a.cc, "-O2", "-c", os.path.join(a.srcdir, "oracle", "cyg-oracle.c"), "-o", obj])
    run([a.cc, "-O2", "-finstrument-functions",
         os.path.join(a.srcdir, "measure", src), obj, "-o", exe])
    out = exe + ".paths"
    run([exe], env={"CYG_PATHS_OUTPUT": out})
    syms = {}
    for line in run(["nm", exe]).stdout.splitlines():
        f = line.split()
        if len(f) == 3 and f[1] in "tT":
            syms[int(f[0], 16)] = f[2]
    res = {}
    for line in open(out):
        path, calls = line.split()
        res[tuple(syms[int(o, 16)] for o in path.split(";"))] = int(calls)
    return res


def measured_paths(a, work, src, at):
    """measure/SRC built with paths=on at AT and run: (what, the program,
    its rows (see measure), its call tree (tree_rows), flame --folded)."""
    exe = paths_build(a, work, src, at)
    _, rows = measure(a, exe, work)
    tree = tree_rows(a, exe + ".data")
    folded = run([a.tally, "flame", "--folded", exe + ".data"]).stdout
    return "%s paths=on at=%s" % (src, at), exe, rows, tree, folded


@case("paths")
def check_paths(a, work):
    x86_64()
    for src in ("tree.c", "paths.c"):
        oracle = oracle_paths(a, work, src)
        for at in ("early", "late"):
            what, exe, rows, tree, folded = measured_paths(a, work, src, at)
            calls = {k: v[0] for k, v in tree.items()}
            expect(calls == oracle, "%s: path calls %s, -finstrument-functions "
                   "has %s" % (what, sorted(calls.items()), sorted(oracle.items())))
            check_tree_sums(what, rows, tree, folded)
            check_sums(what, rows, ["main"])
            svg = os.path.join(work, "flame.svg")
            run([a.tally, "flame", "-o", svg, exe + ".data"])
            import xml.etree.ElementTree as ET
            root = ET.parse(svg).getroot()
            titles = [t.text for t in root.iter("{http://www.w3.org/2000/svg}title")]
            for path in tree:
                expect(any(t.startswith(path[-1] + " (") for t in titles),
                       "%s: no frame for %s in the SVG" % (what, path[-1]))
    # Frames skipped by longjmp and exceptions leave the tree exact too.
    for src, chain in (("longjmp.c", ["main", "driver", "l1", "l2", "l3", "l4"]),
                       ("exceptions.cc", ["int main()", "void catcher(int)",
                                          "void t1(int)", "void t2(int)",
                                          "void t3(int)"])):
        for at in ("early", "late"):
            what, exe, rows, tree, folded = measured_paths(a, work, src, at)
            for k in range(1, len(chain) + 1):
                got = tree.get(tuple(chain[:k]), (0,))[0]
                want = 1 if k == 1 else 1000
                expect(got == want, "%s: path %s has %d calls, want %d"
                       % (what, chain[:k], got, want))
            check_tree_sums(what, rows, tree, folded)
            check_sums(what, rows, [chain[0]])


@case("paths-limits")
def check_paths_limits(a, work):
    x86_64()
    # Depth: recursion 100000 deep (and 700000 in a thread) cut at 16.
    # (TALLY_UNWIND=off: the frames below main would count in the limits.)
    exe = paths_build(a, work, "recursion.c", "late")
    data = exe + ".data"
    run([exe], env={"TALLY_OUTPUT": data, "TALLY_PATH_DEPTH": "16",
                    "TALLY_UNWIND": "off"})
    tree = tree_rows(a, data)
    expect(max(len(k) for k in tree) == 16, "recursion.c: deepest path %d "
           "frames, TALLY_PATH_DEPTH=16" % max(len(k) for k in tree))
    # (The thread's recursion is deeper than the shadow stack: activations
    # past it are not on any path.)
    rec = sum(v[0] for k, v in tree.items() if k[0] == "main" and k[-1] == "rec")
    expect(rec == 100001, "recursion.c: rec has %d calls on main's paths, "
           "want 100001" % rec)
    # A full tree: the paths that fit are kept, the rest is counted as lost
    # and said so.
    exe = paths_build(a, work, "paths.c", "late")
    data = exe + ".data"
    p = run([exe], env={"TALLY_OUTPUT": data, "TALLY_PATH_NODES": "4",
                        "TALLY_UNWIND": "off"})
    expect(p.stderr == "", "TALLY_PATH_NODES=4: %r" % p.stderr)
    p = run([a.tally, "report", "--tree", data])
    expect("did not fit" in p.stderr, "TALLY_PATH_NODES=4: no note about lost "
           "calls: %r" % p.stderr)
    tree = tree_rows(a, data)
    expect(len(tree) == 3 and ("main",) in tree, "TALLY_PATH_NODES=4: the "
           "tree holds %s, want main and two more paths" % sorted(tree))
    p = run([exe], env={"TALLY_OUTPUT": data, "TALLY_PATH_DEPTH": "0"})
    expect("TALLY_PATH_DEPTH=0 is not a number from 1 to 1024" in p.stderr,
           "TALLY_PATH_DEPTH=0: %r" % p.stderr)
    # Files without paths.
    exe = build(a, work, "tree.c", "call", "late")
    run([exe], env={"TALLY_OUTPUT": exe + ".data"})
    for cmd in (["report", "--tree"], ["flame"]):
        p = run([a.tally] + cmd + [exe + ".data"], check=False)
        expect(p.returncode == 1 and "paths=on" in p.stderr,
               "%s on a file without paths: exit %d, %r" % (cmd, p.returncode, p.stderr))


@case("paths-race")
def check_paths_race(a, work):
    """Dumps while other threads add call paths: the node count is read
    once per dump, so every dump succeeds and every file is whole."""
    x86_64()
    exe = measure_exe(a, os.path.join(work, "paths-race"), "paths-race.c", PATHS_ON)
    p = run([exe, os.path.join(work, "race")], check=False)
    expect(p.returncode == 0 and p.stderr == "" and p.stdout == "0 failed\n",
           "paths-race: exit %d, %r %r" % (p.returncode, p.stdout, p.stderr))
    sizes = []
    for i in range(20):
        data = os.path.join(work, "race.%d.data" % i)
        run([a.tally, "report", "--csv", data])
        sizes.append(os.path.getsize(data))
    # The race was there to be lost: the tree grew between most dumps.
    # (How big it was at the first dump depends on how long the workers
    # ran before it, i.e. on the machine's load: not checked.)
    grew = sum(1 for x, y in zip(sizes, sizes[1:]) if y > x)
    expect(grew >= 10, "paths-race: the tree did not "
           "grow during the dumps (file sizes %s)" % sizes)
    run([a.tally, "report", "--tree", os.path.join(work, "race.19.data")])


def need_unwind(a):
    x86_64()
    if a.unwind != "1":
        raise Skip("the runtime was built without libunwind (libunwind-dev)")


def nm_symbols(exe):
    """[(start, name)] of EXE's functions, sorted."""
    syms = []
    for line in run(["nm", "-S", exe]).stdout.splitlines():
        f = line.split()
        if len(f) == 4 and f[2] in "tTW":
            syms.append((int(f[0], 16), int(f[1], 16), f[3]))
    return sorted(syms)


@case("unwind")
def check_unwind(a, work):
    """tally_backtrace gives the return addresses glibc's backtrace gives
    (glibc unwinds with libgcc's unwinder, not libunwind), with the static
    runtime linked with -lunwind and without it (loaded by dlopen); and a
    paths=on function called from uninstrumented code is rooted under its
    uninstrumented callers."""
    need_unwind(a)
    src = os.path.join(a.srcdir, "measure", "backtrace.c")
    inc = os.path.join(a.srcdir, os.pardir, "include")
    for libs in ([], ["-lunwind"], ["-Wl,--no-as-needed", "-lunwind"]):
        what = "backtrace.c %s" % " ".join(libs)
        exe = os.path.join(work, "backtrace%d" % len(libs))
        run([a.cc, "-O2", "-fno-omit-frame-pointer", "-I" + inc, src, "-o", exe,
             a.runtime, *libs, "-no-pie"])
        p = run([exe])
        expect(p.stderr == "", "%s: %r" % (what, p.stderr))
        lines = p.stdout.splitlines()
        ours = [int(x, 16) for x in lines[0].split()[1:]]
        glibc = [int(x, 16) for x in lines[1].split()[1:]]
        expect(len(ours) >= 4 and len(ours) == len(glibc) and ours[1:] == glibc[1:],
               "%s: tally_backtrace %s, glibc %s" % (what, [hex(x) for x in ours],
                                                     [hex(x) for x in glibc]))
        # [0]: the two calls' own return addresses, both in b3; then b2,
        # b1, main.
        syms = nm_symbols(exe)

        def fn(addr):
            for start, size, name in syms:
                if start <= addr < start + size:
                    return name
            return None
        got = [fn(x) for x in ours[:4]]
        expect(got == ["b3", "b2", "b1", "main"] and fn(glibc[0]) == "b3",
               "%s: frames in %s, want b3 b2 b1 main" % (what, got))
        printed = [l.split()[2].split("+")[0] for l in lines[2:] if len(l.split()) > 2]
        expect(printed[:4] == ["b3", "b2", "b1", "main"],
               "%s: tally_backtrace_print named %s" % (what, printed))
    # Uninstrumented callers.
    main_o = os.path.join(work, "outside-main.o")
    run([a.cc, "-O2", "-fno-optimize-sibling-calls", "-c",
         os.path.join(a.srcdir, "measure", "outside-main.c"), "-o", main_o])
    for at in ("early", "late"):
        what = "outside-*.c paths=on at=%s" % at
        exe = os.path.join(work, "outside-" + at)
        run([a.cc, "-O2", "-fplugin=" + a.plugin, "-fplugin-arg-tally-hooks=call",
             "-fplugin-arg-tally-at=" + at, "-fplugin-arg-tally-measure=cycles",
             "-fplugin-arg-tally-paths=on",
             os.path.join(a.srcdir, "measure", "outside-work.c"), main_o,
             "-o", exe, a.runtime])
        data = exe + ".data"
        p = run([exe], env={"TALLY_OUTPUT": data})
        expect(p.stderr == "", "%s: %r" % (what, p.stderr))
        tree = tree_rows(a, data, outside=True)
        calls = {}
        for k, v in tree.items():
            if k[-1] in ("work", "leaf"):
                expect(k[0].startswith(OUTSIDE), "%s: path %s starts at an "
                       "instrumented function" % (what, k))
                tail = tuple(n for n in k if n in (OUTSIDE + "main", OUTSIDE
                                                   + "outside", "work", "leaf"))
                calls[tail] = calls.get(tail, 0) + v[0]
        want = {(OUTSIDE + "main", "work"): 2, (OUTSIDE + "main", "work", "leaf"): 2,
                (OUTSIDE + "main", OUTSIDE + "outside", "work"): 3,
                (OUTSIDE + "main", OUTSIDE + "outside", "work", "leaf"): 3}
        expect(calls == want, "%s: paths %s, want %s" % (what, calls, want))
        # The direct parents, exactly.
        parents = {k[-2]: v[0] for k, v in tree.items() if k[-1] == "work"}
        expect(parents == {OUTSIDE + "main": 2, OUTSIDE + "outside": 3},
               "%s: work's parents %s" % (what, parents))
        # TALLY_UNWIND=off: as without libunwind, work is a root.
        run([exe], env={"TALLY_OUTPUT": data, "TALLY_UNWIND": "off"})
        tree = tree_rows(a, data, outside=True)
        expect(tree.get(("work",), (0,))[0] == 5 and not any(
            n.startswith(OUTSIDE) for k in tree for n in k),
            "TALLY_UNWIND=off: %s" % sorted(tree))


def merge_check(a, work, tag, flags, libs=(), env=None, procs=6, rounds=3,
                events=()):
    """PROCS processes of paths.c built with FLAGS merge ROUNDS dumps each
    into one %m file and also write their whole profile to a plain file at
    the same moment: the merged file's calls, measured values and call
    tree are exactly the sums of the plain files', and so are those of
    `tally merge` of the plain files.  Returns (exe, merged, plain files)."""
    import subprocess
    sub = os.path.join(work, tag)
    os.mkdir(sub)
    exe = measure_exe(a, os.path.join(sub, "merge"), "paths.c", flags, libs)
    full = dict(os.environ)
    full.update(env or {})
    ps = [subprocess.Popen([exe, os.path.join(sub, "all.%m.data"),
                            os.path.join(sub, "plain.%d.data" % i), str(rounds)],
                           env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True) for i in range(procs)]
    for p in ps:
        _, err = p.communicate(timeout=120)
        expect(p.returncode == 0 and err == "", "%s: a process failed: %d %r"
               % (tag, p.returncode, err))
    merged = [os.path.join(sub, f) for f in os.listdir(sub)
              if f.startswith("all.") and f.endswith(".data")]
    expect(len(merged) == 1, "%s: files %s" % (tag, os.listdir(sub)))
    merged = merged[0]
    plain = sorted(os.path.join(sub, f) for f in os.listdir(sub) if f.startswith("plain."))
    tool = os.path.join(sub, "tool.data")
    run([a.tally, "merge", "-o", tool] + plain)
    want = report_rows(a, *plain)
    calls = {"x": procs * rounds * 440, "y": procs * rounds * 70,
             "shared": procs * rounds * 510, "r": procs * rounds * 40}
    for what, data in (("%m", merged), ("tally merge", tool)):
        rows = report_rows(a, data)
        got = {n: rows[n]["calls"] for n in calls}
        expect(got == calls, "%s %s: calls %s, want %s" % (tag, what, got, calls))
        for n, r in want.items():
            g = {k: v for k, v in rows[n].items() if k != "location"}
            w = {k: v for k, v in r.items() if k != "location"}
            expect(g == w, "%s %s: %s is %s, the plain files sum to %s"
                   % (tag, what, n, g, w))
        if "-fplugin-arg-tally-paths=on" in flags:
            tree = run([a.tally, "report", "--tree", "--all", data]).stdout
            plain_tree = run([a.tally, "report", "--tree", "--all"] + plain).stdout
            expect(tree == plain_tree, "%s %s: the tree\n%s\nis not the plain "
                   "files' tree\n%s" % (tag, what, tree, plain_tree))
            paths = tree_rows(a, data)
            expect(paths[("main", "y", "x", "shared")][0] == procs * rounds * 140,
                   "%s %s: main;y;x;shared %s" % (tag, what, paths[("main", "y", "x", "shared")]))
            for ev in events:
                tree = run([a.tally, "report", "--tree", "--all", "--event", ev, data]).stdout
                plain_tree = run([a.tally, "report", "--tree", "--all", "--event", ev]
                                 + plain).stdout
                expect(tree == plain_tree, "%s %s: the %s tree\n%s\nis not the "
                       "plain files' tree\n%s" % (tag, what, ev, tree, plain_tree))
    return exe, merged, plain


@case("merge")
def check_merge(a, work):
    """Merge-on-write (%m) and tally merge keep MEAS, FRMS and PATH."""
    x86_64()
    call = ["-fplugin-arg-tally-hooks=call", "-fplugin-arg-tally-measure=cycles"]
    merge_check(a, work, "inline", ["-fplugin-arg-tally-measure=cycles"])
    exe, merged, plain = merge_check(a, work, "paths", call + ["-fplugin-arg-tally-paths=on"])
    # Other measured values: tally merge refuses, the runtime keeps the
    # file apart (never replaced) and writes its own.
    with open(merged, "rb") as f:
        body = f.read()[:-16]
    other = os.path.join(work, "other.data")
    with open(other, "wb") as f:
        f.write(rewrap(body.replace(b"\x06\0\0\0cycles", b"\x06\0\0\0cyclez")))
    p = run([a.tally, "merge", "-o", os.path.join(work, "never.data"), plain[0], other],
            check=False)
    expect(p.returncode == 1 and "measures cyclez" in p.stderr
           and not os.path.exists(os.path.join(work, "never.data")),
           "tally merge of other measurements: exit %d, %r" % (p.returncode, p.stderr))
    for k in range(2):
        shutil.copyfile(other, merged)
        p = run([exe, merged.replace(os.path.basename(merged)[4:-5], "%m"),
                 os.path.join(work, "plain.data"), "1"])
        aside = merged + ".other" + (".1" if k else "")
        expect("moved aside to " + aside in p.stderr and os.path.exists(aside),
               "other measurements, run %d: %r" % (k, p.stderr))
    with open(merged + ".other", "rb") as f:
        expect(f.read() == rewrap(body.replace(b"\x06\0\0\0cycles", b"\x06\0\0\0cyclez")),
               "the file moved aside is not the one that was there")
    rows = report_rows(a, merged)
    expect(rows["x"]["calls"] == 440 and rows["x"]["incl_cycles"]
           == report_rows(a, os.path.join(work, "plain.data"))["x"]["incl_cycles"],
           "after moving aside: %s" % rows["x"])


@case("papi-paths")
def check_papi_paths(a, work):
    """measure=papi with paths=on: the events per call path sum to each
    function's flat event totals, exactly; report --tree --event and flame
    --event show them; merging keeps them (%m and tally merge), and files
    with other event lists are kept apart."""
    x86_64()
    flags = ["-fplugin-arg-tally-hooks=call", "-fplugin-arg-tally-measure=papi",
             "-fplugin-arg-tally-paths=on"]
    libs = [a.runtime_papi, "-lpapi"]
    for source, events, src_env, cpu_ev in papi_sources(a, work):
        sub = os.path.join(work, source.replace(" ", "-"))
        os.mkdir(sub)
        papi_paths_with(a, sub, source, events, src_env, cpu_ev, flags, libs)


def papi_paths_with(a, work, source, events, src_env, cpu_ev, flags, libs):
    env = dict(src_env, TALLY_PAPI_EVENTS=",".join(events))
    for at in ("early", "late"):
        what = "paths.c measure=papi paths=on at=%s, %s" % (at, source)
        exe = os.path.join(work, "paths-papi-" + at)
        run([a.cc, "-O2", "-fplugin=" + a.plugin, *flags, "-fplugin-arg-tally-at=" + at,
             os.path.join(a.srcdir, "measure", "paths.c"), "-o", exe, a.runtime,
             *libs, "-lpthread"])
        data = exe + ".data"
        p = run([exe], env=dict(env, TALLY_OUTPUT=data))
        expect(p.stderr == "", "%s: %r" % (what, p.stderr))
        rows = report_rows(a, data)
        calls = {k: v[0] for k, v in tree_rows(a, data).items()}
        for ev in events:
            out = run([a.tally, "report", "--tree", "--event", ev, data]).stdout
            expect(out.splitlines()[0].split()[1:3] == ["incl-" + ev, "excl-" + ev],
                   "%s: header %r" % (what, out.splitlines()[0]))
            # (tree_rows reads `report --tree`; the same columns with --event.)
            ev_tree = dict(parse_tree(out))
            expect({k[k.index("main"):]: v[0] for k, v in ev_tree.items() if "main" in k}
                   == calls, "%s: %s tree calls differ from the cycles tree" % (what, ev))
            for fn, r in rows.items():
                got = tuple(sum(v[i] for k, v in ev_tree.items() if k[-1] == fn)
                            for i in (1, 2))
                want = tuple(r["events"][ev])
                expect(got == want, "%s: %s's %s summed over its paths %s, flat %s"
                       % (what, fn, ev, got, want))
            for k, v in ev_tree.items():
                expect(v[2] <= v[1], "%s: %s %s exclusive above inclusive" % (what, k, ev))
            folded = run([a.tally, "flame", "--folded", "--event", ev, data]).stdout
            total = sum(int(l.rsplit(" ", 1)[1]) for l in folded.splitlines())
            want = sum(r["events"][ev][1] for r in rows.values())
            expect(total == want, "%s: %s collapsed stacks add up to %d, exclusive "
                   "values to %d" % (what, ev, total, want))
            svg = os.path.join(work, "flame.svg")
            run([a.tally, "flame", "--event", ev, "-o", svg, data])
            import xml.etree.ElementTree as ET
            ET.parse(svg)
        expect(rows["main"]["events"][cpu_ev][0] > 0,
               "%s: no %s in main" % (what, cpu_ev))
        p = run([a.tally, "report", "--tree", "--event", "PAPI_NO_SUCH", data], check=False)
        expect(p.returncode == 1 and "no call-path values of event PAPI_NO_SUCH" in p.stderr,
               "%s: unknown event: %d %r" % (what, p.returncode, p.stderr))
    # Merging.
    exe, merged, plain = merge_check(a, work, "papi", flags, libs=libs, env=env,
                                     events=events)
    # Another event list: kept apart by the runtime, refused by tally merge.
    p = run([exe, merged.replace(os.path.basename(merged)[4:-5], "%m"),
             os.path.join(work, "one-event.data"), "1"],
            env=dict(src_env, TALLY_PAPI_EVENTS=events[0]))
    expect(("it measures %s, which this process does not; not merged, "
            "moved aside to %s.other" % (events[1], merged)) in p.stderr,
           "another event list: %r" % p.stderr)
    p = run([a.tally, "merge", "-o", os.path.join(work, "never.data"), plain[0],
             os.path.join(work, "one-event.data")], check=False)
    expect(p.returncode == 1 and "does not measure %s" % events[1] in p.stderr,
           "tally merge of another event list: %d %r" % (p.returncode, p.stderr))



if __name__ == "__main__":
    sys.exit(main("tally-measure-"))
