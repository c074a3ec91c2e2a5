#!/usr/bin/env bash
# Two H200s: gpu_mpi_dp on one rank and on two after the graph cache's key
# took the model's parameter buffer too. The binary built on the host for
# sm_90a, carried as xz in build/c28.
set -u -o pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
C=build/c28; B=$C/x; W=/tmp/w; mkdir -p $B $W/tests2
xz -dc $C/gpu_mpi_dp.xz > $B/gpu_mpi_dp; chmod +x $B/gpu_mpi_dp
for n in 1 2; do
  echo "== gpu_mpi_dp, $n rank(s)"
  timeout 120 mpirun --allow-run-as-root --bind-to none -x NCCL_NVLS_ENABLE -np $n $B/gpu_mpi_dp \
    > $W/tests2/gpu_mpi_dp_$n.log 2>&1; echo "rc=$?" >> $W/tests2/gpu_mpi_dp_$n.log; tail -n 2 $W/tests2/gpu_mpi_dp_$n.log
done
tar czf $OUT/tests2.tgz -C $W tests2
