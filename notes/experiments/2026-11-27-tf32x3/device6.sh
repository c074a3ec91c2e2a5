#!/usr/bin/env bash
# One GPU: the full bench/gemm at the committed state (the committed bench/results/h200/gemm*.csv).
# Binary prebuilt in build/exp (GPU_CC=90 NVOPT=-O3), carried.
#   from the repository root:  OUT=<dir> notes/experiments/2026-11-27-tf32x3/device6.sh
set -u -o pipefail
OUT=${OUT:?set OUT to the output folder}
mkdir -p "$OUT/gemm"
export HPDL_COMMIT=$(cat .commit 2>/dev/null)
echo "== $(nvidia-smi --query-gpu=name --format=csv,noheader) at $HPDL_COMMIT"
timeout 300 build/exp/gemm --output "$OUT/gemm" > "$OUT/gemm.log" 2>&1
echo "bench/gemm: rc $?"
cat "$OUT/gemm/gemm.csv"
tar -C "$OUT" -cf "$OUT/gemm.tar" gemm && rm -rf "$OUT/gemm"
