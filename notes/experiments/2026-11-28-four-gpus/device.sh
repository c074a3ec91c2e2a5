#!/usr/bin/env bash
# The multi-GPU code on four GPUs of one node, first time on real GPUs beyond two:
# the GPU MPI tests with 4 ranks on 4 GPUs, 3 ranks on 3 GPUs and 8 ranks on 4 GPUs (two ranks a
# GPU: NCCL and IPC refused on every rank, AUTO through MPI), the pipeline test, then
# bench/allreduce on 4 and on 2 of the GPUs, and dp_scaling --focus (IPC, no PyTorch) on 4.
#   from the repository root, on a machine with 4 GPUs:  OUT=<dir> notes/experiments/2026-11-28-four-gpus/device.sh
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
nvidia-smi topo -m
step build
make build/gpu/gpu_mpi_ipc build/gpu/gpu_mpi_dp build/gpu/gpu_mpi_tp build/gpu/gpu_model_parallel \
    build/bench/allreduce build/bench/dp_scaling -j6 2>&1 | grep -E "error|warning"; true
step data
MNIST_DIR=.gz scripts/data.sh data/fashion-mnist >/dev/null || fail "no Fashion-MNIST"
for t in gpu_mpi_ipc gpu_mpi_dp gpu_mpi_tp; do
    step "$t: 4 ranks, 4 GPUs"
    CUDA_VISIBLE_DEVICES=0,1,2,3 timeout 180 $MPIRUN -np 4 build/gpu/$t || fail "$t -np 4"
    step "$t: 3 ranks, 3 GPUs"
    CUDA_VISIBLE_DEVICES=0,1,2 timeout 180 $MPIRUN -np 3 build/gpu/$t || fail "$t -np 3"
    step "$t: 8 ranks, 4 GPUs"
    CUDA_VISIBLE_DEVICES=0,1,2,3 timeout 180 $MPIRUN -np 8 build/gpu/$t || fail "$t -np 8"
done
step "gpu_model_parallel"
timeout 180 build/gpu/gpu_model_parallel || fail gpu_model_parallel
for p in 4 2; do
    step "allreduce on $p GPUs"
    mkdir -p "$OUT/allreduce-$p"
    HPDL_RESULTS="$OUT/allreduce-$p" timeout 150 $MPIRUN -np $p -x HPDL_RESULTS build/bench/allreduce -b 4K -e 256M \
        > "$OUT/allreduce-$p/allreduce.log" 2>&1 || fail "allreduce -np $p"
    tail -n 40 "$OUT/allreduce-$p/allreduce.log"
done
step "dp_scaling --focus on 4 GPUs"
mkdir -p "$OUT/dp4"
timeout 200 $MPIRUN -np 4 build/bench/dp_scaling --focus --algo ipc --pieces 1 --halve 0 --ctas 8 --prio 1 \
    --reps 5 --no-torch --data data/fashion-mnist --output "$OUT/dp4" > "$OUT/dp4/focus.log" 2>&1 || fail "dp_scaling -np 4"
tail -n 30 "$OUT/dp4/focus.log"
step "done, status $status"
exit $status
