#!/usr/bin/env bash
# The committed run on one H200 with the binaries of .commit: gpu_mlp (the default is AUTO now),
# bench/gemm --mlp (f32, f16, bf16) and bench/mlp (with PyTorch) into res/. Tarred.
#   from the repository root:  OUT=<dir> notes/experiments/2026-11-28-narrow-rows/device3.sh
set -u -o pipefail
OUT=${OUT:?set OUT to the output folder}
export HPDL_COMMIT=$(cat .commit)
B=build/h90
mkdir -p "$OUT/w/res"
exec > >(tee "$OUT/w/device.log") 2>&1
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
timeout 80 $B/gpu/gpu_mlp > "$OUT/w/gpu_mlp.log" 2>&1; echo "gpu_mlp rc $?"; tail -1 "$OUT/w/gpu_mlp.log"
timeout 220 $B/bench/gemm --mlp --output "$OUT/w/res" > "$OUT/w/gemm_mlp.log" 2>&1; echo "gemm --mlp rc $?"
grep -E "geomean_(auto|best)" "$OUT/w/res/gemm_mlp.csv"
timeout 280 $B/bench/mlp --output "$OUT/w/res" > "$OUT/w/mlp.log" 2>&1; echo "mlp rc $?"
cat "$OUT/w/res/mlp_detail.csv"
cd "$OUT" && tar czf runs.tgz w && rm -rf w
