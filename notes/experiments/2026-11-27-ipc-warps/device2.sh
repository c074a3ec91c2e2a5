#!/usr/bin/env bash
# Two-GPU run, second round (2026-11-27): per-block signals with 1-4 packs a thread per step
# and with halving steps (build2.sh), bench/allreduce --ipc-only 1 .. 16 MiB and 6512680 bytes,
# NCCL in every run, two rounds in rotated order; the IPC test at 4 packs and halving first.
#   OUT=<dir> notes/experiments/2026-11-27-ipc-warps/device2.sh
# Output in $OUT: device2.log, allreduce2.tar.
set -u -o pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export NCCL_NVLS_ENABLE=0 HPDL_MPI_IPC_BLOCKS=128
OUT=${OUT:?set OUT to the output folder}
SCRATCH=$(mktemp -d)
mkdir -p "$OUT"
exec > >(tee "$OUT/device2.log") 2>&1
start=$SECONDS
MPIRUN="mpirun --allow-run-as-root --bind-to none -np 2 -x NCCL_NVLS_ENABLE -x HPDL_MPI_IPC_BLOCKS"
status=0
step() { echo "== $1 ($((SECONDS - start)) s)"; }
fail() { echo "device2.sh: $1"; status=1; }
step machine
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader
cat .commit 2>/dev/null || true
for t in u4 h4; do
    step "test: tests/gpu_mpi_ipc.cu on 2 ranks ($t)"
    timeout 120 $MPIRUN build/exp/gpu_mpi_ipc_$t 2>&1 | tail -n 2 || fail "the IPC test ($t) failed or hung"
done
bench() {
    local dir="$SCRATCH/$2"
    mkdir -p "$dir/sweep" "$dir/mlp"
    timeout 60 $MPIRUN build/exp/allreduce_$1 -b 1M -e 16M -f 2 --ipc-only --no-check --output "$dir/sweep" \
        > "$dir/sweep.log" 2>&1 || fail "allreduce $2 sweep"
    timeout 60 $MPIRUN build/exp/allreduce_$1 -b 6512680 -e 6512680 --ipc-only --no-check --output "$dir/mlp" \
        > "$dir/mlp.log" 2>&1 || fail "allreduce $2 mlp"
    awk -F, -v tag="$2" '$1 == "hpdl_ipc_oneshot" && $2 ~ /^(1048576|4194304|6512680|8388608|16777216)$/ {
        printf "  %-12s %9d B  %8.2f us  %7.1f GB/s  %.3fx NCCL\n", tag, $2, $6, $8, $10 }' \
        "$dir/sweep/allreduce_all.csv" "$dir/mlp/allreduce_all.csv" 2>/dev/null
}
step "bench: allreduce one-shot, per-block signals, step lengths"
for round in 1 2; do
    if [ $round = 1 ]; then order="blk_u2 blk_u1 blk_u3 blk_u4 h2 h4"; else order="h4 h2 blk_u4 blk_u3 blk_u1 blk_u2"; fi
    for v in $order; do bench "$v" "r${round}_$v"; done
done
tar -C "$SCRATCH" -cf "$OUT/allreduce2.tar" .
rm -rf "$SCRATCH"
step "done, exit $status"
exit $status
