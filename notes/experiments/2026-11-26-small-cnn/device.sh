#!/usr/bin/env bash
# The small CNN's step (2026-11-26): few-channel convolutions rewritten (index arithmetic out of the
# inner loops; backward-filter in two stages with the bias gradient as a column of ones; f16/bf16
# routed to them where channels are not multiples of 8), linear layers on hpdl__gemm_small (16 x 16
# tiles, K split four ways). Runs the tests, ncu's per-kernel sums of one small-CNN step (batch 32,
# f32 and f16), step times, and bench/cnn --net small (with its PyTorch anchor).
# Prebuilt on the host first (sm_90a), from the repository root:
#   make -j16 B=build90 GPU_CC=90 build90/gpu/gpu_conv build90/gpu/gpu_cnn build90/bench/cnn
#   nvcc -std=c++17 -I. -O3 -gencode arch=compute_90a,code=sm_90a -DHPDL_HAVE_CUDNN \
#       notes/experiments/2026-11-26-cnn-mixed/steps.cu -o build90/steps -lcublas -lcublasLt -lcudnn -ldl
# Then on the GPU machine: OUT=<dir> bash notes/experiments/2026-11-26-small-cnn/device.sh (< 9 min, 4 files).
set -u
O=${OUT:?}; B=${B:-build90}
exec > >(tee $O/device.log) 2>&1
start=$SECONDS
at() { echo "== $1 ($((SECONDS-start)) s)"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
at "tests: gpu_conv, gpu_cnn"
timeout 200 $B/gpu/gpu_conv > $O/tests.log 2>&1; echo "gpu_conv exit $?"
timeout 120 $B/gpu/gpu_cnn >> $O/tests.log 2>&1; echo "gpu_cnn exit $?"
grep -E "FAIL|error|passed|failed" $O/tests.log | tail -20
at "step times (eager)"
for p in f32 f16; do for b in 32 128; do timeout 30 $B/steps small $b 3 100 $p; done; done
at "ncu per-kernel sums, small CNN batch 32"
for run in "small 32 1 1 f32" "small 32 1 1 f16"; do
    echo "### steps $run"
    timeout 90 ncu --metrics gpu__time_duration.sum --print-summary per-kernel $B/steps $run 2>&1 | grep -v "^==PROF=="
done > $O/ncu_steps.txt
for run in f32 f16; do  # per step: each kind's average x its invocations, over the 2 steps run (1 warm, 1 timed)
    awk -v r="small 32 1 1 $run" '/^### /{on = index($0, r) > 0} on && /Invocations/{n = $NF}
        on && /gpu__time_duration/{s += $NF * n / 2; k += n / 2} END{printf "%s: %.0f kernels, %.1f us a step\n", r, k, s}' $O/ncu_steps.txt
done
at "bench/cnn --net small"
timeout 240 $B/bench/cnn small --output $O > $O/bench_cnn.log 2>&1; echo "bench exit $?"
tail -30 $O/bench_cnn.log
at "done"
