#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The Wireshark dissector against the ABI header (TAP):
#  1. the dissector's table tools/wireshark/dimmnet2-abi.lua is what
#     dn2-wireshark-abi generates from include/dimmnet2/dn2_abi.h now;
#  2. tshark + dimmnet2.lua decode a capture with every packet type
#     (dn2-wireshark-abi pcap) without a Lua error or a malformed packet;
#  3. every decoded header field equals the C decoder's
#     (dn2-wireshark-abi check), packet by packet.
# Without tshark the test fails under CI and is skipped elsewhere (the
# skip rule of tests/tap/tap-lib.sh; scripts/setup.sh installs tshark).
# TSHARK names the program.
#
#   test-dissector.sh DN2_WIRESHARK_ABI GENERATED_LUA
set -u
GEN=${1:?usage: test-dissector.sh DN2_WIRESHARK_ABI GENERATED_LUA}
LUA=${2:?usage: test-dissector.sh DN2_WIRESHARK_ABI GENERATED_LUA}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dn2-wireshark.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# shellcheck source=../../tests/tap/tap-lib.sh
. "$here/../../tests/tap/tap-lib.sh"

# 1. the committed table is the generated one
if cmp -s "$LUA" "$here/dimmnet2-abi.lua"; then
    ok "tools/wireshark/dimmnet2-abi.lua is generated from dn2_abi.h as it is now"
else
    not_ok "tools/wireshark/dimmnet2-abi.lua differs from the header's (regenerate: $GEN lua > tools/wireshark/dimmnet2-abi.lua)"
    diff -u "$here/dimmnet2-abi.lua" "$LUA" | head -40 | diag
fi

tshark=${TSHARK:-tshark}
if ! command -v "$tshark" >/dev/null 2>&1; then
    skip "tshark + dimmnet2.lua" "$(tap_missing "$tshark" tshark)"
    tap_done
fi

# 2. decode the capture
if ! "$GEN" pcap "$tmp/all.pcap" 2>"$tmp/gen.err"; then
    not_ok "dn2-wireshark-abi pcap wrote the capture"
    diag < "$tmp/gen.err"
    tap_done
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
    not_ok "tshark + dimmnet2.lua decode the capture (exit $rc)"
    diag < "$tmp/tshark.err"
    head -5 "$tmp/fields.out" | diag
    tap_done
fi
if HOME=$tmp "$tshark" -n -r "$tmp/all.pcap" -X "lua_script:$here/dimmnet2.lua" -V 2>&1 |
        grep -qi 'malformed\|lua error\|dissector: '; then
    not_ok "no malformed packet or Lua error in the detailed decode"
else
    ok "no malformed packet or Lua error in the detailed decode"
fi

# 3. field by field against the C decoder
"$GEN" check "$tmp/fields.out" >"$tmp/check.tap"
# Renumber the checker's points after ours.
tap_forward "$(cat "$tmp/check.tap")"
tap_done
