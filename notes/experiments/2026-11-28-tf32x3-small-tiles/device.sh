#!/usr/bin/env bash
# f32 3xTF32 in 64 x 64 tiles where 128 x 64 ones would run fewer blocks than SMs (784 x 512 x 128,
# the MLP's first-layer weight gradient at H 512, batch 128): gpu_gemm at the change, then
# bench/gemm --mlp f32 of the build before (build/exp/gemm_prev) and after, in turns, two rounds;
# the step probe (notes/experiments/2026-11-28-step-overhead) after; bench/mlp after.
#   from the repository root, on one GPU:  OUT=<dir> notes/experiments/2026-11-28-tf32x3-small-tiles/device.sh
set -u -o pipefail
OUT=${OUT:?set OUT to the output folder}
mkdir -p "$OUT"
exec > >(tee "$OUT/device.log") 2>&1
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
timeout 200 build/gpu/gpu_gemm > "$OUT/gpu_gemm.log" 2>&1; echo "gpu_gemm rc $?"; tail -1 "$OUT/gpu_gemm.log"
for r in 1 2; do
    for v in prev new; do
        bin=build/bench/gemm; [ $v = prev ] && bin=build/exp/gemm_prev
        mkdir -p "$OUT/$v$r"
        timeout 120 $bin --mlp --precision f32 --output "$OUT/$v$r" > "$OUT/$v$r/gemm.log" 2>&1 || echo "gemm $v$r failed"
        grep -E "geomean" "$OUT/$v$r/gemm_mlp.csv" | grep -E "auto|best" | sed "s/^/$v$r /"
        grep -E "f32_h512_b(32|128|512)_dw_l0_auto" "$OUT/$v$r/gemm_mlp_all.csv" | cut -d, -f1-6 | sed "s/^/$v$r /"
    done
done
for c in "f32 512 128" "f32 512 32" "f32 512 512" "f32 2048 128"; do build/exp/probe_step_small $c; done > "$OUT/probe_step.log" 2>&1
grep -E "^variant|^cublas|^own" "$OUT/probe_step.log"
timeout 300 build/bench/mlp --output "$OUT/mlp" > "$OUT/mlp.log" 2>&1; echo "mlp rc $?"
cat "$OUT/mlp/mlp_detail.csv" 2>/dev/null
