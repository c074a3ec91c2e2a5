#!/usr/bin/env bash
# Second round (per-block signals again): builds into build/exp/ the allreduce bench with
# 1, 2, 3 and 4 packs a thread per step (blk_u1 .. blk_u4) and with halving steps (each step
# half of what is left of the block's part, at most 2 or 4 packs a thread: h2, h4), and the
# IPC test for u4 and h4.   notes/experiments/2026-11-27-ipc-warps/build2.sh
set -eu
MPI="-DHPDL_HAVE_MPI $(mpicc --showme:compile) $(mpicc --showme:link | sed 's/\(-[lLW][^ ]*\)/-Xlinker \1/g')"
NV="nvcc -std=c++17 -I. -O3 -lineinfo -gencode arch=compute_90a,code=sm_90a"
LIBS="-lcublas -lcublasLt -ldl -lnccl -Xlinker -rpath=/usr/local/cuda/lib64"
rm -rf build/exp && mkdir -p build/exp
for u in 1 2 3 4; do
    $NV -DHPDL__IPC_UNROLL=$u bench/allreduce.cu -o build/exp/allreduce_blk_u$u $LIBS $MPI &
done
wait
for u in 2 4; do
    $NV -DHPDL__IPC_UNROLL=$u -DHPDL__IPC_HALVING=1 bench/allreduce.cu -o build/exp/allreduce_h$u $LIBS $MPI &
done
$NV -DHPDL__IPC_UNROLL=4 tests/gpu_mpi_ipc.cu -o build/exp/gpu_mpi_ipc_u4 $LIBS $MPI &
$NV -DHPDL__IPC_UNROLL=4 -DHPDL__IPC_HALVING=1 tests/gpu_mpi_ipc.cu -o build/exp/gpu_mpi_ipc_h4 $LIBS $MPI &
wait
strip build/exp/*
ls -la build/exp
