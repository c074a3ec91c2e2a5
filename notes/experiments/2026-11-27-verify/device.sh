#!/usr/bin/env bash
# One GPU (2026-11-27): the GPU tests the day's library changes touch (gpu_gemm: the splitk rung's
# slice sums; gpu_mlp; gpu_model_parallel on logical devices: one stream a GPU), then bench/mlp,
# whose "f32 warptile" and "f16 mma" rows train on hpdl's own kernels (AUTO) beside the
# cuBLAS-backed rows and PyTorch. Built here (make -j16, sm_90a).
#   OUT=<dir> notes/experiments/2026-11-27-verify/device.sh
set -u -o pipefail
OUT=${OUT:?set OUT}
export HPDL_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
exec > >(tee "$OUT/device.log") 2>&1
start=$SECONDS
step() { echo "== $1 ($((SECONDS - start)) s)"; }
status=0
step "machine, commit $HPDL_COMMIT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
step build
timeout 400 make --no-print-directory -j16 build/gpu/gpu_gemm build/gpu/gpu_mlp build/gpu/gpu_model_parallel \
    build/bench/mlp > "$OUT/build.log" 2>&1 || { echo "build failed"; tail -20 "$OUT/build.log"; exit 1; }
for t in gpu_gemm gpu_mlp gpu_model_parallel; do
    step "test: $t"
    timeout 300 build/gpu/$t 2>&1 | tail -n 4 || { echo "$t failed"; status=1; }
done
step "bench: mlp"
mkdir -p "$OUT/mlp"
timeout 400 build/bench/mlp --output "$OUT/mlp" || { echo "bench/mlp failed"; status=1; }
step "done, exit $status"
exit $status
