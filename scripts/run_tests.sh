#!/usr/bin/env bash
# Runs each test command given as an argument, shows its output, and adds up the
# closing lines "N passed, N failed, N skipped". A command that ends without its
# closing line (a crash, a hang killed by timeout) counts as one failure.
set -u
passed=0 failed=0 skipped=0
for cmd in "$@"; do
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
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
