#!/usr/bin/env python3
"""exit=frames (LOPI's return frames) everywhere: C++ exceptions, at=early,
and call trees from inline hooks (issue 29).

frames/lopi.cc leaves its frames in every way a C++ program can (an
exception through 8 frames with destructors, rethrow and
std::rethrow_exception, a destructor throwing and catching while an
exception unwinds it, catch (...) of a foreign exception, longjmp through
6 frames, recursion 100,001 deep, virtual calls, 4 threads throwing at
once, pthread_cancel and pthread_exit through destructors and a catch
(...) that rethrows, an always_inline function that throws, and
std::terminate from a noexcept function and from a destructor throwing
during unwinding).  Each case checks, never against a measured figure:
  - every function's calls and exits equal the analytic counts worked out
    below from the program's constants (read from its source);
  - the program's output and exit status are the uninstrumented build's;
  - every cycle is charged once: the exclusive cycles add up exactly to
    the roots' inclusive cycles (main and the thread start routines).

  matrix-O0, matrix-O2, matrix-O3: every combination of hooks=inline|call
    x exit=returns|frames x at=early|late (checklib.matrix), at that level;
  paths: paths=on, the call tree (calls per path), the flame graph's
    folded stacks and the totals of hooks=inline are hooks=call's, with
    either exit mode, at=early and late; each function's totals are the
    sums over its paths;
  backtrace: backtrace (), _Unwind_Backtrace and tally_backtrace from
    armed frames show the real callers (nm -S says which function each
    address is in); a -static program, whose _Unwind_Backtrace is the
    static libgcc's, and libunwind's own unw_backtrace stop at the
    trampoline, the outermost frame they show;
  early-inlined: at=early, the copies GCC inlined get return-site exits
    and the bodies left out of line return frames (-fdump-tree-tally_cfa);
  full (suite frames-full, not in ./dev test): the matrix at -O1 and -Os
    too, with the shared runtime, a -static program, update=single and
    tls, and paths=on in every combination.

Usage: run-frames.py CASE --plugin P --runtime RT --tally T --cc CC ...
                     (testsuite/meson.build's driver_args)
Exit status: 0 pass, 1 fail, 77 skip.
"""
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import checklib
from checklib import case, expect, main, matrix, run, Skip, tally_opts
from measurelib import check_sums, check_tree_sums, tree_rows, x86_64


PROG = "lopi.cc"
# measure=cycles needs entry and exit hooks.
NO_NONE = {"hooks=none has no entry or exit to measure": lambda c: c["hooks"] == "none"}
ROOTS = ("main", "rec_thread", "thrower", "cancel_me", "exit_me")


def constants(a):
    """The program's enum of constants, {name: value}."""
    src = open(os.path.join(a.srcdir, "frames", PROG)).read()
    body = re.search(r"enum\s*\{(.*?)\};", src, re.S).group(1)
    return {m.group(1): int(m.group(2))
            for m in re.finditer(r"(\w+)\s*=\s*(\d+)", body)}


def expected(k, early, mode=""):
    """{function: (calls, exits)} of lopi.cc's functions with calls, from
    its constants K, for a run with argument MODE."""
    if mode == "terminate":
        return {"main": (1, 0), "t_noexcept": (1, 0), "t_throw": (1, 0),
                "on_terminate": (1, 0)}
    if mode == "terminate2":
        return {"main": (1, 0), "t_twice": (1, 0), "t_throw": (1, 0),
                "Bad::~Bad": (1, 0), "on_terminate": (1, 0)}
    n, m, t, depth, p = k["N"], k["M"], k["THREADS"], k["DEPTH"], k["PTR_CALLS"]
    odd = lambda x: x // 2  # odd i in [0, x): d8 returns, even i throws
    rounds8 = n + t * m
    returned8 = odd(n) + t * odd(m)
    guards = 8 * rounds8 + n + 2 + 2  # d1..d8, f2, c1 and c2, e1 and e2
    e = {"main": (1, 1), "Guard::Guard": (guards, guards),
         "Guard::~Guard": (guards, guards), "catcher8": (rounds8, rounds8),
         "r_outer": (n, n), "x_outer": (n, n), "Cleaner::~Cleaner": (n, n),
         "f_catch": (n, n), "foreign_cleanup": (n, n), "j_top": (n, n),
         "rec": (depth, depth), "rec_thread": (1, 1),
         "Square::area": (n - n // 2, n - n // 2), "Line::area": (n // 2, n // 2),
         "inl_user": (n, n), "thrower": (t, t)}
    for d in range(1, 9):
        e["d%d" % d] = (rounds8, returned8)
    for f in ("r_leaf", "r_mid", "r_again", "x_inner1", "x_inner2", "x_leaf",
              "x_mid", "f_raise", "f1", "f2", "j1", "j2", "j3", "j4", "j5", "j6"):
        e[f] = (n, 0)
    for f in ("c1", "c2", "cancel_me", "e1", "e2", "exit_me"):
        e[f] = (1, 0)
    # checked, always_inline: throws for multiples of 3.  Its own copy is
    # called by pointer with 1..PTR_CALLS; its inlined copies (inl_user's,
    # with 0..N-1) are functions at=early only.
    calls, exits = p, p - p // 3
    if early:
        calls, exits = calls + n, exits + n - (n + 2) // 3
    e["checked"] = (calls, exits)
    return e


def short(name):
    """"virtual long int Line::area(int) const" -> "Line::area"."""
    return name.split("(")[0].split()[-1]


def rows_of(a, data):
    """The rows of `tally report --json DATA` by short name: lopi.cc's, and
    all of them (at=early counts the functions of libstdc++'s headers too,
    std::exception_ptr's, which the cycle sums need)."""
    rep = checklib.report_json(a, data, "--all")
    return ({short(f["name"]): f for f in rep["functions"]
             if f["file"].endswith("/" + PROG)},
            {f["name"] + "@" + f["symbol"]: f for f in rep["functions"]})


def build(a, work, opts, opt, extra=(), runtime=None, tag=""):
    """lopi.cc built with measure=cycles and OPTS at OPT; its path."""
    name = "lopi%s-%s%s" % (opt, "-".join(o.replace("=", "") for o in opts), tag)
    exe = os.path.join(work, name)
    return checklib.build(a, exe, os.path.join(a.srcdir, "frames", PROG),
                          [*tally_opts("measure=cycles", *opts), *extra], opt=opt,
                          runtime=runtime, libs=["-pthread"])


def plain(a, work, opt, extra=(), tag=""):
    """lopi.cc uninstrumented at OPT: {mode: (status, output)}."""
    exe = os.path.join(work, "lopi-plain%s%s" % (opt, tag))
    run([a.cxx, opt, *extra, os.path.join(a.srcdir, "frames", PROG), "-o", exe,
         "-pthread"])
    return {mode: outcome(exe, mode) for mode in ("", "terminate", "terminate2")}


def outcome(exe, mode, env=None):
    """(exit status, stdout) of EXE run with argument MODE."""
    full = dict(os.environ)
    full.pop("TALLY_OUTPUT", None)
    full.update(env or {})
    p = subprocess.run([exe] + ([mode] if mode else []), env=full,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return p.returncode, p.stdout, p.stderr


def check_run(a, what, exe, want, k, early):
    """EXE in each mode: WANT's status and output, the analytic counts,
    every cycle charged once.  Returns the rows of the plain run."""
    result = None
    for mode in ("", "terminate", "terminate2"):
        w = what + (" " + mode if mode else "")
        data = exe + (".%s.data" % (mode or "run"))
        status, out, err = outcome(exe, mode, {"TALLY_OUTPUT": data})
        expect((status, out) == want[mode][:2],
               "%s: exit %d, output %r; uninstrumented: exit %d, output %r"
               % (w, status, out, want[mode][0], want[mode][1]))
        expect(err == want[mode][2],
               "%s: stderr %r, uninstrumented %r" % (w, err, want[mode][2]))
        rows, every = rows_of(a, data)
        got = {f: (r["calls"], r["exits"]) for f, r in rows.items() if r["calls"]}
        exp = expected(k, early, mode)
        expect(got == exp, "%s: counts differ from the analytic ones:\n%s"
               % (w, "\n".join("  %s: got %s, want %s" % (f, got.get(f), exp.get(f))
                               for f in sorted(set(got) | set(exp))
                               if got.get(f) != exp.get(f))))
        roots = [n for n, r in every.items() if short(n.split("@")[0]) in ROOTS
                 and r["file"].endswith("/" + PROG) and r["calls"]]
        check_sums(w, every, roots)
        if not mode:
            result = rows
    return result


def frames_in_use(exe, want):
    """Whether EXE's code stores the trampoline's address (hooks=inline) or
    calls __tally_enter_frames (hooks=call): the frames are there."""
    dis = run(["objdump", "-d", "--no-show-raw-insn", exe]).stdout
    used = "<__tally_return_trampoline>" in dis and re.search(
        r"lea .*<__tally_return_trampoline>|call.*<__tally_enter_frames", dis)
    return bool(used) == want


def check_matrix(a, work, opt):
    x86_64()
    k = constants(a)
    want = plain(a, work, opt)
    for combo in matrix("hooks", "exit", "at", leave_out=NO_NONE):
        what = "%s %s %s" % (PROG, opt, " ".join(combo))
        exe = build(a, work, [*combo, "update=atomic"], opt)
        frames = "exit=frames" in combo
        expect(frames_in_use(exe, frames), "%s: return frames %s in the code"
               % (what, "not" if frames else "still"))
        check_run(a, what, exe, want, k, "at=early" in combo)


@case("matrix-O0")
def matrix_o0(a, work):
    check_matrix(a, work, "-O0")


@case("matrix-O2")
def matrix_o2(a, work):
    check_matrix(a, work, "-O2")


@case("matrix-O3")
def matrix_o3(a, work):
    check_matrix(a, work, "-O3")


def tree_of(a, data):
    """(calls per path, the tree's (calls, incl, excl) per path, folded
    stacks) of a paths=on run."""
    tree = tree_rows(a, data)
    folded = run([a.tally, "flame", "--folded", data]).stdout
    return {p: v[0] for p, v in tree.items()}, tree, folded


def folded_paths(folded):
    """The paths of `flame --folded` output (their values are cycles)."""
    return sorted(l.rsplit(" ", 1)[0] for l in folded.splitlines())


def check_paths(a, work, opts_list, opt="-O2", runtime=None, tag=""):
    x86_64()
    k = constants(a)
    want = plain(a, work, opt)
    for at in ("early", "late"):
        trees = {}
        for combo in opts_list:
            if "at=" + at not in combo:
                continue
            what = "%s paths=on %s %s" % (PROG, opt, " ".join(combo))
            exe = build(a, work, [*combo, "paths=on", "update=atomic"], opt,
                        runtime=runtime, tag=tag)
            rows = check_run(a, what, exe, want, k, at == "early")
            data = exe + ".run.data"
            calls, tree, folded = tree_of(a, data)
            # Each function's totals summed over its paths (the tree names
            # functions by their printable names).
            check_tree_sums(what, checklib.report_rows(a, data),
                            tree, folded)
            svg = exe + ".svg"
            run([a.tally, "flame", "-o", svg, data])
            ET.parse(svg)
            # The frames libunwind found below main are there too.
            outside = tree_rows(a, data, outside=True)
            expect(any(p[0].startswith("[uninstrumented]") for p in outside),
                   "%s: report --tree --all has no frame below main" % what)
            trees[" ".join(c for c in combo if not c.startswith("at="))] = (
                calls, folded_paths(folded))
        first = next(iter(trees))
        for name, t in trees.items():
            expect(t == trees[first],
                   "paths=on at=%s: the call tree of %s differs from %s's:\n%s"
                   % (at, name, first,
                      "\n".join("  %s: %s, %s" % (p, t[0].get(p), trees[first][0].get(p))
                                for p in sorted(set(t[0]) | set(trees[first][0]))
                                if t[0].get(p) != trees[first][0].get(p))))


@case("paths")
def check_paths_case(a, work):
    """hooks=inline paths=on against hooks=call paths=on, both exit modes."""
    check_paths(a, work, matrix("hooks", "exit", "at", leave_out=NO_NONE))


@case("full")
def check_full(a, work):
    """The tier beyond the default suite (meson test --suite frames-full)."""
    x86_64()
    k = constants(a)
    combos = matrix("hooks", "exit", "at", "update", leave_out=dict(NO_NONE, **{
        "lopi.cc's threads update the same counters at once (exact with "
        "atomic or tls only)": lambda c: c["update"] == "single"}))
    for opt in ("-O1", "-Os"):
        want = plain(a, work, opt)
        for combo in combos:
            exe = build(a, work, combo, opt)
            check_run(a, "%s %s %s" % (PROG, opt, " ".join(combo)), exe, want, k,
                      "at=early" in combo)
    # The shared runtime, and a program linked -static (its static libgcc
    # unwinds, the runtime's trampoline in the executable).
    for tag, runtime, link in (("-shared", checklib.shared_runtime(a), []),
                               ("-static", None, ["-static"])):
        want = plain(a, work, "-O2", link, tag)
        for combo in matrix("hooks", "exit", "at", leave_out=NO_NONE):
            exe = build(a, work, [*combo, "update=atomic"], "-O2", extra=link,
                        runtime=runtime, tag=tag)
            check_run(a, "%s -O2 %s %s" % (PROG, tag, " ".join(combo)), exe, want, k,
                      "at=early" in combo)
    for opt in ("-O0", "-O3"):
        check_paths(a, work, matrix("hooks", "exit", "at", leave_out=NO_NONE), opt=opt)
    check_paths(a, work, matrix("hooks", "exit", "at", leave_out=NO_NONE), runtime=checklib.shared_runtime(a),
                tag="-shared")


BACKTRACE_C = r"""
#include <execinfo.h>
#include <stdio.h>
#include <unwind.h>
#include <tally/abi.h>
#include <tally/tally.h>
#ifdef WITH_LIBUNWIND
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#endif
#define NOIPA __attribute__ ((noipa))
struct walk { void *ip[32]; int n; };
static _Unwind_Reason_Code
step (struct _Unwind_Context *c, void *arg)
{
  struct walk *w = arg;
  if (w->n < 32)
    w->ip[w->n++] = (void *) _Unwind_GetIP (c);
  return _URC_NO_REASON;
}
static void
show (const char *what, void **ip, int n)
{
  printf ("%s", what);
  for (int i = 0; i < n; i++)
    printf (" %p", ip[i]);
  printf ("\n");
}
NOIPA void
b3 (void)
{
  void *ip[32];
  show ("backtrace", ip, backtrace (ip, 32));
  struct walk w = { { 0 }, 0 };
  _Unwind_Backtrace (step, &w);
  show ("unwind", w.ip, w.n);
#ifndef STATIC
  show ("tally", ip, tally_backtrace (ip, 32));
#endif
#ifdef WITH_LIBUNWIND
  show ("libunwind", ip, unw_backtrace (ip, 32));
#endif
}
NOIPA void b2 (void) { b3 (); }
NOIPA void b1 (void) { b2 (); }
int
main (void)
{
  printf ("trampoline %p\n", (void *) __tally_return_trampoline);
  b1 ();
  return 0;
}
"""


def functions_of(exe, addrs, tramp):
    """The function each address (a return address, or the trampoline's
    own address TRAMP) is in, by nm -S of EXE (not position-independent),
    or "?"."""
    syms = []
    for line in run(["nm", "-S", "--defined-only", exe]).stdout.splitlines():
        f = line.split()
        if len(f) == 4 and f[2] in "tTW":
            syms.append((int(f[0], 16), int(f[1], 16), f[3]))
    res = []
    for x in addrs:
        name = "trampoline" if x == tramp else "0" if x == 0 else "?"
        for start, size, sym in syms:
            if name == "?" and start < x <= start + size:
                name = sym
        res.append(name)
    return res


@case("backtrace")
def check_backtrace(a, work):
    x86_64()
    src = checklib.write_file(os.path.join(work, "bt.c"), BACKTRACE_C)
    inc = ["-I", os.path.join(a.srcdir, "..", "include")]
    want = ["b3", "b2", "b1", "main"]
    for hooks in ("inline", "call"):
        for link in ("static runtime", "shared runtime", "-static"):
            what = "backtrace %s hooks=%s" % (link, hooks)
            exe = os.path.join(work, "bt-%s-%s" % (hooks, link.replace(" ", "-")))
            flags = [*tally_opts("hooks=" + hooks, "measure=cycles", "exit=frames"),
                     *inc, "-no-pie"]
            libs = ["-lpthread"]
            if link == "-static":
                flags.append("-DSTATIC")
            elif a.unwind == "1":
                flags.append("-DWITH_LIBUNWIND")
                libs = ["-lunwind", "-ldl", "-lpthread"]
            checklib.build(a, exe, src, flags,
                           link=["-static"] if link == "-static" else [],
                           runtime=checklib.shared_runtime(a)
                           if link == "shared runtime" else None, libs=libs)
            out = run([exe], env={"TALLY_OUTPUT": exe + ".data"}).stdout
            lines = out.splitlines()
            tramp = int(lines[0].split()[1], 16)
            walks = {}
            for line in lines[1:]:
                f = line.split()
                walks[f[0]] = functions_of(exe, [int(x, 16) if x != "(nil)" else 0
                                                for x in f[1:]], tramp)
            for walker in ("backtrace", "tally", "unwind"):
                if walker not in walks:
                    continue
                if walker == "unwind" and link == "-static":
                    # The static libgcc's _Unwind_Backtrace, not the
                    # runtime's: it ends at the first armed frame, the
                    # trampoline the last frame it shows (then the end of
                    # the stack, address 0).
                    expect(walks[walker] in (["b3", "trampoline"], ["b3", "trampoline", "0"]),
                           "%s: _Unwind_Backtrace shows %s, want b3 and the "
                           "trampoline" % (what, walks[walker]))
                    continue
                expect(walks[walker][:4] == want,
                       "%s: %s shows %s, want %s first" % (what, walker, walks[walker], want))
            if "libunwind" in walks:
                # libunwind's own walk cannot be given the real addresses:
                # it ends at the trampoline too.
                expect(walks["libunwind"] in (["b3", "trampoline"], ["b3", "trampoline", "0"]),
                       "%s: unw_backtrace shows %s, want b3 and the trampoline"
                       % (what, walks["libunwind"]))


@case("early-inlined")
def check_early_inlined(a, work):
    """at=early: the copies of `checked` GCC inlined into inl_user get
    return-site exits, its own body (called by pointer) a return frame."""
    x86_64()
    for hooks in ("inline", "call"):
        exe = build(a, work, ["hooks=" + hooks, "at=early", "exit=frames"], "-O2",
                    extra=["-fdump-tree-all"])
        dumps = [f for f in os.listdir(work) if "tally_cfa" in f]
        junk = [f for f in os.listdir(work) if ".cc." in f and f not in dumps]
        for f in junk:
            os.unlink(os.path.join(work, f))
        text = "".join(open(os.path.join(work, f)).read() for f in dumps)
        for f in dumps:
            os.unlink(os.path.join(work, f))
        sections = text.split("\n;; Function ")
        def notes(fn):
            for sec in sections:
                head = sec.split("\n", 1)[0]
                if head.startswith(fn + " ("):
                    return sec
            return ""
        inl = notes("inl_user")
        own = notes("checked")
        expect("inlined: return-site exits" in inl and "out of line: return frames" in inl,
               "hooks=%s: inl_user's notes: %r" % (hooks, inl[:2000]))
        expect("out of line: return frames" in own,
               "hooks=%s: checked's own body has no return frame: %r" % (hooks, own[:2000]))


if __name__ == "__main__":
    sys.exit(main("tally-frames-"))
