#!/usr/bin/env bash
# One GPU, the committed state: gpu_gemm (and memcheck on the f32 MLP products, split 3xTF32
# included), bench/gemm --mlp (every type), the 4096^3 f32 rungs, bench/mlp. Binaries prebuilt
# in build/exp (GPU_CC=90 NVOPT=-O3), carried.
#   from the repository root:  OUT=<dir> notes/experiments/2026-11-27-tf32x3/device5.sh
set -u -o pipefail
OUT=${OUT:?set OUT to the output folder}
mkdir -p "$OUT/res" "$OUT/sq"
exec > >(tee "$OUT/device.log") 2>&1
export HPDL_COMMIT=$(cat .commit 2>/dev/null)
echo "== $(nvidia-smi --query-gpu=name --format=csv,noheader) at $HPDL_COMMIT"
timeout 200 build/exp/gpu_gemm 2>&1 | grep -v "^ok"
echo "memcheck mlp_f32: $(timeout 200 compute-sanitizer --tool memcheck build/exp/gpu_gemm mlp_f32 2>&1 | tail -n 2 | tr '\n' ' ')"
timeout 200 build/exp/gemm --mlp --output "$OUT/res" > "$OUT/gemm_mlp.log" 2>&1
grep -E "geomean|^ +(auto|splitk|warptile|mma|wgmma_persistent|best_own) " "$OUT/gemm_mlp.log"
timeout 100 build/exp/gemm --shape 4096x4096x4096 --precision f32 --output "$OUT/sq" > "$OUT/sq.log" 2>&1
grep -E "cublas|mma|warptile" "$OUT/sq.log"
timeout 300 build/exp/mlp --output "$OUT/res" > "$OUT/mlp.log" 2>&1
tail -n 12 "$OUT/mlp.log"
tar -C "$OUT" -cf "$OUT/res.tar" res sq && rm -rf "$OUT/res" "$OUT/sq"
