# The thesis's rows counted: reads the `row` lines of dn2-bench
#   row NAME measured V thesis T UNIT error E%[ calibrates PARAM]
# and prints one line, agreement counted over the predicted rows only (a
# row that a [calibrated] parameter of the timing model was solved from is
# marked and never counted):
#   rows: N predicted, K within 10 %, J within 5 %; C calibration rows (not counted)
# Used by scripts/bench-cluster.sh; tested by tests/scripts/rows-summary-test.sh.
$1 == "row" {
    e = $9 + 0                  # "+11.2%" -> 11.2: numeric, never a string
    e = e < 0 ? -e : e
    if ($10 == "calibrates") { cal++; next }
    n++
    if (e <= 10) w10++
    if (e <= 5) w5++
}
END {
    printf "rows: %d predicted, %d within 10 %%, %d within 5 %%; %d calibration rows (not counted)\n",
        n, w10, w5, cal
}
