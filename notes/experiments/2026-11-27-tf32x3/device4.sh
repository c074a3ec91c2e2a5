#!/usr/bin/env bash
# One GPU: the 3xTF32 mma rung splits K where its tiles leave SMs idle (hpdl__tf32x3_slices),
# and AUTO takes it for f32 by tiles x slices (M >= 64); the last, shorter slice in the same launch.
# Binaries prebuilt in build/exp, carried. Per-product rows: res/gemm_mlp_all.csv.
#   from the repository root:  OUT=<dir> notes/experiments/2026-11-27-tf32x3/device4.sh
set -u -o pipefail
OUT=${OUT:?set OUT to the output folder}
mkdir -p "$OUT/res"
exec > >(tee "$OUT/device.log") 2>&1
echo "== $(nvidia-smi --query-gpu=name --format=csv,noheader) at $(cat .commit 2>/dev/null)"
timeout 200 build/exp/gpu_gemm 2>&1 | grep -v "^ok"
timeout 200 build/exp/gemm --mlp --precision f32 --output "$OUT/res" > "$OUT/mlp.log" 2>&1
grep -E "geomean|^ +(auto|splitk|warptile|mma|best_own) " "$OUT/mlp.log"
