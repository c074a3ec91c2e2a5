#!/usr/bin/env bash
# few-mma with a double-buffered patch (cp.async, commit 9ab2d0a) against the kernels before it
# (fm_before.cuh) and cuDNN: ab.cu (the ResNet-50 stem, the same with W C odd, the CIFAR stem;
# f16/bf16, forward and backward-filter, checked against cuDNN and against each other), gpu_conv's
# 16-bit cases (every rung against the f64 twin, few-mma's included) and bench/conv --quick on
# few-mma, both passes, both types. One H100 or H200, run from the repository root; logs in $OUT
# (8 files), about 5 minutes.
set -u
O=${OUT:-/tmp/out}; mkdir -p $O
exec > >(tee $O/device.log) 2>&1
start=$SECONDS
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
make features   # cuDNN: the Makefile adds -DHPDL_HAVE_CUDNN -lcudnn when it finds cudnn.h
mkdir -p build /tmp/stem2_f16 /tmp/stem2_bf16
make -j16 build/gpu/gpu_conv build/bench/conv > $O/build.log 2>&1 &
mk=$!
nvcc -std=c++17 -I. -O3 -gencode arch=compute_90a,code=sm_90a -DHPDL_HAVE_CUDNN -lineinfo -Xptxas -v \
    notes/experiments/2026-11-26-conv-stem2/ab.cu -o build/stem2_ab -lcublas -lcublasLt -lcudnn -ldl \
    > $O/ab_build.log 2>&1 || { echo "ab.cu failed to build"; tail -20 $O/ab_build.log; }
awk '/entry function/{f=$7} /spill stores/{s=$5" spill"} /Used/ && f ~ /conv_fm|fm_before/ {print f, $5, "registers,", s}' \
    $O/ab_build.log   # registers and spill bytes per kernel
echo "ab.cu built at $((SECONDS-start)) s"
timeout 120 build/stem2_ab > $O/ab.log 2>&1; echo "ab exit $? at $((SECONDS-start)) s"
cat $O/ab.log
wait $mk || { echo "build failed"; tail -30 $O/build.log; }
echo "gpu_conv and bench/conv built at $((SECONDS-start)) s"
for t in test_conv_f16 test_conv_bf16; do
    timeout 90 build/gpu/gpu_conv $t >> $O/gpu_conv.log 2>&1
    echo "gpu_conv $t exit $? at $((SECONDS-start)) s"
done
grep -E "few-mma|FAIL|error|passed" $O/gpu_conv.log | tail -20
for p in f16 bf16; do
    for pass in forward backward-filter; do
        timeout 35 build/bench/conv --quick --precision $p --pass $pass --rung few-mma --output /tmp/stem2_$p \
            >> $O/bench_conv_$p.log 2>&1
        echo "bench/conv $p $pass exit $? at $((SECONDS-start)) s"
    done
    grep -E "stem" $O/bench_conv_$p.log
done
echo "all done at $((SECONDS-start)) s"
