#!/usr/bin/env python3
"""The user-hook examples of doc/examples/ (hooks=user:PREFIX), built at -O2
with at=early and run, their results checked against independent
expectations: values worked out by hand from the drivers' source, the same
driver built in tally's own count mode (hooks=inline at=early) and read with
`tally report --csv`, and a simulation of the call tree; plus the generated
code (no hook calls left at at=early, calls kept at at=late) and the
plugin's diagnostics for bad hooks.

Usage: run-examples.py CHECK --plugin P --runtime RT --tally T
                       --include DIR --examples DIR [--cc CC] [--cxx CXX]
Exit status: 0 pass, 1 fail, 77 skip.
"""
import csv
import io
import os
import platform
import re
import shutil
import sys

from checklib import case, expect, main, run, Skip, write_file


def plain_quotes(text):
    return text.replace("\u2018", "'").replace("\u2019", "'")


# The examples: driver, hook header, prefix.
EXAMPLES = {
    "lopi": ("lopi-driver.c", "lopi-hooks.h", "lopi"),
    "rdtsc": ("rdtsc-driver.c", "rdtsc-hooks.h", "rdtsc"),
    "depth": ("depth-driver.c", "depth-hooks.h", "depth"),
    "depth-throw": ("depth-throw.cc", "depth-hooks.h", "depth"),
}


class Ex:
    """Builds and runs one example in a work directory."""

    def __init__(self, a, work, name):
        self.a, self.work, self.name = a, work, name
        self.driver, self.header, self.prefix = EXAMPLES[name]
        self.src = os.path.join(a.examples, self.driver)
        self.compiler = a.cxx if self.driver.endswith(".cc") else a.cc

    def build(self, tag, hooks=None, at="early", opt="-O2", extra=(), warnings_ok=False):
        """Build with the example's header; hooks defaults to user:PREFIX.
        The examples must compile without any diagnostic (-Wall -Wextra)."""
        exe = os.path.join(self.work, "%s-%s" % (self.name, tag))
        p = run([self.compiler, opt, "-Wall", "-Wextra", "-I", self.a.include,
                 "-I", self.a.examples, "-include", self.header,
                 "-fplugin=" + self.a.plugin,
                 "-fplugin-arg-tally-hooks=" + (hooks or "user:" + self.prefix),
                 "-fplugin-arg-tally-at=" + at, *extra, self.src, "-o", exe,
                 self.a.runtime], env={"LC_ALL": "C"})
        expect(warnings_ok or p.stderr == "",
               "%s (%s): compiler diagnostics:\n%s" % (self.driver, tag, p.stderr))
        return exe

    def run(self, exe):
        """Run EXE; return its stdout and the path of its tally data file."""
        data = exe + ".data"
        p = run([exe], env={"TALLY_OUTPUT": data}, cwd=self.work)
        expect(p.stderr == "", "%s: stderr: %r" % (exe, p.stderr))
        return p.stdout, data

    def counts(self, opt="-O2"):
        """The driver built in count mode (hooks=inline at=early, same
        header), run: calls per function name from `tally report --csv`,
        and the program's output."""
        exe = self.build("count" + opt, hooks="inline", opt=opt)
        out, data = self.run(exe)
        text = run([self.a.tally, "report", "--csv", data]).stdout
        calls = {}
        for row in csv.DictReader(io.StringIO(text)):
            # Summed per printable name: C++ constructors and destructors
            # have one row per compiled variant.
            calls[row["function"]] = calls.get(row["function"], 0) + int(row["calls"])
        return {k: v for k, v in calls.items() if v}, out


# Parsing the reports the example headers print.

def parse_table(out, title):
    """Rows 'ID CALLS VALUE [PER-CALL] NAME' after the line starting with
    TITLE, up to the overflow line; returns ({name: (calls, value, id)},
    (overflow calls, overflow value))."""
    lines = out.splitlines()
    start = [i for i, l in enumerate(lines) if l.startswith(title)]
    expect(len(start) == 1, "no single %r report in:\n%s" % (title, out))
    rows, overflow = {}, None
    for line in lines[start[0] + 2:]:
        m = re.match(r"\S+: overflow \(ids >= \d+\): (\d+) calls, (?:total )?(\d+)", line)
        if m:
            overflow = (int(m.group(1)), int(m.group(2)))
            break
        f = line.split()
        expect(len(f) >= 4 and f[0].isdigit(), "bad report row %r in:\n%s" % (line, out))
        name = line.split(None, 4 if title.startswith("rdtsc") else 3)[-1]
        expect(name not in rows, "%s reported twice:\n%s" % (name, out))
        rows[name] = (int(f[1]), int(f[2]), int(f[0]))
    expect(overflow is not None, "no overflow line in:\n%s" % out)
    return rows, overflow


def parse_depth(out):
    """Returns (calls, deepest, depth now, {depth: entries})."""
    m = re.search(r"^depth: (\d+) calls, deepest (\d+), depth now (\d+)$", out, re.M)
    expect(m, "no depth report in:\n%s" % out)
    hist = {}
    for line in out[m.end():].splitlines()[2:]:
        h = re.fullmatch(r"\s*(\d+)\+?\s+(\d+)", line)
        expect(h, "bad histogram row %r in:\n%s" % (line, out))
        hist[int(h.group(1))] = int(h.group(2))
    return int(m.group(1)), int(m.group(2)), int(m.group(3)), hist


def compare_calls(label, hooks, count):
    """Per-function calls from the hooks equal count mode's, for every
    function either of them saw."""
    for fn in sorted(set(hooks) | set(count)):
        expect(hooks.get(fn, 0) == count.get(fn, 0),
               "%s: %s: %d calls measured by the hooks, %d counted by tally "
               "(hooks=inline at=early)\nhooks: %s\ncount mode: %s"
               % (label, fn, hooks.get(fn, 0), count.get(fn, 0), hooks, count))


# The checks.

LOPI_WANT = {  # (calls, inclusive counter total), from lopi-driver.c
    "work": (4001, 216000),
    "leaf": (2000, 200000),
    "middle": (1000, 210000),
    "top": (1000, 211000),
    "main": (1, 216000),
}


@case("lopi")
def check_lopi(a, work):
    ex = Ex(a, work, "lopi")
    count, count_out = ex.counts()
    results = {}
    for opt in ("-O2", "-O0"):
        out, _ = ex.run(ex.build("early" + opt, opt=opt))
        rows, overflow = parse_table(out, "lopi: counter advance")
        results[opt] = rows
        for fn, want in LOPI_WANT.items():
            got = rows.get(fn, (0, 0))[:2]
            expect(got == want, "%s: %s: (calls, total) %s, want %s (by hand)\n%s"
                   % (opt, fn, got, want, out))
        added = re.search(r"the program added (\d+)", out)
        expect(added and int(added.group(1)) == rows["main"][1] == 216000,
               "%s: main's total %d, the program says it added %s\n%s"
               % (opt, rows["main"][1], added and added.group(1), out))
        expect(overflow == (0, 0), "%s: overflow slot used: %s" % (opt, overflow))
        compare_calls("lopi " + opt, {k: v[0] for k, v in rows.items()}, count)
    expect(re.search(r"the program added 216000 ", count_out), "count-mode run:\n%s" % count_out)

    # A small bound (at -O2, where the ids are those of the -O2 run above):
    # the functions whose id is past it share the overflow slot.
    rows = results["-O2"]
    ids = sorted(v[2] for v in rows.values())
    bound = ids[2]
    out, _ = ex.run(ex.build("bound", extra=["-DLOPI_MAX_FNS=%d" % bound]))
    small, overflow = parse_table(out, "lopi: counter advance")
    want_over = (sum(v[0] for v in rows.values() if v[2] >= bound),
                 sum(v[1] for v in rows.values() if v[2] >= bound))
    expect(overflow == want_over and want_over[0] > 0,
           "LOPI_MAX_FNS=%d: overflow %s, want %s\n%s" % (bound, overflow, want_over, out))
    expect(small == {k: v for k, v in rows.items() if v[2] < bound},
           "LOPI_MAX_FNS=%d: own slots %s, want %s" % (bound, small, rows))


RDTSC_CALLS = {"spin": 3000, "leaf": 1000, "inner": 1000, "outer": 1000,
               "fib": 21891, "main": 1}


@case("rdtsc")
def check_rdtsc(a, work):
    if platform.machine() not in ("x86_64", "AMD64"):
        raise Skip("rdtsc is x86-64 only")
    ex = Ex(a, work, "rdtsc")
    count, _ = ex.counts()
    out, _ = ex.run(ex.build("early"))
    rows, overflow = parse_table(out, "rdtsc: inclusive cycles")
    calls = {k: v[0] for k, v in rows.items()}
    for fn, want in RDTSC_CALLS.items():
        expect(calls.get(fn) == want, "%s: %s calls, want %d (by hand)\n%s"
               % (fn, calls.get(fn), want, out))
    compare_calls("rdtsc", calls, count)
    expect(overflow == (0, 0), "overflow slot used: %s" % (overflow,))
    cyc = {k: v[1] for k, v in rows.items()}
    expect(all(c > 0 for c in cyc.values()), "a function with 0 cycles:\n%s" % out)
    # Inclusive cycles: each callee runs inside its caller's activations.
    chain = ["main", "outer", "inner", "leaf"]
    for caller, callee in zip(chain, chain[1:]):
        expect(cyc[caller] >= cyc[callee], "inclusive cycles of %s (%d) < its callee %s's (%d)\n%s"
               % (caller, cyc[caller], callee, cyc[callee], out))


def fib_depths(n, depth, hist):
    """Entries per depth of fib(n) entered at DEPTH (depth-driver.c)."""
    hist[depth] = hist.get(depth, 0) + 1
    if n >= 2:
        fib_depths(n - 1, depth + 1, hist)
        fib_depths(n - 2, depth + 1, hist)


@case("depth")
def check_depth(a, work):
    ex = Ex(a, work, "depth")
    count, _ = ex.counts()
    # The call tree of depth-driver.c: main at 0, fib(15) and chain1 at 1,
    # chain2 at 2, chain3 at 3.
    want = {0: 1}
    fib_depths(15, 1, want)
    for d in (1, 2, 3):
        want[d] += 1
    for opt in ("-O2", "-O0"):
        out, _ = ex.run(ex.build("early" + opt, opt=opt))
        calls, deepest, now, hist = parse_depth(out)
        expect(calls == 1977 == sum(hist.values()) == sum(count.values()),
               "%s: %d calls, histogram sum %d, count mode %d, by hand 1977\n%s"
               % (opt, calls, sum(hist.values()), sum(count.values()), out))
        expect(deepest == 15 == max(hist), "%s: deepest %d, top bucket %d, want 15\n%s"
               % (opt, deepest, max(hist), out))
        expect(hist == want, "%s: histogram %s, want %s" % (opt, hist, want))
        expect(re.search(r"depth in main after the calls: 1$", out, re.M) and now == 0,
               "%s: depth not back to 1 in main and 0 after it:\n%s" % (opt, out))
    # A bounded histogram: depths >= 7 land in the last bucket.
    out, _ = ex.run(ex.build("bound", extra=["-DDEPTH_BUCKETS=8"]))
    calls, deepest, now, small = parse_depth(out)
    clamped = {d: n for d, n in want.items() if d < 7}
    clamped[7] = sum(n for d, n in want.items() if d >= 7)
    expect(small == clamped and calls == 1977 and deepest == 15 and now == 0,
           "DEPTH_BUCKETS=8: %s, deepest %d, want %s, 15\n%s" % (small, deepest, clamped, out))


@case("depth-throw")
def check_depth_throw(a, work):
    ex = Ex(a, work, "depth-throw")
    count, _ = ex.counts()
    want = {"int main()": 1, "int level1(int)": 10, "int level2(int)": 10, "int level3(int)": 10}
    expect(count == want, "count mode: %s, want %s" % (count, want))
    for opt in ("-O2", "-O0"):
        out, _ = ex.run(ex.build("early" + opt, opt=opt))
        expect(re.search(r"caught 10; depth before the try 1, after the catch 1$", out, re.M),
               "%s at=early: depth not restored after the exceptions:\n%s" % (opt, out))
        calls, deepest, now, hist = parse_depth(out)
        expect((calls, deepest, now) == (31, 3, 0) and hist == {0: 1, 1: 10, 2: 10, 3: 10},
               "%s at=early: %d calls, deepest %d, depth %d after main, histogram %s; "
               "want 31, 3, 0, {0: 1, 1: 10, 2: 10, 3: 10}\n%s"
               % (opt, calls, deepest, now, hist, out))
    # at=late (documented): an exception skips the exit hooks of the frames
    # it unwinds, 3 per throw here.
    out, _ = ex.run(ex.build("late", at="late"))
    expect(re.search(r"caught 10; depth before the try 1, after the catch 31$", out, re.M),
           "at=late: want the 30 skipped exits to show:\n%s" % out)
    calls, deepest, now, hist = parse_depth(out)
    expect(calls == 31 and now == 30, "at=late: %d calls, depth %d after main; want 31, 30\n%s"
           % (calls, now, out))


def hook_calls(exe, prefix):
    """Hook functions in EXE's symbol table and calls to them in its code."""
    syms = run(["nm", "-C", "--defined-only", exe]).stdout
    funcs = set(re.findall(r"^\S+ [tTwW] (%s_(?:enter|exit))\b" % prefix, syms, re.M))
    code = run(["objdump", "-d", "-C", "--no-show-raw-insn", exe]).stdout
    calls = re.findall(r"\b(?:call|jmp)q?\s+[0-9a-f]+ <(%s_(?:enter|exit))\b" % prefix, code)
    expect("<main>:" in code, "objdump shows no main in %s" % exe)
    return funcs, calls


def need_binutils():
    if not (shutil.which("nm") and shutil.which("objdump")):
        raise Skip("nm or objdump missing")


@case("early-inlined")
def check_early_inlined(a, work):
    """at=early: GCC inlined every hook, at -O2 and (always_inline) -O0."""
    need_binutils()
    for name in EXAMPLES:
        ex = Ex(a, work, name)
        for opt in ("-O2", "-O0"):
            exe = ex.build("early" + opt, opt=opt)
            funcs, calls = hook_calls(exe, ex.prefix)
            expect(not calls, "%s %s at=early: %d calls to the hooks left: %s"
                   % (ex.driver, opt, len(calls), sorted(set(calls))))
            expect(not funcs, "%s %s at=early: hook functions in the binary: %s"
                   % (ex.driver, opt, sorted(funcs)))
            syms = run(["nm", exe]).stdout
            expect(re.search(r"__tally\.d\.\d+", syms),
                   "%s %s: no function descriptor, nothing instrumented?" % (ex.driver, opt))


@case("late-calls")
def check_late_calls(a, work):
    """at=late (documented): the hooks are called, not inlined, and the
    plugin does not warn about it."""
    need_binutils()
    for name in EXAMPLES:
        ex = Ex(a, work, name)
        exe = ex.build("late", at="late")
        funcs, calls = hook_calls(exe, ex.prefix)
        for hook in ("enter", "exit"):
            full = "%s_%s" % (ex.prefix, hook)
            expect(full in funcs, "%s at=late: no function %s in the binary" % (ex.driver, full))
            expect(full in calls, "%s at=late: no call to %s" % (ex.driver, full))
        if name == "lopi":
            # The functions that remain (main at least) are still measured.
            out, _ = ex.run(exe)
            rows, _ = parse_table(out, "lopi: counter advance")
            expect(rows.get("main", (0, 0))[:2] == (1, 216000),
                   "at=late: main %s, want 1 call and 216000\n%s" % (rows.get("main"), out))


GOOD_PROG = "int g (int x) { return x + 1; }\nint main (void) { return g (0) - 1; }\n"


@case("errors")
def check_errors(a, work):
    src = write_file(os.path.join(work, "prog.c"), GOOD_PROG)

    def header(name, text):
        path = write_file(os.path.join(work, name), "#include <tally/hooks.h>\n" + text)
        return path

    sig = ("(const struct tally_fn *fn, struct tally_frame *fr) "
           "{ (void) fn; (void) fr; }\n")
    wrong_enter = header("wrong-enter.h", "static inline void my_enter (const struct tally_fn *fn)"
                         " { (void) fn; }\nstatic inline void my_exit " + sig)
    wrong_exit = header("wrong-exit.h", "static inline void my_enter " + sig
                        + "static inline int my_exit (const struct tally_fn *fn, "
                        "struct tally_frame *fr) { (void) fn; (void) fr; return 0; }\n")
    only_enter = header("only-enter.h", "static inline void my_enter " + sig)
    noinline = header("noinline.h", "unsigned long my_n;\n"
                      "__attribute__ ((noinline)) void my_enter (const struct tally_fn *fn, "
                      "struct tally_frame *fr) { (void) fn; (void) fr; my_n++; }\n"
                      "__attribute__ ((noinline)) void my_exit (const struct tally_fn *fn, "
                      "struct tally_frame *fr) { (void) fn; (void) fr; my_n++; }\n")

    def compile_(label, flags, at):
        p = run([a.cc, "-O2", "-c", "-I", a.include, "-fplugin=" + a.plugin,
                 "-fplugin-arg-tally-at=" + at, *flags, src, "-o",
                 os.path.join(work, "x.o")], env={"LC_ALL": "C"}, check=False)
        text = plain_quotes(p.stderr)
        expect("internal compiler error" not in text, "%s: ICE:\n%s" % (label, text))
        return p.returncode, text

    errors = [
        ("no hooks", ["-fplugin-arg-tally-hooks=user:my"],
         r"'-fplugin-arg-tally-hooks=user:my': no definition of 'my_enter' before 'g'"),
        ("no exit hook", ["-fplugin-arg-tally-hooks=user:my", "-include", only_enter],
         r"no definition of 'my_exit' before 'g'"),
        ("enter with one parameter", ["-fplugin-arg-tally-hooks=user:my", "-include", wrong_enter],
         r"wrong-enter\.h:2:\d+: error: '-fplugin-arg-tally-hooks=user:my': 'my_enter' must be "
         r"'void my_enter \(const struct tally_fn \*, struct tally_frame \*\)'"),
        ("exit returning int", ["-fplugin-arg-tally-hooks=user:my", "-include", wrong_exit],
         r"'my_exit' must be 'void my_exit \(const struct tally_fn \*, struct tally_frame \*\)'"),
        ("prefix 1bad", ["-fplugin-arg-tally-hooks=user:1bad"],
         r"invalid value 'user:1bad' for '-fplugin-arg-tally-hooks': the prefix after 'user:' "
         r"must be a C identifier"),
        ("empty prefix", ["-fplugin-arg-tally-hooks=user:"],
         r"invalid value 'user:' for '-fplugin-arg-tally-hooks': the prefix after 'user:' "
         r"must be a C identifier"),
    ]
    for at in ("early", "late"):
        for label, flags, pattern in errors:
            rc, text = compile_(label, flags, at)
            expect(rc != 0, "%s (at=%s): compile succeeded:\n%s" % (label, at, text))
            expect(re.search(pattern, text), "%s (at=%s): expected /%s/ in:\n%s"
                   % (label, at, pattern, text))
    # Hooks GCC cannot inline: a warning with at=early (once per function),
    # none with at=late, where calls are what is documented.
    flags = ["-fplugin-arg-tally-hooks=user:my", "-include", noinline]
    rc, text = compile_("noinline hooks", flags, "early")
    expect(rc == 0, "noinline hooks at=early: compile failed:\n%s" % text)
    for fn in ("g", "main"):
        expect(re.search(r"warning: tally: hook 'my_enter' was not inlined into '%s'" % fn, text),
               "noinline hooks at=early: no 'was not inlined' warning for %s:\n%s" % (fn, text))
    rc, text = compile_("noinline hooks", flags, "late")
    expect(rc == 0 and "was not inlined" not in text,
           "noinline hooks at=late: exit %d, diagnostics:\n%s" % (rc, text))


@case("once-per-call")
def check_once_per_call(a, work):
    """C++ constructor/destructor variants and GNU C nested functions run
    each hook exactly once per call: entries and exits per function equal
    tally's own count mode."""
    d = os.path.join(os.path.dirname(os.path.abspath(__file__)), "user-hooks")
    for src, compiler in (("cdtor.cc", a.cxx), ("nested.c", a.cc)):
        got = {}
        for hooks in ("user:cnt", "inline"):
            exe = os.path.join(work, src + hooks.replace(":", "-"))
            run([compiler, "-O2", "-I", a.include, "-include",
                 os.path.join(d, "count-hooks.h"), "-fplugin=" + a.plugin,
                 "-fplugin-arg-tally-hooks=" + hooks, "-fplugin-arg-tally-at=early",
                 os.path.join(d, src), "-o", exe, a.runtime])
            p = run([exe], env={"TALLY_OUTPUT": exe + ".data"})
            calls = {}
            if hooks == "inline":
                text = run([a.tally, "report", "--csv", exe + ".data"]).stdout
                for row in csv.DictReader(io.StringIO(text)):
                    e, x = calls.get(row["function"], (0, 0))
                    calls[row["function"]] = (e + int(row["calls"]), x + int(row["exits"]))
            else:
                for m in re.finditer(r"^CNT (\d+) (\d+) (.*)$", p.stdout, re.M):
                    calls[m.group(3)] = (int(m.group(1)), int(m.group(2)))
            got[hooks] = {k: v for k, v in calls.items() if v[0]}
        expect(got["user:cnt"] == got["inline"],
               "%s: hooks saw %s\ncount mode saw %s" % (src, got["user:cnt"], got["inline"]))
        expect(len(got["inline"]) >= 2, "%s: too few functions: %s" % (src, got["inline"]))


@case("cold-clone")
def check_cold_clone(a, work):
    """A hook GCC leaves out of line as an IPA clone (lopi_exit.isra.0) on a
    cold path is warned about, by its source name."""
    d = os.path.join(os.path.dirname(os.path.abspath(__file__)), "user-hooks")
    obj = os.path.join(work, "cold.o")
    p = run([a.cc, "-O2", "-I", a.include, "-include", os.path.join(d, "cold-hooks.h"),
             "-fplugin=" + a.plugin, "-fplugin-arg-tally-hooks=user:lopi",
             "-fplugin-arg-tally-at=early", "-c", os.path.join(d, "cold.c"), "-o", obj],
            env={"LC_ALL": "C"})
    calls = [l for l in run(["objdump", "-d", obj]).stdout.splitlines()
             if re.search(r"call.*<lopi_(enter|exit)", l)]
    text = plain_quotes(p.stderr)
    if calls:
        expect("was not inlined into 'rare'" in text,
               "%d hook calls left, no warning:\n%s\n%s" % (len(calls), "\n".join(calls), text))
    else:
        expect("was not inlined" not in text, "warning without a call:\n%s" % text)


if __name__ == "__main__":
    sys.exit(main("tally-examples-"))
