#!/usr/bin/env bash
# The committed run on an H200 with the binaries of 683c6c9 (HPDL_COMMIT from .commit):
# bench/gemm --mlp (f32, f16, bf16) and bench/mlp (with PyTorch) into res/. Tarred.
#   from the repository root, on one GPU:  OUT=<dir> notes/experiments/2026-11-28-slice-clusters/device4.sh
set -u -o pipefail
OUT=${OUT:?set OUT to the output folder}
export HPDL_COMMIT=$(cat .commit)
mkdir -p "$OUT/w/res"
exec > >(tee "$OUT/w/device.log") 2>&1
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
timeout 200 build/bench/gemm --mlp --output "$OUT/w/res" > "$OUT/w/gemm_mlp.log" 2>&1; echo "gemm --mlp rc $?"
grep -E "geomean_(auto|best)" "$OUT/w/res/gemm_mlp.csv"
timeout 300 build/bench/mlp --output "$OUT/w/res" > "$OUT/w/mlp.log" 2>&1; echo "mlp rc $?"
cat "$OUT/w/res/mlp_detail.csv"
cd "$OUT" && tar czf runs.tgz w && rm -rf w
