#!/usr/bin/env bash
# One GPU, the committed library: gpu_gemm, bench/gemm --mlp and bench/mlp for bench/results/h200/.
# Binaries built on the host (make GPU_CC=90 NVOPT=-O3), carried.
#   OUT=<dir> notes/experiments/2026-11-27-wgmma-few-tiles/device4.sh
set -u -o pipefail
OUT=${OUT:?set OUT}
export HPDL_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
exec > >(tee "$OUT/device4.log") 2>&1
echo "commit $HPDL_COMMIT"; nvidia-smi --query-gpu=name --format=csv,noheader
timeout 200 build/gpu/gpu_gemm 2>&1 | tail -n 1
mkdir -p "$OUT/gemm" "$OUT/mlp"
timeout 150 build/bench/gemm --mlp --output "$OUT/gemm" > "$OUT/gemm.log" 2>&1 || echo "bench/gemm failed"
grep -E "geomean_(auto|best_own)" "$OUT/gemm/gemm_mlp.csv" | cut -d, -f1,2
timeout 400 build/bench/mlp --output "$OUT/mlp" > "$OUT/mlp.log" 2>&1 || echo "bench/mlp failed"
tail -n 12 "$OUT/mlp.log"
tar -C "$OUT" -cf "$OUT/csv.tar" gemm mlp && rm -rf "$OUT/gemm" "$OUT/mlp"
