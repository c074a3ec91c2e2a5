#!/usr/bin/env bash
# Two H200s: the data-parallel step's reduction and update in one kernel, the first layer's
# dW pushed to the peer by its GEMM (hpdl__dp_reduce_sgd_kernel, hpdl__gemm_auto_mirrored).
# Binaries built on the host for sm_90a and carried (build/h90); data from the carried .gz.
# Then the MPI GPU tests on 2 ranks and 1, the single-GPU tests of the GEMM and the MLP
# (the padded mma kernel and the SGD kernel changed), and dp_scaling --focus --algo ipc.
set -u -o pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export NCCL_NVLS_ENABLE=0 # NVLink multicast stays off
O=/tmp/e; mkdir -p $O/focus
exec > >(tee "$O/device.log") 2>&1
B=build/h90
MPIRUN="mpirun --allow-run-as-root --bind-to none -x NCCL_NVLS_ENABLE"
start=$SECONDS
step() { echo "== $1 ($((SECONDS - start)) s)"; }
step machine
nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm --format=csv,noheader
cat .commit 2>/dev/null
step data
MNIST_DIR=.gz scripts/data.sh data/fashion-mnist >/dev/null || echo "no Fashion-MNIST"
step "gpu_mpi_dp -np 2, -np 1"
timeout 90 $MPIRUN -np 2 $B/gpu/gpu_mpi_dp > $O/gpu_mpi_dp_np2.log 2>&1; echo "rc=$?" >> $O/gpu_mpi_dp_np2.log; tail -4 $O/gpu_mpi_dp_np2.log
timeout 60 $MPIRUN -np 1 $B/gpu/gpu_mpi_dp > $O/gpu_mpi_dp_np1.log 2>&1; echo "rc=$?" >> $O/gpu_mpi_dp_np1.log; tail -2 $O/gpu_mpi_dp_np1.log
step "gpu_mpi_ipc -np 2"
timeout 90 $MPIRUN -np 2 $B/gpu/gpu_mpi_ipc > $O/gpu_mpi_ipc_np2.log 2>&1; echo "rc=$?" >> $O/gpu_mpi_ipc_np2.log; tail -2 $O/gpu_mpi_ipc_np2.log
for t in ${SINGLE:-}; do
    step "$t"
    CUDA_VISIBLE_DEVICES=0 timeout 200 $B/gpu/$t > $O/$t.log 2>&1; echo "rc=$?" >> $O/$t.log; tail -2 $O/$t.log
done
step "dp_scaling --focus --algo ipc"
# FULL=1: every overlap setting and the PyTorch DDP anchor (the committed run); else the short list
if [ "${FULL:-0}" = 1 ]; then LISTS=""; else LISTS="--pieces 1 --halve 0 --ctas 8 --prio 1 --no-torch"; fi
HPDL_COMMIT=$(cat .commit 2>/dev/null) timeout ${FOCUS_S:-240} $MPIRUN -np 2 $B/bench/dp_scaling --focus --algo ipc --reps 10 \
    $LISTS --data data/fashion-mnist --output $O/focus > $O/focus/focus.log 2>&1; echo "rc=$?" >> $O/focus/focus.log
grep -vE "^\s*$" $O/focus/focus.log | grep -E "no overlap|pytorch|rc=|check" | tail -16
step done
cd $O && tar czf $OUT/r.tgz .
