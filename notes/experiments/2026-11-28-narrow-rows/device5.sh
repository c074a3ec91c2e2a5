#!/usr/bin/env bash
# bench/gemm --mlp into res/ for the commit, with the best own rung counting AUTO's sample only
# where AUTO does not take the splitk rung.
#   from the repository root, on one GPU:  OUT=<dir> notes/experiments/2026-11-28-narrow-rows/device5.sh
set -u -o pipefail
OUT=${OUT:?set OUT to the output folder}
export HPDL_COMMIT=$(cat .commit)
mkdir -p "$OUT/w/res"
exec > >(tee "$OUT/w/device.log") 2>&1
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
timeout 150 build/h90/bench/gemm --mlp --output "$OUT/w/res" > "$OUT/w/gemm_mlp.log" 2>&1; echo "gemm --mlp rc $?"
grep -E "geomean_(auto|best)" "$OUT/w/res/gemm_mlp.csv"
cd "$OUT" && tar czf runs.tgz w && rm -rf w
