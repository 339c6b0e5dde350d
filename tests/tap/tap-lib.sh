# TAP output for the project's shell tests (sourced; one copy for all of
# them, in tests/, tools/ and scripts/).  The C programs' counterpart is
# tests/tap/dn2-tap.h; both read CI the same way (tap_ci).
# shellcheck shell=bash
#
#   tap_plan N            print the plan "1..N" now; without it, tap_done
#                         prints "1..<count>" after the test points
#   tap_defer             hold every line until tap_done, which prints the
#                         plan first, then them (for tests that learn their
#                         count as they go, e.g. forwarding a guest's TAP);
#                         it sets lastpipe, so that "cmd | diag" still
#                         lands in the held lines
#   ok DESC               "ok N - DESC"
#   not_ok DESC           "not ok N - DESC"
#   result STATUS DESC    ok when STATUS is 0, not ok otherwise
#   check DESC CMD...     ok when CMD succeeds
#   diag [TEXT...]        each TEXT, or each line of stdin, as "# TEXT"
#                         (after a "not ok" also on stderr, with that point's
#                         line: meson shows a failed TAP test's stderr only,
#                         so a CI log says why a point failed)
#   tap_ci                true (status 0) when this is a CI run: the
#                         environment variable CI is set and not empty, 0,
#                         false or no (any case)
#   skip DESC WHY         the one skip rule: "ok N - DESC # SKIP WHY", but
#                         under tap_ci a "not ok" (a CI machine has
#                         everything setup.sh installs, so nothing may go
#                         green by skipping)
#   tap_missing TOOL [PACKAGE]   "TOOL not found: run scripts/setup.sh
#                         (it installs PACKAGE)": the WHY for skip
#   tap_skip_all WHY      the whole test (before any plan or point): with
#                         tap_ci "1..1" and a "not ok", else "1..0 # SKIP
#                         WHY"; then exits as tap_done does
#   tap_table             the table runner: reads lines "FUNCTION DESC"
#                         from stdin (blank lines and # comments skipped)
#                         and runs each FUNCTION as one point (check DESC
#                         FUNCTION); FUNCTION may print points of its own
#                         only if it is not in a table
#   bail MSG              "Bail out! MSG", exit 1
#   tap_forward TEXT      the test points of another TAP stream (a guest
#                         program's), renumbered into this one, with its
#                         diagnostics; sets tap_count to how many
#   tap_done              the plan if none was printed; exits 0 if every
#                         point passed (and as many ran as were planned),
#                         1 otherwise
#
# Counters: tap_n (test points so far), tap_failed (how many "not ok").

tap_n=0
tap_failed=0
tap_planned=
tap_deferred=
tap_lines=()
tap_last_failed=

_tap_out() {
    if [ -n "$tap_deferred" ]; then tap_lines+=("$1"); else printf '%s\n' "$1"; fi
}

tap_plan() { tap_planned=$1; echo "1..$1"; }
tap_defer() { tap_deferred=1; shopt -s lastpipe; }

ok() { tap_n=$((tap_n + 1)); tap_last_failed=; _tap_out "ok $tap_n - $*"; }
not_ok() {
    tap_n=$((tap_n + 1))
    tap_failed=$((tap_failed + 1))
    tap_last_failed=1
    _tap_out "not ok $tap_n - $*"
    printf '%s\n' "not ok $tap_n - $*" >&2
}
# todo DESC WHY: a check known to fail today (TAP's TODO directive): it
# runs and is reported, and does not fail the test until it is fixed.
todo() { tap_n=$((tap_n + 1)); tap_last_failed=; _tap_out "not ok $tap_n - $1 # TODO $2"; }
result() { # result STATUS DESC
    local st=$1
    shift
    if [ "$st" = 0 ]; then ok "$@"; else not_ok "$@"; fi
}
check() { # check DESC COMMAND...
    local d=$1
    shift
    if "$@"; then ok "$d"; else not_ok "$d"; fi
}

_tap_diag1() {
    _tap_out "# $1"
    if [ -n "$tap_last_failed" ]; then printf '# %s\n' "$1" >&2; fi
}

diag() {
    local l
    if [ $# -gt 0 ]; then
        for l in "$@"; do _tap_diag1 "$l"; done
    else
        while IFS= read -r l || [ -n "$l" ]; do _tap_diag1 "$l"; done
    fi
}

tap_missing() { # tap_missing TOOL [PACKAGE]
    echo "$1 not found: run scripts/setup.sh (it installs ${2:-$1})"
}

# The one reading of CI, shared with dn2-tap.h's tap_ci(): set and not empty,
# 0, false or no (in any case).  CI systems set CI=true; CI=0 turns it off.
tap_ci() {
    case ${CI:-} in
        '' | 0 | [Ff][Aa][Ll][Ss][Ee] | [Nn][Oo]) return 1 ;;
    esac
    return 0
}

skip() { # skip DESC WHY
    if tap_ci; then
        not_ok "$1 (skipped: $2; CI is set, so a skip is a failure)"
    else
        tap_n=$((tap_n + 1))
        tap_last_failed=
        _tap_out "ok $tap_n - $1 # SKIP $2"
    fi
}

tap_skip_all() { # tap_skip_all WHY
    if tap_ci; then
        tap_plan 1
        not_ok "skipped: $1; CI is set, so a skip is a failure"
    else
        echo "1..0 # SKIP $1"
        exit 0
    fi
    tap_done
}

bail() {
    [ -n "$tap_deferred" ] && _tap_flush
    echo "Bail out! $*"
    exit 1
}

# Print the held lines (tap_defer), the plan first.
_tap_flush() {
    echo "1..$tap_n"
    tap_planned=$tap_n
    [ ${#tap_lines[@]} -gt 0 ] && printf '%s\n' "${tap_lines[@]}"
    tap_lines=()
    tap_deferred=
}

tap_forward() { # tap_forward TEXT
    local line desc
    tap_count=0
    while IFS= read -r line; do
        case $line in
            'ok '*|'not ok '*)
                tap_count=$((tap_count + 1))
                desc=$(printf '%s\n' "$line" | sed -E 's/^(not )?ok [0-9]+ ?-? ?//')
                if [ "${line#not }" = "$line" ]; then ok "$desc"; else not_ok "$desc"; fi
                ;;
            '#'*) _tap_out "$line" ;;
        esac
    done <<< "$1"
}

tap_table() { # tap_table < TABLE
    local fn desc rows=()
    while read -r fn desc; do
        case $fn in '' | '#'*) continue ;; esac
        rows+=("$fn" "$desc")
    done
    set -- "${rows[@]}"
    while [ $# -ge 2 ]; do
        check "$2" "$1"
        shift 2
    done
}

tap_done() {
    if [ -n "$tap_deferred" ]; then
        _tap_flush
    elif [ -z "$tap_planned" ]; then
        echo "1..$tap_n"
        tap_planned=$tap_n
    fi
    if [ "$tap_n" != "$tap_planned" ]; then
        echo "# planned $tap_planned test points, ran $tap_n"
        exit 1
    fi
    [ "$tap_failed" -eq 0 ] || exit 1
    exit 0
}
