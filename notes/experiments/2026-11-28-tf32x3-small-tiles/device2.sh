#!/usr/bin/env bash
# 3xTF32 in 64 x 64 tiles on every f32 product it takes (build/exp/gemm_small_all, built with
# -DHPDL__TF32X3_SMALL_TILES=2: slices for four blocks an SM) against the library's rule
# (build/bench/gemm at c97515c), bench/gemm --mlp f32 in turns, two rounds; CSVs tarred.
set -u -o pipefail
OUT=${OUT:?set OUT to the output folder}
mkdir -p "$OUT/w"
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$OUT/gpu.txt"
for r in 1 2; do
    for v in lib all; do
        bin=build/bench/gemm; [ $v = all ] && bin=build/exp/gemm_small_all
        mkdir -p "$OUT/w/$v$r"
        timeout 120 $bin --mlp --precision f32 --output "$OUT/w/$v$r" > "$OUT/w/$v$r/gemm.log" 2>&1 || echo "gemm $v$r failed"
        grep -E "geomean" "$OUT/w/$v$r/gemm_mlp.csv" | grep -E "auto" | sed "s/^/$v$r /"
    done
done
cd "$OUT" && tar czf runs.tgz w && rm -rf w
