#!/usr/bin/env bash
# Runs libFuzzer targets for a set time each, from their committed seed
# corpus, and ends with the test suite's closing line.
#
#   scripts/fuzz.sh SECONDS build/fuzz/fuzz_idx ...    run each for SECONDS, side by side
#   scripts/fuzz.sh --skip fuzz_idx ...                 clang has no libFuzzer
#
# Target build/fuzz/fuzz_<name> starts from tests/fuzz/corpus/<name>/, which
# it only reads; what it learns goes to build/fuzz/work_<name>/, its log to
# build/fuzz/<name>.log, and a crashing input to build/fuzz/crash-* (rerun it
# with: build/fuzz/fuzz_<name> build/fuzz/crash-...).
set -u
if [ "${1:-}" = --skip ]; then
    shift
    for t in "$@"; do echo "skip $t: clang has no libFuzzer (-fsanitize=fuzzer)"; done
    echo "0 passed, 0 failed, $# skipped"
    exit 0
fi
seconds=$1
shift

# One target for $seconds; its exit status goes to $dir/<name>.rc.
fuzz_one() {
    local bin=$1 name dir work log
    name=$(basename "$bin")
    name=${name#fuzz_}
    dir=$(dirname "$bin")
    work=$dir/work_$name log=$dir/$name.log
    mkdir -p "$work"
    # The parsers print why they refuse an input: that goes to the log, not here.
    "$bin" "$work" "tests/fuzz/corpus/$name" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
        -artifact_prefix="$dir/" -print_final_stats=1 >"$log" 2>&1
    echo $? >"$dir/$name.rc"
}

# The targets run side by side (they share the cores), then report in order.
for bin in "$@"; do fuzz_one "$bin" & done
wait
passed=0 failed=0
for bin in "$@"; do
    name=$(basename "$bin")
    name=${name#fuzz_}
    dir=$(dirname "$bin")
    log=$dir/$name.log
    if [ "$(cat "$dir/$name.rc" 2>/dev/null)" = 0 ]; then
        runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')
        echo "ok   fuzz_$name: ${runs:-?} inputs in $seconds s, no finding"
        passed=$((passed + 1))
    else
        echo "FAIL fuzz_$name: see $log; the last lines:"
        tail -n 30 "$log"
        failed=$((failed + 1))
    fi
done
echo "$passed passed, $failed failed, 0 skipped"
[ "$failed" -eq 0 ]
