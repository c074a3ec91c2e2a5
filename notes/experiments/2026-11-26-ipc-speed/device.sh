#!/usr/bin/env bash
# The pushed, pipelined IPC one-shot (hpdl_mpi.h, 2026-11-26) on a 2-GPU
# machine, one rank per GPU: builds the IPC test, bench/allreduce and
# bench/dp_scaling; runs the test; the allreduce bench (f32, in place,
# 4 B .. 64 MiB by factors of 2, NCCL called directly beside the IPC rows)
# with the default grid (128 blocks), again with 64 blocks, with 128 but no
# programmatic dependent launch (HPDL_MPI_IPC_EARLY=0), and once more as the
# first (run-to-run spread); then data-parallel E of the MLP (H 2048, b 512
# and 3000 per GPU, --focus rows) with NCCL and with IPC.
#   from the repository root:  OUT=<dir> notes/experiments/2026-11-26-ipc-speed/device.sh
# Outputs in $OUT (8 files): device.log; allreduce_all.csv (+ .context),
# allreduce_all_blocks64.csv, allreduce_all_no_early.csv,
# allreduce_all_repeat.csv; dp_focus_nccl.csv, dp_focus_ipc.csv. Every step has a time limit (a kernel waiting for a
# peer's flag forever ends as a failure, not a stall); about 5 minutes.
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export NCCL_NVLS_ENABLE=0 # NVLink multicast stays off: it can take a shared host's GPUs out of service
OUT=${OUT:-bench/results/gpu}
SCRATCH=$(mktemp -d)
mkdir -p "$OUT"
export HPDL_RESULTS=$SCRATCH HPDL_MPI_IPC_BLOCKS=128 HPDL_MPI_IPC_EARLY=1 # mpirun -x passes them: set in every run
exec > >(tee "$OUT/device.log") 2>&1
start=$SECONDS
MPIRUN="mpirun --allow-run-as-root --bind-to none -np 2 -x NCCL_NVLS_ENABLE -x HPDL_RESULTS -x HPDL_MPI_IPC_BLOCKS -x HPDL_MPI_IPC_EARLY"
status=0
step() { echo "== $1 ($((SECONDS - start)) s)"; }
fail() { echo "device.sh: $1"; status=1; }

step machine
nvidia-smi --query-gpu=index,name,driver_version,pci.bus_id --format=csv,noheader
nvidia-smi topo -m 2>/dev/null | head -n 3
git log -1 --format='commit %h %s' 2>/dev/null || echo "commit: (no git here)"

step build
(make --no-print-directory data >/dev/null 2>&1 || scripts/data.sh data/fashion-mnist) || fail "no Fashion-MNIST"
timeout 300 make --no-print-directory -j16 build/gpu/gpu_mpi_ipc build/bench/allreduce build/bench/dp_scaling ||
    { fail "build failed"; exit 1; }

step "test: tests/gpu_mpi_ipc.cu on 2 ranks"
timeout 150 $MPIRUN build/gpu/gpu_mpi_ipc || fail "the IPC test failed or hung (exit $?)"

# $1: folder, $2: grid limit, $3: smallest size, $4: programmatic dependent launch (1) or not (0)
bench() {
    mkdir -p "$SCRATCH/$1"
    HPDL_MPI_IPC_BLOCKS=$2 HPDL_MPI_IPC_EARLY=$4 HPDL_RESULTS="$SCRATCH/$1" timeout 120 $MPIRUN build/bench/allreduce \
        -b "$3" -e 64M -f 2 --ipc-only --no-check || fail "bench/allreduce ($1) failed or hung"
}
step "bench: allreduce, grid 128, 4 B .. 64 MiB"
bench main 128 4 1
[ -f "$SCRATCH/main/allreduce.csv" ] && cat "$SCRATCH/main/allreduce.csv"
step "bench: allreduce, grid 64, 256 KiB .. 64 MiB"
bench blocks64 64 256K 1
step "bench: allreduce, grid 128 without programmatic dependent launch, 4 B .. 64 MiB"
bench no_early 128 4 0
step "bench: allreduce, grid 128 again, 256 KiB .. 64 MiB"
bench repeat 128 256K 1
cp "$SCRATCH/main/allreduce_all.csv" "$SCRATCH/main/allreduce_all.context" "$OUT/" 2>/dev/null
cp "$SCRATCH/blocks64/allreduce_all.csv" "$OUT/allreduce_all_blocks64.csv" 2>/dev/null
cp "$SCRATCH/no_early/allreduce_all.csv" "$OUT/allreduce_all_no_early.csv" 2>/dev/null
cp "$SCRATCH/repeat/allreduce_all.csv" "$OUT/allreduce_all_repeat.csv" 2>/dev/null

echo "== IPC busbw over nccl_direct's at the headline sizes (aim: >= 1.5 at 1, 4, 8 MiB); time, host queueing (us)"
for f in "$OUT"/allreduce_all*.csv; do
    awk -F, -v run="$(basename "$f" .csv)" '$1 ~ /^(hpdl_ipc|hpdl_auto|nccl_direct)/ &&
        ($2 == 16 || $2 == 1048576 || $2 == 4194304 || $2 == 8388608 || $2 == 16777216) {
        printf "  %-26s %-18s %9d B  %8.2f us  host %6.2f us  %7.1f GB/s  %.2fx\n", run, $1, $2, $6, $11, $8, $10 }' "$f"
done

for algo in nccl ipc; do
    step "dp_scaling --focus, H 2048, b 512 and 3000, --algo $algo"
    mkdir -p "$SCRATCH/dp_$algo"
    timeout 150 $MPIRUN build/bench/dp_scaling --focus --algo $algo --pieces 4 --halve 1 --ctas 8 --prio 1 \
        --reps 10 --output "$SCRATCH/dp_$algo" || fail "dp_scaling --algo $algo failed or hung"
    cp "$SCRATCH/dp_$algo/dp_scaling_focus.csv" "$OUT/dp_focus_$algo.csv" 2>/dev/null
done
rm -rf "$SCRATCH"
step "done, exit $status"
exit $status
