#!/usr/bin/env bash
# Two-GPU run of the data-parallel driver with the first layer in row blocks
# (hpdl_mpi_dp_config.shard_first_layer): the GPU test against the CPU driver, then
# dp_scaling --focus (H 2048, b 512 and 3000, f32, IPC one-shot for the other layers and for
# the rows without blocks) with PyTorch DDP in the same run; then, on one of the GPUs, gpu_gemm
# (the last GEMM commit, not yet run). Binaries built on the 2-core host for sm_90a and carried
# (build/bench/dp_scaling, build/gpu/gpu_mpi_dp, build/gpu/gpu_gemm); data as .gz.
#   from the repository root, on a machine with 2 GPUs:  OUT=<dir> notes/experiments/2026-11-27-row-blocks/device.sh
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
MPIRUN="mpirun --allow-run-as-root --bind-to none -x NCCL_NVLS_ENABLE"

step machine
nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm --format=csv,noheader
cat .commit 2>/dev/null || true
step data
MNIST_DIR=.gz scripts/data.sh data/fashion-mnist >/dev/null || fail "no Fashion-MNIST"

step "gpu_mpi_dp on 2 ranks, then 1"
timeout 120 $MPIRUN -np 2 build/gpu/gpu_mpi_dp || fail "gpu_mpi_dp -np 2"
timeout 60 $MPIRUN -np 1 build/gpu/gpu_mpi_dp || fail "gpu_mpi_dp -np 1"

step "dp_scaling --focus --algo ipc"
timeout 300 $MPIRUN -np 2 build/bench/dp_scaling --focus --algo ipc --pieces 1 --halve 0 --ctas 8 --prio 1 \
    --reps 10 --data data/fashion-mnist --output "$OUT/dp" > "$OUT/dp/focus.log" 2>&1 || fail "dp_scaling"
grep -E "check:|^ +[0-9]+ |rows are left out|shard" "$OUT/dp/focus.log"

step "gpu_gemm on GPU 0"
CUDA_VISIBLE_DEVICES=0 timeout 150 build/gpu/gpu_gemm > "$OUT/gpu_gemm.log" 2>&1 || fail "gpu_gemm"
tail -3 "$OUT/gpu_gemm.log"

step "done, status $status"
cd "$OUT" && tar czf results.tgz dp gpu_gemm.log && rm -rf dp gpu_gemm.log
exit $status
