#!/usr/bin/env bash
# The GPU MPI tests with one rank a GPU, and with more ranks than GPUs (NCCL refused before it
# sees the ranks, AUTO falling back to MPI): 2 ranks on 2 GPUs, 3 ranks on 2 GPUs, 2 ranks on 1
# GPU (CUDA_VISIBLE_DEVICES=0). Built there.
#   from the repository root, on a machine with 2 GPUs:  OUT=<dir> notes/experiments/2026-11-28-shared-gpus/device.sh
set -u -o pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export NCCL_NVLS_ENABLE=0 # NVLink multicast stays off
OUT=${OUT:?set OUT to the output folder}
mkdir -p "$OUT"
exec > >(tee "$OUT/device.log") 2>&1
start=$SECONDS
status=0
step() { echo "== $1 ($((SECONDS - start)) s)"; }
fail() { echo "device.sh: $1"; status=1; }
MPIRUN="mpirun --allow-run-as-root --bind-to none --oversubscribe -x NCCL_NVLS_ENABLE -x CUDA_VISIBLE_DEVICES"

step machine
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader
step build
make build/gpu/gpu_mpi_ipc build/gpu/gpu_mpi_dp build/gpu/gpu_mpi_tp -j3 2>&1 | grep -E "error|warning"; true
for t in gpu_mpi_ipc gpu_mpi_dp gpu_mpi_tp; do
    step "$t: 2 ranks, 2 GPUs"
    CUDA_VISIBLE_DEVICES=0,1 timeout 180 $MPIRUN -np 2 build/gpu/$t || fail "$t -np 2"
    step "$t: 3 ranks, 2 GPUs"
    CUDA_VISIBLE_DEVICES=0,1 timeout 180 $MPIRUN -np 3 build/gpu/$t || fail "$t -np 3"
    step "$t: 2 ranks, 1 GPU"
    CUDA_VISIBLE_DEVICES=0 timeout 180 $MPIRUN -np 2 build/gpu/$t || fail "$t -np 2, one GPU"
done
step "done, status $status"
exit $status
