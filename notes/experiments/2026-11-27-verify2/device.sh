#!/usr/bin/env bash
# One GPU (2026-11-27): the library at the end of the day's GEMM work. gpu_gemm (all tests),
# compute-sanitizer memcheck on the MLP products (f16, bf16, f32) and the Hopper split, then
# bench/gemm --mlp once (the committed gemm_mlp*.csv).
#   OUT=<dir> notes/experiments/2026-11-27-verify2/device.sh
set -u
OUT=${OUT:?set OUT}
export HPDL_COMMIT=$(cat .commit 2>/dev/null)
exec > >(tee "$OUT/device.log") 2>&1
echo "== $(nvidia-smi --query-gpu=name --format=csv,noheader) at $HPDL_COMMIT"
timeout 240 build/gpu/gpu_gemm 2>&1 | tail -n 1
for t in mlp_f16 mlp_bf16 mlp_f32 hopper_split_k; do
    echo "memcheck $t: $(timeout 240 compute-sanitizer --tool memcheck build/gpu/gpu_gemm $t 2>&1 | tail -n 2 | tr '\n' ' ')"
done
mkdir -p "$OUT/mlp"
timeout 170 build/bench/gemm --mlp --output "$OUT/mlp" > "$OUT/mlp/bench.log" 2>&1 || echo "bench failed"
grep -E 'geomean' "$OUT/mlp/gemm_mlp.csv" | cut -d, -f1,2 | tr '\n' ' '; echo
