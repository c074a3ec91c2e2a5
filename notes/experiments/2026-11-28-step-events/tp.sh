#!/usr/bin/env bash
# Two H200s: the GPU tensor-parallel driver timing every 8th step and the last (dp_scaling)
# against every step (dp_prev, b84fac1): gpu_mpi_tp on 2 ranks and 1, then dp_scaling --tp
# alternating, twice each, in one lease. Binaries built on the host for sm_90a, carried gzipped.
set -u -o pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export NCCL_NVLS_ENABLE=0 # NVLink multicast stays off
O=$OUT/r; mkdir -p $O
exec > >(tee "$O/device.log") 2>&1
B=build/h90
MPIRUN="mpirun --allow-run-as-root --bind-to none -x NCCL_NVLS_ENABLE"
mkdir -p $B/bench $B/gpu
for f in dp_prev dp_scaling; do gunzip -c build/carry/$f.gz > $B/bench/$f; done
gunzip -c build/carry/gpu_mpi_tp.gz > $B/gpu/gpu_mpi_tp; chmod +x $B/bench/* $B/gpu/*
MNIST_DIR=.gz scripts/data.sh data/fashion-mnist >/dev/null || echo "no Fashion-MNIST"
timeout 90 $MPIRUN -np 2 $B/gpu/gpu_mpi_tp > $O/gpu_mpi_tp_np2.log 2>&1; echo "rc=$?" >> $O/gpu_mpi_tp_np2.log; tail -2 $O/gpu_mpi_tp_np2.log
timeout 60 $MPIRUN -np 1 $B/gpu/gpu_mpi_tp > $O/gpu_mpi_tp_np1.log 2>&1; echo "rc=$?" >> $O/gpu_mpi_tp_np1.log; tail -2 $O/gpu_mpi_tp_np1.log
for i in 1 2; do
    for b in dp_prev dp_scaling; do
        echo "== $b $i"
        timeout 150 $MPIRUN -np 2 $B/bench/$b --tp --reps 3 --data data/fashion-mnist --output $O/$b$i > $O/$b$i.log 2>&1
        echo "rc=$?" >> $O/$b$i.log; grep -E "^ *(512|2048) " $O/$b$i.log | head -14
    done
done
