#!/usr/bin/env bash
# Two H100s: the MPI GPU tests after the single-GPU changes of 2026-11-28 (column sums in runs,
# the loss kernel's bias gradient, the last-block helper, the fused bias + ReLU), on 2 ranks
# and 1, then dp_scaling --focus (H 2048, b 512 and 3000, f32, IPC one-shot) with its PyTorch
# DDP anchor. Binaries built there (with them the tree and the data would not fit one carry);
# data from .gz.
set -u -o pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export NCCL_NVLS_ENABLE=0 # NVLink multicast stays off
O=/tmp/e; mkdir -p $O/focus
exec > >(tee "$O/device.log") 2>&1
B=build
MPIRUN="mpirun --allow-run-as-root --bind-to none -x NCCL_NVLS_ENABLE"
start=$SECONDS
step() { echo "== $1 ($((SECONDS - start)) s)"; }
step machine
nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm --format=csv,noheader
nvidia-smi topo -m | head -4
cat .commit
step build
make -j16 $B/gpu/gpu_mpi_dp $B/gpu/gpu_mpi_ipc $B/bench/dp_scaling 2>&1 | grep -E "error|warning"
step data
MNIST_DIR=.gz scripts/data.sh data/fashion-mnist >/dev/null || echo "no Fashion-MNIST"
step "gpu_mpi_dp -np 2, -np 1"
timeout 120 $MPIRUN -np 2 $B/gpu/gpu_mpi_dp > $O/gpu_mpi_dp_np2.log 2>&1; echo "rc=$?" >> $O/gpu_mpi_dp_np2.log; tail -2 $O/gpu_mpi_dp_np2.log
timeout 60 $MPIRUN -np 1 $B/gpu/gpu_mpi_dp > $O/gpu_mpi_dp_np1.log 2>&1; echo "rc=$?" >> $O/gpu_mpi_dp_np1.log; tail -2 $O/gpu_mpi_dp_np1.log
step "gpu_mpi_ipc -np 2"
timeout 120 $MPIRUN -np 2 $B/gpu/gpu_mpi_ipc > $O/gpu_mpi_ipc_np2.log 2>&1; echo "rc=$?" >> $O/gpu_mpi_ipc_np2.log; tail -2 $O/gpu_mpi_ipc_np2.log
step "dp_scaling --focus --algo ipc (with PyTorch DDP)"
HPDL_COMMIT=$(cat .commit) timeout 300 $MPIRUN -np 2 $B/bench/dp_scaling --focus --algo ipc --reps 10 \
    --data data/fashion-mnist --output $O/focus > $O/focus/focus.log 2>&1; echo "rc=$?" >> $O/focus/focus.log
grep -vE "^\s*$" $O/focus/focus.log | tail -25
step done
cd $O && tar czf $OUT/r.tgz .
