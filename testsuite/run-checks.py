#!/usr/bin/env python3
"""Checks of the plugin and the build: the plugin's diagnostics and options
(filter, select), GCC's garbage collector, another GCC version, meson
install and pkg-config, the man pages, several runtime copies in one
program, the runtime API.

Usage: run-checks.py CASE --plugin P --runtime RT --tally T --include DIR
                     --srcdir DIR ... (testsuite/meson.build's driver_args)
Exit status: 0 pass, 1 fail, 77 skip.
"""
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import time

from fractions import Fraction

from checklib import case, expect, main, plain_quotes, report_calls, run, Skip, write_file


@case("plugin-errors")
def check_plugin_errors(a, work):
    src = os.path.join(a.srcdir, "progs", "s-abc.c")
    cases = [
        (["-fplugin-arg-tally-colour=red"],
         r"unknown option '-fplugin-arg-tally-colour'; accepted options: "),
        (["-fplugin-arg-tally-hooks=fast"],
         r"invalid value 'fast' for '-fplugin-arg-tally-hooks'; accepted values: inline, call"),
        (["-fplugin-arg-tally-at"],
         r"'-fplugin-arg-tally-at' needs a value; accepted values: late, early"),
        (["-fplugin-arg-tally-update=relaxed"],
         r"invalid value 'relaxed' for '-fplugin-arg-tally-update'; accepted values: single, atomic, tls"),
        (["-fplugin-arg-tally-blocks=all"],
         r"invalid value 'all' for '-fplugin-arg-tally-blocks'; accepted values: none, count, visited"),
        (["-fplugin-arg-tally-placement=edges"],
         r"invalid value 'edges' for '-fplugin-arg-tally-placement'; accepted values: tree, block"),
        (["-fplugin-arg-tally-hooks=user:u", "-fplugin-arg-tally-blocks=count"],
         r"'-fplugin-arg-tally-blocks' cannot be combined with '-fplugin-arg-tally-hooks=user:u'"),
        (["-fplugin-arg-tally-help=yes"], r"'-fplugin-arg-tally-help' takes no value"),
        (["-flto"], r"does not support '-flto'"),
        # An option given twice: which one was meant is not known.
        (["-fplugin-arg-tally-hooks=call", "-fplugin-arg-tally-hooks=inline"],
         r"'-fplugin-arg-tally-hooks' given twice \('hooks=call' and 'hooks=inline'\); give it once"),
        (["-fplugin-arg-tally-blocks=count", "-fplugin-arg-tally-at=late", "-fplugin-arg-tally-blocks=count"],
         r"'-fplugin-arg-tally-blocks' given twice \('blocks=count' and 'blocks=count'\)"),
        (["-fplugin-arg-tally-verbose", "-fplugin-arg-tally-verbose"],
         r"'-fplugin-arg-tally-verbose' given twice \('verbose' and 'verbose'\)"),
        (["-fplugin-arg-tally-filter=" + os.path.dirname(src)],
         r"'-fplugin-arg-tally-filter=.*progs': cannot read the filter file: it is a directory"),
    ]
    for flags, pattern in cases:
        p = run([a.cc, "-c", "-fplugin=" + a.plugin, *flags, src, "-o",
                 os.path.join(work, "x.o")], env={"LC_ALL": "C"}, check=False)
        expect(p.returncode != 0, "%s: compile succeeded" % flags)
        text = p.stderr.replace("\u2018", "'").replace("\u2019", "'")
        expect(re.search(pattern, text), "%s: expected /%s/ in:\n%s" % (flags, pattern, text))
        expect("internal compiler error" not in text, "%s: ICE:\n%s" % (flags, text))
    # The unknown-option message lists every option of plugin-options.md's
    # table, none else (it once left out tls-model).
    documented = set(re.findall(r"^\| `([a-z-]+)` \|",
                                open(os.path.join(a.srcdir, "..", "doc", "plugin-options.md")).read(),
                                re.M))
    p = run([a.cc, "-c", "-fplugin=" + a.plugin, "-fplugin-arg-tally-colour=red", src,
             "-o", os.path.join(work, "x.o")], env={"LC_ALL": "C"}, check=False)
    listed = re.search(r"accepted options: (.*)", p.stderr)
    listed = set(listed.group(1).split(", ")) if listed else set()
    expect(documented and listed == documented,
           "the unknown-option message lists %s; plugin-options.md documents %s"
           % (sorted(listed), sorted(documented)))
    p = run([a.cc, "-c", "-fplugin=" + a.plugin, "-fplugin-arg-tally-help", src,
             "-o", os.path.join(work, "x.o")])
    for opt in ("hooks=inline|call|user:PREFIX|none", "blocks=none|count|visited",
                "placement=tree|block", "at=late|early", "update=single|atomic|tls",
                "measure=count|cycles", "help"):
        expect(opt in p.stderr, "help text lacks %s:\n%s" % (opt, p.stderr))


@case("version-mismatch")
def check_version_mismatch(a, work):
    """The plugin loaded into another GCC says so plainly (the loader runs
    no GCC code before the check).  Needs a second GCC: gcc-11 on bookworm,
    which ./dev test installs; any other version of 11 to 16 (or the
    system's gcc) where tally is built with one of them."""
    other = None
    for cand in ["gcc-%d" % n for n in range(11, 17)] + ["gcc"]:
        path = shutil.which(cand)
        if path and run([path, "-dumpfullversion"]).stdout.strip() != \
                run([a.cc, "-dumpfullversion"]).stdout.strip():
            other = path
            break
    if not other:
        raise Skip("no second GCC version installed")
    src = os.path.join(a.srcdir, "progs", "s-abc.c")
    p = run([other, "-c", "-fplugin=" + a.plugin, src, "-o", os.path.join(work, "x.o")],
            check=False)
    expect(p.returncode != 0, "the plugin loaded into %s" % other)
    want = run([other, "-dumpfullversion"]).stdout.strip()
    expect(re.search(r"tally: error: -fplugin=tally was built for GCC [0-9.]+ .* but is "
                     r"loaded into GCC %s" % re.escape(want), p.stderr),
           "unclear version-mismatch message:\n%s" % p.stderr)
    expect("undefined symbol" not in p.stderr, "dynamic linker error:\n%s" % p.stderr)


@case("api")
def check_api(a, work):
    exe = os.path.join(work, "api")
    run([a.cc, "-O2", "-fplugin=" + a.plugin, "-I", a.include,
         os.path.join(a.srcdir, "api", "dump-reset.c"), "-o", exe, a.runtime])
    mid, final = os.path.join(work, "mid.data"), os.path.join(work, "final.data")
    p = run([exe, mid], env={"TALLY_OUTPUT": final})
    expect(p.stdout.strip() == "10", "program output %r" % p.stdout)
    m, f = report_calls(a, mid), report_calls(a, final)
    expect(m.get("step") == (7, 7), "mid-run dump: step %s, want (7, 7)" % (m.get("step"),))
    expect(m.get("main") == (1, 0), "mid-run dump: main %s, want (1, 0)" % (m.get("main"),))
    expect(f.get("step") == (3, 3), "after reset: step %s, want (3, 3)" % (f.get("step"),))
    expect(f.get("main") == (0, 1), "after reset: main %s, want (0, 1)" % (f.get("main"),))


@case("install")
def check_install(a, work):
    """meson install puts tally.so where -fplugin=tally finds it (GCC's
    plugin directory, here under DESTDIR, given with -iplugindir) and
    tally.pc gives the runtime."""
    dest = os.path.join(work, "dest")
    run([a.meson, "install", "-C", a.build_dir, "--destdir", dest,
         "--no-rebuild", "--quiet"])
    plugin_dir = run([a.cc, "-print-file-name=plugin"]).stdout.strip()
    expect(os.path.exists(dest + plugin_dir + "/tally.so"),
           "tally.so not installed in %s" % plugin_dir)
    pcs = [os.path.join(d, f) for d, _, fs in os.walk(dest) for f in fs if f == "tally.pc"]
    expect(len(pcs) == 1, "tally.pc installed %d times" % len(pcs))
    # tally.specs where a bare -specs=tally.specs finds it, naming the
    # installed plugin and runtime (run-dropin.py "specs" uses the build
    # tree's).
    specs = dest + run([a.cc, "-print-file-name="]).stdout.strip() + "/tally.specs"
    expect(os.path.isfile(specs), "tally.specs not installed as %s" % specs)
    text = open(specs).read()
    expect("-fplugin=%s/tally.so " % plugin_dir in text, "tally.specs:\n%s" % text)
    for lib in re.findall(r"(/\S+/libtally-rt\.(?:so|a)) ", text):
        expect(os.path.isfile(dest + lib), "tally.specs names %s, not installed" % lib)
    env = {"PKG_CONFIG_SYSROOT_DIR": dest, "PKG_CONFIG_PATH": os.path.dirname(pcs[0])}
    libs = run(["pkg-config", "--libs", "tally"], env=env).stdout.split()
    # --cflags loads the plugin by name from GCC's plugin directory, here
    # under DESTDIR, given with -iplugindir (run-dropin.py tests --cflags).
    cflags = [f for f in run(["pkg-config", "--cflags", "tally"], env=env).stdout.split()
              if not f.startswith("-fplugin=")]
    libdir = [f[2:] for f in libs if f.startswith("-L")][0]
    exe = os.path.join(work, "abc")
    run([a.cc, "-O0", "-iplugindir=" + dest + plugin_dir, "-fplugin=tally",
         os.path.join(a.srcdir, "api", "dump-reset.c"), "-o", exe,
         *cflags, *libs, "-Wl,-rpath," + libdir])
    data, mid = os.path.join(work, "i.data"), os.path.join(work, "m.data")
    run([exe, mid], env={"TALLY_OUTPUT": data})
    tool = [os.path.join(d, f) for d, _, fs in os.walk(dest) for f in fs if f == "tally"]
    expect(len(tool) == 1, "tally command installed %d times" % len(tool))
    out = run([tool[0], "report", "--csv", data]).stdout
    expect(re.search(r"^3,3,step,", out, re.M), "installed build report:\n%s" % out)


def one_file_counts(a, name, sub, argv, output, want):
    """Run ARGV in SUB: exit 0, OUTPUT printed, no runtime message, one
    data file, whose (calls, exits) of each function of WANT are WANT's."""
    p = subprocess.run(argv, cwd=sub, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    expect(p.returncode == 0 and p.stdout.strip() == output,
           "%s: exit %d, output %r, %r" % (name, p.returncode, p.stdout, p.stderr))
    expect(p.stderr == "", "%s: runtime messages: %r" % (name, p.stderr))
    files = [f for f in os.listdir(sub) if f.endswith(".data")]
    expect(len(files) == 1, "%s: %d data files: %s" % (name, len(files), files))
    calls = report_calls(a, os.path.join(sub, files[0]))
    for fn, counts in want.items():
        expect(calls.get(fn) == counts, "%s: %s counted %s, want %s\n%s"
               % (name, fn, calls.get(fn), counts, calls))


@case("multi-runtime")
def check_multi_runtime(a, work):
    """An executable, a linked shared library and a dlopen'ed/dlclose'd one,
    each with its own copy of the static runtime, or all sharing the shared
    runtime: one data file with every module's counts."""
    d = os.path.join(a.srcdir, "multi")
    rt_dir = os.path.dirname(os.path.abspath(a.runtime))
    shared = ["-L" + rt_dir, "-ltally-rt", "-Wl,-rpath," + rt_dir]
    for name, rt in (("static", [os.path.abspath(a.runtime)]), ("shared", shared)):
        sub = os.path.join(work, name)
        os.mkdir(sub)
        plug = ["-fplugin=" + a.plugin]
        run([a.cc, "-O2", "-fPIC", "-shared", *plug, os.path.join(d, "lib.c"),
             "-o", os.path.join(sub, "liblib.so"), *rt])
        run([a.cc, "-O2", "-fPIC", "-shared", *plug, "-fplugin-arg-tally-hooks=call",
             os.path.join(d, "plugin.c"), "-o", os.path.join(sub, "plugin.so"), *rt])
        # The runtime before the library, so the executable has its own copy.
        run([a.cc, "-O2", *plug, os.path.join(d, "main.c"), "-o", os.path.join(sub, "main"),
             *rt, "-L" + sub, "-llib", "-Wl,-rpath," + sub, "-ldl"])
        one_file_counts(a, name, sub, [os.path.join(sub, "main"), os.path.join(sub, "plugin.so")],
                        "11", {"main": (1, 1), "lib_fn": (3, 3), "plugin_fn": (2, 2)})


# no-start-files: an uninstrumented program that dlopens a library (its
# own copy of the static runtime, linked without start files), calls its
# plugin_fn (argv[2]: the symbol, which C++ mangles) three times,
# dlcloses it, then forks.
NO_START_MAIN_C = r"""
#include <dlfcn.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
int
main (int argc, char **argv)
{
  if (argc != 3)
    return 2;
  void *h = dlopen (argv[1], RTLD_NOW);
  int (*fn) (int) = h ? (int (*) (int)) dlsym (h, argv[2]) : 0;
  if (!fn)
    {
      fprintf (stderr, "%s\n", dlerror ());
      return 1;
    }
  int s = 0;
  for (int i = 0; i < 3; i++)
    s += fn (i);
  dlclose (h);
  pid_t pid = fork ();
  if (pid == 0)
    _exit (0);
  int st;
  if (pid < 0 || waitpid (pid, &st, 0) != pid || !WIFEXITED (st) || WEXITSTATUS (st))
    return 3;
  printf ("%d\n", s);
  return 0;
}
"""


@case("no-start-files")
def check_no_start_files(a, work):
    """A shared library linked without start files (crtbegin*.o, so no
    __dso_handle) and with the static runtime, as libtool 2.6 links C++
    libraries (-shared -nostdlib, then its postdeps): it links, and its
    counts are written at exit after a dlclose and a fork (the runtime's
    exit and fork handlers stay valid: it pins the library)."""
    d = os.path.join(a.srcdir, "multi")
    rt = os.path.abspath(a.runtime)
    main_exe = os.path.join(work, "main")
    run([a.cc, "-O2", write_file(os.path.join(work, "main.c"), NO_START_MAIN_C),
         "-o", main_exe, "-ldl"])
    for name, cc, post, sym, row in (
            ("c", a.cc, ["-lc"], "plugin_fn", "plugin_fn"),
            ("c++", a.cxx, ["-lstdc++", "-lm", "-lgcc_s", "-lc", "-lgcc_s"], "_Z9plugin_fni",
             "int plugin_fn(int)")):
        sub = os.path.join(work, name)
        os.mkdir(sub)
        obj = os.path.join(sub, "plugin.o")
        lib = os.path.join(sub, "plugin.so")
        run([cc, "-x", name, "-O2", "-fPIC", "-fplugin=" + a.plugin, "-c",
             os.path.join(d, "plugin.c"), "-o", obj])
        run([cc, "-shared", "-nostdlib", obj, rt, "-ldl", "-lpthread", *post, "-o", lib])
        one_file_counts(a, name, sub, [main_exe, lib, sym], "0", {row: (3, 3)})


@case("filter")
def check_filter(a, work):
    """-fplugin-arg-tally-filter: include/exclude rules on function names and
    files, min-statements, last rule wins; -fplugin-arg-tally-verbose says
    what happened to each function; bad filter files are errors."""
    src = os.path.join(a.srcdir, "filter", "prog.c")

    def instrumented(rules, extra=(), path=None, **kw):
        if rules is not None:
            path = write_file(os.path.join(work, "rules"), rules)
        exe = os.path.join(work, "prog")
        p = run([a.cc, "-O0", "-fplugin=" + a.plugin, "-fplugin-arg-tally-filter=" + path,
                 *extra, src, "-o", exe, a.runtime], env={"LC_ALL": "C"}, **kw)
        data = os.path.join(work, "f.data")
        if os.path.exists(data):
            os.unlink(data)
        run([exe], env={"TALLY_OUTPUT": data})
        # Nothing instrumented: no module registers, no file is written.
        return (set(report_calls(a, data)) if os.path.exists(data) else set()), p.stderr

    every = {"tiny", "looping", "log_debug", "work", "main"}
    got, _ = instrumented("# nothing but a comment\n")
    expect(got == every, "empty filter: %s" % got)
    got, _ = instrumented("exclude function log_*\n")
    expect(got == every - {"log_debug"}, "exclude by glob: %s" % got)
    got, _ = instrumented("include function work\ninclude function ma?n\n")
    expect(got == {"work", "main"}, "include list: %s" % got)
    got, _ = instrumented("include function *\nexclude function t*\ninclude function tiny\n")
    expect(got == every, "last rule wins: %s" % got)
    got, _ = instrumented("exclude file *prog.c\n")
    expect(got == set(), "exclude file: %s" % got)
    got, _ = instrumented("min-statements 6\n")
    expect(got == {"looping", "work", "main"} or got == {"looping", "work"},
           "min-statements keeps loops and big functions: %s" % got)
    expect("tiny" not in got and "log_debug" not in got, "min-statements: %s" % got)
    # A rule longer than any line buffer is read whole: a bracket of 5000
    # letters, "[ww...w]ork", matches work.
    got, _ = instrumented("# a long rule\nexclude function [%s]ork\n" % ("w" * 5000))
    expect(got == every - {"work"}, "a rule of 5000 bytes: %s" % got)
    # A filter file may be a pipe (<(tally select --filter ...)).
    r, w = os.pipe()
    os.write(w, b"exclude function tiny\n")
    os.close(w)
    got, _ = instrumented(None, pass_fds=(r,), path="/dev/fd/%d" % r)
    os.close(r)
    expect(got == every - {"tiny"}, "a filter from a pipe: %s" % got)
    got, text = instrumented("exclude function tiny\n", ["-fplugin-arg-tally-verbose"])
    text = plain_quotes(text)
    expect("note: tally: 'tiny' not instrumented: excluded by a function rule" in text
           and "note: tally: 'work' instrumented" in text, "verbose notes:\n%s" % text)
    # Errors: a bad line names file:line and the accepted rules; a missing
    # file and a missing value name the option.
    bad = write_file(os.path.join(work, "bad"), "include function a\ninclude everything\n")
    nul = write_file(os.path.join(work, "nul"),
                     "exclude function tiny\nexclude function work\0 main\n")
    for flag, pattern in ((bad, r"bad:2: cannot read this rule; the accepted lines are"),
                          (nul, r"nul:2: a NUL byte in the line; a filter file is text"),
                          (work, r"cannot read the filter file: it is a directory"),
                          (os.path.join(work, "missing"), r"cannot read the filter file"),
                          ("", r"'-fplugin-arg-tally-filter' needs a value")):
        opt = "-fplugin-arg-tally-filter" + ("=" + flag if flag else "")
        p = run([a.cc, "-c", "-fplugin=" + a.plugin, opt, src, "-o",
                 os.path.join(work, "x.o")], env={"LC_ALL": "C"}, check=False)
        text = plain_quotes(p.stderr)
        expect(p.returncode != 0 and re.search(pattern, text),
               "%s: want /%s/:\n%s" % (opt, pattern, text))


def callgrind_self(exe, source):
    """Self instructions (Ir) per source function of SOURCE's file, from
    callgrind: the oracle for which functions take the time.  Clones
    ("spin.constprop.0") are folded into their source function."""
    out = exe + ".cg"
    run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out, exe])
    text = run(["callgrind_annotate", "--threshold=100", out]).stdout
    cost = {}
    for m in re.finditer(r"^\s*([\d,]+) \(\s*[\d.]+%\)\s+(\S+):(\S+)", text, re.M):
        if os.path.basename(m.group(2)) == source:
            fn = m.group(3).split(".")[0]
            cost[fn] = cost.get(fn, 0) + int(m.group(1).replace(",", ""))
    return cost


def smallest_share(cost, percent):
    """The fewest functions, most costly first, making up PERCENT of COST."""
    total, got, chosen = sum(cost.values()), 0, set()
    for fn, c in sorted(cost.items(), key=lambda kv: -kv[1]):
        if got * 100 >= percent * total:
            break
        chosen.add(fn)
        got += c
    return chosen


@case("select")
def check_select(a, work):
    """-fplugin-arg-tally-select=PROFILE:P%: a measure=cycles profile of a
    program where two functions take nearly all the time (the set callgrind's
    self instructions choose too) instruments just those two, the clone
    among them mapped back to its source function; `tally select` names the
    same set; verbose says why; with filter= both must admit; bad profiles
    and percentages are errors naming the option."""
    src = os.path.join(a.srcdir, "filter", "hot.c")
    hot = {"spin", "churn"}
    every = hot | {"tiny", "small", "main"}

    def build(name, flags, check=True):
        exe = os.path.join(work, name)
        p = run([a.cc, "-O2", "-fplugin=" + a.plugin, *flags, src, "-o", exe, a.runtime],
                env={"LC_ALL": "C"}, check=check)
        return exe, plain_quotes(p.stderr), p.returncode

    def profile(name, flags):
        exe, _, _ = build(name, flags)
        data = os.path.join(work, name + ".data")
        run([exe], env={"TALLY_OUTPUT": data})
        return data

    def counted(flags):
        exe, notes, _ = build("sel", flags)
        data = os.path.join(work, "sel.data")
        if os.path.exists(data):
            os.unlink(data)
        run([exe], env={"TALLY_OUTPUT": data})
        return report_calls(a, data), notes

    def selected(args):
        out = run([a.tally, "select", *args]).stdout.splitlines()
        expect(re.match(r"\d+ of \d+ functions make up [\d.]+% of \d+ cycles", out[0]),
               "tally select heading: %r" % out[0])
        return {line.split()[3] for line in out[2:]}

    prof = profile("prof", ["-fplugin-arg-tally-measure=cycles"])
    # 1. The oracle: callgrind on an uninstrumented build picks the same two.
    if shutil.which("valgrind") and shutil.which("callgrind_annotate"):
        plain = os.path.join(work, "plain")
        run([a.cc, "-O2", "-g", src, "-o", plain])
        cost = callgrind_self(plain, "hot.c")
        expect(set(cost) <= every and smallest_share(cost, 80) == hot,
               "callgrind's choice at 80%%: %s from %s" % (smallest_share(cost, 80), cost))
    else:
        print("valgrind not installed: callgrind oracle skipped")
    # 2. The rule itself, on the fixed measured files of the fuzz corpus
    #    (no timing noise): the fewest functions, most exclusive cycles
    #    first, reaching P% of the total of both files, as computed here from
    #    the cycles `tally report --json` shows for them.
    fixed = [os.path.join(a.srcdir, "..", "tools", "fuzz-corpus", f)
             for f in ("meas-valid", "path-valid")]
    report = json.loads(run([a.tally, "report", "--json", *fixed]).stdout)
    excl = {f["name"]: f["excl_cycles"] for f in report["functions"]}
    for pct in ("50", "99", "99.5", "99.7", "99.9", "100"):
        want = smallest_share(excl, Fraction(pct))
        got = selected(["--percent=" + pct, *fixed])
        expect(got == want, "tally select --percent=%s: %s, want %s from %s"
               % (pct, got, want, excl))
    # 3. The live profile: wall-clock cycles, so only what no disturbance
    #    of the run can change is required: the set at 80% is spin and
    #    churn, or one of them if the other was slowed down, never one of
    #    the trivial functions; the plugin instruments exactly the set
    #    tally select names, the calls the program makes.
    chosen = selected([prof])
    expect(chosen and chosen <= hot, "tally select: %s" % chosen)
    expect(selected(["--percent=80%", prof]) == chosen, "tally select --percent=80%")
    one = selected(["--percent=40", prof])
    expect(len(one) == 1 and one <= hot, "tally select --percent=40: %s" % one)
    for opt in (prof + ":80%", prof, prof + ":80"):
        calls, notes = counted(["-fplugin-arg-tally-select=" + opt, "-fplugin-arg-tally-verbose"])
        expect(calls == {fn: (20, 20) for fn in chosen}, "select=%s: %s" % (opt, calls))
        for fn in chosen:
            # A clone is named as GCC prints it: 'spin.constprop'.
            expect(re.search(r"note: tally: '%s(\.\w+)*' instrumented: [\d.]+%% of "
                             r"prof.data's time" % fn,
                             notes), "select=%s: no note for %s:\n%s" % (opt, fn, notes))
        for fn in every - chosen:
            expect(re.search(r"note: tally: '%s(\.\w+)*' not instrumented: not among the "
                             r"functions making up 80%% of prof.data's time" % fn, notes),
                   "select=%s: no note for %s:\n%s" % (opt, fn, notes))
    calls, _ = counted(["-fplugin-arg-tally-select=" + prof + ":40"])
    expect(set(calls) == one, "select=...:40 instruments %s, tally select names %s"
           % (set(calls), one))
    # spin's profile record is its clone's body (spin.constprop.0): at 100%
    # (every function with any time) the rebuild instruments spin.
    calls, _ = counted(["-fplugin-arg-tally-select=" + prof + ":100%"])
    expect(hot <= set(calls) <= every and set(calls) == selected(["--percent=100", prof]),
           "select=...:100%%: %s" % calls)
    # 4. A profile built before inlining (at=early, every source function)
    #    chooses for an at=late build, and the other way round.
    early = profile("early", ["-fplugin-arg-tally-measure=cycles", "-fplugin-arg-tally-at=early",
                              "-fplugin-arg-tally-hooks=call"])
    calls, _ = counted(["-fplugin-arg-tally-select=" + early])
    expect(set(calls) == selected([early]) and set(calls) <= hot,
           "at=early profile, at=late build: %s" % calls)
    calls, _ = counted(["-fplugin-arg-tally-select=" + prof, "-fplugin-arg-tally-at=early"])
    expect(set(calls) == chosen, "at=late profile, at=early build: %s" % calls)
    # 5. With a filter, both must admit; tally select --filter writes one.
    rules = write_file(os.path.join(work, "rules"), "exclude function churn\n")
    calls, notes = counted(["-fplugin-arg-tally-select=" + prof + ":100",
                            "-fplugin-arg-tally-filter=" + rules, "-fplugin-arg-tally-verbose"])
    want = selected(["--percent=100", prof]) - {"churn"}
    expect(set(calls) == want, "select and filter: %s, want %s" % (calls, want))
    expect("'churn' not instrumented: excluded by a function rule" in notes, notes)
    with open(rules, "w") as f:
        f.write(run([a.tally, "select", "--filter", prof]).stdout)
    calls, _ = counted(["-fplugin-arg-tally-filter=" + rules])
    expect(set(calls) == chosen, "tally select --filter as a filter file: %s" % calls)
    # 6. Errors: the option and what is wrong, never an ICE.
    count_only = profile("count", [])
    bad = bytearray(open(prof, "rb").read())
    bad[70] ^= 0x20
    corrupt = os.path.join(work, "corrupt.data")
    with open(corrupt, "wb") as f:
        f.write(bad)
    opt = "-fplugin-arg-tally-select"
    cases = [
        ([opt + "=" + count_only], r"count.data has no measured time; build the profiling run "
         r"with -fplugin-arg-tally-measure=cycles"),
        ([opt + "=" + corrupt], r"corrupt"),
        ([opt + "=" + os.path.join(work, "missing")], r"No such file"),
        ([opt + "=" + src], r"not a tally data file"),
        ([opt + "=" + prof + ":0"], r"bad percentage '0'; give a number above 0 and at most 100"),
        ([opt + "=" + prof + ":100.5%"], r"bad percentage '100.5%'"),
        ([opt + "=" + prof + ":-5"], r"bad percentage '-5'"),
        ([opt + "=" + prof + ":eighty"], r"bad percentage 'eighty'"),
        ([opt + "=:80"], r"no profile before the ':'"),
        ([opt], r"'-fplugin-arg-tally-select' needs a value: 'PROFILE' or 'PROFILE:P%'"),
        ([opt + "=" + prof, opt + "=" + prof], r"'-fplugin-arg-tally-select' given twice"),
    ]
    for flags, pattern in cases:
        _, text, rc = build("x", flags, check=False)
        expect(rc != 0 and re.search(pattern, text) and "-fplugin-arg-tally-select" in text,
               "%s: want /%s/:\n%s" % (flags, pattern, text))
        expect("internal compiler error" not in text, "%s: ICE:\n%s" % (flags, text))
    p = run([a.tally, "select", count_only], check=False)
    expect(p.returncode == 1 and "has no measured time" in p.stderr, "tally select: %s" % p.stderr)
    for bad_pct in ("0", "101", "x", ""):
        p = run([a.tally, "select", "--percent=" + bad_pct, prof], check=False)
        expect(p.returncode == 2 and "--percent" in p.stderr,
               "tally select --percent=%s: %d %s" % (bad_pct, p.returncode, p.stderr))


def render_man(page):
    """PAGE as plain text; groff's warnings (all enabled) are a failure."""
    p = run(["groff", "-man", "-Tutf8", "-ww", "-z", page], env={"LC_ALL": "C.UTF-8"})
    expect(p.stderr == "", "groff warns about %s:\n%s" % (page, p.stderr))
    text = run(["groff", "-man", "-Tascii", "-P-cbou", page]).stdout
    # Join words the formatter hyphenated at line ends.
    return re.sub(r"(\w)-\n\s+", r"\1", text)


@case("man-pages")
def check_man_pages(a, work):
    """tally(1) and tally-plugin(7) render without warnings, and describe
    every option the plugin's help lists and every command and option of
    `tally --help` and `tally run --help`, so they cannot drift silently."""
    if not shutil.which("groff"):
        raise Skip("groff is not installed")
    man = os.path.join(a.build_dir, "doc", "man")
    plugin_page = render_man(os.path.join(man, "tally-plugin.7"))
    tool_page = render_man(os.path.join(man, "tally.1"))
    version = run([a.tally, "--version"]).stdout.split()[-1]
    for page in (plugin_page, tool_page):
        expect(version in page, "the man page does not name version %s" % version)
    p = run([a.cc, "-c", "-fplugin=" + a.plugin, "-fplugin-arg-tally-help", "-x", "c",
             "/dev/null", "-o", os.path.join(work, "x.o")])
    options = re.findall(r"-fplugin-arg-tally-(\S+)", p.stderr)
    expect(len(options) >= 6, "plugin help lists %s" % options)
    # An entry: the option as a tag, indented less than the text under it
    # (7 columns with groff 1.22, 5 with 1.23 and later).
    missing = [o for o in options
               if not re.search(r"^ {1,8}%s(\s|$)" % re.escape(o), plugin_page, re.M)]
    expect(not missing, "tally-plugin(7) has no entry for these plugin options "
           "(from -fplugin-arg-tally-help): %s" % missing)
    usage = run([a.tally, "--help"]).stdout
    commands = re.findall(r"^  ([a-z]+)\b", usage.split("Commands:")[1].split("\n\n")[0], re.M)
    expect("report" in commands and "run" in commands, "commands in tally --help: %s" % commands)
    missing = [c for c in commands if not re.search(r"^ {1,8}%s(\s|$)" % c, tool_page, re.M)]
    expect(not missing, "tally(1) has no entry for these commands: %s" % missing)
    words = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", usage + run([a.tally, "run", "--help"]).stdout))
    missing = sorted(w for w in words if w not in tool_page)
    expect(not missing, "tally(1) does not mention these options: %s" % missing)


@case("gc-stress")
def check_gc_stress(a, work):
    """Every kind of instrumentation compiled with GCC's garbage collector
    run at every opportunity (ggc-min-expand=0, ggc-min-heapsize=0) and
    -fchecking: a tree the plugin holds across a collection without a root
    is freed at once, instead of only in a unit as large as sqlite3.c (where
    update=tls crashed GCC this way).  Each compile must succeed without an
    internal compiler error; the programs have longjmp, clones, threads and
    C++ classes, at -O0 and -O2."""
    T = "-fplugin-arg-tally-"
    option_sets = [
        [], [T + "hooks=call"], [T + "at=early"], [T + "hooks=call", T + "at=early"],
        [T + "update=atomic"], [T + "update=tls"], [T + "update=tls", T + "at=early"],
        [T + "blocks=count"], [T + "blocks=count", T + "at=early"],
        [T + "blocks=count", T + "update=tls", T + "hooks=none", T + "at=early"],
        [T + "blocks=count", T + "placement=block", T + "hooks=call"],
        [T + "blocks=visited"], [T + "counters=mapped"],
        [T + "counters=mapped", T + "blocks=count", T + "hooks=call"],
        [T + "measure=cycles"], [T + "measure=cycles", T + "at=early"],
        [T + "hooks=call", T + "measure=cycles", T + "paths=on"],
        [T + "hooks=call", T + "measure=cycles", T + "exit=frames"],
        [T + "measure=cycles", T + "exit=frames"],
        [T + "measure=cycles", T + "exit=frames", T + "at=early"],
        [T + "hooks=call", T + "measure=cycles", T + "exit=frames", T + "at=early"],
        [T + "measure=cycles", T + "paths=on"],
        [T + "measure=cycles", T + "paths=on", T + "exit=frames", T + "at=early"],
    ]
    # C++ without library headers (they make a collection at every
    # opportunity take 20 s a compile): classes, virtual calls, a template,
    # an exception thrown through instrumented frames.
    cxx = write_file(os.path.join(work, "gc.cc"),
                     "struct err { int v; };\n"
                     "struct base { virtual ~base () {} virtual int f (int x) = 0; };\n"
                     "struct d1 : base { int f (int x) override { if (x > 90) throw err{x}; return x + 1; } };\n"
                     "template <typename T> T twice (T x) { return x + x; }\n"
                     "static int run (base &b, int n) { int s = 0; for (int i = 0; i < n; i++) s += b.f (i); return s; }\n"
                     "int main (int argc, char **) { d1 d; try { return run (d, argc * 100); }\n"
                     "  catch (const err &e) { return twice (e.v) & 1; } }\n")
    progs = [("longjmp.c", a.cc), ("clones.c", a.cc), ("threads.c", a.cc), (cxx, a.cxx)]
    jobs = []
    for n, opts in enumerate(option_sets):
        for prog, cc in progs:
            for opt in ("-O0", "-O2"):
                jobs.append((n, opts, prog, cc, opt))

    def compile_one(job):
        n, opts, prog, cc, opt = job
        name = os.path.basename(prog)
        p = run([cc, opt, "-fchecking", "--param", "ggc-min-expand=0",
                 "--param", "ggc-min-heapsize=0", "-fplugin=" + a.plugin, *opts,
                 "-I", a.include, "-c", os.path.join(a.srcdir, "progs", prog),
                 "-o", os.path.join(work, "gc-%d-%s%s.o" % (n, name, opt))],
                env={"LC_ALL": "C"}, check=False)
        if p.returncode == 0:
            return None
        return "%s %s %s: %s" % (name, opt, " ".join(opts), p.stderr.strip()[-600:])

    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        failures = [f for f in pool.map(compile_one, jobs) if f]
    expect(not failures, "%d compiles failed:\n%s" % (len(failures), "\n".join(failures)))



if __name__ == "__main__":
    sys.exit(main("tally-check-"))
