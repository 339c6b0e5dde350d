# Shared by the guest test scripts (sourced): collect TAP test points into
# one renumbered plan.  Callers keep `n` and the `results` array.
# shellcheck shell=bash

emit() { # emit ok|not-ok DESCRIPTION
    n=$((n + 1))
    if [ "$1" = ok ]; then results+=("ok $n - $2"); else results+=("not ok $n - $2"); fi
}

# forward_tap SECTION: emit every test point of the guest's TAP in SECTION,
# renumbered, and keep its diagnostics; sets tap_count.
forward_tap() {
    local line desc
    tap_count=0
    while IFS= read -r line; do
        case $line in
            'ok '*|'not ok '*)
                tap_count=$((tap_count + 1))
                desc=$(printf '%s\n' "$line" | sed -E 's/^(not )?ok [0-9]+ ?-? ?//')
                if [ "${line#not }" = "$line" ]; then emit ok "$desc"; else emit not-ok "$desc"; fi
                ;;
            '#'*) results+=("$line") ;;
        esac
    done <<< "$1"
}
