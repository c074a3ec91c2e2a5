#!/usr/bin/env bash
# Two H200s, the last commit: gpu_fp8 (the FP8 MLP takes the same SGD step)
# and gpu_mpi_dp on two ranks and on one. Built on the host for sm_90a,
# carried gzipped in build/c7.
set -u -o pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
B=build/c7/x; mkdir -p $B
for f in build/c7/*.gz; do gunzip -c $f > $B/$(basename $f .gz); chmod +x $B/$(basename $f .gz); done
exec > >(tee "$OUT/check2.log") 2>&1
echo "== gpu_fp8"; timeout 200 $B/gpu_fp8 | tail -n 1; echo "rc=$?"
for np in 2 1; do
  echo "== gpu_mpi_dp, $np ranks"
  timeout 120 mpirun --allow-run-as-root --bind-to none -x NCCL_NVLS_ENABLE -np $np $B/gpu_mpi_dp 2>&1 | tail -n 1; echo "rc=$?"
done
