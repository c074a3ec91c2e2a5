#!/usr/bin/env bash
# At the commit in .commit: the capture repro against the build before 5d637ec (build/exp/repro_old,
# expected to fail) and after (repro_new); gpu_gemm; then the committed run: bench/gemm --mlp
# (f32, f16, bf16) and bench/mlp (with PyTorch) into res/. Everything tarred.
#   from the repository root, on one GPU:  OUT=<dir> notes/experiments/2026-11-28-slice-clusters/device2.sh
set -u -o pipefail
OUT=${OUT:?set OUT to the output folder}
export HPDL_COMMIT=$(cat .commit)
mkdir -p "$OUT/w/res"
exec > >(tee "$OUT/w/device.log") 2>&1
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
for v in old new; do echo "-- repro $v"; timeout 60 build/exp/repro_$v; echo "rc $?"; done
timeout 200 build/gpu/gpu_gemm > "$OUT/w/gpu_gemm.log" 2>&1; echo "gpu_gemm rc $?"
grep -E "split|passed" "$OUT/w/gpu_gemm.log"
timeout 200 build/bench/gemm --mlp --output "$OUT/w/res" > "$OUT/w/gemm_mlp.log" 2>&1; echo "gemm --mlp rc $?"
grep -E "geomean" "$OUT/w/res/gemm_mlp.csv"
timeout 300 build/bench/mlp --output "$OUT/w/res" > "$OUT/w/mlp.log" 2>&1; echo "mlp rc $?"
cat "$OUT/w/res/mlp_detail.csv"
cd "$OUT" && tar czf runs.tgz w && rm -rf w
