#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A whole test whose tool or library is missing at configure time (meson.build
# runs this in the test's place): one point under the one skip rule of
# tap-lib.sh (a "not ok" under tap_ci, else a skip naming the remedy).
#   skip-missing.sh DESC TOOL [PACKAGE]
set -u
if [ $# -lt 2 ] || [ $# -gt 3 ] || [ "$1" = --help ]; then
    echo "usage: skip-missing.sh DESC TOOL [PACKAGE]" >&2
    [ "${1:-}" = --help ] && exit 0
    exit 2
fi
# shellcheck source=tap-lib.sh
. "$(cd "$(dirname "$0")" && pwd)/tap-lib.sh"
tap_plan 1
skip "$1" "$(tap_missing "$2" "${3:-$2}")"
tap_done
