#!/usr/bin/env bash
# Batch-norm sums with a parallel block reduction and two blocks per SM, and element-wise passes
# that step the channel instead of dividing (2026-11-26): gpu_cnn, step times before (steps_old,
# built from d91e0c2) and after (steps), ncu's per-kernel sums after, then bench/cnn.
# Prebuilt on the host: build90/steps_old, build90/steps, build90/gpu/gpu_cnn, build90/bench/cnn.
set -u
O=${OUT:?}; B=build90
export HPDL_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
exec > >(tee $O/device2.log) 2>&1
start=$SECONDS
at() { echo "== $1 ($((SECONDS-start)) s)"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
at "gpu_cnn"; timeout 120 $B/gpu/gpu_cnn 2>&1 | tail -14
at "step times, before then after, in turns"
for round in 1 2; do
    for bin in steps_old steps; do
        for run in "resnet18 128 3 20 f16" "resnet18 32 3 20 f16" "resnet18 128 3 10 f32" "small 32 3 100 f32"; do
            echo -n "$bin: "; timeout 60 $B/$bin $run
        done
    done
done
at "ncu per-kernel sums after"
timeout 150 ncu --metrics gpu__time_duration.sum --print-summary per-kernel $B/steps resnet18 128 1 1 f16 2>&1 \
    | grep -v "^==PROF==" > $O/ncu_steps_after.txt
at "bench/cnn"
mkdir -p $O/cnn
timeout $((560 - (SECONDS-start))) $B/bench/cnn --output $O/cnn > $O/cnn.log 2>&1; tail -30 $O/cnn.log
at "done"
