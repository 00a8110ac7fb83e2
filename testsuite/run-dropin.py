#!/usr/bin/env python3
"""Drop-in use: the example project of testsuite/dropin/ (a shared C
library, a C program, a C++ template) built by make, autoconf's configure,
CMake and Meson, first through `tally run` from the build tree, then through
pkg-config (and `tally run`) from an installed tree; the man pages.

The oracle is the program itself: each function of the example counts its
own calls and the program prints "NAME CALLS" lines, which tally's report
must equal (doc/drop-in.md).

Usage: run-dropin.py CHECK --tally T --srcdir DIR --cc CC --cxx CXX
                     --meson M --build-dir DIR --docdir DIR
Exit status: 0 pass, 1 fail, 77 skip.
"""
import csv
import io
import os
import re
import shutil
import sys

from checklib import case, expect, Failure, main, run, Skip

# Report rows (by function or origin) for the names the program prints.
ROW_OF = {"area": "area", "perimeter": "perimeter", "helper": "helper",
          "twice": "_Z5twiceIiET_S0_"}


def compiler_env(a, extra=None):
    env = {"CC": a.cc, "CXX": a.cxx}
    env.update(extra or {})
    return env


def check_counts(a, exe, work, at, env=None, tally=None, name="demo"):
    """Run EXE; its own counts must equal tally's.  With at=late the static
    helper may have been inlined (then it has no row)."""
    data = os.path.join(work, name + ".data")
    if os.path.exists(data):
        os.unlink(data)
    full = {"TALLY_OUTPUT": data}
    full.update(env or {})
    out = run([exe], env=full).stdout
    own = {}
    for line in out.splitlines():
        key, value = line.split()
        if key != "sum":
            own[key] = int(value)
    expect(own.get("area", 0) > 0, "%s: the program printed %r" % (name, out))
    expect(os.path.exists(data), "%s: no data file written (nothing instrumented?)" % name)
    rows = list(csv.DictReader(io.StringIO(
        run([tally or a.tally, "report", "--csv", data]).stdout)))
    calls = {}
    for r in rows:
        for key in (r["function"], r["origin"]):
            calls[key] = (int(r["calls"]), int(r["exits"]))
    problems = []
    for key, want in own.items():
        got = calls.get(ROW_OF[key])
        if got is None and key == "helper" and at == "late":
            continue
        if got != (want, want):
            problems.append("  %s: tally %s, the program counted %d" % (key, got, want))
    expect(calls.get("main") == (1, 1), "%s: main counted %s" % (name, calls.get("main")))
    if problems:
        raise Failure("%s: counts differ:\n%s" % (name, "\n".join(problems)))
    return calls


def copy_project(a, work, name):
    dest = os.path.join(work, name)
    shutil.copytree(os.path.join(a.srcdir, "dropin"), dest)
    return dest


def needed(path):
    out = run(["readelf", "-d", path]).stdout
    return re.findall(r"\(NEEDED\).*\[(.*)\]", out)


@case("run-make")
def check_run_make(a, work):
    """A hand-written Makefile: `tally run -- make`, options passed on,
    `make CC=...` still instrumented, the static runtime, and a Makefile
    that sets CC itself (instrumented only with --override)."""
    d = copy_project(a, work, "make")
    run([a.tally, "run", "--", "make", "-s"], cwd=d, env=compiler_env(a))
    check_counts(a, os.path.join(d, "demo"), work, "late", name="make")
    expect(any(n.startswith("libtally-rt.so") for n in needed(os.path.join(d, "demo"))),
           "demo does not link the shared runtime: %s" % needed(os.path.join(d, "demo")))
    run(["make", "-s", "clean"], cwd=d)
    # CC on make's command line beats the environment: tally run extends it.
    run([a.tally, "run", "--hooks=call", "--at=early", "--runtime=static", "--",
         "make", "-s", "CC=" + a.cc], cwd=d, env=compiler_env(a))
    calls = check_counts(a, os.path.join(d, "demo"), work, "early", name="make-early")
    expect("helper" in calls, "at=early did not reach the compiler: no helper row")
    for lib in ("demo", "libshapes.so"):
        expect(not any("tally" in n for n in needed(os.path.join(d, lib))),
               "--runtime=static: %s needs %s" % (lib, needed(os.path.join(d, lib))))
    # A Makefile that sets CC and CXX itself ignores the environment's.
    run(["make", "-s", "clean"], cwd=d)
    with open(os.path.join(d, "Makefile")) as f:
        text = f.read()
    with open(os.path.join(d, "Makefile.hard"), "w") as f:
        f.write("CC = %s\nCXX = %s\n" % (a.cc, a.cxx) + text)
    run([a.tally, "run", "--", "make", "-s", "-f", "Makefile.hard"], cwd=d)
    data = os.path.join(work, "hard.data")
    run([os.path.join(d, "demo")], env={"TALLY_OUTPUT": data})
    expect(not os.path.exists(data), "Makefile.hard without --override was instrumented?")
    run(["make", "-s", "-f", "Makefile.hard", "clean"], cwd=d)
    run([a.tally, "run", "--override", "--", "make", "-s", "-f", "Makefile.hard"], cwd=d)
    check_counts(a, os.path.join(d, "demo"), work, "late", name="make-override")


@case("run-autotools")
def check_run_autotools(a, work):
    """autoconf's configure: its compiler checks link with the runtime, and
    the project's default CFLAGS (-g -O2) are kept."""
    if not shutil.which("autoconf"):
        raise Skip("autoconf is not installed")
    d = copy_project(a, work, "autotools")
    run(["autoconf"], cwd=d)
    env = compiler_env(a, {"TALLY_OUTPUT": os.path.join(work, "conftest.%p.data")})
    env.pop("CFLAGS", None)
    p = run([a.tally, "run", "--at=early", "--", "./configure"], cwd=d, env=env)
    expect("checking whether the C compiler works... yes" in p.stdout, p.stdout)
    mk = open(os.path.join(d, "Makefile.autoconf")).read()
    expect(re.search(r"^CFLAGS = -g -O2$", mk, re.M),
           "configure's default CFLAGS were not kept:\n%s" % mk)
    expect(re.search(r"^CC = .*-fplugin=\S+tally\.so", mk, re.M), "CC without the plugin:\n%s" % mk)
    run(["make", "-s", "-f", "Makefile.autoconf"], cwd=d)
    check_counts(a, os.path.join(d, "demo"), work, "early", name="autotools")


@case("run-cmake")
def check_run_cmake(a, work):
    """CMake: the configure step under `tally run` records CC and CXX with
    their flags; the build runs without it.  blocks=count: the calls are
    derived from the block counts."""
    if not shutil.which("cmake"):
        raise Skip("cmake is not installed")
    b = os.path.join(work, "cmake-build")
    run([a.tally, "run", "--at=early", "--blocks=count", "--", "cmake", "-S", os.path.join(a.srcdir, "dropin"),
         "-B", b, "-DCMAKE_BUILD_TYPE=Release"], env=compiler_env(a))
    run(["cmake", "--build", b])
    calls = check_counts(a, os.path.join(b, "demo"), work, "early", name="cmake")
    expect("helper" in calls, "at=early did not reach the compiler: no helper row")


@case("run-meson")
def check_run_meson(a, work):
    """Meson: `tally run -- meson setup`; meson adds -Wl,--as-needed and
    -Wl,--no-undefined, which the runtime in CC must survive.  With
    blocks=visited beside the call hooks."""
    b = os.path.join(work, "meson-build")
    # From WORK: meson's sanity checks run instrumented programs, which
    # write tally.PID.data where meson runs (doc/drop-in.md).
    run([a.tally, "run", "--hooks=call", "--blocks=visited", "--", a.meson, "setup", b,
         os.path.join(a.srcdir, "dropin")], env=compiler_env(a), cwd=work)
    run([a.meson, "compile", "-C", b])
    check_counts(a, os.path.join(b, "demo"), work, "late", name="meson")


@case("run-languages")
def check_run_languages(a, work):
    """Options per language: --c-KEY and --cxx-KEY reach one compiler only;
    --exit=frames builds a project with C and C++ units, both with return
    frames and without a word."""
    p = run([a.tally, "run", "--print-env", "--hooks=call", "--measure=cycles",
             "--c-exit=frames", "--cxx-at=early"], env=compiler_env(a))
    cc = re.search(r"^CC='(.*)'$", p.stdout, re.M).group(1)
    cxx = re.search(r"^CXX='(.*)'$", p.stdout, re.M).group(1)
    for flag, in_cc, in_cxx in (("-fplugin-arg-tally-hooks=call", 1, 1),
                                ("-fplugin-arg-tally-measure=cycles", 1, 1),
                                ("-fplugin-arg-tally-exit=frames", 1, 0),
                                ("-fplugin-arg-tally-at=early", 0, 1)):
        expect((flag in cc.split()) == bool(in_cc) and (flag in cxx.split()) == bool(in_cxx),
               "%s: CC=%r CXX=%r" % (flag, cc, cxx))
    d = copy_project(a, work, "languages")
    run([a.tally, "run", "--hooks=call", "--measure=cycles", "--c-exit=frames",
         "--cxx-at=early", "--", "make", "-s"], cwd=d, env=compiler_env(a))
    check_counts(a, os.path.join(d, "demo"), work, "late", name="languages")
    # One --exit=frames for both: the C++ unit has return frames too.
    run(["make", "-s", "clean"], cwd=d)
    p = run([a.tally, "run", "--hooks=call", "--measure=cycles", "--exit=frames", "--",
             "make", "-s"], cwd=d, env=compiler_env(a, {"LC_ALL": "C"}))
    expect("exit=frames" not in p.stderr, "a warning about exit=frames:\n%s" % p.stderr)
    obj = [f for f in os.listdir(d) if f.startswith("twice") and f.endswith(".o")]
    expect(obj and "__tally_enter_frames" in run(["nm", os.path.join(d, obj[0])]).stdout,
           "twice.cc has no return frames (objects %s)" % obj)
    check_counts(a, os.path.join(d, "demo"), work, "late", name="languages-frames")
    p = run([a.tally, "run", "--cxx-hooks=fast", "--", "true"], env=compiler_env(a, {"LC_ALL": "C"}),
            check=False)
    expect(p.returncode != 0 and "invalid value 'fast'" in p.stderr.replace("\u2018", "'").replace("\u2019", "'"),
           "--cxx-hooks=fast: %d %r" % (p.returncode, p.stderr))


@case("run-errors")
def check_run_errors(a, work):
    """Bad options stop tally run before the command runs, with the
    plugin's own message."""
    marker = os.path.join(work, "ran")
    cases = [
        (["--hooks=fast"], r"invalid value 'fast' for '-fplugin-arg-tally-hooks'; accepted values: inline, call"),
        (["--colour=red"], r"unknown option '-fplugin-arg-tally-colour'; accepted options: hooks, "),
        (["--runtime=dynamic"], r"invalid value 'dynamic' for --runtime; accepted values: shared, static"),
        (["--output"], r"--output needs a value"),
        (["--filter=" + os.path.join(work, "missing")], r"filter file .*missing.*No such file"),
        (["-x"], r"unknown option '-x'"),
        (["--override"], r"--override changes a make command line"),
    ]
    for opts, pattern in cases:
        p = run([a.tally, "run", *opts, "--", "touch", marker], env=compiler_env(a, {"LC_ALL": "C"}),
                check=False)
        text = p.stderr.replace("\u2018", "'").replace("\u2019", "'")
        expect(p.returncode != 0, "%s: exit 0" % opts)
        expect(re.search(pattern, text), "%s: want /%s/ in:\n%s" % (opts, pattern, text))
        expect(not os.path.exists(marker), "%s: the command ran" % opts)
    p = run([a.tally, "run"], check=False)
    expect(p.returncode == 2 and "no command given" in p.stderr, "no command: %r" % p.stderr)
    p = run([a.tally, "run", "--", "no-such-command-here"], env=compiler_env(a), check=False)
    expect(p.returncode == 127 and "cannot run 'no-such-command-here'" in p.stderr,
           "missing command: %d %r" % (p.returncode, p.stderr))
    # The command's exit status is tally run's, and TALLY_OUTPUT is set.
    p = run([a.tally, "run", "--output=x-%p.data", "--", "sh", "-c",
             'echo "$TALLY_OUTPUT"; exit 3'], env=compiler_env(a), check=False)
    expect(p.returncode == 3 and p.stdout.strip() == "x-%p.data", "status/output: %d %r"
           % (p.returncode, p.stdout))
    p = run([a.tally, "run", "--print-env", "--at=early"], env=compiler_env(a))
    m = re.search(r"^CC='%s -fplugin=(\S+) -fplugin-arg-tally-at=early -Wl,\S+'$"
                  % re.escape(a.cc), p.stdout, re.M)
    expect(m and os.path.isfile(m.group(1)), "--print-env:\n%s" % p.stdout)


@case("specs")
def check_specs(a, work):
    """gcc -specs=tally.specs (the build tree's) is the only change: it
    loads the plugin into compiles and links the runtime into links (the
    static one with -static and -static-pie), with plugin options anywhere
    on the command line; autoconf's configure with
    CC and CXX, CMake with CMAKE_C_FLAGS and CMAKE_CXX_FLAGS, Meson with
    c_args, c_link_args, cpp_args and cpp_link_args."""
    specs = os.path.join(a.build_dir, "plugin", "tally.specs")
    expect(os.path.isfile(specs), "no %s" % specs)
    flag = "-specs=" + specs
    src = os.path.join(a.srcdir, "dropin")
    # -E, -S and -c do not link; an option before -specs still reaches the
    # plugin; -nostdlib links no runtime.
    out = os.path.join(work, "x")
    run([a.cc, "-E", flag, os.path.join(src, "shapes.c"), "-o", out + ".i"])
    run([a.cc, "-fplugin-arg-tally-hooks=call", "-S", flag, "-I", src,
         os.path.join(src, "main.c"), "-o", out + ".s"])
    asm = open(out + ".s").read()
    expect("call\t__tally_enter" in asm or "call *__tally_count@GOTPCREL" in asm,
           "hooks=call before -specs: no hook calls in the assembly")
    run([a.cc, "-c", flag, "-fPIC", os.path.join(src, "shapes.c"), "-o", out + ".o"])
    p = run([a.cc, "-c", flag, "-fplugin-arg-tally-hooks=fast", os.path.join(src, "shapes.c"),
             "-o", out + ".o"], check=False)
    expect(p.returncode != 0 and "hooks" in p.stderr, "a bad option after -specs: %r" % p.stderr)
    # libtool passes -specs on again at a link: read twice, it is the same.
    run([a.cc, "-shared", flag, out + ".o", flag, "-o", out + ".so"])
    expect(any(n.startswith("libtally-rt.so") for n in needed(out + ".so")),
           "-shared with -specs: %s" % needed(out + ".so"))
    # -static and -static-pie link the static runtime (-static-pie used to
    # ask for the shared one, and the link failed).
    for static in ("-static", "-static-pie"):
        exe = os.path.join(work, "demo" + static)
        run([a.cxx, flag, static, "-O2", "-I", src, "-x", "c", os.path.join(src, "main.c"),
             os.path.join(src, "shapes.c"), "-x", "c++", os.path.join(src, "twice.cc"),
             "-o", exe])
        expect(needed(exe) == [], "%s with -specs: needs %s" % (static, needed(exe)))
        check_counts(a, exe, work, "late", name="specs" + static)

    if shutil.which("autoconf"):
        d = copy_project(a, work, "specs-autotools")
        run(["autoconf"], cwd=d)
        env = {"CC": a.cc + " " + flag, "CXX": a.cxx + " " + flag,
               "TALLY_OUTPUT": os.path.join(work, "conftest.%p.data")}
        p = run(["./configure"], cwd=d, env=env)
        expect("checking whether the C compiler works... yes" in p.stdout, p.stdout)
        run(["make", "-s", "-f", "Makefile.autoconf"], cwd=d)
        check_counts(a, os.path.join(d, "demo"), work, "late", name="specs-autotools")
        run(["make", "-s", "-f", "Makefile.autoconf", "clean"], cwd=d, check=False)
    if shutil.which("cmake"):
        b = os.path.join(work, "specs-cmake")
        run(["cmake", "-S", src, "-B", b, "-DCMAKE_BUILD_TYPE=Release",
             "-DCMAKE_C_FLAGS=" + flag + " -fplugin-arg-tally-at=early",
             "-DCMAKE_CXX_FLAGS=" + flag + " -fplugin-arg-tally-at=early"],
            env=compiler_env(a))
        run(["cmake", "--build", b])
        calls = check_counts(a, os.path.join(b, "demo"), work, "early", name="specs-cmake")
        expect("helper" in calls, "at=early did not reach the compiler: no helper row")
    b = os.path.join(work, "specs-meson")
    # From WORK: the specs reach meson's sanity checks too (see run-meson).
    run([a.meson, "setup", b, src, "-Dc_args=" + flag, "-Dc_link_args=" + flag,
         "-Dcpp_args=" + flag, "-Dcpp_link_args=" + flag], env=compiler_env(a), cwd=work)
    run([a.meson, "compile", "-C", b])
    check_counts(a, os.path.join(b, "demo"), work, "late", name="specs-meson")


def install_tree(a, work):
    """meson install into WORK/dest; returns (dest, the directory of a
    tally.pc rewritten for the relocated tree, libdir)."""
    dest = os.path.join(work, "dest")
    run([a.meson, "install", "-C", a.build_dir, "--destdir", dest, "--no-rebuild", "--quiet"])
    pcs = [os.path.join(d, f) for d, _, fs in os.walk(dest) for f in fs if f == "tally.pc"]
    expect(len(pcs) == 1, "tally.pc installed %d times" % len(pcs))
    # Relocate: every absolute directory in the variables gains DEST.
    text = re.sub(r"^(prefix|plugindir)=/", lambda m: "%s=%s/" % (m.group(1), dest),
                  open(pcs[0]).read(), flags=re.M)
    # The plugin is loaded by name from GCC's plugin directory, which for
    # the relocated tree is DEST's copy of it: -iplugindir says so (the
    # driver's own choice otherwise).
    # (Cflags names the flag through ${pluginflag}: by name installed, by
    # path in the uninstalled tally-uninstalled.pc.)
    expect(re.search(r"^Cflags:.*\$\{pluginflag\}", text, re.M)
           and re.search(r"^pluginflag=-fplugin=tally$", text, re.M),
           "tally.pc does not load the plugin by name:\n%s" % text)
    text = re.sub(r"^pluginflag=-fplugin=tally$", "pluginflag=-iplugindir=${plugindir} -fplugin=tally",
                  text, flags=re.M)
    pcdir = os.path.join(work, "pc")
    os.mkdir(pcdir)
    with open(os.path.join(pcdir, "tally.pc"), "w") as f:
        f.write(text)
    libdir = run(["pkg-config", "--variable=libdir", "tally"],
                 env={"PKG_CONFIG_PATH": pcdir}).stdout.strip()
    return dest, pcdir, libdir


@case("pkg-config")
def check_pkg_config(a, work):
    """The installed tally.pc: --cflags loads the plugin, --libs links the
    runtime, the variables name real files; the example built with it by
    make, CMake and Meson; the installed `tally run` finds its plugin."""
    dest, pcdir, libdir = install_tree(a, work)
    env = compiler_env(a, {"PKG_CONFIG_PATH": pcdir, "LD_LIBRARY_PATH": libdir})
    cflags = run(["pkg-config", "--cflags", "tally"], env=env).stdout.split()
    plugin = [f[len("-fplugin="):] for f in cflags if f.startswith("-fplugin=")]
    plugindir = [f[len("-iplugindir="):] for f in cflags if f.startswith("-iplugindir=")]
    expect(plugin == ["tally"] and len(plugindir) == 1
           and os.path.isfile(os.path.join(plugindir[0], "tally.so")), "--cflags: %s" % cflags)
    for var in ("plugin", "static_runtime"):
        path = run(["pkg-config", "--variable=" + var, "tally"], env=env).stdout.strip()
        expect(os.path.isfile(path), "--variable=%s: %r is not a file" % (var, path))
    libs = run(["pkg-config", "--libs", "tally"], env=env).stdout.split()
    expect("-Wl,--push-state,--no-as-needed,-L%s,-ltally-rt,--pop-state" % libdir in libs
           and "-L" + libdir in libs, "--libs: %s" % libs)

    d = copy_project(a, work, "make")
    run(["make", "-s", "TALLY=1"], cwd=d, env=env)
    check_counts(a, os.path.join(d, "demo"), work, "late", env=env, name="pc-make")
    if shutil.which("cmake"):
        b = os.path.join(work, "cmake-build")
        run(["cmake", "-S", os.path.join(a.srcdir, "dropin"), "-B", b,
             "-DUSE_TALLY=ON", "-DCMAKE_BUILD_TYPE=Release"], env=env)
        run(["cmake", "--build", b], env=env)
        check_counts(a, os.path.join(b, "demo"), work, "late", env=env, name="pc-cmake")
    b = os.path.join(work, "meson-build")
    run([a.meson, "setup", b, os.path.join(a.srcdir, "dropin"), "-Dtally=enabled"], env=env,
        cwd=work)
    run([a.meson, "compile", "-C", b], env=env)
    check_counts(a, os.path.join(b, "demo"), work, "late", env=env, name="pc-meson")

    # autoconf puts LDFLAGS before the objects ("$CC -o conftest $CFLAGS
    # $LDFLAGS conftest.c $LIBS"), where a bare -ltally-rt is dropped by
    # Debian's default --as-needed: configure stopped at "C compiler cannot
    # create executables".
    if shutil.which("autoconf"):
        d2 = copy_project(a, work, "pc-autotools")
        run(["autoconf"], cwd=d2)
        pcenv = dict(env, CFLAGS=" ".join(cflags), CXXFLAGS=" ".join(cflags),
                     LDFLAGS=" ".join(libs),
                     TALLY_OUTPUT=os.path.join(work, "pc-conftest.%p.data"))
        p = run(["./configure"], cwd=d2, env=pcenv, check=False)
        expect(p.returncode == 0 and "checking whether the C compiler works... yes" in p.stdout,
               "configure with LDFLAGS='%s' failed:\n%s%s" % (pcenv["LDFLAGS"], p.stdout, p.stderr))
        run(["make", "-s", "-f", "Makefile.autoconf"], cwd=d2, env=env)
        check_counts(a, os.path.join(d2, "demo"), work, "late", env=env, name="pc-autotools")

    # The installed tally, moved with its tree, finds the installed plugin.
    tool = [os.path.join(r, f) for r, _, fs in os.walk(dest) for f in fs
            if f == "tally" and os.path.basename(r) == "bin"]
    expect(len(tool) == 1, "tally command installed %d times" % len(tool))
    p = run([tool[0], "run", "--print-env"], env=compiler_env(a))
    moved = os.path.join(plugindir[0], "tally.so")
    expect("-fplugin=" + moved + " " in p.stdout, "installed tally run:\n%s" % p.stdout)
    run(["make", "-s", "clean"], cwd=d)
    run([tool[0], "run", "--at=early", "--", "make", "-s"], cwd=d, env=compiler_env(a))
    check_counts(a, os.path.join(d, "demo"), work, "early", tally=tool[0], name="installed-run")


@case("pkg-config-uninstalled")
def check_pkg_config_uninstalled(a, work):
    """The build tree's tally-uninstalled.pc (meson-uninstalled/, which
    pkg-config prefers when its directory is on PKG_CONFIG_PATH): its
    variables name the build tree's plugin, runtimes and headers, and the
    Makefile example built with `pkg-config --cflags/--libs tally` runs
    from the build tree with its counts.  (It named an install path under
    the build tree for the runtime, and an undefined variable for the
    plugin.)"""
    pcdir = os.path.join(a.build_dir, "meson-uninstalled")
    env = compiler_env(a, {"PKG_CONFIG_PATH": pcdir})
    for var, want in (("plugin", os.path.join(a.build_dir, "plugin", "tally.so")),
                      ("static_runtime", os.path.join(a.build_dir, "rt", "libtally-rt.a"))):
        path = run(["pkg-config", "--variable=" + var, "tally"], env=env).stdout.strip()
        expect(os.path.samefile(path, want) if os.path.exists(path) else False,
               "--variable=%s: %r, want %s" % (var, path, want))
    cflags = run(["pkg-config", "--cflags", "tally"], env=env).stdout.split()
    expect("-fplugin=" + os.path.join(a.build_dir, "plugin", "tally.so") in cflags
           and "-I" + a.include in cflags, "--cflags: %s" % cflags)
    libs = run(["pkg-config", "--libs", "tally"], env=env).stdout.split()
    for f in libs:
        for d in re.findall(r"-L([^,]+)|-rpath,([^,]+)", f):
            d = d[0] or d[1]
            expect(os.path.isdir(d), "--libs names %s, which does not exist: %s" % (d, libs))
    d = copy_project(a, work, "make")
    run(["make", "-s", "TALLY=1"], cwd=d, env=env)
    check_counts(a, os.path.join(d, "demo"), work, "late", name="uninstalled-make")


if __name__ == "__main__":
    sys.exit(main("tally-dropin-"))
