#!/usr/bin/env python3
"""Counters placed by a measured profile: -fplugin-arg-tally-profile=FILE
(plugin/profile.cc, format/profile.c), on testsuite/profile/guess.c,
whose run `A` takes every branch GCC guesses cold and whose run `B` does
what the guess expects (and leaves a loop by longjmp).

Checks (one per run, named on the command line):
  exact         -O0 and -O2, every combination of at, update, blocks and
                placement (checklib.matrix): built with the profile of run
                A, run B's block counts equal placement=block's without a
                profile (blocks=visited: marks exactly the blocks it counts
                above 0).
  gcov          -O0 at=early blocks=count with A's profile: run B's line
                counts equal gcov's (the line of a setjmp call, which gcov
                counts once and tally with each second return too, equals
                the build's without a profile).
  other-build   the profile's own build does not matter: A's profiles from
                builds with placement=block, update=tls, update=atomic,
                hooks=call, entries=counted, counters=mapped and from two
                runs merged by `tally merge` place the counters exactly as
                the default build's profile does (the same block maps); an
                at=late profile given to an at=early build changes nothing
                (every function "changed since the profile" in the dump).
  older-source  a profile of an older version of the source (-DOLD: arms
                has another test): arms falls back to GCC's guess ("changed
                since the profile" in the dump), the others are weighed;
                run B's counts equal placement=block's.
  hot-edges     x86-64 -O2: with A's profile the code of arms that A runs
                (the stores to a and c) has no counter update, while with
                GCC's guess it has; run A updates no counter of arms (its
                entries come from its caller) and one per call of lookup,
                and the placement of A's profile runs fewer counter
                increments on A than the guess.
  visited-choice  blocks=visited with A's profile counts (a blocks=count
                map, kind 2) the functions whose counters A's run updates
                less often than it would store their bytes (arms, lookup,
                main), keeps the bytes of interp, says so in the dump; run B
                marks exactly the blocks placement=block counts above 0.
  bad-profile   a missing, empty, foreign, truncated or damaged file, a
                blocks=visited or function-counts-only data file, an empty
                value, and profile= without blocks=: a compile error naming
                the option (and the file), never an internal compiler
                error.
  drop-in       `tally run --profile=REL` puts the absolute path of REL in
                CC; `gcc -specs=tally.specs` with the options builds and
                weighs by the profile.

Exit status: 0 pass, 1 fail, 77 skipped.
"""
import os
import platform
import re
import shutil
import sys

from checklib import (Skip, block_counts, block_report, case, disasm_function,
                      expect, gcov_of, main, matrix, need_tools, run,
                      same_counts, tally_opts)


def program(a):
    return os.path.join(a.srcdir, "profile", "guess.c")


def build(a, work, name, opt, opts, extra=()):
    """guess.c at -OPT with the plugin options OPTS (and compiler flags
    EXTRA) as WORK/NAME."""
    exe = os.path.join(work, name)
    run([a.cc, "-" + opt, "-fplugin=" + a.plugin, *tally_opts(*opts), *extra,
         program(a), "-o", exe, a.runtime])
    return exe


def profile_of(a, work, name, opt, opts, extra=(), args=("A", "100")):
    """A data file of run ARGS of guess.c built with OPTS."""
    exe = build(a, work, name, opt, opts, extra)
    data = exe + ".profile"
    run([exe, *args], env={"TALLY_OUTPUT": data})
    return data


def dump_lines(work, name):
    """The tally lines of the .tally dumps of compilation NAME in WORK."""
    out = []
    for f in sorted(os.listdir(work)):
        if f.startswith(name + "-") and f.endswith(".tally"):
            with open(os.path.join(work, f)) as fh:
                out += [l.strip() for l in fh if l.startswith("tally: ")]
            os.unlink(os.path.join(work, f))
    for f in os.listdir(work):  # the other dumps of -fdump-tree-all
        if f.startswith(name + "-") and re.search(r"\.\d+[tir]\.", f):
            os.unlink(os.path.join(work, f))
    return out


def maps_of(a, data):
    """{symbol: [map lines]} of `tally dump DATA`: where each function's
    counters are."""
    out = run([a.tally, "dump", data]).stdout
    maps, cur = {}, None
    for line in out.splitlines():
        m = re.match(r'  fn \d+ .*symbol="(.*?)"', line)
        if m:
            cur = maps.setdefault(m.group(1), [])
        elif cur is not None and re.match(r"    (block|edge|map) ", line):
            cur.append(line.strip())
    return maps


def increments(a, data, symbol):
    """The sum of SYMBOL's counters in DATA (its values after the first
    two): the counter increments its run executed."""
    for line in run([a.tally, "dump", data]).stdout.splitlines():
        m = re.match(r'  fn \d+ .*symbol="%s" .*counters=\d+:((?: \d+)*)$' % re.escape(symbol), line)
        if m:
            return sum(int(v) for v in m.group(1).split()[2:])
    raise AssertionError("no %s in %s" % (symbol, data))


@case("exact")
def check_exact(a, work):
    combos = matrix("at", "update", "blocks", "placement", leave_out={
        "placement applies to blocks=count only":
            lambda c: c["blocks"] == "visited" and c["placement"] == "block"})
    for opt in ("O0", "O2"):
        refs, profiles = {}, {}
        for at in ("early", "late"):
            ref = build(a, work, "ref-%s-%s" % (opt, at), opt,
                        ["blocks=count", "placement=block", "at=" + at])
            refs[at] = block_counts(a, ref, work, ["B", "100"])
            profiles[at] = profile_of(a, work, "prof-%s-%s" % (opt, at), opt,
                                      ["blocks=count", "at=" + at])
        for k, combo in enumerate(combos):
            at = combo[0].split("=")[1]
            name = "p%d-%s" % (k, opt)
            exe = build(a, work, name, opt,
                        combo + ["profile=" + profiles[at]], ["-fdump-tree-all"])
            weighed = {l.split()[2] for l in dump_lines(work, name) if "weighed by" in l}
            expect(weighed >= {"arms", "lookup", "interp", "main"},
                   "-%s %s: the functions weighed by the profile are %s, "
                   "not all of guess.c's" % (opt, " ".join(combo), sorted(weighed)))
            got = block_counts(a, exe, work, ["B", "100"])
            what = "-%s %s with A's profile, run B" % (opt, " ".join(combo))
            if "blocks=visited" in combo:
                want = {s: [None if c is None else int(c > 0) for c in v]
                        for s, v in refs[at].items()}
                got = {s: [None if c is None else int(c > 0) for c in v]
                       for s, v in got.items()}
                same_counts(what + " (visited)", got, want)
            else:
                same_counts(what, got, refs[at])


def gcov_lines(a, work, exe_dir, src):
    out = run([gcov_of(a), "-j", "-t", os.path.basename(src)], cwd=exe_dir).stdout
    import json
    lines = {}
    for doc in out.splitlines():
        if doc.strip():
            for f in json.loads(doc)["files"]:
                if os.path.basename(f["file"]) == "guess.c":
                    for l in f["lines"]:
                        lines[l["line_number"]] = lines.get(l["line_number"], 0) + l["count"]
    return lines


@case("gcov")
def check_gcov(a, work):
    need_tools(gcov_of(a))
    import json
    prof = profile_of(a, work, "prof", "O0", ["blocks=count", "at=early"])
    exe = build(a, work, "tally", "O0", ["blocks=count", "at=early", "profile=" + prof])
    data = os.path.join(work, "b.data")
    run([exe, "B", "100"], env={"TALLY_OUTPUT": data})
    j = json.loads(run([a.tally, "report", "--json", "--lines", program(a), data]).stdout)
    tl = {l["line"]: l["count"] for s in j.get("sources", []) for l in s["lines"]}
    gdir = os.path.join(work, "gcov")
    os.makedirs(gdir)
    src = os.path.join(gdir, "guess.c")
    shutil.copy(program(a), src)
    run([a.cc, "-O0", "--coverage", "-c", "guess.c", "-o", "guess.o"], cwd=gdir)
    run([a.cc, "--coverage", "guess.o", "-o", "g"], cwd=gdir)
    run(["./g", "B", "100"], cwd=gdir)
    gl = gcov_lines(a, work, gdir, src)
    expect(gl, "gcov reported no line of guess.c")
    # The line of a setjmp call: gcov counts its second return nowhere
    # (run-coverage.py's SETJMP); tally, with or without a profile, on the
    # line.  Compared with the build without a profile there.
    with open(program(a)) as f:
        setjmp = {i + 1 for i, l in enumerate(f) if "setjmp (" in l}
    guess = build(a, work, "guess", "O0", ["blocks=count", "at=early"])
    gdata = os.path.join(work, "guess.data")
    run([guess, "B", "100"], env={"TALLY_OUTPUT": gdata})
    j = json.loads(run([a.tally, "report", "--json", "--lines", program(a), gdata]).stdout)
    ul = {l["line"]: l["count"] for s in j.get("sources", []) for l in s["lines"]}
    diff = ["line %d: %s %s, tally %s" % (n, "no profile" if n in setjmp else "gcov",
                                         (ul if n in setjmp else gl).get(n), tl.get(n))
            for n in sorted(set(gl) | setjmp)
            if tl.get(n) != (ul if n in setjmp else gl).get(n)]
    expect(not diff, "-O0 at=early with A's profile, run B: line counts "
           "differ: %s" % "; ".join(diff))


@case("other-build")
def check_other_build(a, work):
    base = profile_of(a, work, "base", "O2", ["blocks=count"])
    want_exe = build(a, work, "want", "O2", ["blocks=count", "profile=" + base])
    want = maps_of(a, data_run(want_exe, "A"))
    guess = maps_of(a, data_run(build(a, work, "guess", "O2", ["blocks=count"]), "A"))
    expect(want != guess, "A's profile places guess.c's counters as GCC's "
           "guess does: the test program shows nothing")
    others = {
        "placement=block": ["blocks=count", "placement=block"],
        "update=tls": ["blocks=count", "update=tls"],
        "update=atomic": ["blocks=count", "update=atomic"],
        "hooks=call": ["blocks=count", "hooks=call"],
        "entries=counted": ["blocks=count", "entries=counted"],
        "counters=mapped": ["blocks=count", "counters=mapped"],
    }
    for what, opts in others.items():
        prof = profile_of(a, work, "o-" + what.replace("=", "-"), "O2", opts)
        got = maps_of(a, data_run(build(a, work, "w-" + what.replace("=", "-"), "O2",
                                        ["blocks=count", "profile=" + prof]), "A"))
        expect(got == want, "a profile of a %s build places the counters "
               "otherwise than the default build's: %s" % (what, first_diff(got, want)))
    # Two runs merged: A and B summed weigh as their sum.
    exe = build(a, work, "m", "O2", ["blocks=count"])
    fa, fb = data_run(exe, "A"), data_run(exe, "B")
    merged = os.path.join(work, "merged.data")
    run([a.tally, "merge", "-o", merged, fa, fb])
    mexe = build(a, work, "wm", "O2", ["blocks=count", "profile=" + merged],
                 ["-fdump-tree-all"])
    lines = dump_lines(work, "wm")
    expect(sum("weighed by" in l for l in lines) == 4,
           "a merged profile: %s" % lines)
    same_counts("built with the merged profile, run B",
                block_counts(a, mexe, work, ["B", "100"]),
                block_counts(a, build(a, work, "blk", "O2",
                                      ["blocks=count", "placement=block"]),
                             work, ["B", "100"]))
    # at=late's graphs are not at=early's.
    early_guess = maps_of(a, data_run(build(a, work, "eg", "O2",
                                            ["blocks=count", "at=early"]), "A"))
    eexe = build(a, work, "ep", "O2", ["blocks=count", "at=early", "profile=" + base],
                 ["-fdump-tree-all"])
    lines = dump_lines(work, "ep")
    changed = [l for l in lines if "changed since the profile" in l]
    expect(len(changed) == 4 and not any("weighed by" in l for l in lines),
           "an at=late profile in an at=early build: %s" % lines)
    expect(maps_of(a, data_run(eexe, "A")) == early_guess,
           "an at=late profile moved an at=early build's counters")


def data_run(exe, which):
    data = "%s-%s.data" % (exe, which)
    run([exe, which, "100"], env={"TALLY_OUTPUT": data})
    return data


def first_diff(got, want):
    for s in sorted(set(got) | set(want)):
        if got.get(s) != want.get(s):
            return "%s: %s against %s" % (s, got.get(s), want.get(s))
    return "none"


@case("older-source")
def check_older_source(a, work):
    old = profile_of(a, work, "old", "O2", ["blocks=count"], ["-DOLD"])
    exe = build(a, work, "new", "O2", ["blocks=count", "profile=" + old], ["-fdump-tree-all"])
    lines = dump_lines(work, "new")
    expect(any(l.startswith("tally: profile: arms changed since the profile") for l in lines),
           "arms, changed since the profile, is not said to fall back: %s" % lines)
    weighed = sorted(l.split()[2] for l in lines if "weighed by" in l)
    expect(weighed == ["interp", "lookup", "main"],
           "functions weighed by the older profile: %s" % weighed)
    ref = build(a, work, "ref", "O2", ["blocks=count", "placement=block"])
    same_counts("built with an older source's profile, run B",
                block_counts(a, exe, work, ["B", "100"]),
                block_counts(a, ref, work, ["B", "100"]))
    # A function the profile lacks: a profile of a build that filtered
    # arms out.
    filt = os.path.join(work, "filter")
    with open(filt, "w") as f:
        f.write("exclude function arms\n")
    lacks = profile_of(a, work, "lacks", "O2", ["blocks=count", "filter=" + filt])
    exe = build(a, work, "lacking", "O2", ["blocks=count", "profile=" + lacks],
                ["-fdump-tree-all"])
    lines = dump_lines(work, "lacking")
    expect(any(l.startswith("tally: profile: arms not in the profile") for l in lines),
           "arms, not in the profile, is not said to fall back: %s" % lines)


def blocks_of_function(lines):
    """The basic blocks of a function's objdump lines: lists of (address,
    instruction), split before jump targets and after jumps and returns."""
    insns = []
    for line in lines:
        x = re.match(r"\s*([0-9a-f]+):\s*(.*)", line)
        if x:
            insns.append((int(x.group(1), 16), x.group(2)))
    targets = set()
    for _, text in insns:
        j = re.match(r"j\w+\s+([0-9a-f]+) <", text)
        if j:
            targets.add(int(j.group(1), 16))
    blocks, cur = [], []
    for addr, text in insns:
        if addr in targets and cur:
            blocks.append(cur)
            cur = []
        cur.append((addr, text))
        if re.match(r"(j\w+|ret)\b", text):
            blocks.append(cur)
            cur = []
    if cur:
        blocks.append(cur)
    return blocks


def counted_stores(exe):
    """For the blocks of arms storing to a and to c: whether each has a
    counter update."""
    out = {}
    for b in blocks_of_function(disasm_function(exe, "arms")):
        text = " ".join(t for _, t in b)
        for var in ("a", "c"):
            if re.search(r"<%s>" % var, text) and re.search(r"add|sub", text):
                out[var] = "__tally" in text
    expect(set(out) == {"a", "c"}, "no block of arms stores to a and c in %s: %s"
           % (exe, out))
    return out


@case("hot-edges")
def check_hot_edges(a, work):
    if platform.machine() != "x86_64":
        raise Skip("(the code is read as x86-64)")
    need_tools("objdump")
    prof = profile_of(a, work, "prof", "O2", ["blocks=count"])
    guess = build(a, work, "guess", "O2", ["blocks=count"])
    placed = build(a, work, "placed", "O2", ["blocks=count", "profile=" + prof])
    g = counted_stores(guess)
    expect(any(g.values()), "GCC's guess counts neither of A's arms of arms: "
           "the test shows nothing (%s)" % g)
    p = counted_stores(placed)
    expect(not any(p.values()), "with A's profile the arms A runs still "
           "have counter updates: %s" % p)
    dg, dp = data_run(guess, "A"), data_run(placed, "A")
    expect(increments(a, dp, "arms") == 0,
           "run A updated arms' counters %d times with A's profile"
           % increments(a, dp, "arms"))
    expect(increments(a, dp, "lookup") == 100,
           "run A updated lookup's counters %d times with A's profile, not "
           "once per call" % increments(a, dp, "lookup"))
    total = lambda d: sum(increments(a, d, s) for s in ("arms", "lookup", "interp", "main"))
    expect(total(dp) < total(dg), "A's profile runs %d increments on A, "
           "GCC's guess %d" % (total(dp), total(dg)))


@case("visited-choice")
def check_visited_choice(a, work):
    prof = profile_of(a, work, "prof", "O2", ["blocks=count"])
    exe = build(a, work, "vis", "O2", ["blocks=visited", "profile=" + prof], ["-fdump-tree-all"])
    lines = [l for l in dump_lines(work, "vis") if " counted (" in l]
    chose = {l.split()[2]: "rather than" in l for l in lines}
    expect(set(chose) == {"arms", "lookup", "interp", "main"} and chose["arms"]
           and not chose["interp"],
           "blocks=visited with A's profile: counted rather than visited %s (arms, whose "
           "bytes A's run stores twice a call, should be; interp, a byte a case, "
           "not): %s" % (chose, lines))
    kinds = {}
    for sym, m in maps_of(a, data_run(exe, "B")).items():
        kinds[sym] = re.match(r"map \d+ bytes kind=([\w-]+)", m[0]).group(1)
    expect(kinds["arms"] == "tree" and kinds["interp"].startswith("visited"),
           "map kinds of the visited build: %s" % kinds)
    ref = build(a, work, "ref", "O2", ["blocks=count", "placement=block"])
    want = {s: [int(c > 0) for c in v] for s, v in block_counts(a, ref, work, ["B", "100"]).items()}
    got = {s: [int(c > 0) for c in v] for s, v in block_counts(a, exe, work, ["B", "100"]).items()}
    same_counts("blocks=visited, some functions counted, run B", got, want)


BAD = {
    "missing": None,
    "empty": b"",
    "foreign": b"#include <stdio.h>\nint main (void) { return 0; }\n",
    "magic-only": b"TALLYDAT",
}


@case("bad-profile")
def check_bad_profile(a, work):
    good = profile_of(a, work, "good", "O2", ["blocks=count"])
    with open(good, "rb") as f:
        body = f.read()
    files = dict(BAD)
    files["truncated"] = body[:len(body) // 2]
    files["crc"] = body[:60] + bytes([body[60] ^ 0xff]) + body[61:]
    files["visited"] = open(profile_of(a, work, "vis", "O2", ["blocks=visited"]), "rb").read()
    files["no-blocks"] = open(profile_of(a, work, "calls", "O2", ["hooks=inline"]), "rb").read()
    src = os.path.join(work, "t.c")
    with open(src, "w") as f:
        f.write("int main (void) { return 0; }\n")
    for what, content in files.items():
        path = os.path.join(work, "bad-" + what)
        if content is not None:
            with open(path, "wb") as f:
                f.write(content)
        p = run([a.cc, "-O2", "-fplugin=" + a.plugin,
                 *tally_opts("blocks=count", "profile=" + path), "-c", src,
                 "-o", os.path.join(work, "t.o")], check=False)
        err = p.stderr.replace("\u2018", "'").replace("\u2019", "'")
        expect(p.returncode != 0, "profile=%s (%s) compiled" % (path, what))
        expect("internal compiler error" not in err, "%s: %s" % (what, err))
        expect("-fplugin-arg-tally-profile=%s" % path in err and "error:" in err,
               "%s profile: the error does not name the option and the file: %s" % (what, err))
    for opts, want in ((["blocks=count", "profile="], "needs a value"),
                       (["profile=" + good], "needs '-fplugin-arg-tally-blocks=count'")):
        p = run([a.cc, "-O2", "-fplugin=" + a.plugin, *tally_opts(*opts), "-c", src,
                 "-o", os.path.join(work, "t.o")], check=False)
        err = p.stderr.replace("\u2018", "'").replace("\u2019", "'")
        expect(p.returncode != 0 and want in err and "internal compiler error" not in err,
               "%s: %s" % (" ".join(opts), err))


@case("drop-in")
def check_drop_in(a, work):
    prof = profile_of(a, work, "prof", "O2", ["blocks=count"])
    rel = os.path.relpath(prof, work)
    p = run([a.tally, "run", "--print-env", "--blocks=count", "--profile=" + rel], cwd=work)
    expect("-fplugin-arg-tally-profile=%s" % os.path.realpath(prof) in p.stdout,
           "tally run --profile=%s: %s" % (rel, p.stdout))
    p = run([a.tally, "run", "--print-env", "--blocks=count", "--profile=no-such-file"],
            cwd=work, check=False)
    expect(p.returncode != 0 and "no-such-file" in p.stderr,
           "tally run --profile of a missing file: %s" % p.stderr)
    specs = os.path.join(a.build_dir, "plugin", "tally.specs")
    if not os.path.isfile(specs):
        raise Skip("(no %s)" % specs)
    exe = os.path.join(work, "specs")
    run([a.cc, "-O2", "-specs=" + specs, *tally_opts("blocks=count", "profile=" + prof),
         "-fdump-tree-all", program(a), "-o", exe], cwd=work)
    lines = dump_lines(work, "specs")
    expect(sum("weighed by" in l for l in lines) == 4, "-specs with profile=: %s" % lines)
    run([exe, "B", "10"], env={"TALLY_OUTPUT": os.path.join(work, "s.data")})


if __name__ == "__main__":
    sys.exit(main("tally-profile-"))
