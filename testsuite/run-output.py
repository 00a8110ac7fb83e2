#!/usr/bin/env python3
"""Checks of where and how the runtime writes its file: TALLY_OUTPUT
patterns, exclusive creation and planted links, setuid programs, %r and
%R, and the runtime and report under ASan and UBSan.

Usage: run-output.py CASE --plugin P --runtime RT --runtime-asan RTA
                     --tally T --tally-asan TA ... (testsuite/meson.build's
                     driver_args)
Exit status: 0 pass, 1 fail, 77 skip.
"""
import concurrent.futures
import os
import re
import select
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import time

from checklib import build_abc, case, expect, Failure, main, run, Skip, write_file


def read_fifo_while(fifo, cmd, env):
    """Run CMD with ENV while reading FIFO; return what was read.  The read
    end is open before CMD starts (the runtime opens a FIFO with O_NONBLOCK
    and gives up when nobody reads: a reader thread that the scheduler had
    not yet run made this case hang), and is read until CMD has exited and
    the FIFO is empty."""
    full = dict(os.environ)
    full.pop("TALLY_OUTPUT", None)
    full.pop("TALLY_DUMP_ON", None)
    full.update(env)
    rfd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    chunks = []
    try:
        p = subprocess.Popen(cmd, env=full, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
        deadline = time.monotonic() + 120
        while True:
            exited = p.poll() is not None
            ready, _, _ = select.select([rfd], [], [], 0.05)
            got = os.read(rfd, 1 << 16) if ready else b""
            if got:
                chunks.append(got)
                continue
            if exited:
                break
            if time.monotonic() > deadline:
                p.kill()
                raise Failure("%s did not finish writing the FIFO" % cmd[0])
            if ready:
                time.sleep(0.01)   # no writer yet: select reports EOF at once
        err = p.stderr.read().decode(errors="replace")
        p.stderr.close()
        expect(p.wait() == 0, "writing to a FIFO: exit status %d: %s"
               % (p.returncode, err))
    finally:
        os.close(rfd)
    return b"".join(chunks)


@case("output-path")
def check_output_path(a, work):
    exe = build_abc(a, work)
    p = run([exe], env={"TALLY_OUTPUT": os.path.join(work, "run-%p-%h-%%.data")})
    files = [f for f in os.listdir(work) if f.startswith("run-")]
    host = socket.gethostname()
    expect(len(files) == 1 and re.fullmatch(r"run-\d+-%s-%%\.data" % re.escape(host), files[0]),
           "pattern expansion gave %s" % files)
    # Default name in the working directory.
    sub = os.path.join(work, "cwd")
    os.mkdir(sub)
    subprocess.run([exe], cwd=sub, stdout=subprocess.DEVNULL, check=True,
                   env={k: v for k, v in os.environ.items() if k != "TALLY_OUTPUT"})
    names = os.listdir(sub)
    expect(len(names) == 1 and re.fullmatch(r"tally\.\d+\.data", names[0]),
           "default output name: %s" % names)
    # An unknown pattern is kept and reported.
    p = run([exe], env={"TALLY_OUTPUT": os.path.join(work, "x-%q.data")})
    expect("unknown pattern '%q'" in p.stderr, "no warning for %%q: %r" % p.stderr)
    expect(os.path.exists(os.path.join(work, "x-%q.data")), "x-%q.data not written")
    # An unwritable place: a clear message, the program's exit status kept.
    p = run([exe], env={"TALLY_OUTPUT": os.path.join(work, "no", "such", "dir.data")},
            check=False)
    expect(p.returncode == 0, "exit status changed to %d" % p.returncode)
    expect("cannot create" in p.stderr and "no such file or directory" in p.stderr,
           "message: %r" % p.stderr)
    expect(p.stdout.strip() == "100", "output %r" % p.stdout)
    # A path that is not a regular file is written in place, never replaced
    # by a file: a FIFO (read while the program writes it) and, as root, a
    # character device like /dev/null.
    fifo = os.path.join(work, "pipe")
    os.mkfifo(fifo)
    data = read_fifo_while(fifo, [exe], {"TALLY_OUTPUT": fifo})
    expect(stat.S_ISFIFO(os.stat(fifo).st_mode), "the FIFO was replaced")
    copy = os.path.join(work, "from-pipe.data")
    with open(copy, "wb") as f:
        f.write(data)
    expect(re.search(r"^1,1,main,", run([a.tally, "report", "--csv", copy]).stdout, re.M),
           "the data read from the FIFO is not a valid report")
    dev = os.path.join(work, "null")
    try:
        os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        dev = None
    if dev:
        run([exe], env={"TALLY_OUTPUT": dev})
        expect(stat.S_ISCHR(os.stat(dev).st_mode), "the character device was replaced")
    # A message about a path longer than the message buffer (512 bytes)
    # keeps its reason: the middle of the path is left out instead.
    long = os.path.join(work, "no", "such", "x" * 600 + ".data")
    p = run([exe], env={"TALLY_OUTPUT": long}, check=False)
    expect(p.returncode == 0 and p.stdout.strip() == "100", "long path: %r" % p)
    expect(re.search(r"^tally: cannot create %s.*\.\.\..*x\.data\.tmp\.[0-9a-f]+: no such "
                     r"file or directory \(errno 2\); no data written$"
                     % re.escape(work), p.stderr, re.M),
           "the message about a 600-byte path lost its reason:\n%s" % p.stderr)
    expect(all(len(line) < 512 for line in p.stderr.splitlines()), "over-long line")


def report_main(a, data):
    """main's calls in DATA, None if it cannot be read."""
    p = run([a.tally, "report", "--csv", data], check=False)
    m = re.search(r"^(\d+),(\d+),main,", p.stdout, re.M)
    return int(m.group(1)) if p.returncode == 0 and m else None


def planted_run(exe, link_to, name_fmt, env, cwd):
    """Run EXE from a shell that first plants a symbolic link to LINK_TO
    named NAME_FMT % its own pid, then execs EXE (exec keeps the pid): the
    link waits at the name the runtime of today's main would create."""
    script = 'ln -s "$1" "$(printf "$2" $$)" && exec "$3"'
    return run(["sh", "-c", script, "sh", link_to, name_fmt, exe], env=env, cwd=cwd,
               check=False)


@case("output-safety")
def check_output_safety(a, work):
    """Every name the runtime creates is created exclusively, without
    following a link, never world-writable; a target that is a link, a
    directory, or another user's file or FIFO is refused with a message;
    a %m merge moves another user's file aside instead of trusting it
    (doc/guarantees.md, Security).  The program's own exit status and
    output are kept throughout."""
    exe = build_abc(a, work)
    victim = os.path.join(work, "victim")
    problems = []

    def soft(cond, msg):
        """Each problem is listed, not only the first."""
        if not cond:
            problems.append(msg)

    def plant_victim():
        with open(victim, "w") as f:
            f.write("secret\n")
        os.chmod(victim, 0o600)

    def victim_intact(what):
        with open(victim, "rb") as f:
            soft(f.read() == b"secret\n", "%s: the link's target was written" % what)

    def ok_run(p, what):
        soft(p.returncode == 0 and p.stdout.strip() == "100",
               "%s: exit %d, output %r\n%s" % (what, p.returncode, p.stdout, p.stderr))

    # The target itself a link: refused, the link and its target unchanged.
    plant_victim()
    out = os.path.join(work, "out.data")
    os.symlink(victim, out)
    p = run([exe], env={"TALLY_OUTPUT": out}, check=False)
    ok_run(p, "target link")
    victim_intact("target link")
    soft(os.path.islink(out), "the link at the target was replaced")
    soft("cannot write %s: it is a symbolic link (not followed); no data written" % out
           in p.stderr, "no message for a target link: %r" % p.stderr)
    os.unlink(out)
    # A link planted at the temporary name of the coming pid.
    p = planted_run(exe, victim, out + ".tmp.%d", {"TALLY_OUTPUT": out}, work)
    ok_run(p, "planted temporary")
    victim_intact("planted temporary")
    soft(stat.S_ISREG(os.lstat(out).st_mode) and report_main(a, out) == 1,
           "planted temporary: the data file is not a regular file with the counts")
    # Modes: the umask is honoured, nothing is world- or group-writable,
    # the temporary is gone.
    for umask, want in ((0o022, 0o644), (0o077, 0o600), (0o000, 0o644)):
        os.unlink(out)
        old = os.umask(umask)
        try:
            run([exe], env={"TALLY_OUTPUT": out})
        finally:
            os.umask(old)
        mode = stat.S_IMODE(os.stat(out).st_mode)
        soft(mode == want, "umask %03o: mode %03o, want %03o" % (umask, mode, want))
    soft(not [f for f in os.listdir(work) if ".tmp." in f and not os.path.islink(
        os.path.join(work, f))], "a temporary file was left: %s" % os.listdir(work))

    # Targets that are not regular files, or another user's.
    sub = os.path.join(work, "dir.data")
    os.mkdir(sub)
    p = run([exe], env={"TALLY_OUTPUT": sub}, check=False)
    ok_run(p, "directory target")
    soft("cannot write %s: it is a directory" % sub in p.stderr, "directory: %r" % p.stderr)
    soft(os.listdir(sub) == [], "something was written into the directory")
    root = os.geteuid() == 0
    if root:
        fifo = os.path.join(work, "their-pipe")
        os.mkfifo(fifo)
        os.chown(fifo, 65534, 65534)
        p = run([exe], env={"TALLY_OUTPUT": fifo}, check=False, timeout=60)
        ok_run(p, "another user's FIFO")
        soft("cannot write %s: it is owned by another user" % fifo in p.stderr,
               "another user's FIFO: %r" % p.stderr)
        theirs = write_file(os.path.join(work, "theirs.data"), "theirs\n")
        os.chown(theirs, 65534, 65534)
        p = run([exe], env={"TALLY_OUTPUT": theirs}, check=False)
        ok_run(p, "another user's file")
        soft("cannot write %s: it is owned by another user" % theirs in p.stderr,
               "another user's file: %r" % p.stderr)
        soft(open(theirs, "rb").read() == b"theirs\n", "another user's file was replaced")

    # %m: the lock file and the merge target.
    mdir = os.path.join(work, "m")
    os.mkdir(mdir)
    pattern = os.path.join(mdir, "%m.data")
    run([exe], env={"TALLY_OUTPUT": pattern})
    merged = [os.path.join(mdir, f) for f in os.listdir(mdir) if f.endswith(".data")]
    soft(len(merged) == 1, "%%m wrote %s" % os.listdir(mdir))
    merged = merged[0]
    lock = merged + ".lock"
    soft(stat.S_IMODE(os.stat(lock).st_mode) == 0o600,
           "lock file mode %03o, want 600" % stat.S_IMODE(os.stat(lock).st_mode))
    os.unlink(lock)
    gone = os.path.join(work, "created-through-lock")
    os.symlink(gone, lock)
    p = run([exe], env={"TALLY_OUTPUT": pattern}, check=False)
    ok_run(p, "lock link")
    soft(not os.path.exists(gone), "the lock file's link was followed")
    soft("cannot lock %s: it is a symbolic link" % lock in p.stderr, "lock link: %r" % p.stderr)
    soft(report_main(a, merged) == 1, "written although the lock was refused")
    os.unlink(lock)
    keep = os.path.join(work, "keep.data")
    os.rename(merged, keep)
    os.symlink(keep, merged)
    p = run([exe], env={"TALLY_OUTPUT": pattern}, check=False)
    ok_run(p, "merge target link")
    soft(os.path.islink(merged), "the merge target's link was replaced")
    soft("cannot merge into %s: it is a symbolic link" % merged in p.stderr,
           "merge target link: %r" % p.stderr)
    soft(report_main(a, keep) == 1, "merged through a link")
    os.unlink(merged)
    os.rename(keep, merged)
    p = run([exe], env={"TALLY_OUTPUT": pattern})
    soft(report_main(a, merged) == 2, "own file not merged")
    if root:
        # Another user's file is never merged: moved aside, a fresh file.
        os.chown(merged, 65534, 65534)
        before = open(merged, "rb").read()
        p = run([exe], env={"TALLY_OUTPUT": pattern}, check=False)
        ok_run(p, "another user's merge target")
        aside = merged + ".other-owner"
        soft("%s: owned by another user (uid 65534), not trusted; not merged, moved aside "
               "to %s" % (merged, aside) in p.stderr, "message: %r" % p.stderr)
        soft(os.path.exists(aside) and open(aside, "rb").read() == before
               and os.stat(aside).st_uid == 65534, "not moved aside unchanged")
        soft(report_main(a, merged) == 1 and os.stat(merged).st_uid == 0,
               "another user's counts were merged")

    # %c: a link at the continuous file and at its coming temporary.
    cexe = os.path.join(work, "abc-mapped")
    run([a.cc, "-O2", "-fplugin=" + a.plugin, "-fplugin-arg-tally-counters=mapped",
         os.path.join(a.srcdir, "progs", "s-abc.c"), "-o", cexe, a.runtime])
    cont = os.path.join(work, "cont.data")
    plant_victim()
    p = planted_run(cexe, victim, cont + ".tmp.%d", {"TALLY_OUTPUT": cont + "%c"}, work)
    ok_run(p, "%c planted temporary")
    victim_intact("%c planted temporary")
    soft(report_main(a, cont) == 1, "%c: no valid file")
    os.unlink(cont)
    os.symlink(victim, cont)
    p = run([cexe], env={"TALLY_OUTPUT": cont + "%c"}, check=False)
    ok_run(p, "%c target link")
    victim_intact("%c target link")
    soft(os.path.islink(cont) and "it is a symbolic link" in p.stderr,
           "%%c target link: %r" % p.stderr)
    if not root:
        print("not root: another user's files and FIFOs not tried")
    expect(not problems, "\n".join(problems))


@case("secure-output")
def check_secure_output(a, work):
    """A setuid program (AT_SECURE) reads no TALLY_* variable: the
    invoking user cannot point its output at a file only the program's
    owner may write.  It writes the default name only, into the current
    directory if the invoking user owns it, created exclusively, mode
    0600; never replacing a file, never following a link."""
    if os.geteuid() != 0:
        raise Skip("needs root to make a setuid-root program")
    setpriv = shutil.which("setpriv")
    if not setpriv:
        raise Skip("no setpriv (util-linux)")
    os.chmod(work, 0o755)
    src = write_file(os.path.join(work, "suid.c"),
                     "#include <stdio.h>\n#include <sys/auxv.h>\n#include <unistd.h>\n"
                     "__attribute__ ((noinline)) int f (int x) { return x + 1; }\n"
                     "int main (void) { int s = 0; for (int i = 0; i < 5; i++) s = f (s);\n"
                     "  printf (\"%lu %d %d\\n\", getauxval (AT_SECURE), (int) geteuid (), s);\n"
                     "  return 0; }\n")
    exe = os.path.join(work, "suid")
    run([a.cc, "-O1", "-fplugin=" + a.plugin, src, "-o", exe, a.runtime])
    os.chown(exe, 0, 0)
    os.chmod(exe, 0o4755)
    victim = write_file(os.path.join(work, "victim"), "secret\n")
    os.chmod(victim, 0o600)
    home = os.path.join(work, "home")
    os.mkdir(home)
    os.chown(home, 65534, 65534)
    as_nobody = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]
    env = {"TALLY_OUTPUT": victim, "TALLY_DUMP_ON": "SIGUSR1", "TALLY_VERBOSE": "1",
           "TALLY_PAPI_EVENTS": "PAPI_TOT_INS", "TALLY_UNWIND": "1"}
    p = run(as_nobody + [exe], env=env, cwd=home, check=False)
    if p.stdout.split()[:2] != ["1", "0"]:
        raise Skip("the setuid bit took no effect (a nosuid mount?): %r" % p.stdout)
    expect(p.returncode == 0 and p.stdout.split()[2] == "5",
           "exit %d, output %r\n%s" % (p.returncode, p.stdout, p.stderr))
    with open(victim, "rb") as f:
        expect(f.read() == b"secret\n", "TALLY_OUTPUT was honoured by a setuid program")
    expect("wrote" not in p.stderr, "TALLY_VERBOSE was honoured: %r" % p.stderr)
    files = os.listdir(home)
    expect(len(files) == 1 and re.fullmatch(r"tally\..+\.data", files[0]),
           "default output: %s\n%s" % (files, p.stderr))
    data = os.path.join(home, files[0])
    st = os.stat(data)
    expect(st.st_uid == 0 and stat.S_IMODE(st.st_mode) == 0o600,
           "the file is %o, uid %d (want 600, root's)" % (stat.S_IMODE(st.st_mode), st.st_uid))
    out = run([a.tally, "report", "--csv", data]).stdout
    expect(re.search(r"^5,5,f,", out, re.M), "f's calls:\n%s" % out)
    os.unlink(data)
    # A link planted at the default name for the coming pid: not followed,
    # not replaced.
    p = run(as_nobody + ["sh", "-c", 'ln -s "$1" tally.$$.data && exec "$2"', "sh", victim,
                         exe], env=env, cwd=home, check=False)
    expect(p.returncode == 0 and p.stdout.split()[:1] == ["1"], "exit %d" % p.returncode)
    with open(victim, "rb") as f:
        expect(f.read() == b"secret\n", "a planted link was followed")
    expect([f for f in os.listdir(home) if os.path.islink(os.path.join(home, f))],
           "the planted link was replaced: %s" % os.listdir(home))
    # A directory the user does not own (a shared /tmp): nothing written.
    shared = os.path.join(work, "shared")
    os.mkdir(shared)
    os.chmod(shared, 0o1777)
    p = run(as_nobody + [exe], env=env, cwd=shared, check=False)
    expect(p.returncode == 0, "exit %d" % p.returncode)
    expect(os.listdir(shared) == [], "written into a directory of another user: %s"
           % os.listdir(shared))
    expect("owned by the user who runs it" in p.stderr, "message: %r" % p.stderr)


# The launchers' variables %r and %R read (rt/rank.c), in the order tried.
RANK_VARS = ["OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "MV2_COMM_WORLD_RANK",
             "SLURM_PROCID", "FLUX_TASK_RANK", "PALS_RANKID", "ALPS_APP_PE"]


SIZE_VARS = ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE", "SLURM_NTASKS",
             "FLUX_JOB_SIZE", "PALS_SIZE"]


@case("rank-output")
def check_rank_output(a, work):
    """%r and %R in TALLY_OUTPUT: the job rank and size from each
    launcher's variables, the first set one winning; outside a job "pid"
    and the pid, and "0"; a malformed value reported and skipped."""
    exe = build_abc(a, work)
    clean = {k: v for k, v in os.environ.items() if k not in RANK_VARS + SIZE_VARS}

    def names(extra, pattern="r%r-of-%R.data"):
        d = tempfile.mkdtemp(dir=work)
        env = dict(clean, **extra)
        env["TALLY_OUTPUT"] = os.path.join(d, pattern)
        p = subprocess.run([exe], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, check=True)
        return sorted(os.listdir(d)), p

    for rank_var, size_var in [("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
                               ("PMI_RANK", "PMI_SIZE"), ("SLURM_PROCID", "SLURM_NTASKS"),
                               ("MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE"),
                               ("FLUX_TASK_RANK", "FLUX_JOB_SIZE"),
                               ("PALS_RANKID", "PALS_SIZE")]:
        got, _ = names({rank_var: "37", size_var: "4096"})
        expect(got == ["r37-of-4096.data"], "%s/%s: %s" % (rank_var, size_var, got))
    for var in ("PMIX_RANK", "ALPS_APP_PE"):
        got, _ = names({var: "5"})
        expect(got == ["r5-of-0.data"], "%s alone: %s" % (var, got))
    # The first variable set wins: Open MPI's over Slurm's (mpirun inside
    # an allocation sets both, SLURM_PROCID being the mpirun's own step).
    got, _ = names({"SLURM_PROCID": "0", "SLURM_NTASKS": "1",
                    "OMPI_COMM_WORLD_RANK": "6", "OMPI_COMM_WORLD_SIZE": "8"})
    expect(got == ["r6-of-8.data"], "precedence: %s" % got)
    # Leading zeros do not make another name for the same rank.
    got, _ = names({"PMI_RANK": "007", "PMI_SIZE": "08"})
    expect(got == ["r7-of-8.data"], "leading zeros: %s" % got)
    # Outside a job: "pid" and the pid, and size 0; two processes differ.
    got, _ = names({})
    expect(len(got) == 1 and re.fullmatch(r"rpid\d+-of-0\.data", got[0]),
           "outside a job: %s" % got)
    got2, _ = names({})
    expect(got2 != got, "two processes outside a job share %s" % got)
    # Malformed: reported once, the next variable is used.
    got, p = names({"OMPI_COMM_WORLD_RANK": "3x", "PMI_RANK": "2", "PMI_SIZE": "-1"})
    expect(got == ["r2-of-0.data"], "malformed: %s" % got)
    expect(p.stderr.count("is not a job rank or size") == 1
           and "OMPI_COMM_WORLD_RANK=3x" in p.stderr, "malformed report: %r" % p.stderr)
    got, p = names({"PMI_RANK": "12345678901"})
    expect(len(got) == 1 and got[0].startswith("rpid"), "too long a rank: %s" % got)
    # The file is a good one and %% still works next to %r.
    got, _ = names({"SLURM_PROCID": "1"}, "x%%%r.data")
    expect(got == ["x%1.data"], "%%%%%%r: %s" % got)


@case("asan-runtime")
def check_asan_runtime(a, work):
    san = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all"]
    for prog, flags in (("s-abc.c", []), ("threads.c", ["-pthread", "-fplugin-arg-tally-update=atomic"])):
        for hooks in ("inline", "call"):
            exe = os.path.join(work, prog + hooks)
            run([a.cc, "-O1", "-g", "-fplugin=" + a.plugin, "-fplugin-arg-tally-hooks=" + hooks,
                 os.path.join(a.srcdir, "progs", prog), "-o", exe, *flags, *san, a.runtime_asan])
            data = exe + ".data"
            p = run([exe], env={"TALLY_OUTPUT": data, "ASAN_OPTIONS": "detect_leaks=1"})
            expect("runtime error" not in p.stderr and "ERROR" not in p.stderr,
                   "sanitizer report:\n%s" % p.stderr)
            run([a.tally_asan, "report", data])
    # The report's tables grow while several files are merged: 400
    # functions with block maps, three data files, every output.
    src = os.path.join(work, "many.c")
    with open(src, "w") as f:
        for i in range(400):
            f.write("__attribute__((noinline)) int f%d (int x) { return x > %d ? x - 1 : x + %d; }\n"
                    % (i, i, i))
        f.write("int main (int argc, char **argv) { (void) argv; int s = 0;\n")
        for i in range(400):
            f.write("  s += f%d (argc + %d);\n" % (i, i % 7))
        f.write("  return s == 12345; }\n")
    exe = os.path.join(work, "many")
    run([a.cc, "-O1", "-fplugin=" + a.plugin, "-fplugin-arg-tally-blocks=count", src,
         "-o", exe, a.runtime])
    datas = []
    for k in range(3):
        datas.append(os.path.join(work, "many.%d.data" % k))
        run([exe] + ["x"] * k, env={"TALLY_OUTPUT": datas[-1]}, check=False)
    env = {"ASAN_OPTIONS": "detect_leaks=1"}
    for args in (["report"], ["report", "--csv", "--clones"], ["report", "--blocks"],
                 ["report", "--json"], ["lcov", "-o", os.path.join(work, "many.info")]):
        p = run([a.tally_asan, *args, *datas], env=env)
        expect("ERROR" not in p.stderr and "runtime error" not in p.stderr,
               "tally %s on three files: sanitizer report:\n%s" % (" ".join(args), p.stderr))
    rows = run([a.tally, "report", "--csv", *datas]).stdout.splitlines()[1:]
    calls = {r.split(",")[2]: int(r.split(",")[0]) for r in rows}
    expect(calls.get("f399") == 3 and calls.get("main") == 3,
           "three runs of 400 functions: f399 %s, main %s calls, expected 3 each"
           % (calls.get("f399"), calls.get("main")))



if __name__ == "__main__":
    sys.exit(main("tally-check-"))
