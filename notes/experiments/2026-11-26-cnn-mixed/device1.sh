#!/usr/bin/env bash
# First look after the 16-bit backward-filter fix: tests, a mixed-precision step profile, bench/cnn small.
set -u
O=${OUT:-/tmp/out}; mkdir -p $O
exec > >(tee $O/device1.log) 2>&1
start=$SECONDS
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
make -j16 build/gpu/gpu_conv build/gpu/gpu_cnn build/bench/cnn build/bench/conv >$O/build.log 2>&1 &
nvcc -std=c++17 -I. -O3 -gencode arch=compute_90a,code=sm_90a -DHPDL_HAVE_CUDNN notes/experiments/2026-11-26-cnn-mixed/steps.cu -o build/steps -lcublas -lcublasLt -lcudnn -ldl
echo "steps built at $((SECONDS-start)) s"
for p in f16 bf16 f32; do build/steps resnet18 128 3 10 $p; done
build/steps resnet18 128 3 10 f32 cudnn
build/steps small 128 3 50 f16; build/steps small 128 3 50 f32
ncu --metrics gpu__time_duration.sum --print-summary per-kernel build/steps resnet18 128 1 1 f16 > $O/ncu_resnet18_f16_b128.txt 2>&1
echo "ncu done at $((SECONDS-start)) s"
wait
echo "make done at $((SECONDS-start)) s"; tail -3 $O/build.log
timeout 120 build/gpu/gpu_conv 2>&1 | tail -15
timeout 120 build/gpu/gpu_cnn 2>&1 | tail -15
echo "tests done at $((SECONDS-start)) s"
mkdir -p $O/cnn
timeout 200 build/bench/cnn --net small --output $O/cnn 2>&1 | tail -20
echo "all done at $((SECONDS-start)) s"
