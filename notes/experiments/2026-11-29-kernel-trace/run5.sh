#!/usr/bin/env bash
# Two H200s, the code of e1af273 with gpu_mpi_dp's path check mended:
# gpu_mpi_dp on two ranks, then gpu_mlp and gpu_gemm on GPU 0 (the GEMM
# mirrors' start hook is in every padded mma kernel). Binaries built on the
# host for sm_90a, carried as xz in build/c24.
set -u -o pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
C=build/c24; B=$C/x; W=/tmp/w; mkdir -p $B $W/tests
exec > >(tee "$W/tests/device.log") 2>&1
start=$SECONDS; step() { echo "== $1 ($((SECONDS - start)) s)"; }
for f in $C/*.xz; do xz -dc $f > $B/$(basename $f .xz); chmod +x $B/$(basename $f .xz); done
step "gpu_mpi_dp, two ranks"
timeout 120 mpirun --allow-run-as-root --bind-to none -x NCCL_NVLS_ENABLE -np 2 $B/gpu_mpi_dp \
  > $W/tests/gpu_mpi_dp.log 2>&1; echo "rc=$?" >> $W/tests/gpu_mpi_dp.log; tail -n 2 $W/tests/gpu_mpi_dp.log
for t in gpu_mlp gpu_gemm; do
  step "$t, GPU 0"; CUDA_VISIBLE_DEVICES=0 timeout 240 $B/$t > $W/tests/$t.log 2>&1; echo "rc=$?" >> $W/tests/$t.log
  tail -n 2 $W/tests/$t.log
done
step done; tar czf $OUT/tests.tgz -C $W tests
