#!/usr/bin/env python3
"""measure=cycles: the shadow return-frame stack and its totals.

Each program of testsuite/measure/ is built with hooks=inline and
hooks=call, at=early and at=late (and -O0 and -O2 where it matters), run,
and its report checked against what the program's structure fixes, never
against a measured figure:
  - call and exit counts are exact (known from the source);
  - for a function whose callees have no other caller, inclusive cycles are
    exactly its exclusive cycles plus its callees' inclusive cycles;
  - the exclusive cycles of all functions add up exactly to the inclusive
    cycles of the roots (main, thread start routines): every cycle is
    charged to exactly one frame, whatever longjmp, exceptions, signals or
    pthread_exit skipped;
  - frames skipped by longjmp or an exception are closed at the next hook,
    so the heavy function called after the jump is not charged to them.

Usage: run-measure.py CHECK --plugin P --runtime RT --tally T --cc CC
                      --cxx CXX --srcdir DIR
Exit status: 0 pass, 1 fail, 77 skip.
"""
import argparse
import json
import os
import platform
import shutil
import struct
import sys
import zlib

from checklib import Failure, Skip, expect, run, run_check

MODES = [(h, at) for h in ("inline", "call") for at in ("early", "late")]


def build(a, work, src, hooks, at, opt="-O2", extra=()):
    cxx = src.endswith(".cc")
    exe = os.path.join(work, "%s-%s-%s%s%s" % (os.path.splitext(src)[0], hooks, at, opt,
                                               "".join(e.split("=")[-1] for e in extra)))
    run([a.cxx if cxx else a.cc, opt, "-fplugin=" + a.plugin,
         "-fplugin-arg-tally-hooks=" + hooks, "-fplugin-arg-tally-at=" + at,
         "-fplugin-arg-tally-measure=cycles", *extra,
         os.path.join(a.srcdir, "measure", src), "-o", exe, a.runtime,
         "-lpthread"])
    return exe


def measure(a, exe, work):
    """Run EXE; return (stdout, {function: row}) with row the report's JSON
    object (calls, exits, incl_cycles, excl_cycles)."""
    data = exe + ".data"
    p = run([exe], env={"TALLY_OUTPUT": data})
    expect(p.stderr == "", "%s: runtime messages: %r" % (exe, p.stderr))
    rep = json.loads(run([a.tally, "report", "--json", data]).stdout)
    return p.stdout, {f["name"]: f for f in rep["functions"]}


def check_counts(what, rows, expected):
    """EXPECTED: {function: (calls, exits)}; nothing else has calls."""
    got = {n: (r["calls"], r["exits"]) for n, r in rows.items() if r["calls"]}
    expect(got == expected, "%s: counts %s, want %s"
           % (what, sorted(got.items()), sorted(expected.items())))


def check_sums(what, rows, roots, slack=0):
    """Every cycle charged once: the exclusive totals add up to the roots'
    inclusive totals (within SLACK); no exclusive total exceeds its
    inclusive one."""
    for n, r in rows.items():
        expect(r["excl_cycles"] <= r["incl_cycles"],
               "%s: %s exclusive %d above inclusive %d"
               % (what, n, r["excl_cycles"], r["incl_cycles"]))
    total = sum(r["excl_cycles"] for r in rows.values())
    want = sum(rows[n]["incl_cycles"] for n in roots)
    expect(abs(total - want) <= slack and want > 0,
           "%s: exclusive cycles add up to %d, the roots %s have %d inclusive"
           % (what, total, roots, want))


def check_tree(what, rows, children):
    """CHILDREN: {parent: [callees]}, every callee called only by that
    parent: incl(parent) == excl(parent) + sum incl(callees), exactly."""
    for p, kids in children.items():
        want = rows[p]["excl_cycles"] + sum(rows[k]["incl_cycles"] for k in kids)
        expect(rows[p]["incl_cycles"] == want,
               "%s: %s inclusive %d, but exclusive %d + callees %s = %d"
               % (what, p, rows[p]["incl_cycles"], rows[p]["excl_cycles"],
                  kids, want))

# The events the PAPI checks measure.  PAPI's perf_event component needs a
# CPU PMU that libpfm4 recognises; a VM that exposes none (no
# /sys/bus/event_source/devices/cpu) disables the component, and with it
# even the software events: the runtime then measures cycles only (and says
# so), which these checks cannot tell from a fault.
PAPI_EVENTS = ("perf::TASK-CLOCK", "perf::PAGE-FAULTS")
PAPI_PROBE = r"""
#include <papi.h>
#include <stdio.h>
int main(int argc, char **argv)
{
  if (PAPI_library_init(PAPI_VER_CURRENT) != PAPI_VER_CURRENT)
    { puts("PAPI_library_init failed"); return 1; }
  for (int i = 0; i < PAPI_num_components(); i++) {
    const PAPI_component_info_t *c = PAPI_get_component_info(i);
    if (c && c->disabled)
      printf("component %s disabled: %s\n", c->name, c->disabled_reason);
  }
  for (int i = 1; i < argc; i++) {
    int code, set = PAPI_NULL;
    if (PAPI_event_name_to_code(argv[i], &code) != PAPI_OK
        || PAPI_create_eventset(&set) != PAPI_OK
        || PAPI_add_event(set, code) != PAPI_OK)
      { printf("event %s is not available\n", argv[i]); return 1; }
  }
  return 0;
}
"""


_papi_probe = {}


def papi_unusable(a, work):
    """Why PAPI cannot measure PAPI_EVENTS here, or None when it can (asked
    of the machine once per run of this script)."""
    if a.papi != "1":
        return "the runtime was built without PAPI (libpapi-dev)"
    if "why" not in _papi_probe:
        _papi_probe["why"] = probe_papi(a, work)
    return _papi_probe["why"]


def probe_papi(a, work):
    src = os.path.join(work, "papi-probe.c")
    with open(src, "w") as f:
        f.write(PAPI_PROBE)
    exe = os.path.join(work, "papi-probe")
    run([a.cc, src, "-o", exe, "-lpapi"])
    p = run([exe] + list(PAPI_EVENTS), check=False)
    if p.returncode == 0:
        return None
    why = "; ".join(l for l in p.stdout.splitlines()
                    if "perf_event " in l or not l.startswith("component"))
    return "PAPI cannot measure %s on this machine (%s)" % (
        ", ".join(PAPI_EVENTS), why or p.stdout.strip())


def need_papi(a, work):
    """Skip unless this machine can measure PAPI_EVENTS with the runtime's
    PAPI."""
    why = papi_unusable(a, work)
    if why:
        raise Skip(why)


def x86_64():
    if platform.machine() not in ("x86_64", "AMD64"):
        raise Skip("measure=cycles is x86-64 only")


def check_tree_prog(a, work):
    x86_64()
    for hooks, at in MODES:
        for opt in ("-O0", "-O2"):
            what = "tree.c %s %s %s" % (hooks, at, opt)
            _, rows = measure(a, build(a, work, "tree.c", hooks, at, opt), work)
            check_counts(what, rows, {"main": (1, 1), "a": (200, 200),
                                      "b": (400, 400), "c": (1200, 1200),
                                      "d": (1, 1)})
            check_tree(what, rows, {"main": ["a", "d"], "a": ["b"],
                                    "b": ["c"], "c": [], "d": []})
            check_sums(what, rows, ["main"])
            # d loops 20000000 times, all the c calls 60000 times together.
            expect(rows["d"]["excl_cycles"] > rows["c"]["excl_cycles"] > 0,
                   "%s: d's exclusive cycles %d not above c's %d" %
                   (what, rows["d"]["excl_cycles"], rows["c"]["excl_cycles"]))
    # With block counters (calls derived from them with hooks=inline) and
    # per-thread counters.
    for hooks, at in MODES:
        for extra in (["-fplugin-arg-tally-blocks=count"],
                      ["-fplugin-arg-tally-update=tls"]):
            what = "tree.c %s %s %s" % (hooks, at, " ".join(extra))
            exe = build(a, work, "tree.c", hooks, at, extra=extra)
            _, rows = measure(a, exe, work)
            # (With hooks=inline and blocks=count the calls are derived
            # from the block counts by the report.)
            check_counts(what, rows, {"main": (1, 1), "a": (200, 200),
                                      "b": (400, 400), "c": (1200, 1200),
                                      "d": (1, 1)})
            check_tree(what, rows, {"main": ["a", "d"], "a": ["b"],
                                    "b": ["c"], "c": [], "d": []})
            check_sums(what, rows, ["main"])


def check_inlined(a, work):
    """at=early: functions inlined after their hooks went in share the CFA
    of the function they are inlined into; the plugin tells them apart."""
    x86_64()
    for hooks in ("inline", "call"):
        for opt in ("-O0", "-O2"):
            what = "inlined.c %s at=early %s" % (hooks, opt)
            _, rows = measure(a, build(a, work, "inlined.c", hooks, "early", opt), work)
            check_counts(what, rows, {"main": (1, 1), "outer": (300, 300),
                                      "in1": (300, 200), "in2": (300, 200),
                                      "leaf": (400, 400)})
            check_tree(what, rows, {"main": ["outer"], "outer": ["in1"],
                                    "in1": ["in2"]})
            check_sums(what, rows, ["main"])


def skipped_frames(what, rows, chain, after):
    """The frames of CHAIN, skipped by a jump, are closed at the next hook
    (AFTER's entry), so AFTER's 200000-iteration loop is not in them."""
    first = rows[chain[0]]["incl_cycles"]
    expect(first < rows[after]["incl_cycles"] // 2,
           "%s: %s has %d inclusive cycles, %s only %d: the skipped frames "
           "were not closed at the next hook" % (what, chain[0], first, after,
                                                  rows[after]["incl_cycles"]))


def check_longjmp(a, work):
    x86_64()
    for hooks, at in MODES:
        for opt in ("-O0", "-O2"):
            what = "longjmp.c %s %s %s" % (hooks, at, opt)
            _, rows = measure(a, build(a, work, "longjmp.c", hooks, at, opt), work)
            check_counts(what, rows, {"main": (1, 1), "driver": (1000, 1000),
                                      "after": (1000, 1000), "l1": (1000, 0),
                                      "l2": (1000, 0), "l3": (1000, 0),
                                      "l4": (1000, 0)})
            check_tree(what, rows, {"main": ["driver"],
                                    "driver": ["l1", "after"], "l1": ["l2"],
                                    "l2": ["l3"], "l3": ["l4"], "l4": []})
            check_sums(what, rows, ["main"])
            skipped_frames(what, rows, ["l1"], "after")


def check_exceptions_rows(what, rows):
    """The counts, tree and sums of exceptions.cc's functions in ROWS (as
    measure gives them); returns ROWS under their short names."""
    names = {"int main()": "main", "void catcher(int)": "catcher",
             "void after()": "after", "void t1(int)": "t1",
             "void t2(int)": "t2", "void t3(int)": "t3"}
    rows = {names.get(n, n): r for n, r in rows.items()}
    check_counts(what, rows, {"main": (1, 1), "catcher": (1000, 1000),
                              "after": (1000, 1000), "t1": (1000, 0),
                              "t2": (1000, 0), "t3": (1000, 0)})
    check_tree(what, rows, {"main": ["catcher"],
                            "catcher": ["t1", "after"], "t1": ["t2"],
                            "t2": ["t3"], "t3": []})
    check_sums(what, rows, ["main"])
    return rows


def check_exceptions(a, work):
    x86_64()
    for hooks, at in MODES:
        for opt in ("-O0", "-O2"):
            what = "exceptions.cc %s %s %s" % (hooks, at, opt)
            _, rows = measure(a, build(a, work, "exceptions.cc", hooks, at, opt), work)
            rows = check_exceptions_rows(what, rows)
            skipped_frames(what, rows, ["t1"], "after")


def check_recursion(a, work):
    x86_64()
    for hooks, at in MODES:
        what = "recursion.c %s %s" % (hooks, at)
        _, rows = measure(a, build(a, work, "recursion.c", hooks, at), work)
        check_counts(what, rows, {"main": (1, 1), "deep": (1, 1),
                                  "rec": (800002, 800002)})
        check_sums(what, rows, ["main", "deep"])


def check_threads(a, work):
    x86_64()
    for hooks, at in MODES:
        what = "threads.c %s %s update=atomic" % (hooks, at)
        exe = build(a, work, "threads.c", hooks, at,
                    extra=["-fplugin-arg-tally-update=atomic"])
        _, rows = measure(a, exe, work)
        check_counts(what, rows, {"main": (1, 1), "worker": (8, 8),
                                  "a": (40000, 40000), "b": (80001, 80001),
                                  "exiter": (1, 0), "e1": (1, 0),
                                  "e2": (1, 0)})
        check_tree(what, rows, {"worker": ["a"], "exiter": ["e1"],
                                "e1": ["e2"]})
        check_sums(what, rows, ["main", "worker", "exiter"])


def check_signals(a, work):
    x86_64()
    for hooks, at in MODES:
        what = "signals.c %s %s" % (hooks, at)
        out, rows = measure(a, build(a, work, "signals.c", hooks, at), work)
        alarms = int(out.split()[0])
        want = {"main": (1, 1), "on_alarm": (alarms, alarms),
                "handler_work": (alarms + 200, alarms + 200),
                "on_usr1": (100, 0), "on_usr2": (100, 100),
                "jumper": (100, 100), "alt": (100, 100),
                "s1": (100, 0), "s2": (100, 0), "s3": (100, 0)}
        work_calls = rows["work"]["calls"]
        expect(work_calls >= 200, "%s: work called %d times" % (what, work_calls))
        want["work"] = (work_calls, work_calls)
        check_counts(what, rows, want)
        check_tree(what, rows, {"s1": ["s2"], "s2": ["s3"]})
        # A handler that interrupts the few instructions of a pop can have
        # its cycles charged twice or not at all (doc/measure.md): at most
        # its own cycles.
        slack = sum(rows[h]["incl_cycles"] for h in ("on_alarm", "on_usr1", "on_usr2"))
        check_sums(what, rows, ["main"], slack)


OUTSIDE = "[uninstrumented] "


def tree_rows(a, data, env=None, outside=False):
    """`tally report --tree DATA` as {path tuple: (calls, incl, excl)}.
    Unless OUTSIDE (report --tree --all), the frames libunwind found
    below the first instrumented ones ("[uninstrumented] ...") are left
    out of the paths (report --tree hides them; a row of one would be cut
    here too, and its values must be 0)."""
    out = run([a.tally, "report", "--tree", *(["--all"] if outside else []), data],
              env=env).stdout.splitlines()
    res, stack = {}, []
    for line in out[1:]:
        calls, incl, excl = (int(v) for v in line[:46].split())
        rest = line[48:]
        depth = (len(rest) - len(rest.lstrip(" "))) // 2
        name = rest.lstrip(" ").rsplit("  ", 1)[0]
        del stack[depth:]
        stack.append(name)
        key = tuple(stack)
        expect(key not in res, "%s: path %s twice in the tree" % (data, key))
        res[key] = (calls, incl, excl)
    if outside:
        return res
    cut = {}
    for key, v in res.items():
        k = 0
        while k < len(key) and key[k].startswith(OUTSIDE):
            k += 1
        if k == len(key):
            expect(v == (0, 0, 0), "%s: outside frame %s has values %s"
                   % (data, key, v))
            continue
        old = cut.get(key[k:], (0, 0, 0))
        cut[key[k:]] = tuple(x + y for x, y in zip(old, v))
    return cut


def check_tree_sums(what, rows, tree, folded):
    """The tree against the flat profile: each function's calls, inclusive
    and exclusive cycles are the sums over its paths; the collapsed stacks
    add up to all exclusive cycles."""
    for fn, r in rows.items():
        nodes = [v for k, v in tree.items() if k[-1] == fn]
        got = tuple(sum(v[i] for v in nodes) for i in range(3))
        want = (r["calls"], r["incl_cycles"], r["excl_cycles"])
        expect(got == want, "%s: %s summed over its paths %s, flat %s"
               % (what, fn, got, want))
    total = sum(int(l.rsplit(" ", 1)[1]) for l in folded.splitlines())
    want = sum(r["excl_cycles"] for r in rows.values())
    expect(total == want, "%s: collapsed stacks add up to %d, exclusive "
           "cycles to %d" % (what, total, want))


def oracle_paths(a, work, src):
    """Call paths and their calls from -finstrument-functions and
    oracle/cyg-paths.c, as {path of names: calls}."""
    exe = os.path.join(work, os.path.splitext(src)[0] + "-cyg")
    obj = os.path.join(work, "cyg-paths.o")
    run([a.cc, "-O2", "-c", os.path.join(a.srcdir, "oracle", "cyg-paths.c"), "-o", obj])
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


def paths_build(a, work, src, at, opt="-O2"):
    return build(a, work, src, "call", at, opt, extra=["-fplugin-arg-tally-paths=on"])


def check_paths(a, work):
    x86_64()
    for src in ("tree.c", "paths.c"):
        oracle = oracle_paths(a, work, src)
        for at in ("early", "late"):
            what = "%s paths=on at=%s" % (src, at)
            exe = paths_build(a, work, src, at)
            _, rows = measure(a, exe, work)
            tree = tree_rows(a, exe + ".data")
            folded = run([a.tally, "flame", "--folded", exe + ".data"]).stdout
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
            what = "%s paths=on at=%s" % (src, at)
            exe = paths_build(a, work, src, at)
            _, rows = measure(a, exe, work)
            tree = tree_rows(a, exe + ".data")
            folded = run([a.tally, "flame", "--folded", exe + ".data"]).stdout
            for k in range(1, len(chain) + 1):
                got = tree.get(tuple(chain[:k]), (0,))[0]
                want = 1 if k == 1 else 1000
                expect(got == want, "%s: path %s has %d calls, want %d"
                       % (what, chain[:k], got, want))
            check_tree_sums(what, rows, tree, folded)
            check_sums(what, rows, [chain[0]])


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


def check_paths_race(a, work):
    """Dumps while other threads add call paths: the node count is read
    once per dump, so every dump succeeds and every file is whole."""
    x86_64()
    exe = os.path.join(work, "paths-race")
    run([a.cc, "-O2", "-fplugin=" + a.plugin, "-fplugin-arg-tally-hooks=call",
         "-fplugin-arg-tally-measure=cycles", "-fplugin-arg-tally-paths=on",
         "-I", os.path.join(a.srcdir, "..", "include"),
         os.path.join(a.srcdir, "measure", "paths-race.c"), "-o", exe, a.runtime,
         "-lpthread"])
    p = run([exe, os.path.join(work, "race")], check=False)
    expect(p.returncode == 0 and p.stderr == "" and p.stdout == "0 failed\n",
           "paths-race: exit %d, %r %r" % (p.returncode, p.stdout, p.stderr))
    sizes = []
    for i in range(20):
        data = os.path.join(work, "race.%d.data" % i)
        run([a.tally, "report", "--csv", data])
        sizes.append(os.path.getsize(data))
    # The race was there to be lost: the tree grew between most dumps.
    grew = sum(1 for x, y in zip(sizes, sizes[1:]) if y > x)
    expect(sizes[-1] > 10 * sizes[0] and grew >= 10, "paths-race: the tree did not "
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


def check_papi(a, work):
    x86_64()
    need_papi(a, work)
    for at in ("early", "late"):
        what = "tree.c measure=papi at=%s" % at
        exe = os.path.join(work, "tree-papi-" + at)
        run([a.cc, "-O2", "-fplugin=" + a.plugin, "-fplugin-arg-tally-hooks=call",
             "-fplugin-arg-tally-at=" + at, "-fplugin-arg-tally-measure=papi",
             os.path.join(a.srcdir, "measure", "tree.c"), "-o", exe, a.runtime,
             a.runtime_papi, "-lpapi", "-lpthread"])
        data = exe + ".data"
        env = {"TALLY_OUTPUT": data,
               "TALLY_PAPI_EVENTS": "perf::TASK-CLOCK,TALLY_NO_SUCH_EVENT,perf::PAGE-FAULTS"}
        full = dict(os.environ)
        full.pop("TALLY_OUTPUT", None)
        full.update(env)
        import subprocess
        p = subprocess.Popen([exe], env=full, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        out, err = p.communicate()
        expect(p.returncode == 0, "%s: exit %d: %s" % (what, p.returncode, err))
        msgs = [l for l in err.splitlines() if l.strip()]
        expect(len(msgs) == 1 and "TALLY_NO_SUCH_EVENT" in msgs[0]
               and "measuring the others" in msgs[0],
               "%s: want one message naming the missing event, got %r" % (what, err))
        rep = json.loads(run([a.tally, "report", "--json", data]).stdout)
        rows = {f["name"]: f for f in rep["functions"]}
        check_counts(what, rows, {"main": (1, 1), "a": (200, 200),
                                  "b": (400, 400), "c": (1200, 1200),
                                  "d": (1, 1)})
        for ev in ("perf::TASK-CLOCK", "perf::PAGE-FAULTS"):
            ev_rows = {n: {"incl_cycles": r["events"][ev][0],
                           "excl_cycles": r["events"][ev][1],
                           "calls": r["calls"]} for n, r in rows.items()}
            check_tree(what + " " + ev, ev_rows,
                       {"main": ["a", "d"], "a": ["b"], "b": ["c"], "c": [], "d": []})
            total = sum(r["excl_cycles"] for r in ev_rows.values())
            expect(total == ev_rows["main"]["incl_cycles"],
                   "%s: %s exclusive values add up to %d, main has %d"
                   % (what, ev, total, ev_rows["main"]["incl_cycles"]))
        # perf::TASK-CLOCK (ns on the CPU) against the kernel's own count of
        # the process's CPU time (an independent oracle): main's inclusive
        # time is inside the process's, and most of it (d loops 20000000
        # times).
        import resource
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        p = subprocess.run([exe], env=full, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu_ns = ((after.ru_utime + after.ru_stime)
                  - (before.ru_utime + before.ru_stime)) * 1e9
        rep = json.loads(run([a.tally, "report", "--json", data]).stdout)
        main_tc = {f["name"]: f for f in rep["functions"]}["main"]["events"]["perf::TASK-CLOCK"][0]
        expect(0.5 * cpu_ns - 5e6 <= main_tc <= cpu_ns + 5e6,
               "%s: main's perf::TASK-CLOCK %d ns, the process used %d ns of CPU"
               % (what, main_tc, cpu_ns))
    # No event available: cycles only, one message.
    p = run([exe], env={"TALLY_OUTPUT": data, "TALLY_PAPI_EVENTS": "TALLY_NO_SUCH_EVENT"})
    expect("no event is available; measuring cycles only" in p.stderr,
           "no usable event: %r" % p.stderr)
    rep = json.loads(run([a.tally, "report", "--json", data]).stdout)
    expect(all("events" not in f and f["incl_cycles"] > 0
               for f in rep["functions"] if f["calls"]),
           "no usable event: the report has events or no cycles")


def check_frames(a, work):
    """exit=frames (LOPI return frames) against return-site exits: the same
    calls, exits and call tree; the same program output whatever the
    functions return."""
    x86_64()
    for src in ("tree.c", "paths.c", "longjmp.c", "threads.c", "signals.c"):
        for at in ("late",):
            got = {}
            for exit in ("returns", "frames"):
                what = "%s exit=%s at=%s" % (src, exit, at)
                exe = build(a, work, src, "call", at, extra=[
                    "-fplugin-arg-tally-paths=on", "-fplugin-arg-tally-update=atomic",
                    "-fplugin-arg-tally-exit=" + exit])
                out, rows = measure(a, exe, work)
                tree = tree_rows(a, exe + ".data")
                folded = run([a.tally, "flame", "--folded", exe + ".data"]).stdout
                check_tree_sums(what, rows, tree, folded)
                roots = {"threads.c": ["main", "worker", "exiter"]}.get(src, ["main"])
                slack = 0
                if src == "signals.c":
                    slack = sum(rows[h]["incl_cycles"] for h in ("on_alarm", "on_usr1", "on_usr2"))
                check_sums(what, rows, roots, slack)
                counts = {n: (r["calls"], r["exits"]) for n, r in rows.items()}
                paths = {k: v[0] for k, v in tree.items()}
                if src == "signals.c":
                    # The number of SIGALRMs (and so of work calls) varies
                    # from run to run: compare the rest.
                    skip = ("on_alarm", "handler_work", "work")
                    counts = {n: c for n, c in counts.items() if n not in skip}
                    paths = {k: c for k, c in paths.items() if not set(k) & set(skip)}
                got[exit] = (counts, paths)
            expect(got["returns"] == got["frames"],
                   "%s at=%s: exit=returns and exit=frames differ:\n%s\n%s"
                   % (src, at, got["returns"], got["frames"]))
    # Return values through the trampoline, and the functions left to
    # return-site exits.
    exe0 = os.path.join(work, "frames-plain")
    run([a.cc, "-O2", os.path.join(a.srcdir, "measure", "frames.c"), "-o", exe0, "-lm"])
    want = run([exe0]).stdout
    for opt in ("-O0", "-O2"):
        exe = build(a, work, "frames.c", "call", "late", opt,
                    extra=["-fplugin-arg-tally-exit=frames", "-lm", "-fdump-tree-all"])
        out, rows = measure(a, exe, work)
        expect(out == want, "frames.c %s: output %r, uninstrumented %r" % (opt, out, want))
        expect(all(r["calls"] == r["exits"] for r in rows.values()),
               "frames.c %s: calls and exits differ: %s" % (opt, rows))
        dumps = [f for f in os.listdir(work) if ".c." in f and f.startswith("frames")]
        text = "".join(open(os.path.join(work, f)).read() for f in dumps
                       if f.endswith(".tally"))
        for fn, why in (("ret_ldouble", "returns a value the trampoline does not keep"),
                        ("own_return_address", "reads or changes its own return address")):
            expect("%s gets return-site exits: exit=frames: %s" % (fn, why) in text,
                   "frames.c %s: no note that %s gets return-site exits" % (opt, fn))
        for f in dumps:
            os.unlink(os.path.join(work, f))
    # A callee reading its caller's return address or frame (level 1) must
    # find what the caller would: the whole unit keeps return-site exits,
    # with a warning naming the first such read.
    src = os.path.join(a.srcdir, "measure", "caller-address.c")
    exe0 = os.path.join(work, "caller-address-plain")
    run([a.cc, "-O2", "-fno-omit-frame-pointer", src, "-o", exe0])
    want = run([exe0]).stdout
    expect(want == "ok 6\n", "caller-address.c uninstrumented: %r" % want)
    for opt in ("-O0", "-O2"):
        exe = os.path.join(work, "caller-address" + opt)
        c = run([a.cc, opt, "-fno-omit-frame-pointer", "-fplugin=" + a.plugin,
                 "-fplugin-arg-tally-hooks=call", "-fplugin-arg-tally-measure=cycles",
                 "-fplugin-arg-tally-exit=frames", "-fdump-tree-all", src, "-o", exe,
                 a.runtime])
        expect("caller-address.c:25:10: warning: '-fplugin-arg-tally-exit=frames': this "
               "unit reads the return address of a caller" in c.stderr.replace("\u2018", "'")
               .replace("\u2019", "'"),
               "caller-address.c %s: no warning at the first read: %r" % (opt, c.stderr))
        p = run([exe], env={"TALLY_OUTPUT": exe + ".data"}, check=False)
        expect(p.returncode == 0 and p.stdout == want,
               "caller-address.c %s exit=frames: status %d, output %r: a callee found "
               "another return address than its caller's" % (opt, p.returncode, p.stdout))
        rows = {f["name"]: (f["calls"], f["exits"]) for f in json.loads(
            run([a.tally, "report", "--json", exe + ".data"]).stdout)["functions"]}
        expect(rows.get("dispatch") == (9, 9) and rows.get("read_callers") == (3, 3)
               and rows.get("main") == (1, 1),
               "caller-address.c %s: calls and exits %s" % (opt, rows))
        dumps = [f for f in os.listdir(work) if f.startswith("caller-address") and ".c." in f]
        text = "".join(open(os.path.join(work, f)).read() for f in dumps if f.endswith(".tally"))
        for fn in ("main", "dispatch", "own", "by_callee", "read_callers", "by_frame",
                   "read_callers_frame"):
            expect("%s gets return-site exits: exit=frames: the unit reads a caller's "
                   "return address" % fn in text,
                   "caller-address.c %s: %s is not left to return-site exits" % (opt, fn))
        for f in dumps:
            os.unlink(os.path.join(work, f))


def check_frames_cxx(a, work):
    """exit=frames in a unit with exceptions (C++) falls back to return-site
    exits with a warning, so one option builds a project mixing C and C++;
    the counts and the call tree are exit=returns' (check_exceptions)."""
    x86_64()
    for opt in ("-O0", "-O2"):
        what = "exceptions.cc exit=frames %s" % opt
        exe = os.path.join(work, "exc-frames" + opt)
        p = run([a.cxx, opt, "-fplugin=" + a.plugin, "-fplugin-arg-tally-hooks=call",
                 "-fplugin-arg-tally-measure=cycles", "-fplugin-arg-tally-exit=frames",
                 os.path.join(a.srcdir, "measure", "exceptions.cc"), "-o", exe, a.runtime,
                 "-lpthread"], env={"LC_ALL": "C"}, check=False)
        text = p.stderr.replace("\u2018", "'").replace("\u2019", "'")
        expect(p.returncode == 0, "%s: the build failed:\n%s" % (what, text))
        expect("warning: '-fplugin-arg-tally-exit=frames' cannot be used with exceptions"
               in text and "this unit gets exit hooks at its returns" in text,
               "%s: no fallback warning:\n%s" % (what, text))
        _, rows = measure(a, exe, work)
        check_exceptions_rows(what, rows)
    # -fexceptions in C: the same fallback, and -Werror makes it an error.
    src = os.path.join(work, "x.c")
    with open(src, "w") as f:
        f.write("int main (void) { return 0; }\n")
    base = [a.cc, "-fplugin=" + a.plugin, "-fplugin-arg-tally-hooks=call",
            "-fplugin-arg-tally-measure=cycles", "-fplugin-arg-tally-exit=frames",
            "-fexceptions", "-c", src, "-o", os.path.join(work, "x.o")]
    p = run(base, env={"LC_ALL": "C"}, check=False)
    expect(p.returncode == 0 and "cannot be used with exceptions" in p.stderr,
           "C -fexceptions: exit %d:\n%s" % (p.returncode, p.stderr))
    p = run(base + ["-Werror"], env={"LC_ALL": "C"}, check=False)
    expect(p.returncode != 0 and "internal compiler error" not in p.stderr,
           "C -fexceptions -Werror: exit %d:\n%s" % (p.returncode, p.stderr))


def check_errors(a, work):
    src = os.path.join(work, "x.c")
    with open(src, "w") as f:
        f.write("int main (void) { return 0; }\n")
    base = [a.cc, "-fplugin=" + a.plugin, "-c", src, "-o", os.devnull]
    cases = [
        (["-fplugin-arg-tally-measure=time"],
         "invalid value 'time' for '-fplugin-arg-tally-measure'; accepted values: count, cycles, papi"),
        (["-fplugin-arg-tally-measure"],
         "'-fplugin-arg-tally-measure' needs a value; accepted values: count, cycles, papi"),
        (["-fplugin-arg-tally-measure=papi"],
         "'-fplugin-arg-tally-measure=papi' needs '-fplugin-arg-tally-hooks=call'"),
        (["-fplugin-arg-tally-exit=trampoline"],
         "invalid value 'trampoline' for '-fplugin-arg-tally-exit'; accepted values: returns, frames"),
        (["-fplugin-arg-tally-exit=frames", "-fplugin-arg-tally-measure=cycles"],
         "'-fplugin-arg-tally-exit=frames' needs '-fplugin-arg-tally-hooks=call' and '-fplugin-arg-tally-measure=cycles'"),
        (["-fplugin-arg-tally-exit=frames", "-fplugin-arg-tally-measure=cycles",
          "-fplugin-arg-tally-hooks=call", "-fplugin-arg-tally-at=early"],
         "'-fplugin-arg-tally-exit=frames' needs '-fplugin-arg-tally-at=late'"),
        (["-fplugin-arg-tally-paths=yes"],
         "invalid value 'yes' for '-fplugin-arg-tally-paths'; accepted values: on, off"),
        (["-fplugin-arg-tally-paths=on", "-fplugin-arg-tally-measure=cycles"],
         "'-fplugin-arg-tally-paths=on' needs '-fplugin-arg-tally-measure=cycles' (or 'papi') and '-fplugin-arg-tally-hooks=call'"),
        (["-fplugin-arg-tally-measure=cycles", "-fplugin-arg-tally-hooks=user:h"],
         "'-fplugin-arg-tally-measure=cycles' needs '-fplugin-arg-tally-hooks=inline' or 'call'"),
    ]
    if platform.machine() == "x86_64":
        cases.append((["-fplugin-arg-tally-measure=cycles", "-m32"],
                      "support x86-64 only"))
    for flags, msg in cases:
        p = run(base + flags, check=False, env={"LC_ALL": "C"})
        text = p.stderr.replace("\u2018", "'").replace("\u2019", "'")
        if "-m32" in flags and ("gnu/stubs-32.h" in text or "bits/" in text):
            continue
        expect(p.returncode != 0 and msg in text and "internal compiler error" not in text,
               "%s: exit %d, want an error containing %r:\n%s"
               % (" ".join(flags), p.returncode, msg, text))


def report_rows(a, files):
    """The per-function rows of `tally report --json FILES`, by name."""
    rep = json.loads(run([a.tally, "report", "--json"] + files).stdout)
    return {f["name"]: f for f in rep["functions"]}


def merge_check(a, work, tag, flags, libs=(), env=None, procs=6, rounds=3,
                events=()):
    """PROCS processes of merge.c built with FLAGS merge ROUNDS dumps each
    into one %m file and also write their whole profile to a plain file at
    the same moment: the merged file's calls, measured values and call
    tree are exactly the sums of the plain files', and so are those of
    `tally merge` of the plain files.  Returns (exe, merged, plain files)."""
    import subprocess
    sub = os.path.join(work, tag)
    os.mkdir(sub)
    exe = os.path.join(sub, "merge")
    run([a.cc, "-O2", "-fplugin=" + a.plugin, *flags, "-I",
         os.path.join(a.srcdir, "..", "include"),
         os.path.join(a.srcdir, "measure", "merge.c"), "-o", exe, a.runtime,
         *libs, "-lpthread"])
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
    want = report_rows(a, plain)
    calls = {"x": procs * rounds * 440, "y": procs * rounds * 70,
             "shared": procs * rounds * 510, "r": procs * rounds * 40}
    for what, data in (("%m", merged), ("tally merge", tool)):
        rows = report_rows(a, [data])
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
    rows = report_rows(a, [merged])
    expect(rows["x"]["calls"] == 440 and rows["x"]["incl_cycles"]
           == report_rows(a, [os.path.join(work, "plain.data")])["x"]["incl_cycles"],
           "after moving aside: %s" % rows["x"])


def check_papi_paths(a, work):
    """measure=papi with paths=on: the events per call path sum to each
    function's flat event totals, exactly; report --tree --event and flame
    --event show them; merging keeps them (%m and tally merge), and files
    with other event lists are kept apart."""
    x86_64()
    need_papi(a, work)
    events = PAPI_EVENTS
    env = {"TALLY_PAPI_EVENTS": ",".join(events)}
    flags = ["-fplugin-arg-tally-hooks=call", "-fplugin-arg-tally-measure=papi",
             "-fplugin-arg-tally-paths=on"]
    libs = [a.runtime_papi, "-lpapi"]
    for at in ("early", "late"):
        what = "paths.c measure=papi paths=on at=%s" % at
        exe = os.path.join(work, "paths-papi-" + at)
        run([a.cc, "-O2", "-fplugin=" + a.plugin, *flags, "-fplugin-arg-tally-at=" + at,
             os.path.join(a.srcdir, "measure", "paths.c"), "-o", exe, a.runtime,
             *libs, "-lpthread"])
        data = exe + ".data"
        p = run([exe], env=dict(env, TALLY_OUTPUT=data))
        expect(p.stderr == "", "%s: %r" % (what, p.stderr))
        rows = report_rows(a, [data])
        calls = {k: v[0] for k, v in tree_rows(a, data).items()}
        for ev in events:
            out = run([a.tally, "report", "--tree", "--event", ev, data]).stdout
            expect(out.splitlines()[0].split()[1:3] == ["incl-" + ev, "excl-" + ev],
                   "%s: header %r" % (what, out.splitlines()[0]))
            # (tree_rows reads `report --tree`; the same columns with --event.)
            ev_tree = {}
            stack = []
            for line in out.splitlines()[1:]:
                c, incl, excl = (int(v) for v in line[:46].split())
                rest = line[48:]
                depth = (len(rest) - len(rest.lstrip(" "))) // 2
                name = rest.lstrip(" ").rsplit("  ", 1)[0]
                del stack[depth:]
                stack.append(name)
                ev_tree[tuple(stack)] = (c, incl, excl)
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
        expect(rows["main"]["events"]["perf::TASK-CLOCK"][0] > 0,
               "%s: no TASK-CLOCK in main" % what)
        p = run([a.tally, "report", "--tree", "--event", "PAPI_NO_SUCH", data], check=False)
        expect(p.returncode == 1 and "no call-path values of event PAPI_NO_SUCH" in p.stderr,
               "%s: unknown event: %d %r" % (what, p.returncode, p.stderr))
    # Merging.
    exe, merged, plain = merge_check(a, work, "papi", flags, libs=libs, env=env,
                                     events=events)
    # Another event list: kept apart by the runtime, refused by tally merge.
    p = run([exe, merged.replace(os.path.basename(merged)[4:-5], "%m"),
             os.path.join(work, "one-event.data"), "1"],
            env={"TALLY_PAPI_EVENTS": "perf::TASK-CLOCK"})
    expect("it measures perf::PAGE-FAULTS, which this process does not; not merged, "
           "moved aside to " + merged + ".other" in p.stderr,
           "another event list: %r" % p.stderr)
    p = run([a.tally, "merge", "-o", os.path.join(work, "never.data"), plain[0],
             os.path.join(work, "one-event.data")], check=False)
    expect(p.returncode == 1 and "does not measure perf::PAGE-FAULTS" in p.stderr,
           "tally merge of another event list: %d %r" % (p.returncode, p.stderr))


def file_with_meas(a, work):
    x86_64()
    exe = build(a, work, "tree.c", "call", "late")
    data = exe + ".data"
    run([exe], env={"TALLY_OUTPUT": data})
    with open(data, "rb") as f:
        return f.read()


def rewrap(body):
    """BODY (header to before the trailer) with its size and CRC fixed."""
    size = len(body) + 16
    body = body[:16] + struct.pack("<Q", size) + body[24:]
    return body + struct.pack("<IIQ", 0x444e4554, zlib.crc32(body), size)


def meas_variants(buf):
    """Damaged MEAS records, each a valid file otherwise."""
    body = buf[:-16]
    at = body.index(b"MEAS")
    yield "value count 0", body[:at + 4] + struct.pack("<I", 0) + body[at + 8:]
    yield "value count 17", body[:at + 4] + struct.pack("<I", 17) + body[at + 8:]
    name_len = struct.unpack_from("<I", body, at + 8)[0]
    nrec_at = at + 12 + name_len
    yield "record count 2", body[:nrec_at] + struct.pack("<I", 2) + body[nrec_at + 4:]
    yield "function count +1", (body[:nrec_at + 4] +
                                struct.pack("<I", struct.unpack_from("<I", body, nrec_at + 4)[0] + 1)
                                + body[nrec_at + 8:])
    yield "truncated values", body[:-8]
    first = nrec_at + 8
    yield "exclusive above inclusive", (body[:first] + struct.pack("<QQ", 1, 2)
                                        + body[first + 16:])
    yield "bytes after it", body + b"\0\0\0\0"


def file_with_paths(a, work):
    x86_64()
    exe = paths_build(a, work, "tree.c", "late")
    data = exe + ".data"
    run([exe], env={"TALLY_OUTPUT": data})
    with open(data, "rb") as f:
        return f.read()


def path_variants(buf):
    """Damaged PATH records, each a valid file otherwise."""
    body = buf[:-16]
    at = body.index(b"PATH")
    nrec = struct.unpack_from("<I", body, at + 16)[0]
    n_at = at + 20 + 4 * nrec
    first = n_at + 4
    yield "path record count 2", body[:at + 16] + struct.pack("<I", nrec + 1) + body[at + 20:]
    yield "path node count huge", body[:n_at] + struct.pack("<I", 0x10000000) + body[n_at + 4:]
    yield "path parent not earlier", body[:first] + struct.pack("<I", 1) + body[first + 4:]
    yield "path function in no module", body[:first + 4] + struct.pack("<I", 999) + body[first + 8:]
    yield "path exclusive above inclusive", (body[:first + 16] + struct.pack("<QQ", 1, 2)
                                             + body[first + 32:])
    yield "path truncated", body[:-8]


def path_nodes_at(body):
    """(offset of the first PATH node, node count) of BODY."""
    at = body.index(b"PATH")
    nrec = struct.unpack_from("<I", body, at + 16)[0]
    n_at = at + 20 + 4 * nrec
    return n_at + 4, struct.unpack_from("<I", body, n_at)[0]


def frames_variants(buf):
    """Damaged FRMS records (and PATH nodes naming frames), each a valid
    file otherwise."""
    body = buf[:-16]
    at = body.index(b"FRMS")
    n = struct.unpack_from("<I", body, at + 4)[0]
    first = at + 8
    name_len = struct.unpack_from("<I", body, first + 12)[0]
    second = first + 16 + name_len
    yield "frames count 0", body[:at + 4] + struct.pack("<I", 0) + body[at + 8:]
    yield "frames count huge", body[:at + 4] + struct.pack("<I", 0x10000000) + body[at + 8:]
    yield "frames id below base", body[:first] + struct.pack("<I", 0x10) + body[first + 4:]
    if n > 1:
        yield "frames ids out of order", (body[:second] + body[first:first + 4]
                                          + body[second + 4:])
    yield "frames name past the end", (body[:first + 12] + struct.pack("<I", 0x7fffff)
                                       + body[first + 16:])
    yield "frames without path", body[:body.index(b"PATH")]
    nodes, count = path_nodes_at(body)
    frame_nodes = [nodes + 32 * i for i in range(count)
                   if struct.unpack_from("<I", body, nodes + 32 * i + 4)[0] >= 0xf0000000]
    if frame_nodes:
        k = frame_nodes[0]
        yield "path frame not in frames", (body[:k + 4] + struct.pack("<I", 0xf0000fff)
                                           + body[k + 8:])
        yield "path frame with values", (body[:k + 8] + struct.pack("<QQQ", 1, 1, 1)
                                         + body[k + 32:])


def pevt_variants(buf):
    """Damaged PEVT records (events per path), each a valid file otherwise."""
    body = buf[:-16]
    at = body.index(b"PEVT")
    e, n = struct.unpack_from("<II", body, at + 4)
    yield "pevt event count", body[:at + 4] + struct.pack("<I", e + 1) + body[at + 8:]
    yield "pevt node count", body[:at + 8] + struct.pack("<I", n + 1) + body[at + 12:]
    # The first node with a function: its first event's values.
    nodes, count = path_nodes_at(body)
    k = next(i for i in range(count)
             if struct.unpack_from("<I", body, nodes + 32 * i + 4)[0] < 0xf0000000)
    v = at + 12 + 16 * e * k
    yield "pevt exclusive above inclusive", (body[:v] + struct.pack("<QQ", 1, 2)
                                             + body[v + 16:])
    yield "pevt truncated", body[:-8]
    yield "pevt without path", body[:body.index(b"PATH")] + body[at:]


def file_with_pevt(a, work):
    """A measure=papi paths=on file with two events per path, or None
    where this machine cannot measure PAPI_EVENTS."""
    if papi_unusable(a, work):
        return None
    exe = os.path.join(work, "tree-papi-paths")
    run([a.cc, "-O2", "-fplugin=" + a.plugin, "-fplugin-arg-tally-hooks=call",
         "-fplugin-arg-tally-measure=papi", "-fplugin-arg-tally-paths=on",
         os.path.join(a.srcdir, "measure", "tree.c"), "-o", exe, a.runtime,
         a.runtime_papi, "-lpapi", "-lpthread"])
    run([exe], env={"TALLY_OUTPUT": exe + ".data",
                    "TALLY_PAPI_EVENTS": "perf::TASK-CLOCK,perf::PAGE-FAULTS"})
    with open(exe + ".data", "rb") as f:
        return f.read()


def bad_variants(a, work):
    """(name, damaged file) for every damaged MEAS, PATH, FRMS and PEVT
    record this build can make."""
    buf = file_with_paths(a, work)
    for name, body in path_variants(buf):
        yield name, rewrap(body)
    if b"FRMS" in buf:  # (libunwind found frames below main)
        for name, body in frames_variants(buf):
            yield name, rewrap(body)
    for name, body in meas_variants(file_with_meas(a, work)):
        yield "meas " + name, rewrap(body)
    pevt = file_with_pevt(a, work)
    if pevt:
        for name, body in pevt_variants(pevt):
            yield name, rewrap(body)


def check_bad_meas(a, work):
    """The reader rejects each damaged record with a message naming the
    file; the runtime's merge-on-write moves it aside instead of merging
    it (and does not crash)."""
    names = []
    merger = os.path.join(work, "merge")
    run([a.cc, "-O2", "-fplugin=" + a.plugin, "-fplugin-arg-tally-hooks=call",
         "-fplugin-arg-tally-measure=cycles", "-fplugin-arg-tally-paths=on",
         "-I", os.path.join(a.srcdir, "..", "include"),
         os.path.join(a.srcdir, "measure", "merge.c"), "-o", merger, a.runtime,
         "-lpthread"])
    sub = os.path.join(work, "m")
    os.mkdir(sub)
    pattern = os.path.join(sub, "t.%m.data")
    run([merger, pattern, os.path.join(sub, "plain"), "1"])
    target = [os.path.join(sub, f) for f in os.listdir(sub)
              if f.startswith("t.") and f.endswith(".data")][0]
    for name, content in bad_variants(a, work):
        names.append(name)
        path = os.path.join(work, "bad.data")
        with open(path, "wb") as f:
            f.write(content)
        p = run([a.tally, "report", path], check=False)
        expect(p.returncode == 1 and "corrupt" in p.stderr and "bad.data" in p.stderr,
               "%s: exit %d, stderr %r" % (name, p.returncode, p.stderr))
        # The runtime's merge checks the file as strictly.
        with open(target, "wb") as f:
            f.write(content)
        p = run([merger, pattern, os.path.join(sub, "plain"), "1"], check=False)
        expect(p.returncode == 0 and "not merged, moved aside to " + target + ".bad"
               in p.stderr, "%s: the runtime's merge: exit %d, %r"
               % (name, p.returncode, p.stderr))
        with open(target + ".bad", "rb") as f:
            expect(f.read() == content, "%s: the file moved aside changed" % name)
        os.unlink(target + ".bad")  # the next one would go to .bad.1
        run([a.tally, "report", target])
    for want_name in ("path parent not earlier", "meas value count 0"):
        expect(want_name in names, "no %r variant" % want_name)
    if a.unwind == "1":
        expect("frames count 0" in names, "no FRMS variants: %s" % names)
    why = papi_unusable(a, work)
    if why:
        print("no PEVT variants: %s" % why)
    else:
        expect("pevt event count" in names, "no PEVT variants: %s" % names)


def write_corpus(a, out_dir):
    """Regenerate the fuzz seeds of tools/fuzz-corpus (by hand)."""
    import tempfile
    work = tempfile.mkdtemp()
    buf = file_with_meas(a, work)
    with open(os.path.join(out_dir, "meas-valid"), "wb") as f:
        f.write(buf)
    buf2 = file_with_paths(a, work)
    with open(os.path.join(out_dir, "path-valid"), "wb") as f:
        f.write(buf2)
    for name, body in path_variants(buf2):
        with open(os.path.join(out_dir, name.replace(" ", "-")), "wb") as f:
            f.write(rewrap(body))
    for name, body in meas_variants(buf):
        with open(os.path.join(out_dir, "meas-" + name.replace(" ", "-").replace("+", "plus")), "wb") as f:
            f.write(rewrap(body))
    if b"FRMS" in buf2:
        for name, body in frames_variants(buf2):
            with open(os.path.join(out_dir, name.replace(" ", "-")), "wb") as f:
                f.write(rewrap(body))
    buf3 = file_with_pevt(a, work)
    if buf3:
        with open(os.path.join(out_dir, "pevt-valid"), "wb") as f:
            f.write(buf3)
        for name, body in pevt_variants(buf3):
            with open(os.path.join(out_dir, name.replace(" ", "-")), "wb") as f:
                f.write(rewrap(body))


CHECKS = {
    "tree": check_tree_prog,
    "longjmp": check_longjmp,
    "exceptions": check_exceptions,
    "recursion": check_recursion,
    "inlined": check_inlined,
    "threads": check_threads,
    "signals": check_signals,
    "paths": check_paths,
    "paths-limits": check_paths_limits,
    "paths-race": check_paths_race,
    "papi": check_papi,
    "unwind": check_unwind,
    "frames": check_frames,
    "frames-cxx": check_frames_cxx,
    "errors": check_errors,
    "bad-meas": check_bad_meas,
    "merge": check_merge,
    "papi-paths": check_papi_paths,
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("check", choices=sorted(CHECKS) + ["corpus"])
    ap.add_argument("--plugin", required=True)
    ap.add_argument("--runtime", required=True)
    ap.add_argument("--tally", required=True)
    ap.add_argument("--cc", default="gcc")
    ap.add_argument("--cxx", default="g++")
    ap.add_argument("--srcdir", required=True)
    ap.add_argument("--corpus-dir")
    ap.add_argument("--papi", default="0", help="1 if the runtime has PAPI")
    ap.add_argument("--runtime-papi", help="libtally-rt-papi.a")
    ap.add_argument("--unwind", default="0", help="1 if the runtime has libunwind")
    a = ap.parse_args()
    if a.check == "corpus":
        write_corpus(a, a.corpus_dir)
        return 0
    return run_check(CHECKS, a.check, a, "tally-measure-")


if __name__ == "__main__":
    sys.exit(main())
