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

exit=frames, measure=papi, the option errors and damaged MEAS, PATH, FRMS
and PEVT records are here too; paths=on is run-paths.py's.  The helpers
both share are measurelib.py's.

Usage: run-measure.py CASE --plugin P --runtime RT --tally T --cc CC
                      --cxx CXX --srcdir DIR ... (testsuite/meson.build's
                      driver_args)
       run-measure.py corpus --corpus-dir DIR ... (regenerates the fuzz
                      seeds of tools/fuzz-corpus, by hand)
Exit status: 0 pass, 1 fail, 77 skip.
"""
import json
import os
import platform
import struct
import sys

from checklib import case, data_of, expect, main, run, write_file
from measurelib import (build, check_counts, check_structure, check_sums, check_tree,
                        check_tree_sums, each_mode, fake_papi, FAKE_EVENTS, measure,
                        measure_exe, measured, papi_sources, paths_build, PATHS_ON,
                        rewrap, tree_rows, x86_64)


# tree.c's calls and callees (each called by one parent only).
TREE_COUNTS = {"main": (1, 1), "a": (200, 200), "b": (400, 400), "c": (1200, 1200),
               "d": (1, 1)}
TREE_CHILDREN = {"main": ["a", "d"], "a": ["b"], "b": ["c"], "c": [], "d": []}
OPTS = ("-O0", "-O2")


@case("tree")
def check_tree_prog(a, work):
    x86_64()
    for what, _, rows in measured(a, work, "tree.c", each_mode(OPTS)):
        check_structure(what, rows, TREE_COUNTS, TREE_CHILDREN)
        # d loops 20000000 times, all the c calls 60000 times together.
        expect(rows["d"]["excl_cycles"] > rows["c"]["excl_cycles"] > 0,
               "%s: d's exclusive cycles %d not above c's %d" %
               (what, rows["d"]["excl_cycles"], rows["c"]["excl_cycles"]))
    # With block counters (calls derived from them with hooks=inline: the
    # report derives them from the block counts) and per-thread counters.
    for what, _, rows in measured(a, work, "tree.c", each_mode(
            extras=(["-fplugin-arg-tally-blocks=count"], ["-fplugin-arg-tally-update=tls"]))):
        check_structure(what, rows, TREE_COUNTS, TREE_CHILDREN)


@case("inlined")
def check_inlined(a, work):
    """at=early: functions inlined after their hooks went in share the CFA
    of the function they are inlined into; the plugin tells them apart."""
    x86_64()
    configs = [(hooks, "early", opt, ()) for hooks in ("inline", "call") for opt in OPTS]
    for what, _, rows in measured(a, work, "inlined.c", configs):
        check_structure(what, rows, {"main": (1, 1), "outer": (300, 300),
                                     "in1": (300, 200), "in2": (300, 200),
                                     "leaf": (400, 400)},
                        {"main": ["outer"], "outer": ["in1"], "in1": ["in2"]})


def skipped_frames(what, rows, chain, after):
    """The frames of CHAIN, skipped by a jump, are closed at the next hook
    (AFTER's entry), so AFTER's 200000-iteration loop is not in them.  Left
    open, CHAIN's first frame would hold all of AFTER's cycles; closed, it
    holds the jump or the throw and unwind.  The bound is AFTER's whole
    total, not half of it: time-stamp cycles count preemptions too, and on
    a loaded machine those in the unwinder once exceeded half."""
    first = rows[chain[0]]["incl_cycles"]
    expect(first < rows[after]["incl_cycles"],
           "%s: %s has %d inclusive cycles, %s only %d: the skipped frames "
           "were not closed at the next hook" % (what, chain[0], first, after,
                                                  rows[after]["incl_cycles"]))


@case("longjmp")
def check_longjmp(a, work):
    x86_64()
    for what, _, rows in measured(a, work, "longjmp.c", each_mode(OPTS)):
        check_structure(what, rows, {"main": (1, 1), "driver": (1000, 1000),
                                     "after": (1000, 1000), "l1": (1000, 0),
                                     "l2": (1000, 0), "l3": (1000, 0), "l4": (1000, 0)},
                        {"main": ["driver"], "driver": ["l1", "after"], "l1": ["l2"],
                         "l2": ["l3"], "l3": ["l4"], "l4": []})
        skipped_frames(what, rows, ["l1"], "after")


def check_exceptions_rows(what, rows):
    """The counts, tree and sums of exceptions.cc's functions in ROWS (as
    measure gives them); returns ROWS under their short names."""
    names = {"int main()": "main", "void catcher(int)": "catcher",
             "void after()": "after", "void t1(int)": "t1",
             "void t2(int)": "t2", "void t3(int)": "t3"}
    rows = {names.get(n, n): r for n, r in rows.items()}
    check_structure(what, rows, {"main": (1, 1), "catcher": (1000, 1000),
                                 "after": (1000, 1000), "t1": (1000, 0),
                                 "t2": (1000, 0), "t3": (1000, 0)},
                    {"main": ["catcher"], "catcher": ["t1", "after"], "t1": ["t2"],
                     "t2": ["t3"], "t3": []})
    return rows


@case("exceptions")
def check_exceptions(a, work):
    x86_64()
    for what, _, rows in measured(a, work, "exceptions.cc", each_mode(OPTS)):
        rows = check_exceptions_rows(what, rows)
        skipped_frames(what, rows, ["t1"], "after")


@case("recursion")
def check_recursion(a, work):
    x86_64()
    for what, _, rows in measured(a, work, "recursion.c", each_mode()):
        check_structure(what, rows, {"main": (1, 1), "deep": (1, 1),
                                     "rec": (800002, 800002)}, {}, ["main", "deep"])


@case("threads")
def check_threads(a, work):
    x86_64()
    for what, _, rows in measured(a, work, "threads.c",
                                  each_mode(extras=(["-fplugin-arg-tally-update=atomic"],))):
        check_structure(what, rows, {"main": (1, 1), "worker": (8, 8),
                                     "a": (40000, 40000), "b": (80001, 80001),
                                     "exiter": (1, 0), "e1": (1, 0), "e2": (1, 0)},
                        {"worker": ["a"], "exiter": ["e1"], "e1": ["e2"]},
                        ["main", "worker", "exiter"])


@case("signals")
def check_signals(a, work):
    x86_64()
    for what, out, rows in measured(a, work, "signals.c", each_mode()):
        alarms = int(out.split()[0])
        want = {"main": (1, 1), "on_alarm": (alarms, alarms),
                "handler_work": (alarms + 200, alarms + 200),
                "on_usr1": (100, 0), "on_usr2": (100, 100),
                "jumper": (100, 100), "alt": (100, 100),
                "s1": (100, 0), "s2": (100, 0), "s3": (100, 0)}
        work_calls = rows["work"]["calls"]
        expect(work_calls >= 200, "%s: work called %d times" % (what, work_calls))
        want["work"] = (work_calls, work_calls)
        # A handler that interrupts the few instructions of a pop can have
        # its cycles charged twice or not at all (doc/measure.md): at most
        # its own cycles.
        slack = sum(rows[h]["incl_cycles"] for h in ("on_alarm", "on_usr1", "on_usr2"))
        check_structure(what, rows, want, {"s1": ["s2"], "s2": ["s3"]}, ["main"], slack)


@case("papi")
def check_papi(a, work):
    """measure=papi at=early and late, with the fake PAPI and, where it can
    measure, the machine's: exact calls, every event's tree (inclusive =
    exclusive + callees, exclusive values adding up to main's inclusive
    one), one message for an event that does not exist; the CPU-time event
    against the kernel's count of the process's CPU time; cycles only, with
    one message, when no event exists."""
    x86_64()
    import resource
    import subprocess
    for source, events, src_env, cpu_ev in papi_sources(a, work):
        for at in ("early", "late"):
            what = "tree.c measure=papi at=%s, %s" % (at, source)
            exe = os.path.join(work, "tree-papi-%s-%s" % (at, source.replace(" ", "-")))
            run([a.cc, "-O2", "-fplugin=" + a.plugin, "-fplugin-arg-tally-hooks=call",
                 "-fplugin-arg-tally-at=" + at, "-fplugin-arg-tally-measure=papi",
                 os.path.join(a.srcdir, "measure", "tree.c"), "-o", exe, a.runtime,
                 a.runtime_papi, "-lpapi", "-lpthread"])
            data = exe + ".data"
            env = dict(src_env, TALLY_OUTPUT=data,
                       TALLY_PAPI_EVENTS="%s,TALLY_NO_SUCH_EVENT,%s" % events)
            full = dict(os.environ)
            full.pop("TALLY_OUTPUT", None)
            full.update(env)
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
            for ev in events:
                ev_rows = {n: {"incl_cycles": r["events"][ev][0],
                               "excl_cycles": r["events"][ev][1],
                               "calls": r["calls"]} for n, r in rows.items()}
                check_tree(what + " " + ev, ev_rows,
                           {"main": ["a", "d"], "a": ["b"], "b": ["c"], "c": [], "d": []})
                total = sum(r["excl_cycles"] for r in ev_rows.values())
                expect(total == ev_rows["main"]["incl_cycles"],
                       "%s: %s exclusive values add up to %d, main has %d"
                       % (what, ev, total, ev_rows["main"]["incl_cycles"]))
            # The CPU-time event (ns on the CPU) against the kernel's own
            # count of the process's CPU time (an independent oracle):
            # main's inclusive time is inside the process's, and most of it
            # (d loops 20000000 times).
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            p = subprocess.run([exe], env=full, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu_ns = ((after.ru_utime + after.ru_stime)
                      - (before.ru_utime + before.ru_stime)) * 1e9
            rep = json.loads(run([a.tally, "report", "--json", data]).stdout)
            main_tc = {f["name"]: f for f in rep["functions"]}["main"]["events"][cpu_ev][0]
            expect(0.5 * cpu_ns - 5e6 <= main_tc <= cpu_ns + 5e6,
                   "%s: main's %s %d ns, the process used %d ns of CPU"
                   % (what, cpu_ev, main_tc, cpu_ns))
        # No event available: cycles only, one message.
        p = run([exe], env=dict(src_env, TALLY_OUTPUT=data,
                                TALLY_PAPI_EVENTS="TALLY_NO_SUCH_EVENT"))
        expect("no event is available; measuring cycles only" in p.stderr,
               "%s, no usable event: %r" % (source, p.stderr))
        rep = json.loads(run([a.tally, "report", "--json", data]).stdout)
        expect(all("events" not in f and f["incl_cycles"] > 0
                   for f in rep["functions"] if f["calls"]),
               "%s, no usable event: the report has events or no cycles" % source)


@case("frames")
def check_frames(a, work):
    """exit=frames (LOPI return frames) against return-site exits: the same
    calls, exits and call tree; the same program output whatever the
    functions return."""
    x86_64()
    for src in ("tree.c", "paths.c", "longjmp.c", "threads.c", "signals.c"):
        for at in ("late", "early"):
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
    for opt, hooks in (("-O0", "call"), ("-O2", "call"), ("-O0", "inline"), ("-O2", "inline")):
        exe = build(a, work, "frames.c", hooks, "late", opt,
                    extra=["-fplugin-arg-tally-exit=frames", "-lm", "-fdump-tree-all"])
        out, rows = measure(a, exe, work)
        opt = "%s hooks=%s" % (opt, hooks)
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


@case("frames-cxx")
def check_frames_cxx(a, work):
    """exit=frames in units with exceptions (C++, or C with -fexceptions):
    no warning, the return frames are in the code, and an exception
    through three armed frames gives exit=returns' counts and tree
    (check_exceptions); run-frames.py has the rest."""
    x86_64()
    for opt in ("-O0", "-O2"):
        for hooks in ("inline", "call"):
            what = "exceptions.cc exit=frames hooks=%s %s" % (hooks, opt)
            exe = os.path.join(work, "exc-frames-%s%s" % (hooks, opt))
            p = run([a.cxx, opt, "-fplugin=" + a.plugin, "-fplugin-arg-tally-hooks=" + hooks,
                     "-fplugin-arg-tally-measure=cycles", "-fplugin-arg-tally-exit=frames",
                     os.path.join(a.srcdir, "measure", "exceptions.cc"), "-o", exe,
                     a.runtime, "-lpthread"], env={"LC_ALL": "C"})
            expect(p.stderr == "", "%s: the compiler said %r" % (what, p.stderr))
            dis = run(["objdump", "-d", exe]).stdout
            expect("<__tally_return_trampoline>" in dis or "<__tally_enter_frames" in dis,
                   "%s: no return frame in the code" % what)
            _, rows = measure(a, exe, work)
            rows = check_exceptions_rows(what, rows)
            skipped_frames(what, rows, ["t1"], "after")
    # -fexceptions in C: built with frames, without a word.
    src = write_file(os.path.join(work, "x.c"), "int main (void) { return 0; }\n")
    p = run([a.cc, "-fplugin=" + a.plugin, "-fplugin-arg-tally-hooks=call",
             "-fplugin-arg-tally-measure=cycles", "-fplugin-arg-tally-exit=frames",
             "-fexceptions", "-Werror", "-c", src, "-o", os.path.join(work, "x.o")],
            env={"LC_ALL": "C"}, check=False)
    expect(p.returncode == 0 and p.stderr == "",
           "C -fexceptions -Werror: exit %d:\n%s" % (p.returncode, p.stderr))


@case("errors")
def check_errors(a, work):
    src = write_file(os.path.join(work, "x.c"), "int main (void) { return 0; }\n")
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
        (["-fplugin-arg-tally-exit=frames"],
         "'-fplugin-arg-tally-exit=frames' needs '-fplugin-arg-tally-measure=cycles'"),
        (["-fplugin-arg-tally-exit=frames", "-fplugin-arg-tally-measure=papi",
          "-fplugin-arg-tally-hooks=call"],
         "'-fplugin-arg-tally-exit=frames' needs '-fplugin-arg-tally-measure=cycles'"),
        (["-fplugin-arg-tally-paths=yes"],
         "invalid value 'yes' for '-fplugin-arg-tally-paths'; accepted values: on, off"),
        (["-fplugin-arg-tally-paths=on", "-fplugin-arg-tally-hooks=call"],
         "'-fplugin-arg-tally-paths=on' needs '-fplugin-arg-tally-measure=cycles' (or 'papi')"),
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


def file_with_meas(a, work):
    x86_64()
    return data_of(build(a, work, "tree.c", "call", "late"))


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
    return data_of(paths_build(a, work, "tree.c", "late"))


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
    """A measure=papi paths=on file with two events per path (the fake
    PAPI's), or None where the runtime was built without PAPI."""
    if a.papi != "1" or not a.runtime_papi:
        return None
    exe = os.path.join(work, "tree-papi-paths")
    run([a.cc, "-O2", "-fplugin=" + a.plugin, "-fplugin-arg-tally-hooks=call",
         "-fplugin-arg-tally-measure=papi", "-fplugin-arg-tally-paths=on",
         os.path.join(a.srcdir, "measure", "tree.c"), "-o", exe, a.runtime,
         a.runtime_papi, "-lpapi", "-lpthread"])
    run([exe], env=dict(fake_papi(a, work), TALLY_OUTPUT=exe + ".data",
                        TALLY_PAPI_EVENTS=",".join(FAKE_EVENTS)))
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


@case("bad-meas")
def check_bad_meas(a, work):
    """The reader rejects each damaged record with a message naming the
    file; the runtime's merge-on-write moves it aside instead of merging
    it (and does not crash)."""
    names = []
    merger = measure_exe(a, os.path.join(work, "merge"), "paths.c", PATHS_ON)
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
    if a.papi != "1" or not a.runtime_papi:
        print("no PEVT variants: the runtime was built without PAPI")
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



if __name__ == "__main__":
    sys.exit(main("tally-measure-", {"corpus": lambda a: write_corpus(a, a.corpus_dir) or 0}))
