#!/usr/bin/env bash
# Draws charts with gnuplot: every bench/plots/<name>.gp whose <name>.csv is in
# a results folder, PNGs next to the CSVs (each .gp reads the variable `dir`).
#
#   scripts/plots.sh DIR...   draw the charts of each folder (make plots draws
#                             results/<gpu>/, make plots RESULTS=bench/results/h200
#                             a published folder)
#   scripts/plots.sh --check  draw the published charts (bench/results/*/) again
#                             in a scratch folder and compare them byte for byte
#                             with the committed PNGs: a chart that differs is out
#                             of step with its CSVs. Only the renderer that drew
#                             them gives the same bytes: where a probe chart comes
#                             out differently (another gnuplot, cairo or fonts)
#                             the check is skipped.
# Folders are named relative to the repository root.
set -eu
shopt -s nullglob
root=$(cd "$(dirname "$0")/.." && pwd)
probe_hash=$root/bench/plots/probe.sha256

# draw DIR: the charts of DIR, relative to the current folder.
draw() {
    local gp name
    for gp in "$root"/bench/plots/*.gp; do
        name=$(basename "$gp" .gp)
        [ -f "$1/$name.csv" ] || continue
        gnuplot -e "dir='$1'" "$gp" && echo "plots: $name -> $1"
    done
}

# probe FILE: draws a small chart with text into FILE and prints its sha256.
probe() {
    gnuplot -e "set terminal pngcairo size 320,200 noenhanced; set output '$1'; set title 'probe 0123456789'; plot x"
    sha256sum "$1" | cut -d' ' -f1
}

command -v gnuplot >/dev/null 2>&1 || {
    echo "plots: skipped, gnuplot missing (apt-get install gnuplot-nox)"
    [ "${1:-}" = --check ] && echo "0 passed, 0 failed, 1 skipped"
    exit 0
}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

if [ "${1:-}" != --check ]; then
    [ $# -gt 0 ] || { echo "usage: scripts/plots.sh DIR... | --check" >&2; exit 2; }
    cd "$root"
    for dir in "$@"; do
        dir=${dir%/}
        [ -n "$(echo "$dir"/*.csv)" ] || { echo "plots: no CSVs in $dir (make bench writes them)"; continue; }
        draw "$dir"
        # Published charts: remember how this machine draws, for --check.
        case $dir in bench/results/*) probe "$scratch/probe.png" > "$probe_hash" ;; esac
    done
    exit 0
fi

passed=0 failed=0 skipped=0
if [ "$(probe "$scratch/probe.png")" != "$(cat "$probe_hash" 2>/dev/null)" ]; then
    echo "skip charts: this machine's gnuplot draws differently from the one that drew bench/results/"
    echo "0 passed, 0 failed, 1 skipped"
    exit 0
fi
cd "$root"
for dir in bench/results/*/; do
    dir=${dir%/}
    mkdir -p "$scratch/$dir"
    cp "$dir"/*.csv "$scratch/$dir"/
    (cd "$scratch" && draw "$dir" >/dev/null)
    for png in "$scratch/$dir"/*.png; do
        chart=$dir/$(basename "$png")
        if cmp -s "$png" "$chart"; then
            echo "ok   $chart"; passed=$((passed + 1))
        else
            echo "FAIL $chart is not what its CSVs draw: scripts/plots.sh $dir"; failed=$((failed + 1))
        fi
    done
done
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
