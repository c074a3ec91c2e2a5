#!/usr/bin/env bash
# Two GPUs, one call (2026-11-26): the pushed IPC allreduce's run
# (notes/experiments/2026-11-26-ipc-speed/device.sh), then the pipelines on 2 GPUs
# (bench/model_parallel, DEPTH 6/12/20/24, GPipe and 1F1B) and tensor against data parallelism
# (bench/dp_scaling --tp). Binaries built on the host for sm_90a (make B=build90 GPU_CC=90 ...):
# build90/gpu/{gpu_mpi_ipc,gpu_model_parallel,gpu_mpi_tp}, build90/bench/{allreduce,dp_scaling,model_parallel};
# the IPC script's make finds them copied into build/ and up to date.
# Output: device.log, ipc.tar.gz (the IPC script's 8 files), pipelines.tar.gz.
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
export HPDL_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
O=${OUT:?}; W=$(mktemp -d); mkdir -p $W/ipc $W/pipelines/g2 $W/pipelines/tp
exec > >(tee $O/device.log) 2>&1
start=$SECONDS
at() { echo "== $1 ($((SECONDS-start)) s)"; }
for f in gpu/gpu_mpi_ipc bench/allreduce bench/dp_scaling; do mkdir -p build/${f%/*}; cp build90/$f build/$f; touch build/$f; done
MNIST_DIR=.gz scripts/data.sh data/fashion-mnist > /dev/null 2>&1
at "IPC allreduce"
OUT=$W/ipc timeout 330 bash notes/experiments/2026-11-26-ipc-speed/device.sh > /dev/null 2>&1
echo "IPC script exit $?"; grep -E "^==|passed|x$|failed|E " $W/ipc/device.log | tail -60
MPI="mpirun --allow-run-as-root --bind-to none -np 2 -x NCCL_NVLS_ENABLE"
at "gpu_model_parallel, gpu_mpi_tp"
timeout 60 build90/gpu/gpu_model_parallel 2>&1 | tail -3
timeout 60 $MPI build90/gpu/gpu_mpi_tp 2>&1 | tail -3
at "model_parallel, 2 GPUs"
timeout 110 build90/bench/model_parallel --gpus 2 --depth 6,12,20,24 --micro 1,4,8 --output $W/pipelines/g2 2>&1 | tail -30
at "dp_scaling --tp"
timeout $((580 - (SECONDS-start))) $MPI build90/bench/dp_scaling --tp --reps 3 --output $W/pipelines/tp 2>&1 | tail -25
tar -czf $O/ipc.tar.gz -C $W ipc; tar -czf $O/pipelines.tar.gz -C $W pipelines
at "done"
