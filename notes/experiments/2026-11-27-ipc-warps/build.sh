#!/usr/bin/env bash
# Builds (on a host with nvcc and mpicc, for sm_90a) the binaries that device.sh runs, into
# build/exp/: the allreduce bench with per-warp one-shot signals at 1, 2 and 4 packs a thread
# per step, the IPC test, dp_scaling; and, from the commit before the change (OLD, a git
# worktree path), the allreduce bench and dp_scaling with per-block signals.
#   OLD=/tmp/old notes/experiments/2026-11-27-ipc-warps/build.sh
set -eu
OLD=${OLD:?a worktree of the commit before the change}
MPI="-DHPDL_HAVE_MPI $(mpicc --showme:compile) $(mpicc --showme:link | sed 's/\(-[lLW][^ ]*\)/-Xlinker \1/g')"
NV="nvcc -std=c++17 -I. -O3 -lineinfo -gencode arch=compute_90a,code=sm_90a"
LIBS="-lcublas -lcublasLt -ldl -lnccl -Xlinker -rpath=/usr/local/cuda/lib64"
mkdir -p build/exp
for u in 1 2 4; do
    $NV -DHPDL__IPC_UNROLL=$u bench/allreduce.cu -o build/exp/allreduce_u$u $LIBS $MPI &
done
$NV tests/gpu_mpi_ipc.cu -o build/exp/gpu_mpi_ipc $LIBS $MPI &
wait
$NV bench/dp_scaling.cu -o build/exp/dp_scaling $LIBS $MPI &
(cd "$OLD" && $NV bench/allreduce.cu -o "$OLDPWD/build/exp/allreduce_old" $LIBS $MPI)
wait
strip build/exp/*
ls -la build/exp
