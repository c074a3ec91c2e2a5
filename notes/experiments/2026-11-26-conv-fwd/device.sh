#!/usr/bin/env bash
# Baseline of the wgmma convolution after the box-store epilogue (2026-11-26): bench/conv f16 and bf16
# (every rung, against cuDNN), bench/quantize's CNN rows, and where the forward pass's time goes
# (ncu on ResNet-50 conv3_x/conv4_x; the names and times of the kernels cuDNN's search tries).
# Run from the repository root on one H200; builds into build/. Files in $OUT: device.log, conv_f16.log,
# conv_bf16.log, quantize.log, ncu_fwd.txt, ncu_cudnn.txt, csv.tar.
set -u
O=${OUT:?}
export HPDL_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
exec > >(tee $O/device.log) 2>&1
start=$SECONDS
at() { echo "== $1 ($((SECONDS-start)) s)"; }
t() { local left=$((560 - (SECONDS-start))); [ $left -lt 10 ] && { echo "skipped: no time left"; return 124; }
      timeout $(( $1 < left ? $1 : left )) "${@:2}"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "commit $HPDL_COMMIT"
mkdir -p build
make -j16 build/bench/conv build/bench/quantize > $O/build.log 2>&1 &
mk=$!
nvcc -std=c++17 -I. -O3 -gencode arch=compute_90a,code=sm_90a -DHPDL_HAVE_CUDNN -lineinfo \
    notes/experiments/2026-11-26-conv-fwd/fwd.cu -o build/fwd -lcudnn -lcuda
at "fwd built"
t 60 build/fwd f16 "r50 conv"
t 90 ncu -k regex:hpdl__conv_wgmma --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats \
    --section SchedulerStats --section ComputeWorkloadAnalysis build/fwd f16 "r50 conv3" once > $O/ncu_fwd.txt 2>&1
t 60 ncu --metrics gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed,lts__t_bytes.sum,dram__bytes_read.sum \
    build/fwd f16 "r50 conv4" once > $O/ncu_cudnn.txt 2>&1
at "ncu done"
wait $mk; echo "build exit $?"; tail -3 $O/build.log
mkdir -p $O/f16 $O/bf16 $O/q
at "bench/conv f16"; t 120 build/bench/conv --precision f16 --output $O/f16 > $O/conv_f16.log 2>&1; grep geometric $O/conv_f16.log
at "bench/conv bf16"; t 120 build/bench/conv --precision bf16 --output $O/bf16 > $O/conv_bf16.log 2>&1; grep geometric $O/conv_bf16.log
at "bench/quantize"; t 150 build/bench/quantize --output $O/q > $O/quantize.log 2>&1; grep -iE "resnet|small|cnn" $O/quantize.log | head -20
tar cf $O/csv.tar -C $O f16 bf16 q && rm -rf $O/f16 $O/bf16 $O/q
at "done"
