#!/usr/bin/env python3
"""visited_stores.py - how many blocks=visited byte stores a program
executes, and the hottest: runs it under callgrind --dump-instr=yes and
sums the executions of every instruction objdump shows storing into a
`__tally.v.*` array (doc/benchmarks.md, "Derived visited blocks").

usage: visited_stores.py [--top N] EXE [ARG...]   (run in the folder the
program expects; its own output is discarded)
"""
import os
import re
import subprocess
import sys
import tempfile


def stores(exe):
    """{address: function} of the visited stores in EXE."""
    out, fn = {}, None
    dis = subprocess.run(["objdump", "-d", "--no-show-raw-insn", exe],
                         capture_output=True, text=True, check=True).stdout
    for line in dis.splitlines():
        f = re.match(r"^[0-9a-f]+ <(.*)>:$", line)
        if f:
            fn = f.group(1)
        x = re.match(r"\s*([0-9a-f]+):\s*mov\w*\s+\$0x1,.*<__tally\.v\.", line)
        if x:
            out[int(x.group(1), 16)] = fn
    return out


def executed(profile, addrs):
    """{address: executions} from callgrind's --dump-instr=yes output
    (positions "instr line", compressed as +N, -N, * or absolute; the
    line after calls= is a call's inclusive cost, not an execution)."""
    got, pos, after_call = {}, 0, False
    for line in open(profile):
        if line.startswith("calls="):
            after_call = True
            continue
        if not line or line[0] not in "0123456789+-*":
            continue
        f = line.split()
        p = f[0]
        if p.startswith("0x"):
            pos = int(p, 16)
        elif p[0] == "+":
            pos += int(p[1:])
        elif p[0] == "-":
            pos -= int(p[1:])
        elif p != "*":
            pos = int(p)
        if after_call:
            after_call = False
            continue
        if pos in addrs and len(f) > 2:
            got[pos] = got.get(pos, 0) + int(f[2])
    return got


def main(argv):
    top = 10
    if len(argv) > 2 and argv[1] == "--top":
        top, argv = int(argv[2]), argv[2:]
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    exe = argv[1]
    addrs = stores(exe)
    with tempfile.TemporaryDirectory() as tmp:
        profile = os.path.join(tmp, "callgrind.out")
        env = dict(os.environ, TALLY_OUTPUT=os.path.join(tmp, "tally.data"))
        subprocess.run(["valgrind", "--tool=callgrind", "--dump-instr=yes",
                        "--callgrind-out-file=" + profile, exe, *argv[2:]],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       env=env, check=True)
        got = executed(profile, addrs)
    total = sum(got.values())
    print("%d visited stores in the code, %d executed" % (len(addrs), total))
    by_fn = {}
    for a, n in got.items():
        by_fn[addrs[a]] = by_fn.get(addrs[a], 0) + n
    for fn, n in sorted(by_fn.items(), key=lambda x: -x[1])[:top]:
        print("  %10d  %s" % (n, fn))
    for a, n in sorted(got.items(), key=lambda x: -x[1])[:top]:
        print("  %10d  %#x %s" % (n, a, addrs[a]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
