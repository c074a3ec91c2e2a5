#!/usr/bin/env bash
# The two-GPU run of device.sh cut to ~4.5 minutes (the device time left on 2026-11-26): the IPC
# test, bench/allreduce once (grid 128, 256 KiB .. 64 MiB, NCCL beside), the pipelines at DEPTH 24
# (naive, GPipe and 1F1B at m = 4, 8), data-parallel E with NCCL and with IPC (--focus), and
# tensor against data parallelism (--tp). Host-built binaries in build90/ (sm_90a).
# Output: device.log, results.tar.gz.
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
export HPDL_COMMIT=$(cat .commit 2>/dev/null || echo unknown) HPDL_MPI_IPC_BLOCKS=128
O=${OUT:?}; W=$(mktemp -d)/two-gpu; mkdir -p $W/ar $W/mp $W/dp_nccl $W/dp_ipc $W/tp
exec > >(tee $O/device.log) 2>&1
start=$SECONDS
at() { echo "== $1 ($((SECONDS-start)) s)"; }
t() { local left=$((265 - (SECONDS-start))); [ $left -lt 5 ] && { echo "skipped: no time left"; return 124; }
      timeout $(( $1 < left ? $1 : left )) "${@:2}"; }
MPI="mpirun --allow-run-as-root --bind-to none -np 2 -x NCCL_NVLS_ENABLE -x HPDL_MPI_IPC_BLOCKS -x HPDL_RESULTS"
nvidia-smi --query-gpu=index,name --format=csv,noheader
(MNIST_DIR=.gz scripts/data.sh data/fashion-mnist > /dev/null 2>&1) &
data=$!
at "gpu_mpi_ipc"; t 40 $MPI build90/gpu/gpu_mpi_ipc 2>&1 | tail -4
at "allreduce"; HPDL_RESULTS=$W/ar t 50 $MPI build90/bench/allreduce -b 256K -e 64M -f 2 --ipc-only --no-check 2>&1 | tail -4
awk -F, '$1 ~ /^(hpdl_ipc|hpdl_auto|nccl_direct)/ && ($2 == 1048576 || $2 == 4194304 || $2 == 8388608 || $2 == 16777216) {
    printf "  %-18s %9d B  %8.2f us  %7.1f GB/s  %.2fx\n", $1, $2, $6, $8, $10 }' $W/ar/allreduce_all.csv
at "model_parallel DEPTH 24"; t 50 build90/bench/model_parallel --gpus 2 --depth 24 --micro 1,4,8 --output $W/mp 2>&1 | tail -14
wait $data
for algo in ipc nccl; do
    at "dp_scaling --focus --algo $algo"
    HPDL_RESULTS=$W/dp_$algo t 50 $MPI build90/bench/dp_scaling --focus --algo $algo --reps 3 --output $W/dp_$algo 2>&1 | tail -8
done
at "dp_scaling --tp"; HPDL_RESULTS=$W/tp t 60 $MPI build90/bench/dp_scaling --tp --reps 3 --output $W/tp 2>&1 | tail -14
tar -czf $O/results.tar.gz -C ${W%/two-gpu} two-gpu
at "done"
