#!/usr/bin/env bash
# Two-GPU run (2026-11-26) of the two changes of this folder, each beside the path it replaces:
#  1. the IPC one-shot with every step pushed ahead of the sums (HPDL_MPI_IPC_AHEAD, default)
#     against the earlier one-step pipeline (HPDL_MPI_IPC_AHEAD=1) and two steps ahead,
#     bench/allreduce --ipc-only 1 .. 16 MiB, NCCL called directly in every run, the order
#     alternated and repeated (run-to-run spread); after the test tests/gpu_mpi_ipc.cu on 2 ranks
#     (exact sums at every depth);
#  2. interleaved pipeline stages (bench/model_parallel --stages-per-gpu 1,2,3,4, DEPTH 24,
#     m = 2, 4, 8): V = 1 is the committed GPipe / 1F1B, V > 1 the new rows, all against naive
#     on the same 2 GPUs; after tests/gpu_model_parallel.cu.
# Predictions: notes/ipc_allreduce.md ("Every step in flight") and notes/multi.md ("Interleaved
# stages, one stream each").
#   from the repository root, on a machine with 2 GPUs:  OUT=<dir> notes/experiments/2026-11-26-two-gpu-2/device.sh
# Output in $OUT (8 files): device.log; allreduce_ahead_all.csv (+ .context), allreduce_ahead_1.csv,
# allreduce_ahead_2.csv, allreduce_ahead_all_repeat.csv, allreduce_ahead_1_repeat.csv;
# model_parallel_d24.csv. Every step has a time limit; about 4 minutes (builds ~2 of them).
set -u -o pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export NCCL_NVLS_ENABLE=0 # NVLink multicast stays off: it can take a shared host's GPUs out of service
OUT=${OUT:?set OUT to the output folder}
SCRATCH=$(mktemp -d)
mkdir -p "$OUT"
export HPDL_RESULTS=$SCRATCH HPDL_MPI_IPC_BLOCKS=128 HPDL_MPI_IPC_AHEAD=65536 # mpirun -x passes them
exec > >(tee "$OUT/device.log") 2>&1
start=$SECONDS
MPIRUN="mpirun --allow-run-as-root --bind-to none -np 2 -x NCCL_NVLS_ENABLE -x HPDL_RESULTS -x HPDL_MPI_IPC_BLOCKS -x HPDL_MPI_IPC_AHEAD"
status=0
step() { echo "== $1 ($((SECONDS - start)) s)"; }
fail() { echo "device.sh: $1"; status=1; }

step machine
nvidia-smi --query-gpu=index,name,driver_version,pci.bus_id --format=csv,noheader
nvidia-smi topo -m 2>/dev/null | head -n 3
git log -1 --format='commit %h %s' 2>/dev/null || echo "commit: (no git here)"

step build
timeout 330 make --no-print-directory -j16 build/gpu/gpu_mpi_ipc build/bench/allreduce build/gpu/gpu_model_parallel \
    build/bench/model_parallel || { fail "build failed"; exit 1; }

step "test: tests/gpu_mpi_ipc.cu on 2 ranks"
timeout 120 $MPIRUN build/gpu/gpu_mpi_ipc 2>&1 | tail -n 16 || fail "the IPC test failed or hung"
step "test: tests/gpu_model_parallel.cu"
timeout 120 build/gpu/gpu_model_parallel 2>&1 | tail -n 12 || fail "the model-parallel test failed or hung"

# $1: name, $2: HPDL_MPI_IPC_AHEAD
allreduce() {
    mkdir -p "$SCRATCH/$1"
    HPDL_MPI_IPC_AHEAD=$2 HPDL_RESULTS="$SCRATCH/$1" timeout 60 $MPIRUN build/bench/allreduce \
        -b 1M -e 16M -f 2 --ipc-only --no-check > "$SCRATCH/$1.log" 2>&1 || fail "bench/allreduce ($1) failed or hung"
    tail -n 3 "$SCRATCH/$1.log"
    cp "$SCRATCH/$1/allreduce_all.csv" "$OUT/allreduce_$1.csv" 2>/dev/null
}
step "bench: allreduce, one-shot with every step ahead (new), one step (before), two, repeated"
allreduce ahead_all 65536
allreduce ahead_1 1
allreduce ahead_2 2
allreduce ahead_all_repeat 65536
allreduce ahead_1_repeat 1
cp "$SCRATCH/ahead_all/allreduce_all.context" "$OUT/allreduce_ahead_all.context" 2>/dev/null
echo "== one-shot busbw over nccl_direct's in the same run (aim >= 1.5 at 1, 4, 8 MiB; committed 1.67/1.73/1.47)"
for f in "$OUT"/allreduce_ahead_*.csv; do
    awk -F, -v run="$(basename "$f" .csv)" '$1 ~ /^(hpdl_ipc_oneshot|nccl_direct)$/ &&
        ($2 == 1048576 || $2 == 4194304 || $2 == 8388608 || $2 == 16777216) {
        printf "  %-28s %-17s %9d B  %8.2f us  host %6.2f us  %7.1f GB/s  %.3fx\n", run, $1, $2, $6, $11, $8, $10 }' "$f"
done

step "bench: model_parallel DEPTH 24, 1-4 stages a GPU, m = 2, 4, 8 (1F1B beside GPipe)"
mkdir -p "$SCRATCH/mp"
timeout 240 build/bench/model_parallel --gpus 2 --depth 24 --micro 2,4,8 --stages-per-gpu 1,2,3,4 \
    --output "$SCRATCH/mp" || fail "bench/model_parallel failed, a check failed, or it hung"
cp "$SCRATCH/mp/model_parallel.csv" "$OUT/model_parallel_d24.csv" 2>/dev/null
echo "== pipelined / naive at DEPTH 24 (aim <= 0.58; committed best 0.631, GPipe m=4, 1 stage a GPU)"
awk -F, '$1 == "naive_d24_g2_step_time" { naive = $2 }
    $1 ~ /_step_time/ && $1 !~ /^(naive|single)/ { name[++n] = $1; ms[n] = $2 }
    END { for (i = 1; i <= n; i++) printf "  %-52s %8.2f ms  %.3f of naive (%.2f ms)\n", name[i], ms[i], ms[i] / naive, naive }' \
    "$OUT/model_parallel_d24.csv" 2>/dev/null

rm -rf "$SCRATCH"
step "done, exit $status"
exit $status
