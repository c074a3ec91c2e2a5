#!/usr/bin/env bash
# The wgmma convolution's epilogue (2026-11-26, notes/conv.md "The epilogue of the wgmma convolution"):
# correctness (gpu_conv f16/bf16, gpu_quant bit-exact int8, memcheck of the int8 convolutions), then
# this branch against its base in turns on one H200: ResNet-18's layers int8 and f16 (layers_f16),
# bench/conv f16 wgmma forward and backward-data, bench/quantize's CNN rows, and ncu of the stage-1
# kernels after the change.
#
# Run from the repository root with prebuilt sm_90a binaries (nothing is built here):
#   this branch:   make -j16 B=build90 GPU_CC=90 build90/gpu/gpu_conv build90/gpu/gpu_quant \
#                      build90/bench/conv build90/bench/quantize
#                  nvcc -std=c++17 -O3 -I. -gencode arch=compute_90a,code=sm_90a \
#                      notes/experiments/2026-11-26-conv-epilogue/layers.cu -o build90/layers_f16 -lcublas -ldl
#   its base (main at d91e0c2, checked out at $MAIN), into build90-base/ of this worktree:
#                  make -C $MAIN -j16 B=$PWD/build90-base GPU_CC=90 $PWD/build90-base/bench/conv \
#                      $PWD/build90-base/bench/quantize
#                  nvcc -std=c++17 -O3 -I$MAIN -gencode arch=compute_90a,code=sm_90a \
#                      notes/experiments/2026-11-26-conv-epilogue/layers.cu -o build90-base/layers_f16 -lcublas -ldl
# Files in $OUT (7): device.log, gpu_quant.log, conv_new.log, conv_base.log, quantize_new.log,
# quantize_base.log, ncu_s1.txt. Under 9 minutes: each step's timeout is cut to the time left.
set -u
O=${OUT:?}; B=${B:-build90}; BASE=${BASE:-build90-base}
export HPDL_COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
exec > >(tee $O/device.log) 2>&1
start=$SECONDS
at() { echo "== $1 ($((SECONDS-start)) s)"; }
# timeout of at most $1 seconds, less if fewer are left before 520 s
t() { local left=$((520 - (SECONDS-start))); [ $left -lt 10 ] && { echo "skipped: no time left"; return 124; }
      timeout $(( $1 < left ? $1 : left )) "${@:2}"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "branch $HPDL_COMMIT"
at "gpu_quant (int8 bit-exact against the CPU)"; t 90 $B/gpu/gpu_quant > $O/gpu_quant.log 2>&1; echo "exit $?"; tail -4 $O/gpu_quant.log
at "gpu_conv f16, bf16"; t 90 $B/gpu/gpu_conv test_conv_f16 2>&1 | tail -3; t 90 $B/gpu/gpu_conv test_conv_bf16 2>&1 | tail -3
at "memcheck gpu_quant test_conv"; t 60 compute-sanitizer --tool memcheck --error-exitcode 3 $B/gpu/gpu_quant test_conv 2>&1 | tail -3
at "ResNet-18 layers, batch 256: branch"; t 45 $B/layers_f16 256 2>&1 | tail -13
at "ResNet-18 layers, batch 256: base"; t 45 $BASE/layers_f16 256 2>&1 | tail -13
at "bench/conv f16 wgmma forward: branch, base"
t 100 $B/bench/conv --precision f16 --rung wgmma --pass forward --output /tmp/conv_new > $O/conv_new.log 2>&1
t 100 $BASE/bench/conv --precision f16 --rung wgmma --pass forward --output /tmp/conv_base > $O/conv_base.log 2>&1
grep -E "3x3|1x1" $O/conv_new.log | grep wgmma; echo "-- base"; grep -E "3x3|1x1" $O/conv_base.log | grep wgmma
at "bench/quantize CNN rows: branch, base"
t 80 $B/bench/quantize --max-size 256 --output /tmp/q_new > $O/quantize_new.log 2>&1; grep -A5 'CNN inference' $O/quantize_new.log
t 80 $BASE/bench/quantize --max-size 256 --output /tmp/q_base > $O/quantize_base.log 2>&1; grep -A5 'CNN inference' $O/quantize_base.log
at "ncu: stage-1 int8 and f16 wgmma kernels (branch)"
t 90 ncu --section SpeedOfLight --section SchedulerStats --section WarpStateStats --section InstructionStats \
    --section LaunchStats -k regex:hpdl__conv_wgmma -c 2 $B/layers_f16 256 > $O/ncu_s1.txt 2>&1
grep -E "hpdl__conv_wgmma|Duration|Executed Instructions  |Issued Warp|No Eligible" $O/ncu_s1.txt
at "bench/conv f16 wgmma backward-data: branch, base"
t 100 $B/bench/conv --precision f16 --rung wgmma --pass backward-data --output /tmp/conv_new >> $O/conv_new.log 2>&1
t 100 $BASE/bench/conv --precision f16 --rung wgmma --pass backward-data --output /tmp/conv_base >> $O/conv_base.log 2>&1
grep -E "backward-data +wgmma" $O/conv_new.log; echo "-- base"; grep -E "backward-data +wgmma" $O/conv_base.log
at "done"
