#!/usr/bin/env bash
# The tree rules of docs/architecture.md ("The rules, and how to check
# them"), run as a test: each grep there must print nothing.  TAP; one
# point per rule, the offending lines as diagnostics.  Reads the files git
# tracks (a clone, as CI's); no build needed.
set -uo pipefail
top=${DN2_TOP:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$top" || exit 1
# shellcheck source=../tap/tap-lib.sh
. "$top/tests/tap/tap-lib.sh"
tap_plan 3
point() { # point DESCRIPTION OUTPUT
    if [ -z "$2" ]; then
        ok "$1"
    else
        not_ok "$1"
        printf '%s\n' "$2" | head -20 | diag
    fi
}
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    for _ in 1 2 3; do not_ok "not a git work tree: $top"; done
    tap_done
fi
point "no hand-written bit positions outside the ABI header (DN2_GET/DN2_PUT with numbers)" \
    "$(git grep -nE 'DN2_(GET|PUT)\([^,]+, *[0-9]+, *[0-9]+\)' -- ':!include' ':!tests/layering/tree-rules.sh')"
point "no hand-written masks of the ABI's fields in hw, linux-guest, tools" \
    "$(git grep -nE '& 0x1[cf8]\b|0x8000\b' hw linux-guest tools)"
point "no function name defined both in the device and in the guest tree" \
    "$(comm -12 <(git grep -hoE '^[a-z_0-9 *]+\b(dn2|dimmnet2)_[a-z_0-9]+\(' hw | grep -oE '(dn2|dimmnet2)_[a-z_0-9]+' | sort -u) \
               <(git grep -hoE '^[a-z_0-9 *]+\b(dn2|dimmnet2)_[a-z_0-9]+\(' linux-guest | grep -oE '(dn2|dimmnet2)_[a-z_0-9]+' | sort -u))"
tap_done
