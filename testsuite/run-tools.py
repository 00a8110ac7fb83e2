#!/usr/bin/env python3
"""The `tally` command reading what it is given (suite `tools`): the seed
corpus of the data-file reader through every subcommand of the sanitized
tool, sources that are not regular files, files of two checkouts of one
program, the messages of commands over several bad files, and what CSV
and the ranks table print.

    run-tools.py CASE --tally T --tally-asan T --srcdir DIR ...

Each case prints "ok: CASE", "FAIL: CASE" with the reason, or "skipped:
CASE (reason)", and exits 0, 1 or 77."""
import concurrent.futures
import csv
import io
import os
import re
import subprocess
import sys

from checklib import case, expect, Failure, main, run, write_file

# Words of stderr that only a sanitizer writes.
SANITIZER = re.compile(r"runtime error:|Sanitizer|==\d+==ERROR")


def corpus_dir(a):
    return os.path.join(a.srcdir, "..", "tools", "fuzz-corpus")


def first_source(a, path):
    """The base name of the first module source `tally dump` shows in PATH,
    or None."""
    p = run([a.tally, "dump", path], check=False)
    m = re.search(r' source="([^"]*)"', p.stdout)
    return os.path.basename(m.group(1)) if m else None


def corpus_commands(a, path, other, out):
    """Every subcommand and option that reads data files, over PATH (and
    OTHER, a valid file, for the commands that take two); OUT is a scratch
    output name."""
    cmds = [["report"], ["report", "--all", "--json"], ["report", "--csv", "--clones"],
            ["report", "--sort=excl", "--top=1"], ["report", "--blocks", "--json"],
            ["report", "--tree", "--all"], ["report", "--tree", "--event=perf::TASK-CLOCK"],
            ["report", "--ranks"], ["report", "--ranks", "--json", "--metric=cycles"],
            ["report", "--ranks", "--csv"], ["report", "--rank=0"], ["dump"], ["lcov", "--all"],
            ["lcov", "-o", out], ["merge", "--force", "-o", out], ["flame", "--folded"],
            ["flame", "-o", out, "--event=perf::TASK-CLOCK"], ["select", "--filter"]]
    runs = [c + [path] for c in cmds]
    source = first_source(a, path)
    if source:
        runs.append(["report", "--json", "--lines", source, path])
    runs.append(["merge", "-j", "2", "-o", out, path, other])
    for opts in ([], ["--lines", "--json"], ["--all", "--csv"], ["--sort=cycles"]):
        runs += [["diff", *opts, path, path], ["diff", *opts, other, path]]
    return runs


@case("fuzz-corpus")
def check_fuzz_corpus(a, work):
    """Every seed of tools/fuzz-corpus (valid files and each kind of damage
    the reader knows) through every subcommand and option of the ASan and
    UBSan build of `tally` that reads data files: each run ends within 60
    s with status 0, or 1 (2 for an option the file cannot serve) and
    lines `tally: ...` on stderr, and never with a sanitizer's report."""
    corpus = corpus_dir(a)
    seeds = sorted(os.listdir(corpus))
    expect(len(seeds) >= 60, "only %d seeds in %s" % (len(seeds), corpus))
    other = os.path.join(corpus, "one-module")
    jobs = []
    for i, seed in enumerate(seeds):
        out = os.path.join(work, "out%d" % i)
        for cmd in corpus_commands(a, os.path.join(corpus, seed), other, out):
            jobs.append((seed, cmd))

    def one(job):
        seed, cmd = job
        try:
            p = subprocess.run([a.tally_asan, *cmd], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=60, cwd=work)
        except subprocess.TimeoutExpired:
            return "%s: tally %s: still running after 60 s" % (seed, " ".join(cmd))
        err = p.stderr.decode("utf-8", "replace")
        what = "%s: tally %s: exit %d" % (seed, " ".join(cmd), p.returncode)
        if SANITIZER.search(err):
            return "%s, a sanitizer's report:\n%s" % (what, err[:3000])
        if p.returncode not in (0, 1, 2):
            return "%s\n%s" % (what, err[:2000])
        lines = err.splitlines()
        if p.returncode and not lines:
            return "%s and no message" % what
        stray = [l for l in lines if not l.startswith(("tally: ", "  "))]
        if stray:
            return "%s, stderr lines that are not tally's messages:\n%s" % (what, "\n".join(stray[:5]))
        return None

    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        bad = [r for r in pool.map(one, jobs) if r]
    expect(not bad, "%d of %d runs went wrong:\n%s" % (len(bad), len(jobs), "\n".join(bad[:10])))


def two_units(a, work, flags_a, flags_b, name="prog"):
    """WORK/NAME from a.c (main, calling f twice) compiled with FLAGS_A and
    b.c (f) with FLAGS_B, both -O0 with the plugin, run once; returns its
    data file."""
    srcs = {"a.c": "int f (int);\nint main (void)\n{\n  return f (1) + f (2) - 4;\n}\n",
            "b.c": "int f (int x)\n{\n  if (x > 1)\n    return x + 1;\n  return x;\n}\n"}
    objs = []
    for src, flags in (("a.c", flags_a), ("b.c", flags_b)):
        path = write_file(os.path.join(work, src), srcs[src])
        obj = os.path.join(work, name + "-" + src + ".o")
        run([a.cc, "-O0", "-fplugin=" + a.plugin, *flags, "-c", path, "-o", obj], cwd=work)
        objs.append(obj)
    exe = os.path.join(work, name)
    run([a.cc, *objs, "-o", exe, a.runtime])
    data = exe + ".data"
    run([exe], env={"TALLY_OUTPUT": data})
    return data


@case("lcov-no-blocks")
def check_lcov_no_blocks(a, work):
    """`tally lcov` of modules built without block counters writes their
    function records only (FN, FNDA, no DA or BRDA) and says so in one
    warning on stderr, exit 0: 'no module ...' when none has them, 'N of M
    modules ...' when some lack them, nothing when all have them."""
    blocks = ["-fplugin-arg-tally-blocks=count"]
    cases = (("none", [], [], "tally: lcov: warning: no module was built with block counters"),
             ("some", blocks, [], "tally: lcov: warning: 1 of 2 modules was built without block counters"),
             ("all", blocks, blocks, None))
    for name, fa, fb, want in cases:
        data = two_units(a, work, fa, fb, name)
        p = run([a.tally, "lcov", data], check=False)
        expect(p.returncode == 0, "%s: exit %d\n%s" % (name, p.returncode, p.stderr))
        records = {}
        for rec in p.stdout.split("end_of_record\n"):
            sf = re.search(r"^SF:(.*)$", rec, re.M)
            if sf:
                records[os.path.basename(sf.group(1))] = rec
        expect(sorted(records) == ["a.c", "b.c"], "%s: records for %s" % (name, sorted(records)))
        for src, flags in (("a.c", fa), ("b.c", fb)):
            rec = records[src]
            expect(re.search(r"^FNDA:\d+,(main|f)$", rec, re.M), "%s: %s has no FNDA:\n%s" % (name, src, rec))
            has_da = re.search(r"^DA:", rec, re.M) is not None
            expect(has_da == bool(flags), "%s: %s %s DA lines:\n%s"
                   % (name, src, "lacks" if flags else "has", rec))
        lines = p.stderr.splitlines()
        if want:
            expect(len(lines) == 1 and lines[0].startswith(want),
                   "%s: want one line starting %r on stderr, got:\n%s" % (name, want, p.stderr))
        else:
            expect(not lines, "%s: stderr:\n%s" % (name, p.stderr))


# The largest source tally reads (tools/srcfile.h, doc/cli.md).
SOURCE_MAX = 256 << 20


@case("source-files")
def check_source_files(a, work):
    """Sources named /dev/zero, /dev/urandom, a FIFO and a sparse regular
    file one byte over 256 MiB (by #line): `tally lcov` writes every
    record (with its DA lines) within 60 s and warns that each of those
    cannot be read for markers, saying why; `report --lines` of each is an
    error saying why, exit 1, at once; the real source still reads."""
    fifo = os.path.join(work, "fifo.c")
    os.mkfifo(fifo)
    big = os.path.join(work, "big.c")
    with open(big, "wb") as f:
        f.truncate(SOURCE_MAX + 1)
    names = {"/dev/zero": "a character device, not a regular file",
             "/dev/urandom": "a character device, not a regular file",
             fifo: "a FIFO, not a regular file",
             big: "larger than 256 MiB"}
    text = ""
    for k, name in enumerate(names):
        text += '#line 1 "%s"\nint f%d (int x) { return x > 0 ? x + %d : 0; }\n' % (name, k, k)
    text += '#line 10 "s.c"\nint main (void)\n{\n  return f0 (1) + f1 (1) + f2 (1) + f3 (1) - 10;\n}\n'
    src = write_file(os.path.join(work, "s.c"), text)
    exe = os.path.join(work, "prog")
    run([a.cc, "-O0", "-fplugin=" + a.plugin, "-fplugin-arg-tally-blocks=count", src, "-o", exe,
         a.runtime], cwd=work)
    data = exe + ".data"
    run([exe], env={"TALLY_OUTPUT": data})

    def tally(*args):
        try:
            return run([a.tally, *args], check=False, timeout=60)
        except subprocess.TimeoutExpired:
            raise Failure("tally %s: still running after 60 s" % " ".join(args))

    p = tally("lcov", data)
    expect(p.returncode == 0, "lcov: exit %d\n%s" % (p.returncode, p.stderr))
    sf = re.findall(r"^SF:(.*)$", p.stdout, re.M)
    expect(sorted(sf) == sorted(list(names) + [src]), "lcov: records for %s" % sf)
    expect(len(re.findall(r"^DA:1,1$", p.stdout, re.M)) >= 4, "lcov: the line counts:\n%s" % p.stdout)
    for name, why in names.items():
        want = "tally: lcov: warning: cannot read %s for LCOV_EXCL markers: it is %s" % (name, why)
        expect(want in p.stderr, "lcov: want %r in:\n%s" % (want, p.stderr))
    expect(len(p.stderr.splitlines()) == len(names), "lcov: stderr:\n%s" % p.stderr)
    for name, why in names.items():
        p = tally("report", "--lines", name, data)
        want = "tally: report: cannot read the source %s: it is %s" % (name, why)
        expect(p.returncode == 1 and want in p.stderr,
               "report --lines %s: exit %d, want %r in:\n%s" % (name, p.returncode, want, p.stderr))
    p = tally("report", "--lines", "s.c", data)
    expect(p.returncode == 0 and re.search(r"^\s+1:\s+12:  return f0", p.stdout, re.M),
           "report --lines s.c: exit %d\n%s%s" % (p.returncode, p.stdout, p.stderr))



@case("merge-bad-inputs")
def check_merge_bad_inputs(a, work):
    """`tally merge` of a valid file among four bad ones (empty, cut short,
    a flipped byte under the CRC, missing), with -j 1 and -j 3: exit 1,
    one `tally: FILE: PROBLEM` line for each bad file, in the order given,
    none for the valid one, and no output written (as `report` names
    them all)."""
    good = two_units(a, work, [], [])
    data = open(good, "rb").read()
    empty = write_file(os.path.join(work, "empty.data"), "")
    cut = os.path.join(work, "cut.data")
    with open(cut, "wb") as f:
        f.write(data[:len(data) // 2])
    flipped = os.path.join(work, "flipped.data")
    with open(flipped, "wb") as f:
        f.write(data[:60] + bytes([data[60] ^ 0x20]) + data[61:])
    missing = os.path.join(work, "missing.data")
    bad = [empty, cut, flipped, missing]
    p = run([a.tally, "report", empty, good, cut, flipped, missing], check=False)
    expect(p.returncode == 1 and all(("tally: %s: " % b) in p.stderr for b in bad),
           "report does not name them all:\n%s" % p.stderr)
    for jobs in ("1", "3"):
        out = os.path.join(work, "out%s.data" % jobs)
        p = run([a.tally, "merge", "-j", jobs, "-o", out, empty, good, cut, flipped, missing],
                check=False)
        named = [l.split(": ")[1] for l in p.stderr.splitlines() if l.startswith("tally: ")]
        expect(p.returncode == 1 and named == bad,
               "merge -j %s: exit %d, files named %s, want %s\n%s"
               % (jobs, p.returncode, named, bad, p.stderr))
        expect(not os.path.exists(out), "merge -j %s wrote %s" % (jobs, out))


def text_escaped(raw):
    """RAW (bytes, ASCII but for control characters, DEL and 0xff) as
    tally's text and CSV output show it: those bytes as \\xNN."""
    return "".join("\\x%02x" % b if b < 0x20 or b >= 0x7f else chr(b) for b in raw)


@case("csv-escapes")
def check_csv_escapes(a, work):
    """A source file named with ESC, a line feed, DEL, a byte that is not
    UTF-8, a comma and a quote: `report --csv`, `report --ranks --csv` and
    `diff --all --csv` write no control character but the line ends and
    valid UTF-8, and Python's csv module reads the name back in the form
    the text output shows (each such byte as \\xNN, the field quoted for
    the comma and quote), the rows one line each."""
    raw = b'e\x1b[31mv\nil\x7f\xff,"q".c'
    evil = os.path.join(work.encode(), raw)
    with open(evil, "wb") as f:
        f.write(b"int f (int x) { return x + 1; }\n")
    good = write_file(os.path.join(work, "m.c"), "int f (int);\nint main (void) { return f (0) - 1; }\n")
    exe = os.path.join(work, "prog")
    run([a.cc, "-O0", "-fplugin=" + a.plugin, os.fsdecode(evil), good, "-o", exe, a.runtime])
    data = exe + ".data"
    run([exe], env={"TALLY_OUTPUT": data})
    want = text_escaped(evil)
    for args, column in ((["report", "--csv"], "file"), (["report", "--ranks", "--csv"], "file"),
                         (["diff", "--all", "--csv", data], "file")):
        p = subprocess.run([a.tally, *args, data], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        what = "tally " + " ".join(args[:3])
        expect(p.returncode == 0, "%s: exit %d\n%s" % (what, p.returncode, p.stderr))
        try:
            text = p.stdout.decode("utf-8")
        except UnicodeDecodeError as e:
            raise Failure("%s: output is not UTF-8 (%s)" % (what, e))
        raw_ctl = sorted({c for c in text if (ord(c) < 0x20 and c != "\n") or ord(c) == 0x7f})
        expect(not raw_ctl, "%s: raw control characters %r in:\n%s" % (what, raw_ctl, text))
        rows = list(csv.DictReader(io.StringIO(text)))
        expect(len(rows) == len(text.splitlines()) - 1, "%s: a row spans lines:\n%s" % (what, text))
        files = [r[column] for r in rows]
        expect(want in files, "%s: %r not among the files %r" % (what, want, files))



@case("ranks-columns")
def check_ranks_columns(a, work):
    """`report --ranks`'s table pads the function column as report's does:
    every location starts two columns after the longest name printed when
    that has at most 40 columns (26 against 1 to 4, with --top=3), at 40
    otherwise, a longer name (50) pushing only its own location right; a
    file name with ESC shows it escaped, never raw."""
    longname = "z" * 50  # past 40 columns, last by name
    mid = "a_medium_length_function_n"  # 26 columns
    raw = b"r\x1bk.c"
    src = os.path.join(work.encode(), raw)
    body = "int g (int x) { return x + 1; }\nint %s (int x) { return x + 2; }\n" % mid
    with open(src, "wb") as f:
        f.write(body.encode())
    main_c = write_file(os.path.join(work, "m.c"),
                        "int g (int), %s (int), %s (int);\n"
                        "int %s (int x) { return x; }\n"
                        "int main (void) { return g (0) + %s (0) + %s (0) - 3; }\n"
                        % (mid, longname, longname, mid, longname))
    exe = os.path.join(work, "prog")
    run([a.cc, "-O0", "-fplugin=" + a.plugin, os.fsdecode(src), main_c, "-o", exe, a.runtime])
    data = exe + ".data"
    run([exe], env={"TALLY_OUTPUT": data})
    for top, names in ((["--top=3"], {"g", mid, "main"}), ([], {"g", mid, "main", longname})):
        p = subprocess.run([a.tally, "report", "--ranks", "--sort=name", *top, data],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        text = p.stdout.decode("utf-8", "replace")
        expect(p.returncode == 0 and "\x1b" not in text and "r\\x1bk.c" in text,
               "report --ranks: exit %d, ESC not escaped:\n%r" % (p.returncode, text))
        lines = text.splitlines()
        col = lines[1].index("function")
        rows = {line[col:].split(" ")[0]: line for line in lines[2:]}
        expect(set(rows) == names, "rows %s:\n%s" % (sorted(rows), text))
        width = min(40, max(len(n) for n in rows))
        for name, line in rows.items():
            at = col + max(len(name), width) + 2
            expect(line[at - 2:at] == "  " and line[at] != " ",
                   "the location of %s does not start at column %d:\n%s" % (name, at, text))

if __name__ == "__main__":
    sys.exit(main("tally-tools-"))
