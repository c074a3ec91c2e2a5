#!/usr/bin/env bash
# AUTO's IPC threshold by rank count (HPDL_MPI_IPC_AUTO_BYTES_MANY): gpu_mpi_ipc on 4, 3 and 2
# ranks (its AUTO test resolves just at and just above the rank count's threshold), then
# bench/allreduce from 256 KiB to 64 MiB in steps of 2 on 4 and on 3 GPUs: where the IPC rows
# stop beating NCCL. Logs tarred.
#   from the repository root, on a machine with 4 GPUs:  OUT=<dir> notes/experiments/2026-11-28-four-gpus/device2.sh
set -u -o pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export NCCL_NVLS_ENABLE=0 # NVLink multicast stays off
OUT=${OUT:?set OUT to the output folder}
W=$OUT/w
mkdir -p "$W"
exec > >(tee "$W/device.log") 2>&1
start=$SECONDS
status=0
step() { echo "== $1 ($((SECONDS - start)) s)"; }
fail() { echo "device2.sh: $1"; status=1; }
MPIRUN="mpirun --allow-run-as-root --bind-to none --oversubscribe -x NCCL_NVLS_ENABLE -x CUDA_VISIBLE_DEVICES"
export CUDA_VISIBLE_DEVICES=0,1,2,3
step machine
nvidia-smi --query-gpu=index,name --format=csv,noheader
step build
make build/gpu/gpu_mpi_ipc build/bench/allreduce -j2 2>&1 | grep -E "error|warning"; true
for p in 4 3 2; do
    step "gpu_mpi_ipc: $p ranks"
    timeout 120 $MPIRUN -np $p build/gpu/gpu_mpi_ipc > "$W/gpu_mpi_ipc_$p.log" 2>&1 || fail "gpu_mpi_ipc -np $p"
    grep -E "^(ok|FAIL|skip) +test_auto|passed" "$W/gpu_mpi_ipc_$p.log"
done
for p in 4 3; do
    step "allreduce on $p GPUs"
    mkdir -p "$W/allreduce-$p"
    HPDL_RESULTS="$W/allreduce-$p" timeout 150 $MPIRUN -np $p -x HPDL_RESULTS build/bench/allreduce -b 256K -e 64M -f 2 \
        > "$W/allreduce-$p/allreduce.log" 2>&1 || fail "allreduce -np $p"
    grep -E "^# (crossover|IPC rows)" "$W/allreduce-$p/allreduce.log"
done
step "done, status $status"
(cd "$OUT" && tar czf runs.tgz w && rm -rf w)
exit $status
