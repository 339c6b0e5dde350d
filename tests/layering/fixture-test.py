#!/usr/bin/env python3
"""check-layering.py is able to fail: run it on the three-file fixture
(tests/layering/fixture: bottom.c calls top.c by name) and on three
variants of its declaration, and check that each is rejected for the
right reason.  TAP on stdout.

  fixture-test.py CHECKER OBJDIR
"""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
DIR = 'tests/layering/fixture'


def run(checker, layers_text, objdir):
    with tempfile.NamedTemporaryFile('w', suffix='.txt', delete=False) as f:
        f.write(layers_text)
        path = f.name
    try:
        env = dict(os.environ, DN2_TOP=os.path.dirname(os.path.dirname(HERE)))
        p = subprocess.run([sys.executable, checker, path, f"{DIR}={objdir}"],
                           capture_output=True, text=True, env=env)
        return p.returncode, p.stdout + p.stderr
    finally:
        os.unlink(path)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    checker, objdir = sys.argv[1], sys.argv[2]
    declared = open(os.path.join(HERE, 'fixture', 'layers.txt')).read()
    cases = [
        ("an upward call (bottom.c -> top.c) is rejected and named",
         declared, ["bottom.c -> top.c (fixture_top): a call upward"]),
        ("only that call: the downward calls top -> mid -> bottom pass",
         declared, ["(1 problems)"]),
        ("a source file the list lacks is rejected",
         f"[{DIR}]\ntop.c\nbottom.c\n", ["mid.c: not declared"]),
        ("a listed file with no object is rejected",
         declared + "gone.c\n", ["gone.c: 0 object files"]),
    ]
    print(f"1..{len(cases)}")
    bad = 0
    for i, (name, text, expect) in enumerate(cases, 1):
        rc, out = run(checker, text, objdir)
        ok = rc != 0 and all(e in out for e in expect)
        print(f"{'ok' if ok else 'not ok'} {i} - {name}")
        if not ok:
            for line in out.splitlines():
                print(f"# {line}")
            bad += 1
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
