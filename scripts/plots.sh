#!/usr/bin/env bash
# Draws charts with gnuplot: every bench/plots/<name>.gp for each results
# folder that holds one of its CSVs (the names on the script's "# csv:" line,
# else <name>.csv), PNGs next to the CSVs. Each .gp reads the variables `dir`
# (the folder) and `tagger` (a command that prints "GPU, date" for a CSV: the
# GPU and date from its <name>.context, else the folder's name and the date
# of the last commit that touched the CSV, today's while it has changes).
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
#                             the check is skipped. It first checks that every
#                             chart script names its CSVs and that each of them
#                             is committed in some bench/results/ folder.
#   scripts/plots.sh --tag CSV   what a chart's title says of CSV: "GPU, date"
# Folders are named relative to the repository root.
set -eu
shopt -s nullglob
root=$(cd "$(dirname "$0")/.." && pwd)
probe_hash=$root/bench/plots/probe.sha256

# inputs GP: the CSV names (no .csv) a chart script reads, from its "# csv:" line.
inputs() {
    local line
    line=$(sed -n 's/^# csv: *//p' "$1" | head -n 1)
    echo "${line:-$(basename "$1" .gp)}"
}

# tag CSV: "GPU, date" for a chart's title. CSV is named relative to the
# current folder; its path inside the repository is the same (draw's folders
# are, in --check's scratch copy too).
tag() {
    local ctx=${1%.csv}.context gpu="" date="" dirty
    if [ -f "$ctx" ]; then
        gpu=$(sed -n 's/^device: *//p' "$ctx" | head -n 1 | sed 's/ (sm_.*//; s/,.*//')
        date=$(sed -n 's/^date: *//p' "$ctx" | head -n 1 | cut -c1-10)
    fi
    [ -n "$gpu" ] || gpu=$(basename "$(dirname "$1")")
    if [ -z "$date" ] || [ "$date" = unknown ]; then
        dirty=$(git -C "$root" status --porcelain -- "$1" 2>/dev/null) || dirty=unknown
        [ -n "$dirty" ] || date=$(git -C "$root" log -1 --format=%as -- "$1" 2>/dev/null)
        [ -n "$date" ] || date=$(date -u +%Y-%m-%d)
    fi
    echo "$gpu, $date"
}

# draw DIR: the charts of DIR, relative to the current folder.
draw() {
    local gp name csv
    for gp in "$root"/bench/plots/*.gp; do
        name=$(basename "$gp" .gp)
        for csv in $(inputs "$gp"); do
            [ -f "$1/$csv.csv" ] || continue
            gnuplot -e "dir='$1'; tagger='$root/scripts/plots.sh --tag'" "$gp" && echo "plots: $name -> $1"
            break
        done
    done
}

[ "${1:-}" = --tag ] && { [ $# -eq 2 ] || { echo "usage: scripts/plots.sh --tag CSV" >&2; exit 2; }; tag "$2"; exit 0; }

# probe FILE: draws a small chart with text into FILE and prints its sha256.
probe() {
    gnuplot -e "set terminal pngcairo size 320,200 noenhanced; set output '$1'; set title 'probe 0123456789'; plot x"
    sha256sum "$1" | cut -d' ' -f1
}

# inputs_check: every chart script names its CSVs and each is in some
# bench/results/ folder (prints ok/FAIL lines; counts into passed, failed).
passed=0 failed=0 skipped=0
inputs_check() {
    local gp csv found
    for gp in "$root"/bench/plots/*.gp; do
        if ! grep -q '^# csv: *[a-z]' "$gp"; then
            echo "FAIL ${gp#$root/} has no \"# csv:\" line naming its CSVs"; failed=$((failed + 1)); continue
        fi
        for csv in $(inputs "$gp"); do
            found=$(cd "$root" && git ls-files "bench/results/*/$csv.csv" | head -n 1)
            if [ -n "$found" ]; then echo "ok   ${gp#$root/} reads $found"; passed=$((passed + 1))
            else echo "FAIL ${gp#$root/} reads $csv.csv, committed in no bench/results/ folder"; failed=$((failed + 1)); fi
        done
    done
}

[ "${1:-}" = --check ] && inputs_check

command -v gnuplot >/dev/null 2>&1 || {
    echo "plots: skipped, gnuplot missing (apt-get install gnuplot-nox)"
    [ "${1:-}" = --check ] && echo "$passed passed, $failed failed, $((skipped + 1)) skipped"
    [ "$failed" -eq 0 ]; exit
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

if [ "$(probe "$scratch/probe.png")" != "$(cat "$probe_hash" 2>/dev/null)" ]; then
    echo "skip charts: this machine's gnuplot draws differently from the one that drew bench/results/"
    echo "$passed passed, $failed failed, $((skipped + 1)) skipped"
    [ "$failed" -eq 0 ]; exit
fi
if [ "$(git -C "$root" rev-parse --is-shallow-repository 2>/dev/null)" != false ]; then
    echo "skip charts: no full git history, so the dates in the titles of charts without a .context are unknown"
    echo "$passed passed, $failed failed, $((skipped + 1)) skipped"
    [ "$failed" -eq 0 ]; exit
fi
cd "$root"
for dir in bench/results/*/; do
    dir=${dir%/}
    mkdir -p "$scratch/$dir"
    cp "$dir"/*.csv "$scratch/$dir"/
    for ctx in "$dir"/*.context; do cp "$ctx" "$scratch/$dir"/; done
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
