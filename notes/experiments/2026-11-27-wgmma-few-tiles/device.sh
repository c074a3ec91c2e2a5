#!/usr/bin/env bash
# One GPU (2026-11-27): the persistent Hopper rung shares out products of fewer tiles than SMs
# and long K by k-steps over more blocks (stream-K over every tile). gpu_gemm (with the new
# 14-tile case), memcheck on the Hopper stream-K tests, then bench/gemm --mlp twice.
# Binaries built on the host (make GPU_CC=90 NVOPT=-O3), carried.
#   OUT=<dir> notes/experiments/2026-11-27-wgmma-few-tiles/device.sh
# Expected (notes/gemm.md, "the MLP's products on hpdl's own kernels"): only f16/bf16 dw_l0 at
# B 3000 change: 784 x 512 x 3000 (14 tiles -> 82 blocks) 0.34 -> ~0.55, 784 x 2048 x 3000
# (56 tiles -> 132 blocks) 0.62 -> ~0.9; f16 AUTO geomean 0.640 -> ~0.65.
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
step "memcheck: gpu_gemm stream_k"
timeout 240 compute-sanitizer --tool memcheck --error-exitcode 9 build/gpu/gpu_gemm stream_k 2>&1 | tail -n 4 || { echo "memcheck: errors or timeout"; status=1; }
for r in 1 2; do
    step "bench: gemm --mlp, run $r"
    mkdir -p "$OUT/run$r"
    timeout 150 build/bench/gemm --mlp --output "$OUT/run$r" > "$OUT/run$r/bench.log" 2>&1 || { echo "bench failed"; status=1; }
    grep -E "geomean_(auto|best_own)" "$OUT/run$r/gemm_mlp.csv" | cut -d, -f1,2
    awk -F, '$10 == "dw_l0" && $9 == 3000 && ($7 == "f16" || $7 == "bf16") && ($14 == "auto" || $14 == "wgmma_persistent") {
        printf "  %s h%s %s %s: %.2f us, cuBLAS %.2f, %.3f\\n", $7, $8, $10, $14, $2, $5, $6 }' "$OUT/run$r/gemm_mlp_all.csv"
done
tar -C "$OUT" -cf "$OUT/runs.tar" run1 run2 && rm -rf "$OUT/run1" "$OUT/run2"
step "done, exit $status"
exit $status
