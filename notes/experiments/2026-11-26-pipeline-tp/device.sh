#!/usr/bin/env bash
# 1F1B pipeline, tensor parallelism on GPUs, NVTX: the 2-GPU run (kind nvidia-h200-x2 or
# nvidia-h100-x2). From the repository root, $OUT an output folder:
#   notes/experiments/2026-11-26-pipeline-tp/device.sh
# Builds the two tests and the two benches (in parallel), runs
#   tests:  gpu_model_parallel (naive / GPipe / 1F1B against one device, held micro-batches),
#           gpu_mpi_tp under mpirun -np 2 (GPU tensor parallelism against the CPU driver);
#   benches: model_parallel on 2 GPUs, DEPTH 6,12,20,24 (naive, GPipe and 1F1B, m = 1..16,
#           step times and peak activation memory per GPU); model_parallel on 5 logical devices
#           (several stages a GPU) at DEPTH 24; dp_scaling --tp under mpirun -np 2.
# Files under $OUT (7): device.log, model_parallel.csv/.context (2 GPUs),
# model_parallel_logical5.csv, tp_vs_dp.csv, tp_vs_dp_all.csv, tp_vs_dp.context. Bounded to ~8.5 min.
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export NCCL_NVLS_ENABLE=0 # NVLink multicast stays off: it can take a shared host's GPUs out of service
OUT=${OUT:?set OUT to an output folder}
mkdir -p "$OUT" || exit 1
WORK=$(mktemp -d)
exec > >(tee "$OUT/device.log") 2>&1
start=$SECONDS
left() { echo $((500 - (SECONDS - start))); }
nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader
command -v mpirun >/dev/null || { echo "device.sh: mpirun missing"; exit 1; }
MPI="mpirun --allow-run-as-root --bind-to none -np 2 -x NCCL_NVLS_ENABLE"

echo "== build"
make --no-print-directory data >/dev/null 2>&1 || scripts/data.sh data/fashion-mnist
timeout 300 make --no-print-directory -j16 build/gpu/gpu_model_parallel build/gpu/gpu_mpi_tp \
    build/bench/model_parallel build/bench/dp_scaling || exit 1
echo "== build done in $((SECONDS - start)) s"

echo "== test: gpu_model_parallel"
timeout 120 build/gpu/gpu_model_parallel
echo "== test: gpu_mpi_tp (2 ranks)"
timeout 90 $MPI build/gpu/gpu_mpi_tp

echo "== bench: model_parallel, 2 GPUs, DEPTH 6,12,20,24 ($(left) s left)"
timeout 200 build/bench/model_parallel --gpus 2 --depth 6,12,20,24 --micro 1,2,4,8,16 --output "$WORK/g2"
cp "$WORK/g2/model_parallel.csv" "$OUT/" 2>/dev/null
cp "$WORK/g2/model_parallel.context" "$OUT/" 2>/dev/null

echo "== bench: model_parallel, 5 logical devices on the GPUs, DEPTH 24 ($(left) s left)"
timeout 90 build/bench/model_parallel --gpus 5 --min-gpus 5 --virtual --depth 24 --micro 4,8,16 --output "$WORK/g5"
cp "$WORK/g5/model_parallel.csv" "$OUT/model_parallel_logical5.csv" 2>/dev/null

limit=$(left); [ "$limit" -lt 60 ] && limit=60
echo "== bench: dp_scaling --tp, 2 ranks (limit $limit s)"
timeout "$limit" $MPI build/bench/dp_scaling --tp --reps 3 --output "$WORK/tp"
for f in tp_vs_dp.csv tp_vs_dp_all.csv; do cp "$WORK/tp/$f" "$OUT/" 2>/dev/null; done
cp "$WORK/tp/tp_vs_dp.context" "$OUT/" 2>/dev/null || cp "$WORK/tp/"*.context "$OUT/tp_vs_dp.context" 2>/dev/null
rm -rf "$WORK"
echo "== total $((SECONDS - start)) s"
