#!/usr/bin/env python3
"""The runtime's layers, checked on the built objects.

rt/rt.h states in its opening comment which rt file is in which layer and
which calls go up the layers through declared callbacks.  This script reads
the runtime's archives with nm: each object's defined and undefined symbols
say which rt file uses which (a call, or a reference to a function or to
data).  It fails on

  - a circle of files that use each other, unless a declared callback
    breaks it (the circles are found without the table, so a tree without
    one is checked too);
  - a file using one of a higher layer other than through a declared
    callback;
  - an rt source file in no layer, or in two, a layer naming a file that
    does not exist, a callback naming a symbol no object defines;
  - an rt source file over 1,000 lines.

Usage: rt-layers.py --rt SRCDIR [--header RT_H] ARCHIVE...  (the objects of ARCHIVE are
named FILE.c.o after their source in SRCDIR).  Exit 0: all holds; 1: it
does not, each failure on a line of its own.
"""

import argparse
import os
import re
import subprocess
import sys

MAX_LINES = 1000


def objects(archives):
    """{source file: (defined symbols, {undefined symbol: weak})}."""
    out = {}
    for archive in archives:
        for flag, defined in (('--defined-only', True), ('--undefined-only', False)):
            text = subprocess.run(['nm', '-A', flag, archive], check=True,
                                  capture_output=True, text=True).stdout
            for line in text.splitlines():
                # "libtally-rt.a:dump.c.o:0000000000000000 T tally_rt_dump"
                # or, undefined, "libtally-rt.a:dump.c.o:                 U x"
                m = re.match(r'^.*?:([^:]+\.c)\.o:\s*(?:[0-9a-f]+\s+)?([A-Za-z])\s+(\S+)$',
                             line)
                if not m:
                    continue
                src, kind, sym = m.groups()
                defs, uses = out.setdefault(src, (set(), {}))
                if defined:
                    if kind.isupper() or kind in 'vw':  # global or weak
                        defs.add(sym)
                else:
                    uses[sym] = kind in 'wv'
    return out


def parse_table(header):
    """Layers {file: (number, name)} and callbacks {file: {symbol}} from
    the opening comment of rt.h."""
    text = open(header, encoding='utf-8').read()
    end = text.find('*/')
    comment = text[:end] if end >= 0 else ''
    layers, callbacks, errors = {}, {}, []
    for line in comment.splitlines():
        m = re.match(r'^\s*\*\s+layer\s+(\d+)\s+(\w+):\s+(.*)$', line)
        if m:
            num, name, files = int(m.group(1)), m.group(2), m.group(3).split()
            for f in files:
                if f in layers and layers[f] != (num, name):
                    errors.append('%s is in two layers: %s and %s'
                                  % (f, layers[f][1], name))
                layers[f] = (num, name)
            continue
        m = re.match(r'^\s*\*\s+callback\s+(\S+):\s+(.*)$', line)
        if m:
            callbacks.setdefault(m.group(1), set()).update(m.group(2).split())
    return layers, callbacks, errors


def circles(nodes, edges):
    """The strongly connected components of more than one file (Tarjan)."""
    index, low, stack, on, found = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return found


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--rt', required=True, help='the rt/ source folder')
    ap.add_argument('--header', help='the table (default: rt.h of --rt)')
    ap.add_argument('archives', nargs='+')
    args = ap.parse_args()

    objs = objects(args.archives)
    sources = sorted(f for f in os.listdir(args.rt) if f.endswith('.c'))
    failures = []

    owner = {}
    for src, (defs, _) in objs.items():
        for sym in defs:
            owner.setdefault(sym, src)

    header = args.header or os.path.join(args.rt, 'rt.h')
    layers, callbacks, errors = parse_table(header)
    failures += errors

    # Which file uses which, and through which symbols.
    uses = {}
    for src, (_, undef) in objs.items():
        for sym in undef:
            dst = owner.get(sym)
            if dst and dst != src:
                uses.setdefault((src, dst), set()).add(sym)

    def declared(src, sym):
        return sym in callbacks.get(src, ())

    edges = {}
    for (src, dst), syms in uses.items():
        if any(not declared(src, s) for s in syms):
            edges.setdefault(src, set()).add(dst)

    for comp in circles(objs.keys(), edges):
        failures.append('a circle of %d files calling each other: %s'
                        % (len(comp), ' '.join(comp)))

    if not layers:
        failures.append('%s states no layers ("layer N NAME: FILE...")' % header)
    else:
        for f in sources:
            if f not in layers:
                failures.append('rt/%s is in no layer of rt.h' % f)
        for f in sorted(layers):
            if f not in sources:
                failures.append('rt.h names %s, which is not in rt/' % f)
        for f in sorted(callbacks):
            for sym in sorted(callbacks[f]):
                if sym not in owner:
                    failures.append('rt.h declares the callback %s of %s, '
                                    'which no object defines' % (sym, f))
        for (src, dst), syms in sorted(uses.items()):
            if src not in layers or dst not in layers:
                continue
            up = sorted(s for s in syms if not declared(src, s))
            if layers[src][0] < layers[dst][0] and up:
                failures.append('%s (layer %d %s) uses %s (layer %d %s): %s'
                                % (src, layers[src][0], layers[src][1], dst,
                                   layers[dst][0], layers[dst][1], ' '.join(up)))

    for f in sorted(os.listdir(args.rt)):
        if f.endswith(('.c', '.h')):
            with open(os.path.join(args.rt, f), encoding='utf-8') as fh:
                n = sum(1 for _ in fh)
            if n > MAX_LINES:
                failures.append('rt/%s has %d lines (at most %d)'
                                % (f, n, MAX_LINES))

    # The graph, for the log: each file with its layer and what it uses.
    for src in sorted(objs):
        lay = '%d %s' % layers[src] if src in layers else '?'
        outs = sorted(dst for (s, dst) in uses if s == src)
        marks = [d + ('*' if all(declared(src, x) for x in uses[(src, d)]) else '')
                 for d in outs]
        print('%-16s layer %-12s -> %s' % (src, lay, ' '.join(marks) or '-'))
    print('(* only through declared callbacks)')
    for f in failures:
        print('FAIL: ' + f)
    if failures:
        return 1
    print('ok: %d files in %d layers, calls go one way'
          % (len(objs), len({n for n, _ in layers.values()})))
    return 0


if __name__ == '__main__':
    sys.exit(main())
