#!/usr/bin/env bash
# One GPU (2026-11-27): the warptile rung with K split where its tiles leave SMs idle. gpu_gemm
# (every test), memcheck on its MLP-product tests and on gpu_model_parallel (the interleaved
# schedules on logical devices), then bench/gemm --mlp twice (run-to-run spread). Binaries built on
# the host (make GPU_CC=90 NVOPT=-O3), carried.
#   OUT=<dir> notes/experiments/2026-11-27-warptile-split/device.sh
# Expected: warptile's own row gains on the products with few tiles and long K (fwd_l0 512 x 2048
# x 784: 64 tiles, 4 slices; 3000 x 512 x 784: 2 slices; dw_l0 784 x 2048 x B >= 512: 2 slices),
# and AUTO with them (it takes warptile at >= 2^20 f32 outputs): fwd_l0 h2048 b512 0.39 -> ~0.7,
# dw_l0 h2048 b3000 0.60 -> ~0.8; f32 AUTO geomean 0.83 -> ~0.85.
set -u -o pipefail
OUT=${OUT:?set OUT}
export HPDL_COMMIT=$(cat .commit 2>/dev/null || echo unknown) HPDL_TEST_SMALL=1
exec > >(tee "$OUT/device.log") 2>&1
start=$SECONDS
step() { echo "== $1 ($((SECONDS - start)) s)"; }
status=0
step "machine, commit $HPDL_COMMIT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
step "test: gpu_gemm"
timeout 200 build/gpu/gpu_gemm 2>&1 | tail -n 3 || { echo "gpu_gemm failed"; status=1; }
step "memcheck: gpu_gemm mlp"
timeout 240 compute-sanitizer --tool memcheck --error-exitcode 9 build/gpu/gpu_gemm mlp 2>&1 | tail -n 4 || { echo "memcheck gpu_gemm: errors or timeout"; status=1; }
step "memcheck: gpu_model_parallel"
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 build/gpu/gpu_model_parallel 2>&1 | tail -n 4 || { echo "memcheck gpu_model_parallel: errors or timeout"; status=1; }
for r in 1 2; do
    step "bench: gemm --mlp, run $r"
    mkdir -p "$OUT/run$r"
    timeout 150 build/bench/gemm --mlp --output "$OUT/run$r" > "$OUT/run$r/bench.log" 2>&1 || { echo "bench failed"; status=1; }
    grep -E "geomean_(auto|splitk|warptile|best_own)" "$OUT/run$r/gemm_mlp.csv" | cut -d, -f1,2
done
step "done, exit $status"
exit $status
