#!/usr/bin/env python3
"""Checks that the calls between the files of a directory go one way.

Each directory declares its files top to bottom (tests/layering/layers.txt).
A file may call functions defined in files below it, never in a file above
it: upward reports go through ops tables (function pointers), which no
symbol table shows.  The calls are read from the object files' symbol
tables (nm): a file's undefined symbols that another file of the same
directory defines.

  check-layering.py LAYERS DIR=OBJDIR [DIR=OBJDIR ...]

OBJDIR holds the directory's object files (meson's NAME.p directory or
QEMU's libcommon.a.p); an object belongs to file F when its name ends in
F + ".o".  TAP on stdout: one point per directory; every back-arrow is
listed as "caller -> callee (symbol)".  A declared file with no object,
or an object of the directory that is not declared, fails too: the
declaration must be complete.
"""
import glob
import os
import subprocess
import sys


def read_layers(path):
    layers, cur = {}, None
    for raw in open(path):
        line = raw.split('#', 1)[0].strip()
        if not line:
            continue
        if line.startswith('[') and line.endswith(']'):
            cur = line[1:-1].strip()
            layers[cur] = []
        elif cur is None:
            sys.exit(f"{path}: a file before any [directory]: {line}")
        else:
            layers[cur] += line.split()
    return layers


def symbols(obj):
    out = subprocess.run(['nm', '--defined-only', '-g', obj], capture_output=True,
                         text=True, check=True).stdout
    defined = {l.split()[-1] for l in out.splitlines() if len(l.split()) >= 3 and
               l.split()[-2] in 'TDBRVWtdbr'}
    out = subprocess.run(['nm', '-u', obj], capture_output=True, text=True,
                         check=True).stdout
    undefined = {l.split()[-1] for l in out.splitlines() if l.strip()}
    return defined, undefined


def check(dirname, files, objdir):
    problems = []
    objs = {}
    for f in files:
        base = os.path.basename(f)
        cands = [o for o in glob.glob(os.path.join(objdir, '*.o'))
                 if os.path.basename(o) == base + '.o' or
                 os.path.basename(o).endswith('_' + base + '.o')]
        if len(cands) != 1:
            problems.append(f"{f}: {len(cands)} object files for it in {objdir}")
            continue
        objs[f] = cands[0]
    src = os.path.join(os.environ.get('DN2_TOP', '.'), dirname)
    declared = {os.path.basename(f) for f in files}
    for c in sorted(glob.glob(os.path.join(src, '*.c'))):
        if os.path.basename(c) not in declared:
            problems.append(f"{os.path.basename(c)}: not declared in the layers of {dirname}")
    if problems:
        return problems
    owner, syms = {}, {}
    for f, o in objs.items():
        d, u = symbols(o)
        syms[f] = u
        for s in d:
            owner[s] = f
    rank = {f: i for i, f in enumerate(files)}
    for f in files:
        for s in sorted(syms[f]):
            g = owner.get(s)
            if g is not None and g != f and rank[g] < rank[f]:
                problems.append(f"{f} -> {g} ({s}): a call upward")
    return problems


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    layers = read_layers(sys.argv[1])
    pairs = [a.split('=', 1) for a in sys.argv[2:]]
    print(f"1..{len(pairs)}")
    bad = 0
    for i, (d, objdir) in enumerate(pairs, 1):
        if d not in layers:
            print(f"not ok {i} - {d}: no layers declared in {sys.argv[1]}")
            bad += 1
            continue
        probs = check(d, layers[d], objdir)
        if probs:
            bad += 1
            print(f"not ok {i} - {d}: calls go one way ({len(probs)} problems)")
            for p in probs:
                print(f"# {p}")
        else:
            print(f"ok {i} - {d}: calls go one way through {len(layers[d])} files")
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
