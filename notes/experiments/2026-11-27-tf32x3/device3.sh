#!/usr/bin/env bash
# One GPU: AUTO takes the 3xTF32 mma rung for f32 where its tiles fill the GPU. Builds on the
# machine (16 cores) every single-GPU test and bench/gemm, bench/mlp; runs the GPU tests, then
# bench/gemm --mlp (every type) and bench/mlp (epochs on cuBLAS, on hpdl's own GEMMs, PyTorch).
#   from the repository root:  OUT=<dir> notes/experiments/2026-11-27-tf32x3/device3.sh
set -u -o pipefail
OUT=${OUT:?set OUT to the output folder}
mkdir -p "$OUT/res"
exec > >(tee "$OUT/device.log") 2>&1
export HPDL_COMMIT=$(cat .commit 2>/dev/null)
start=$SECONDS
step() { echo "== $1 ($((SECONDS - start)) s)"; }
step "machine: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader) at $HPDL_COMMIT"
tests=$(ls tests/gpu_*.cu | grep -v mpi | sed 's|tests/\(.*\)\.cu|build/gpu/\1|')
step build
make -j16 $tests build/bench/gemm build/bench/mlp GPU_CC=90 NVOPT=-O3 > "$OUT/build.log" 2>&1 || { tail -n 30 "$OUT/build.log"; exit 1; }
step "GPU tests"
for t in $tests; do echo "$t: $(timeout 300 $t 2>&1 | tail -n 1)"; done
step "bench/gemm --mlp"
timeout 200 build/bench/gemm --mlp --output "$OUT/res" > "$OUT/gemm_mlp.log" 2>&1; grep -E "geomean|best_own|^ +(auto|splitk|warptile|mma|wgmma_persistent) " "$OUT/gemm_mlp.log"
step "bench/mlp"
timeout 400 build/bench/mlp --output "$OUT/res" > "$OUT/mlp.log" 2>&1; tail -n 14 "$OUT/mlp.log"
tar -C "$OUT" -cf "$OUT/res.tar" res && rm -rf "$OUT/res"
step done
