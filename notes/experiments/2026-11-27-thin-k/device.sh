#!/usr/bin/env bash
# One GPU (2026-11-27): the splitk rung's thin-K kernel (K <= 16) and AUTO taking it at every size
# gpu_gemm (all tests), compute-sanitizer memcheck on the thin-K test and the MLP products,
# then bench/gemm --mlp twice (each product against cuBLAS in turns).
# Binaries built on the 2-core host (make build/gpu/gpu_gemm build/bench/gemm GPU_CC=90
# NVOPT=-O3), carried.   OUT=<dir> notes/experiments/2026-11-27-thin-k/device.sh
set -u
OUT=${OUT:?set OUT}
export HPDL_COMMIT=$(cat .commit 2>/dev/null)
exec > >(tee "$OUT/device.log") 2>&1
start=$SECONDS
step() { echo "== $1 ($((SECONDS - start)) s)"; }
step machine
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; echo "$HPDL_COMMIT"
step "gpu_gemm"
timeout 240 build/gpu/gpu_gemm 2>&1 | tail -n 30
step "memcheck: thin_k and the MLP products"
for t in thin_k mlp_f16 mlp_f32; do
    timeout 240 compute-sanitizer --tool memcheck build/gpu/gpu_gemm $t 2>&1 | tail -n 3
done
for r in 1 2; do
    step "bench/gemm --mlp, run $r"
    mkdir -p "$OUT/mlp$r"
    timeout 170 build/bench/gemm --mlp --output "$OUT/mlp$r" > "$OUT/mlp$r/bench.log" 2>&1 || echo "bench run $r failed"
    grep -E 'geomean' "$OUT/mlp$r/gemm_mlp.csv" | cut -d, -f1,2 | tr '\n' ' '; echo
    awk -F, '$14 == "auto" && $7 == "f16" { printf "  %s h%s b%s %s %.2f us %.3f\n", $7, $8, $9, $10, $2, $6 }' \
        "$OUT/mlp$r/gemm_mlp_all.csv"
done
step done
