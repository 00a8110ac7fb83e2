#!/usr/bin/env python3
"""visited_stores.py - how many blocks=visited byte stores a program
executes, and the hottest: runs it under callgrind --dump-instr=yes and
sums the executions of every instruction objdump shows storing into a
`__tally.v.*` array (doc/benchmarks/visited.md).

usage: visited_stores.py [--top N] EXE [ARG...]   (run in the folder the
program expects; its own output is discarded)
"""
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "testsuite"))
from checklib import callgrind_executed  # noqa: E402


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
        got = callgrind_executed(profile, addrs)
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
