#!/usr/bin/env python3
"""Checks the docs rule of CONTRIBUTING.md: a reference page holds what is.

A page under docs/ (docs/results/ apart), README.md and CONTRIBUTING.md may
not carry history: no calendar dates in prose, no issue numbers, no diary
words ("yesterday", "this session", "first we tried", ...).  Dates inside
code (`...` spans, fenced blocks) and inside links (a results page's name)
are allowed: they are names, not history.

  check-docs.py [--expect-reject] FILE...
  check-docs.py --tree TOP        every reference page of the tree at TOP:
                                  TOP/docs/*.md, README.md, CONTRIBUTING.md

TAP on stdout, one point per file; each finding is listed as
"# FILE:LINE: what: the line".  With --expect-reject the sense is inverted
(a fixture that breaks the rule must be rejected, naming the finding), so
the checker itself is shown able to fail.
"""
import glob
import os
import re
import sys

DATE = re.compile(r'\b(19|20)\d\d-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])\b')
ISSUE = re.compile(r'(\bissues? #?\d+\b|(?<![\w/&])#\d+\s+(issue|bug|ticket)\b|\bGH-\d+\b)', re.I)
DIARY = re.compile(
    r'\b(yesterday|this session|last session|previous session|a session ago|'
    r'earlier today|this morning|first we tried|we first tried|then we tried|'
    r'we tried|at first we|until now we|so far we have|today we)\b', re.I)
CODE_SPAN = re.compile(r'`[^`]*`')
# A link to a results page, text and target: its name carries the date.
RESULTS_LINK = re.compile(r'\[[^\]]*\]\((\.\./)?(docs/)?results/[^)]*\)')
LINK = re.compile(r'\]\([^)]*\)|<[^>]*>')


def findings(path):
    out = []
    fenced = False
    with open(path, encoding='utf-8') as f:
        for n, raw in enumerate(f, 1):
            if raw.lstrip().startswith('```'):
                fenced = not fenced
                continue
            if fenced:
                continue
            line = LINK.sub(' ', RESULTS_LINK.sub(' ', CODE_SPAN.sub(' ', raw)))
            for what, rx in (('a date', DATE), ('an issue number', ISSUE),
                             ('diary words', DIARY)):
                m = rx.search(line)
                if m:
                    out.append(f"{path}:{n}: {what} ({m.group(0)!r}): {raw.strip()[:100]}")
    return out


def main(argv):
    expect_reject = False
    if argv and argv[0] == '--expect-reject':
        expect_reject, argv = True, argv[1:]
    if argv and argv[0] == '--tree':
        if len(argv) != 2:
            sys.exit(__doc__)
        top = argv[1]
        argv = sorted(glob.glob(os.path.join(top, 'docs', '*.md'))) + [
            os.path.join(top, 'README.md'), os.path.join(top, 'CONTRIBUTING.md')]
    if not argv:
        sys.exit(__doc__)
    print(f"1..{len(argv)}")
    bad = 0
    for i, path in enumerate(argv, 1):
        try:
            found = findings(path)
        except OSError as e:
            print(f"not ok {i} - {path}: {e}")
            bad += 1
            continue
        if expect_reject:
            ok = bool(found)
            desc = (f"{path}: rejected ({len(found)} findings)" if ok
                    else f"{path}: breaks the rule but was accepted")
        else:
            ok = not found
            desc = (f"{path}: reference only" if ok
                    else f"{path}: {len(found)} findings of history in a reference page")
        print(f"{'ok' if ok else 'not ok'} {i} - {desc}")
        for x in found:
            print(f"# {x}")
        bad += 0 if ok else 1
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
