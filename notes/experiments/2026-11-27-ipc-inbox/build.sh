#!/usr/bin/env bash
# One-shot IPC allreduce with flag-free inboxes (the working tree) against the flagged one-shot
# of 185b50c: builds into build/exp/ the allreduce bench of each (the new one at 2 and 4
# packs a thread per step), the IPC test and dp_scaling of the new one, and dp_scaling of the
# old one.  OLD=<checkout of 185b50c> notes/experiments/2026-11-27-ipc-inbox/build.sh
set -eu
OLD=${OLD:?set OLD to a checkout of the commit before}
MPI="-DHPDL_HAVE_MPI $(mpicc --showme:compile) $(mpicc --showme:link | sed 's/\(-[lLW][^ ]*\)/-Xlinker \1/g')"
NV="nvcc -std=c++17 -I. -O3 -lineinfo -gencode arch=compute_90a,code=sm_90a"
LIBS="-lcublas -lcublasLt -ldl -lnccl -Xlinker -rpath=/usr/local/cuda/lib64"
rm -rf build/exp && mkdir -p build/exp
for u in 2 4; do
    $NV -DHPDL__IPC_UNROLL=$u bench/allreduce.cu -o build/exp/allreduce_u$u $LIBS $MPI &
done
wait
$NV tests/gpu_mpi_ipc.cu -o build/exp/gpu_mpi_ipc $LIBS $MPI &
(cd "$OLD" && $NV bench/allreduce.cu -o "$OLDPWD/build/exp/allreduce_old" $LIBS $MPI)
wait
$NV bench/dp_scaling.cu -o build/exp/dp_scaling $LIBS $MPI &
(cd "$OLD" && $NV bench/dp_scaling.cu -o "$OLDPWD/build/exp/dp_scaling_old" $LIBS $MPI)
wait
strip build/exp/*
ls -la build/exp
