#!/usr/bin/env bash
# One GPU: AUTO takes the 64 x 256 Hopper rung (wgmma) for 16-bit products whose 128 x 256 tiles
# fill under a quarter of the SMs and whose K is too short for stream-K pieces. gpu_gemm, then
# bench/gemm --mlp twice (AUTO against the persistent row), then every f16 rung on four
# first-layer shapes (--shape) for the rule's other points. Binaries built on the host, carried.
#   OUT=<dir> notes/experiments/2026-11-27-wgmma-few-tiles/device3.sh
set -u -o pipefail
OUT=${OUT:?set OUT}
export HPDL_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
exec > >(tee "$OUT/device3.log") 2>&1
echo "commit $HPDL_COMMIT"; nvidia-smi --query-gpu=name --format=csv,noheader
timeout 200 build/gpu/gpu_gemm 2>&1 | tail -n 1
for r in 1 2; do
    mkdir -p "$OUT/run$r"
    timeout 150 build/bench/gemm --mlp --output "$OUT/run$r" > "$OUT/run$r/bench.log" 2>&1 || echo "bench failed"
    grep -E "geomean_(auto|best_own|wgmma_persistent)" "$OUT/run$r/gemm_mlp.csv" | cut -d, -f1,2
done
for s in 32x512x784 128x512x784 128x2048x784 512x512x784 512x2048x784 784x512x512 784x2048x128; do
    timeout 100 build/bench/gemm --shape $s --precision f16 --output "$OUT/shape/$s" > /dev/null 2>&1
    awk -F, '$11 ~ /^(wgmma|wgmma_persistent|splitk)$/ { printf "  %s %-17s %.3f\n", $8 "x" $9 "x" $10, $11, $6 }' "$OUT/shape/$s/gemm_all.csv"
done
tar -C "$OUT" -cf "$OUT/runs.tar" run1 run2 shape && rm -rf "$OUT/run1" "$OUT/run2" "$OUT/shape"
