#!/usr/bin/env bash
# Runs each test command given as an argument, shows its output, and adds up the
# closing lines "N passed, N failed, N skipped". A command that ends without its
# closing line (a crash, a hang killed by timeout) counts as one failure.
# "--phase NAME" before a group of commands names the group: each phase ends
# with its own sums and time, and a table of the phases comes before the total.
set -u
passed=0 failed=0 skipped=0
phase="" phase_start=$SECONDS p0=0 f0=0 s0=0 table="" naming=""
end_phase() {
    [ -n "$phase" ] || return 0
    local line
    line=$(printf '%-40s %4d passed, %d failed, %d skipped  %4d s' "$phase" $((passed - p0)) $((failed - f0)) \
        $((skipped - s0)) $((SECONDS - phase_start)))
    echo "-- $line"
    table+="   $line"$'\n'
}
for cmd in "$@"; do
    if [ "$cmd" = --phase ]; then naming=1; continue; fi
    if [ -n "$naming" ]; then
        end_phase
        naming="" phase=$cmd phase_start=$SECONDS p0=$passed f0=$failed s0=$skipped
        echo "== phase: $phase"
        continue
    fi
    echo "== $cmd"
    out=$(timeout 900 bash -c "$cmd" 2>&1); rc=$?
    printf '%s\n' "$out"
    line=$(printf '%s\n' "$out" | grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' | tail -n 1)
    if [ -z "$line" ]; then
        echo "!! no closing line (exit $rc): counted as a failure"; failed=$((failed + 1)); continue
    fi
    read -r p _ f _ s _ <<<"${line//,/}"
    passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then echo "!! exit $rc with no failed test: counted as a failure"; failed=$((failed + 1)); fi
done
end_phase
[ -n "$table" ] && printf 'phases:\n%s' "$table"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
