#!/usr/bin/env bash
# Runs every bench/plots/<name>.gp for each results folder that has <name>.csv,
# writing PNGs next to the CSVs.
# Each .gp script reads the variable `dir` (the results folder).
set -eu
shopt -s nullglob
for gp in bench/plots/*.gp; do
    name=$(basename "$gp" .gp)
    for dir in bench/results/*/; do
        dir=${dir%/}
        [ -f "$dir/$name.csv" ] || continue
        gnuplot -e "dir='$dir'" "$gp" && echo "plots: $gp -> $dir"
    done
done
