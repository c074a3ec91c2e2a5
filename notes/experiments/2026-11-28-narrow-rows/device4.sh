#!/usr/bin/env bash
# After the splitk workspace's release (d76a34b) and bench/gemm's best-own fix: gpu_gemm,
# gpu_cnn and gpu_matpow (the model, CNN and lane destroys give the workspace back), then
# bench/gemm --mlp twice (the first into res/ for the commit, the second for the spread).
#   from the repository root, on one GPU:  OUT=<dir> notes/experiments/2026-11-28-narrow-rows/device4.sh
set -u -o pipefail
OUT=${OUT:?set OUT to the output folder}
export HPDL_COMMIT=$(cat .commit)
B=build/h90
mkdir -p "$OUT/w/res" "$OUT/w/res2"
exec > >(tee "$OUT/w/device.log") 2>&1
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
for t in gpu_gemm gpu_cnn gpu_matpow; do
  timeout 150 $B/gpu/$t > "$OUT/w/$t.log" 2>&1; echo "$t rc $?"; grep -E "FAIL|passed" "$OUT/w/$t.log" | tail -3
done
timeout 150 $B/bench/gemm --mlp --output "$OUT/w/res" > "$OUT/w/gemm_mlp.log" 2>&1; echo "gemm --mlp rc $?"
grep -E "geomean_(auto|best)" "$OUT/w/res/gemm_mlp.csv"
timeout 150 $B/bench/gemm --mlp --output "$OUT/w/res2" > "$OUT/w/gemm_mlp2.log" 2>&1; echo "gemm --mlp (2) rc $?"
grep -E "geomean_(auto|best)" "$OUT/w/res2/gemm_mlp.csv"
cd "$OUT" && tar czf runs.tgz w && rm -rf w
