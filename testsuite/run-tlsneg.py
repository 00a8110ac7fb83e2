#!/usr/bin/env python3
"""update=tls with the attach test folded into the entry count (issue 16,
target 3; rt/tls.c, plugin/hooks.cc insert_tls_fold).

A function other units can call starts its thread-local entry count at -1:
its hot path is `addq $1,%fs:..; je` (plus the GOT load of the offset in
-fPIC code), the cold path attaches the thread on the function's first
call in it.  These cases check that shape in the disassembly and that
every count stays exact across the thread boundaries the -1 has to
survive: pthread_create, std::thread, threads before and after a dlopen,
threads exiting before the dump and calling again from a later key
destructor, a thread alive at the dump that never called the function,
fork (child and parent), tally_reset with a thread attached, a function
first called in a thread from a signal handler; at -O0, -O2 and -O3."""
import glob
import os
import platform
import re
import sys

from checklib import (Skip, case, disasm_insns, expect, main, report_calls, run,
                      shared_runtime, tally_opts, LEAF_C)

LEVELS = ("-O0", "-O2", "-O3")


def need_x86_64():
    if platform.machine() != "x86_64":
        raise Skip("(the hot path checked is x86-64's)")


def src(a, name):
    return os.path.join(a.srcdir, "tlsneg", name)


def hot_path(insns):
    """The instructions of a function up to its first conditional jump."""
    first = [i for i, ins in enumerate(insns) if re.match(r"j(?!mp)\w+\s", ins)]
    expect(first, "no conditional jump:\n  " + "\n  ".join(insns))
    return insns[:first[0] + 1]


@case("hot-path")
def check_hot_path(a, work):
    """update=tls, public leaf: the first instructions are exactly `add
    $0x1,%fs:..; je` (-fPIC: `mov ..(%rip),%reg; add $0x1,%fs:(%reg); je`),
    no test of the unit's attached word on the hot path, no frame, no saved
    register, no __tls_get_addr; -O2 and -O3, executable and -fPIC.  (On
    main: `cmpq $0x0,%fs:..; je` and a separate `add`.)"""
    need_x86_64()
    c = os.path.join(work, "leaf.c")
    with open(c, "w") as f:
        f.write(LEAF_C)
    for opt in ("-O2", "-O3"):
        exe = os.path.join(work, "leaf" + opt)
        so = os.path.join(work, "leaf%s.so" % opt)
        flags = ["-fplugin=" + a.plugin, *tally_opts("update=tls")]
        run([a.cc, opt, *flags, c, "-o", exe, a.runtime, "-lpthread"])
        run([a.cc, opt, "-fPIC", "-shared", *flags, c, "-o", so])
        for obj, pic in ((exe, False), (so, True)):
            for fn in ("leaf", "mid"):
                insns = disasm_insns(obj, fn)
                text = "\n  ".join(insns)
                head = hot_path(insns)
                # tally's instructions before the branch: the add alone
                # (a body's own moves may be scheduled in between, and
                # -fPIC loads the counter's offset from the GOT).
                ours = [i for i in head[:-1] if "%fs" in i or re.match(r"(cmp|test)", i)]
                ok = (len(ours) == 1 and re.match(r"addq?\s+\$0x1,%fs:", ours[0])
                      and re.match(r"je\s", head[-1]))
                if fn == "leaf":
                    # Exactly those instructions in a leaf.
                    ok = ok and (len(head) == 2 if not pic else
                                 len(head) == 3 and re.match(r"mov\s+0x[0-9a-f]+\(%rip\),%r", head[0]))
                expect(ok, "%s %s: the hot path is not the folded test\n  %s" % (obj, fn, text))
                # The hot path: up to the first return.
                hot = insns[:[i for i, x in enumerate(insns) if x.startswith("ret")][0] + 1]
                bad = [i for i in hot if re.match(r"cmpq?\s+\$0x0,%fs", i)
                       or "__tls_get_addr" in i]
                if fn == "leaf":
                    # No frame: the only call is the cold asm's.
                    bad += [i for i in insns if i.startswith("call") and "__tally_tls_attach_all" not in i]
                    bad += [i for i in insns if re.match(r"(push|pop)\s|sub\s+.*,%rsp", i)]
                expect(not bad, "%s %s: %s on the hot path\n  %s" % (obj, fn, bad, text))
        data = exe + ".tally"
        run([exe], env={"TALLY_OUTPUT": data})
        rows = report_calls(a, data)
        expect(rows.get("leaf") == (2000, 2000) and rows.get("mid") == (1000, 1000),
               "%s: leaf %s, mid %s, want 2000 and 1000" % (opt, rows.get("leaf"), rows.get("mid")))
        # TALLY_FN_TLS_ARMED (0x10) is the runtime's: never in the file.
        flags = re.findall(r"^\s*fn \d+ .* flags=0x([0-9a-f]+)", run([a.tally, "dump", data]).stdout, re.M)
        expect(flags and all(int(f, 16) & 0x10 == 0 for f in flags),
               "%s: function flags in the data file: %s" % (opt, flags))


def counts(a, data):
    rows = report_calls(a, data)
    return {k: rows.get(k, (0, 0)) for k in ("f", "g", "s", "c", "lib_fn")}


@case("boundaries")
def check_boundaries(a, work):
    """threads.c and lib.c (update=tls, static runtime): exact entries and
    exits of f, g, s, c and lib_fn in the parent's and the child's files,
    at -O0, -O2 and -O3."""
    # From threads.c's constants.  Parent, after tally_reset: across_reset
    # 3, counted 1+2+3+4, with_destructor 1 and its key destructor 3, main
    # after the fork 1; g: idle's 1; s: 2 in the handler; lib_fn: 2 before
    # the dlopen's thread, 3 after, 1 in main.  Child: c 5, f 2.
    parent = {"f": 3 + (1 + 2 + 3 + 4) + 1 + 3 + 1, "g": 1, "s": 2, "c": 0,
              "lib_fn": 2 + 3 + 1}
    child = {"f": 2, "g": 0, "s": 0, "c": 5, "lib_fn": 0}
    for opt in LEVELS:
        d = os.path.join(work, opt)
        os.mkdir(d)
        flags = ["-fplugin=" + a.plugin, "-I", a.include, *tally_opts("update=tls")]
        lib = os.path.join(d, "lib.so")
        run([a.cc, opt, "-fPIC", "-shared", *flags, src(a, "lib.c"), "-o", lib,
             *shared_runtime(a)])
        exe = os.path.join(d, "threads")
        run([a.cc, opt, *flags, src(a, "threads.c"), "-o", exe, *shared_runtime(a),
             "-lpthread", "-ldl"])
        run([exe, lib], env={"TALLY_OUTPUT": os.path.join(d, "out.%p.tally")})
        files = sorted(glob.glob(os.path.join(d, "out.*.tally")))
        expect(len(files) == 2, "%s: want 2 data files (parent, child), got %s" % (opt, files))
        got = [counts(a, x) for x in files]
        if got[0]["c"][0]:
            got.reverse()
        for name, want, have in (("parent", parent, got[0]), ("child", child, got[1])):
            for fn, n in want.items():
                expect(have[fn] == (n, n), "%s: %s's %s counted %s, want %d entries and exits"
                       % (opt, name, fn, have[fn], n))


@case("std-thread")
def check_std_thread(a, work):
    """threads.cc (C++): five std::threads calling f 1..5 times, each with
    a thread_local whose destructor calls f twice, and main once: f
    1+2+3+4+5 + 5*2 + 1 entries, exactly, at -O0, -O2 and -O3."""
    want = (1 + 2 + 3 + 4 + 5) + 5 * 2 + 1
    for opt in LEVELS:
        exe = os.path.join(work, "cc" + opt)
        run([a.cxx, opt, "-std=c++11", "-fplugin=" + a.plugin, *tally_opts("update=tls"),
             src(a, "threads.cc"), "-o", exe, a.runtime, "-lpthread"])
        data = exe + ".tally"
        run([exe], env={"TALLY_OUTPUT": data})
        rows = report_calls(a, data)
        got = [v for k, v in rows.items() if k == "void f(int)"]
        expect(got == [(want, want)], "%s: f counted %s, want %d" % (opt, got, want))


if __name__ == "__main__":
    sys.exit(main("tally-tlsneg-"))
