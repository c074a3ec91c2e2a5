#!/usr/bin/env bash
# Two-GPU run (2026-11-27): interleaved pipeline stages on one stream per GPU, GPipe queued
# breadth-first (rounds of one stage a GPU), against the committed run where every stage had its
# own stream (notes/multi.md). tests/gpu_model_parallel.cu first (3 and 6 stages on 2 GPUs match
# the one-device step), then bench/model_parallel at DEPTH 24, V = 1-4 stages a GPU, m = 1, 2, 4, 8.
# Binaries built on the host (make GPU_CC=90 NVOPT=-O3), carried in build/gpu, build/bench.
#   OUT=<dir> notes/experiments/2026-11-27-pipeline-rounds/device.sh
# Predictions (pipeline_model.py of 2026-11-26-two-gpu-2, one stream a GPU, breadth-first; ms and
# / naive 26.70): V=2 m=2 15.79 (0.591), m=4 15.67 (0.587); V=3 m=2 15.12 (0.566), m=4 15.37
# (0.576); V=4 m=2 14.82 (0.555), m=4 15.29 (0.573). V=1 unchanged (16.8 at m=4).
set -u -o pipefail
OUT=${OUT:?set OUT}
exec > >(tee "$OUT/device.log") 2>&1
start=$SECONDS
step() { echo "== $1 ($((SECONDS - start)) s)"; }
status=0
step machine
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader
cat .commit 2>/dev/null
step "test: tests/gpu_model_parallel.cu"
timeout 180 build/gpu/gpu_model_parallel 2>&1 | tail -n 12 || { echo "test failed"; status=1; }
step "bench: model_parallel DEPTH 24, V = 1..4, m = 1, 2, 4, 8"
mkdir -p "$OUT/mp"
timeout 300 build/bench/model_parallel --gpus 2 --depth 24 --micro 1,2,4,8 --stages-per-gpu 1,2,3,4 \
    --output "$OUT/mp" || { echo "bench failed"; status=1; }
step "done, exit $status"
exit $status
