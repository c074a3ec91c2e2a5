#!/usr/bin/env bash
# Two-GPU run (2026-11-27): the one-shot IPC allreduce with flag-free inboxes (build.sh) against
# the flagged one-shot before it (old).
#  1. tests/gpu_mpi_ipc.cu on 2 ranks, the new kernel;
#  2. bench/allreduce --ipc-only, 1 .. 16 MiB and the MLP's gradient (6512680 bytes), NCCL
#     called directly in every run: old, new at 2 and 4 packs a thread a step; two rounds,
#     the order rotated;
#  3. bench/dp_scaling --focus --algo ipc with the old and the new kernel, in turns, twice.
# Binaries come prebuilt (build.sh, carried in build/exp); data as .gz (carried).
#   from the repository root, on a machine with 2 GPUs:  OUT=<dir> notes/experiments/2026-11-27-ipc-inbox/device.sh
# Output in $OUT: device.log, allreduce.tar (every CSV), dp.tar (dp_scaling CSVs and logs).
set -u -o pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export NCCL_NVLS_ENABLE=0 # NVLink multicast stays off
OUT=${OUT:?set OUT to the output folder}
SCRATCH=$(mktemp -d)
mkdir -p "$OUT" "$SCRATCH/ar" "$SCRATCH/dp"
exec > >(tee "$OUT/device.log") 2>&1
start=$SECONDS
export HPDL_MPI_IPC_BLOCKS=128
MPIRUN="mpirun --allow-run-as-root --bind-to none -np 2 -x NCCL_NVLS_ENABLE -x HPDL_MPI_IPC_BLOCKS"
status=0
step() { echo "== $1 ($((SECONDS - start)) s)"; }
fail() { echo "device.sh: $1"; status=1; }

step machine
nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm --format=csv,noheader
cat .commit 2>/dev/null || true

step data
MNIST_DIR=.gz scripts/data.sh data/fashion-mnist >/dev/null || fail "no Fashion-MNIST"

step "test: tests/gpu_mpi_ipc.cu on 2 ranks (inboxes)"
timeout 180 $MPIRUN build/exp/gpu_mpi_ipc 2>&1 | tail -n 16 || fail "the IPC test failed or hung"

# $1: binary suffix, $2: tag
bench() {
    local dir="$SCRATCH/ar/$2"
    mkdir -p "$dir/sweep" "$dir/mlp"
    timeout 60 $MPIRUN build/exp/allreduce_$1 -b 1M -e 16M -f 2 --ipc-only --no-check \
        --output "$dir/sweep" > "$dir/sweep.log" 2>&1 || fail "allreduce $2 sweep"
    timeout 60 $MPIRUN build/exp/allreduce_$1 -b 6512680 -e 6512680 --ipc-only --no-check \
        --output "$dir/mlp" > "$dir/mlp.log" 2>&1 || fail "allreduce $2 mlp"
    awk -F, -v tag="$2" '$1 ~ /^(hpdl_ipc_oneshot|nccl_direct)$/ && $2 ~ /^(1048576|2097152|4194304|6512680|8388608|16777216)$/ {
        printf "  %-10s %-17s %9d B  %8.2f us  %7.1f GB/s  %.3fx NCCL\n", tag, $1, $2, $6, $8, $10 }' \
        "$dir/sweep/allreduce_all.csv" "$dir/mlp/allreduce_all.csv" 2>/dev/null
}
step "bench: allreduce, flagged (old) against inboxes, two rounds"
for round in 1 2; do
    if [ $round = 1 ]; then order="old u2 u4"; else order="u4 u2 old"; fi
    for v in $order; do bench "$v" "r${round}_$v"; done
done
tar -C "$SCRATCH/ar" -cf "$OUT/allreduce.tar" .

# $1: binary, $2: tag
dp() {
    mkdir -p "$SCRATCH/dp/$2"
    timeout 150 $MPIRUN build/exp/$1 --focus --algo ipc --pieces 1 --halve 0 --ctas 8 --prio 1 --reps 10 \
        --no-torch --data data/fashion-mnist --output "$SCRATCH/dp/$2" > "$SCRATCH/dp/$2.log" 2>&1 || fail "dp_scaling $2"
    awk -F, -v tag="$2" 'NR > 1 && $1 ~ /^no overlap/ { printf "  %-10s %-22s b %5s  t1 %7.3f  tp %7.3f  compute %7.3f  comm %6.3f  E %.4f\n",
        tag, $1, $3, $11, $12, $14, $15, $17 }' "$SCRATCH/dp/$2"/dp_scaling_focus*.csv 2>/dev/null
}
step "bench: dp_scaling --focus --algo ipc, old and new in turns"
dp dp_scaling_old old1
dp dp_scaling new1
dp dp_scaling new2
dp dp_scaling_old old2
tar -C "$SCRATCH/dp" -cf "$OUT/dp.tar" .
rm -rf "$SCRATCH"
step "done, exit $status"
exit $status
