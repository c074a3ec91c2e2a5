#!/usr/bin/env bash
# Two blocks an SM for the IPC one-shot: build/ipc_b256u2 (HPDL__IPC_MAX_BLOCKS 256, blocks capped
# at 2 x SMs, steps of UNROLL 2) and build/ipc_b256u1 (UNROLL 1), against the library's binary, at
# 128-256 blocks; the IPC test first at 256 blocks. Two GPUs, $OUT set; about 1 minute.
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
O=${OUT:?set OUT}
MPIRUN="mpirun --allow-run-as-root --bind-to none -np 2 -x NCCL_NVLS_ENABLE -x HPDL_RESULTS -x HPDL_MPI_IPC_BLOCKS"
nvidia-smi --query-gpu=index,name --format=csv,noheader | tee $O/sweep.txt
HPDL_MPI_IPC_BLOCKS=256 timeout 120 $MPIRUN build/ipc_b256u2/gpu_mpi_ipc > $O/gpu_mpi_ipc_256.log 2>&1
echo "gpu_mpi_ipc at 256 blocks rc=$? $(tail -1 $O/gpu_mpi_ipc_256.log)" | tee -a $O/sweep.txt
run() { # $1 name, $2 binary, $3 blocks, $4 round
  mkdir -p $O/r/$1_$4
  HPDL_MPI_IPC_BLOCKS=$3 HPDL_RESULTS=$O/r/$1_$4 timeout 30 $MPIRUN $2 -b 1M -e 16M -f 2 --ipc-only --no-check > /dev/null 2>&1
  awk -F, -v run="$1_$4" '$1 ~ /^(hpdl_ipc_oneshot|nccl_direct)$/ && ($2 == 1048576 || $2 == 4194304 || $2 == 8388608 || $2 == 16777216) {
      printf "%-14s %-17s %9d %8.2f us %.3fx\n", run, $1, $2, $6, $10 }' $O/r/$1_$4/allreduce_all.csv | tee -a $O/sweep.txt
}
for r in 1 2; do
  run lib_b128 build/bench/allreduce 128 $r
  run u2_b132 build/ipc_b256u2/allreduce 132 $r
  run u2_b192 build/ipc_b256u2/allreduce 192 $r
  run u2_b256 build/ipc_b256u2/allreduce 256 $r
  run u1_b256 build/ipc_b256u1/allreduce 256 $r
done
cd $O && tar czf r.tgz r gpu_mpi_ipc_256.log && rm -rf r gpu_mpi_ipc_256.log
