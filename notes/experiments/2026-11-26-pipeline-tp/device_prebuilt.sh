#!/usr/bin/env bash
# The 1F1B / tensor-parallel run of device.sh with binaries built on the host (build90/, sm_90a),
# bounded to ~5 minutes: tests, model_parallel on 2 GPUs, dp_scaling --tp.
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
export HPDL_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
O=${OUT:?}; mkdir -p $O/g2 $O/tp
exec > >(tee $O/device.log) 2>&1
start=$SECONDS
nvidia-smi --query-gpu=index,name --format=csv,noheader
MPI="mpirun --allow-run-as-root --bind-to none -np 2 -x NCCL_NVLS_ENABLE"
(MNIST_DIR=.gz scripts/data.sh data/fashion-mnist > /dev/null 2>&1) &
echo "== gpu_model_parallel"; timeout 60 build90/gpu/gpu_model_parallel 2>&1 | tail -15
echo "== gpu_mpi_tp"; timeout 60 $MPI build90/gpu/gpu_mpi_tp 2>&1 | tail -8
wait
echo "== model_parallel 2 GPUs ($((SECONDS-start)) s)"
timeout 120 build90/bench/model_parallel --gpus 2 --depth 6,12,20,24 --micro 4,8,16 --output $O/g2 2>&1 | tail -30
echo "== dp_scaling --tp ($((SECONDS-start)) s)"
timeout $((290 - (SECONDS-start))) $MPI build90/bench/dp_scaling --tp --reps 3 --output $O/tp 2>&1 | tail -25
echo "== total $((SECONDS-start)) s"
