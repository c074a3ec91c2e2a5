#!/usr/bin/env bash
# Two-GPU run: the data-parallel step with the first layer's reduction started early
# (hpdl_mpi_dp_config.first_layer_early: every delta first, then the first layer's dW, reduced
# on a side stream while the second layer's dW is computed) against the step without it, in
# the same dp_scaling --focus runs (H 2048, b 512 and 3000, f32).
#  1. --algo ipc, IPC grid of 128 blocks, with PyTorch DDP; 2. the same without DDP;
#  3. --algo ipc with a 64-block IPC grid (more SMs left to the GEMM beside it); 4. --algo nccl.
# Binary prebuilt from early.diff applied to ea004b7 (build/exp/dp_scaling, carried); data as .gz.
#   from the repository root, on a machine with 2 GPUs:  OUT=<dir> notes/experiments/2026-11-27-early-reduce/device.sh
set -u -o pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export NCCL_NVLS_ENABLE=0 # NVLink multicast stays off
OUT=${OUT:?set OUT to the output folder}
mkdir -p "$OUT/dp"
exec > >(tee "$OUT/device.log") 2>&1
start=$SECONDS
status=0
step() { echo "== $1 ($((SECONDS - start)) s)"; }
fail() { echo "device.sh: $1"; status=1; }

step machine
nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm --format=csv,noheader
cat .commit 2>/dev/null || true
step data
MNIST_DIR=.gz scripts/data.sh data/fashion-mnist >/dev/null || fail "no Fashion-MNIST"

# $1: tag, $2: IPC blocks, $3: algo, rest: extra flags
dp() {
    local tag=$1 blocks=$2 algo=$3
    shift 3
    mkdir -p "$OUT/dp/$tag"
    step "dp_scaling --focus --algo $algo, IPC blocks $blocks ($tag)"
    HPDL_MPI_IPC_BLOCKS=$blocks timeout 240 mpirun --allow-run-as-root --bind-to none -np 2 -x NCCL_NVLS_ENABLE \
        -x HPDL_MPI_IPC_BLOCKS build/exp/dp_scaling --focus --algo "$algo" --pieces 1 --halve 0 --ctas 8 \
        --prio 1,0 --reps 10 --data data/fashion-mnist --output "$OUT/dp/$tag" "$@" > "$OUT/dp/$tag.log" 2>&1 ||
        fail "dp_scaling $tag"
    grep -E "check:|^ +[0-9]+ " "$OUT/dp/$tag.log"
}
dp ipc128_torch 128 ipc
dp ipc128 128 ipc --no-torch
dp ipc64 64 ipc --no-torch
dp nccl 128 nccl --no-torch
step "done, exit $status"
exit $status
