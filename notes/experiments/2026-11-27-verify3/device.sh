#!/usr/bin/env bash
# Two H200s: tests/gpu_mpi_dp on 2 ranks and on 1; then, on GPU 0 alone, bench/gemm --mlp (the
# 16-bit AUTO rule for K <= 16 and the thin kernel's refactor, not yet timed) and bench/mlp
# (epochs on hpdl's own GEMMs against the cuBLAS-backed ones, PyTorch eager beside them).
# Binaries built on the 2-core host for sm_90a and carried: build/gpu/gpu_mpi_dp,
# build/bench/gemm, build/bench/mlp.
#   from the repository root:  OUT=<dir> notes/experiments/2026-11-27-verify3/device.sh
set -u -o pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
export HPDL_COMMIT=$(cat .commit 2>/dev/null)
OUT=${OUT:?set OUT to the output folder}
exec > >(tee "$OUT/device.log") 2>&1
start=$SECONDS
status=0
step() { echo "== $1 ($((SECONDS - start)) s)"; }
fail() { echo "device.sh: $1"; status=1; }
M="mpirun --allow-run-as-root --bind-to none -x NCCL_NVLS_ENABLE"

step machine
nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm --format=csv,noheader
echo "commit $HPDL_COMMIT"
step "gpu_mpi_dp, 2 ranks then 1"
timeout 120 $M -np 2 build/gpu/gpu_mpi_dp || fail "gpu_mpi_dp -np 2"
timeout 60 $M -np 1 build/gpu/gpu_mpi_dp || fail "gpu_mpi_dp -np 1"
step "bench/gemm --mlp on GPU 0"
mkdir -p "$OUT/res"
CUDA_VISIBLE_DEVICES=0 timeout 240 build/bench/gemm --mlp --output "$OUT/res" > "$OUT/gemm_mlp.log" 2>&1 || fail "gemm --mlp"
grep -A8 "geometric mean" "$OUT/gemm_mlp.log"
step "bench/mlp on GPU 0"
CUDA_VISIBLE_DEVICES=0 timeout 300 build/bench/mlp --output "$OUT/res" > "$OUT/mlp.log" 2>&1 || fail "bench/mlp"
tail -30 "$OUT/mlp.log"
step "done, status $status"
cd "$OUT" && tar czf results.tgz res gemm_mlp.log mlp.log && rm -rf res gemm_mlp.log mlp.log
exit $status
