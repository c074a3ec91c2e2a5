#!/usr/bin/env bash
# Two H200s: two builds of bench/dp_scaling alternating (dp_prev: the code before a change,
# dp_scaling: with it); written for the fused step with flags and the driver's own context
# (inbox never written back) against the one-shot's empty words, and used for later changes;
# three times each, alternating, in one lease; before them, the MPI GPU tests of the new code.
# Binaries built on the host for sm_90a, carried gzipped (build/carry); data from the carried .gz.
set -u -o pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export NCCL_NVLS_ENABLE=0 # NVLink multicast stays off
O=$OUT/r; mkdir -p $O
exec > >(tee "$O/device.log") 2>&1
B=build/h90
MPIRUN="mpirun --allow-run-as-root --bind-to none -x NCCL_NVLS_ENABLE"
start=$SECONDS
step() { echo "== $1 ($((SECONDS - start)) s)"; }
step machine
nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm --format=csv,noheader
step "unpack, data"
for f in dp_prev dp_scaling; do mkdir -p $B/bench && gunzip -c build/carry/$f.gz > $B/bench/$f && chmod +x $B/bench/$f; done
for f in gpu_mpi_dp gpu_mpi_ipc; do [ -f build/carry/$f.gz ] && mkdir -p $B/gpu && gunzip -c build/carry/$f.gz > $B/gpu/$f && chmod +x $B/gpu/$f; done
MNIST_DIR=.gz scripts/data.sh data/fashion-mnist >/dev/null || echo "no Fashion-MNIST"
step "gpu_mpi_dp -np 2, -np 1"
timeout 90 $MPIRUN -np 2 $B/gpu/gpu_mpi_dp > $O/gpu_mpi_dp_np2.log 2>&1; echo "rc=$?" >> $O/gpu_mpi_dp_np2.log; tail -3 $O/gpu_mpi_dp_np2.log
timeout 60 $MPIRUN -np 1 $B/gpu/gpu_mpi_dp > $O/gpu_mpi_dp_np1.log 2>&1; echo "rc=$?" >> $O/gpu_mpi_dp_np1.log; tail -2 $O/gpu_mpi_dp_np1.log
focus() { # binary, log
    timeout ${FOCUS_S:-150} $MPIRUN -np 2 $B/bench/$1 --focus --algo ipc --reps 10 --pieces 1 --halve 0 --ctas 8 --prio 1 \
        --no-torch --data data/fashion-mnist > $O/$2.log 2>&1; echo "rc=$?" >> $O/$2.log
    grep -E "no overlap( |separate)|rc=" $O/$2.log | grep -v v1
}
for i in ${PAIRS:-1 2 3}; do
    step "dp_prev $i"; focus dp_prev prev$i
    step "dp_scaling $i"; focus dp_scaling new$i
done
[ -x $B/gpu/gpu_mpi_ipc ] || exit 0
step "gpu_mpi_ipc -np 2"
timeout 90 $MPIRUN -np 2 $B/gpu/gpu_mpi_ipc > $O/gpu_mpi_ipc_np2.log 2>&1; echo "rc=$?" >> $O/gpu_mpi_ipc_np2.log; tail -2 $O/gpu_mpi_ipc_np2.log
step done
