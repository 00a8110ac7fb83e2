#!/usr/bin/env python3
"""Write tally.specs for `gcc -specs=tally.specs` (plugin/meson.build).

Usage: gen-specs.py PLUGIN RT_SHARED RT_STATIC RT_DIR -- GCC [ARG]...

The specs file redefines two specs of GCC's own (read from `GCC
-dumpspecs`), each with its whole original text, instead of renaming them
(%rename): libtool passes -specs=FILE on to the compiler again at a link,
and a renamed spec cannot be renamed twice, while a redefinition read twice
is the same redefinition.

  *cc1:  options for cc1 and cc1plus, at the front of cc1_options (%1),
         before the command line's own -f options, so that
         -fplugin-arg-tally-* may come anywhere on it: -fplugin=PLUGIN.
  *lib:  the libraries GCC adds to a link (none with -nostdlib,
         -nodefaultlibs, -nolibc): the shared runtime by path between
         --push-state --no-as-needed and --pop-state with an rpath, or with
         -static or -static-pie the static runtime whole.
"""
import subprocess
import sys


def spec(text, name):
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line == "*%s:" % name:
            return lines[i + 1] if i + 1 < len(lines) else ""
    sys.exit("gen-specs.py: GCC has no '%s' spec" % name)


def main():
    if len(sys.argv) < 7 or sys.argv[5] != "--":
        sys.exit(__doc__)
    plugin, rt_shared, rt_static, rt_dir = sys.argv[1:5]
    specs = subprocess.run(sys.argv[6:] + ["-dumpspecs"], check=True,
                           stdout=subprocess.PIPE, text=True).stdout
    for path in (plugin, rt_shared, rt_static, rt_dir):
        if any(c in path for c in " \t\n%{}"):
            sys.exit("gen-specs.py: %r cannot go into a specs file" % path)
    sys.stdout.write(
        "*cc1:\n-fplugin=%s %s\n\n"
        "*lib:\n%%{static|static-pie:--push-state --whole-archive %s --pop-state;"
        ":--push-state --no-as-needed %s --pop-state -rpath %s} %s\n\n"
        % (plugin, spec(specs, "cc1"), rt_static, rt_shared, rt_dir, spec(specs, "lib")))


if __name__ == "__main__":
    main()
