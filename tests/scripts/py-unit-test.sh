#!/usr/bin/env bash
# The unit tests of the scripts' Python package (scripts/dn2scripts, in
# tests/scripts/py/): Debian's pytest under the system python, every test a
# TAP point on stdout, pytest's report on stderr.  Boots nothing; a few
# seconds.  Without pytest: skipped, or failed when CI is set.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
py=/usr/bin/python3
if ! "$py" -c 'import pytest' 2> /dev/null; then
    if [ -n "${CI:-}" ]; then
        echo "not ok 1 - python3-pytest is missing (scripts/setup.sh installs it)"
        echo "1..1"
        exit 1
    fi
    echo "1..0 # SKIP python3-pytest is missing: run scripts/setup.sh"
    exit 0
fi
cd "$here/py" || exit 1
DN2_TAP_FD=3 PYTHONDONTWRITEBYTECODE=1 "$py" -m pytest -p no:cacheprovider -q -rfE "$@" 3>&1 1>&2
