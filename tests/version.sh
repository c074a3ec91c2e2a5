#!/usr/bin/env bash
# One version everywhere: each header's first line, its CHANGELOG pointer
# ("this version: vX.Y.Z"), HPDL_VERSION and HPDL_VERSION_MAJOR/_MINOR/_PATCH
# in hpdl.h, and the newest entry of CHANGELOG.md ("## X.Y.Z — date").
# Closing line: N passed, N failed, N skipped.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
passed=0 failed=0 skipped=0
check() { # check WHAT FOUND
    if [ "$2" = "$version" ]; then echo "ok   $1: $2"; passed=$((passed + 1))
    else echo "FAIL $1: '$2', HPDL_VERSION is $version"; failed=$((failed + 1)); fi
}
define() { sed -n "s/^#define $1 \"*\([0-9.]*\)\"*\$/\1/p" "$root/hpdl.h"; }
version=$(define HPDL_VERSION)
[ -n "$version" ] || { echo "FAIL no #define HPDL_VERSION \"X.Y.Z\" in hpdl.h"; failed=$((failed + 1)); }
check "HPDL_VERSION_MAJOR.MINOR.PATCH" "$(define HPDL_VERSION_MAJOR).$(define HPDL_VERSION_MINOR).$(define HPDL_VERSION_PATCH)"
for h in hpdl.h hpdl_cuda.cuh hpdl_mpi.h; do
    check "$h, first line" "$(head -n 1 "$root/$h" | sed -n "s|^/\* $h - v\([0-9.]*\) - .*|\1|p")"
    check "$h, CHANGELOG" "$(sed -n 's/^ *CHANGELOG.md; this version: v\([0-9.]*\).*/\1/p' "$root/$h")"
done
check "CHANGELOG.md, newest entry" "$(sed -n 's/^## \([0-9][0-9.]*\) — [0-9-]*$/\1/p' "$root/CHANGELOG.md" | head -n 1)"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
