#!/usr/bin/env bash
# One GPU, the committed library (at least 3 slices or none): gpu_gemm, bench/gemm --mlp and
# bench/mlp for bench/results/h200/. Binaries built on the host (make GPU_CC=90 NVOPT=-O3), carried.
#   OUT=<dir> notes/experiments/2026-11-27-warptile-split/device2.sh
set -u -o pipefail
OUT=${OUT:?set OUT}
export HPDL_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
exec > >(tee "$OUT/device2.log") 2>&1
start=$SECONDS
step() { echo "== $1 ($((SECONDS - start)) s)"; }
status=0
step "machine, commit $HPDL_COMMIT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
step "test: gpu_gemm"
timeout 200 build/gpu/gpu_gemm 2>&1 | tail -n 2 || { echo "gpu_gemm failed"; status=1; }
step "bench: gemm --mlp"
mkdir -p "$OUT/gemm"
timeout 150 build/bench/gemm --mlp --output "$OUT/gemm" > "$OUT/gemm.log" 2>&1 || { echo "bench/gemm failed"; status=1; }
grep -E "geomean_(auto|splitk|warptile|best_own)" "$OUT/gemm/gemm_mlp.csv" | cut -d, -f1,2
step "bench: mlp"
mkdir -p "$OUT/mlp"
timeout 400 build/bench/mlp --output "$OUT/mlp" > "$OUT/mlp.log" 2>&1 || { echo "bench/mlp failed"; status=1; }
tail -n 12 "$OUT/mlp.log"
tar -C "$OUT" -cf "$OUT/csv.tar" gemm mlp && rm -rf "$OUT/gemm" "$OUT/mlp"
step "done, exit $status"
exit $status
