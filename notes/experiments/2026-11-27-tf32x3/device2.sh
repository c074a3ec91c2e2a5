#!/usr/bin/env bash
# One GPU: the f32 mma rung as 3xTF32 (each value split into two TF32 halves, three tensor-core
# products per step), second run: split by a mask, per-tile sums; --tune variants. Binaries prebuilt in build/exp (GPU_CC=90 NVOPT=-O3), carried.
#  1. registers and spills of the kernel; 2. tests/gpu_gemm (every rung, f32 mma included);
#  3. bench/gemm --mlp --precision f32 (every MLP product, each rung against cuBLAS in turns);
#  4. bench/gemm --shape 4096x4096x4096 --precision f32.
#   from the repository root:  OUT=<dir> notes/experiments/2026-11-27-tf32x3/device.sh
set -u -o pipefail
OUT=${OUT:?set OUT to the output folder}
mkdir -p "$OUT"
exec > >(tee "$OUT/device.log") 2>&1
start=$SECONDS
step() { echo "== $1 ($((SECONDS - start)) s)"; }
step machine
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
cat .commit 2>/dev/null || true
step "bench/gemm --tune --precision f32"
timeout 200 build/exp/gemm --tune --precision f32 > "$OUT/tune.log" 2>&1; grep -E "3xtf32|warptile|cublas" "$OUT/tune.log"
step "tests/gpu_gemm"
timeout 300 build/exp/gpu_gemm 2>&1 | tail -n 30
step "bench/gemm --mlp --precision f32"
mkdir -p "$OUT/mlp"
timeout 200 build/exp/gemm --mlp --precision f32 --output "$OUT/mlp" > "$OUT/mlp.log" 2>&1
grep -E "geomean|^ +(auto|splitk|warptile|mma|best)" "$OUT/mlp.log"
awk -F, 'NR > 1 && $14 ~ /^(warptile|mma|auto)$/ { printf "%-7s H%-5s b%-5s %-9s %9.2f us  cublas %9.2f  %.3f  err %s %s\n", $10, $8, $9, $14, $2, $5, $6, $15, $16 }' "$OUT/mlp/gemm_mlp_all.csv"
step "bench/gemm --shape 4096x4096x4096 --precision f32"
mkdir -p "$OUT/sq"
timeout 200 build/exp/gemm --shape 4096x4096x4096 --precision f32 --output "$OUT/sq" > "$OUT/sq.log" 2>&1
tail -n 25 "$OUT/sq.log"
tar -C "$OUT" -cf "$OUT/csv.tar" mlp sq && rm -rf "$OUT/mlp" "$OUT/sq"
step done
