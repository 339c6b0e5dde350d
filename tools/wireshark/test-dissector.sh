#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The Wireshark dissector against the ABI header (TAP):
#  1. the dissector's table tools/wireshark/dimmnet2-abi.lua is what
#     dn2-wireshark-abi generates from include/dimmnet2/dn2_abi.h now;
#  2. tshark + dimmnet2.lua decode a capture with every packet type
#     (dn2-wireshark-abi pcap) without a Lua error or a malformed packet;
#  3. every decoded header field equals the C decoder's
#     (dn2-wireshark-abi check), packet by packet.
# Without tshark the test fails under CI (CI set; scripts/setup.sh
# installs tshark) and is skipped elsewhere.  TSHARK names the program.
#
#   test-dissector.sh DN2_WIRESHARK_ABI GENERATED_LUA
set -u
GEN=${1:?usage: test-dissector.sh DN2_WIRESHARK_ABI GENERATED_LUA}
LUA=${2:?usage: test-dissector.sh DN2_WIRESHARK_ABI GENERATED_LUA}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dn2-wireshark.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

n=0
failed=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
notok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $*"; }
diagf() { sed 's/^/# /' "$@"; }
finish() { echo "1..$n"; [ $failed = 0 ]; exit; }

# 1. the committed table is the generated one
if cmp -s "$LUA" "$here/dimmnet2-abi.lua"; then
    ok "tools/wireshark/dimmnet2-abi.lua is generated from dn2_abi.h as it is now"
else
    notok "tools/wireshark/dimmnet2-abi.lua differs from the header's (regenerate: $GEN lua > tools/wireshark/dimmnet2-abi.lua)"
    diff -u "$here/dimmnet2-abi.lua" "$LUA" | head -40 | diagf
fi

tshark=${TSHARK:-tshark}
ci=${CI:-}
case $ci in 0|false|no) ci= ;; esac
if ! command -v "$tshark" >/dev/null 2>&1; then
    if [ -n "$ci" ]; then
        notok "tshark: $tshark not found and CI is set (CI=$CI): the dissector check must run in CI (scripts/setup.sh installs tshark)"
    else
        ok "tshark + dimmnet2.lua # SKIP $tshark not found: install tshark (scripts/setup.sh does) to check the dissector"
    fi
    finish
fi

# 2. decode the capture
if ! "$GEN" pcap "$tmp/all.pcap" 2>"$tmp/gen.err"; then
    notok "dn2-wireshark-abi pcap wrote the capture"
    diagf "$tmp/gen.err"
    finish
fi
fields=()
for f in $("$GEN" fields); do
    fields+=(-e "$f")
done
# The committed table, as a user's dissector would load it (it equals the
# generated one by check 1).
HOME=$tmp "$tshark" -n -r "$tmp/all.pcap" -X "lua_script:$here/dimmnet2.lua" \
    -Y 'dn2.type' -T fields -E separator=, -E occurrence=f "${fields[@]}" \
    >"$tmp/fields.out" 2>"$tmp/tshark.err"
rc=$?
if [ $rc = 0 ] && [ -s "$tmp/fields.out" ] && ! grep -qi 'error\|malformed' "$tmp/tshark.err"; then
    ok "tshark + dimmnet2.lua decode the capture ($(wc -l <"$tmp/fields.out") packets)"
else
    notok "tshark + dimmnet2.lua decode the capture (exit $rc)"
    diagf "$tmp/tshark.err"
    head -5 "$tmp/fields.out" | diagf
    finish
fi
if HOME=$tmp "$tshark" -n -r "$tmp/all.pcap" -X "lua_script:$here/dimmnet2.lua" -V 2>&1 |
        grep -qi 'malformed\|lua error\|dissector: '; then
    notok "no malformed packet or Lua error in the detailed decode"
else
    ok "no malformed packet or Lua error in the detailed decode"
fi

# 3. field by field against the C decoder
"$GEN" check "$tmp/fields.out" >"$tmp/check.tap"
# Renumber the checker's points after ours.
while IFS= read -r l; do
    case $l in
        "ok "*) r=${l#ok }; ok "${r#* - }" ;;
        "not ok "*) r=${l#not ok }; notok "${r#* - }" ;;
        "#"*) echo "$l" ;;
    esac
done <"$tmp/check.tap"
finish
