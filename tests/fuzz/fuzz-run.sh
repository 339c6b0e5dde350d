#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds tests/fuzz/fuzz-wire.c with clang -fsanitize=fuzzer,address,undefined and
# runs it for a bounded time over the seed corpus.  TAP output.
#
#   tests/fuzz/fuzz-run.sh                  20 s (DN2_FUZZ_SECONDS to change)
#   tests/fuzz/fuzz-run.sh --regen-corpus   rewrite tests/fuzz/corpus/
#
# Without clang the test fails under CI and is skipped elsewhere (the skip
# rule of tests/tap/tap-lib.sh; scripts/setup.sh installs clang).
#
# Environment: DN2_FUZZ_SECONDS (default 20), DN2_FUZZ_BUILD (build folder,
# default a temporary one), CLANG (default clang).
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=${DN2_TOP:-$(cd "$here/../.." && pwd)}
secs=${DN2_FUZZ_SECONDS:-20}
clang=${CLANG:-clang}
corpus="$here/corpus"
srcs=("$top"/fabric/dn2fab*.c)          # the whole library
inc=(-I"$top/include" -I"$top/fabric")
# shellcheck source=../tap/tap-lib.sh
. "$top/tests/tap/tap-lib.sh"

if [ -n "${DN2_FUZZ_BUILD:-}" ]; then
    out=$DN2_FUZZ_BUILD
    mkdir -p "$out"
    cleanup() { :; }
else
    out=$(mktemp -d "${TMPDIR:-/tmp}/dn2-fuzz.XXXXXX")
    cleanup() { rm -rf "$out"; }
fi
trap cleanup EXIT

if [ "${1:-}" = "--regen-corpus" ]; then
    cc -std=gnu11 -O1 -DFUZZ_GEN_CORPUS "${inc[@]}" "$here/fuzz-wire.c" "${srcs[@]}" \
        -o "$out/gen-corpus" && mkdir -p "$corpus" && "$out/gen-corpus" "$corpus" &&
        ls -l "$corpus"
    exit $?
fi

tap_plan 2
if ! command -v "$clang" >/dev/null 2>&1; then
    skip "build fuzz-wire" "$(tap_missing "$clang" clang)"
    skip "run fuzz-wire" "$(tap_missing "$clang" clang)"
    tap_done
fi
if "$clang" -std=gnu11 -g -O1 -fsanitize=fuzzer,address,undefined \
        -fno-sanitize-recover=undefined "${inc[@]}" \
        "$here/fuzz-wire.c" "${srcs[@]}" -o "$out/fuzz-wire" 2>"$out/build.log"; then
    ok "build fuzz-wire with -fsanitize=fuzzer,address,undefined"
else
    not_ok "build fuzz-wire"
    diag < "$out/build.log"
    not_ok "run fuzz-wire (no binary)"
    tap_done
fi

# Work on a copy: new inputs found by this run do not touch the tracked seeds.
mkdir -p "$out/corpus"
cp "$corpus"/* "$out/corpus/" 2>/dev/null || true
(cd "$out" && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ./fuzz-wire -max_total_time="$secs" -max_len=65600 -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 corpus >"$out/fuzz.log" 2>&1)
st=$?
tail -n 12 "$out/fuzz.log" | diag
if [ $st = 0 ]; then
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$out/fuzz.log" | grep -o '[0-9]*$')
    ok "fuzz-wire ran ${secs} s (${runs:-?} inputs) without a crash, leak or UB"
else
    not_ok "fuzz-wire found a problem (exit $st); crash input in $out"
    ls "$out"/crash-* "$out"/leak-* "$out"/timeout-* 2>/dev/null | diag
    trap - EXIT
fi
tap_done
