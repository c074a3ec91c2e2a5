#!/usr/bin/env bash
# The wgmma backward-filter: correctness and speed against cuDNN, a ResNet-18 mixed step, gpu_conv if it builds in time.
set -u
O=${OUT:-/tmp/out}; mkdir -p $O
exec > >(tee $O/device.log) 2>&1
start=$SECONDS
NV="nvcc -std=c++17 -I. -O3 -gencode arch=compute_90a,code=sm_90a -DHPDL_HAVE_CUDNN"
mkdir -p build
make -j16 build/gpu/gpu_conv > $O/build_gpu_conv.log 2>&1 &
mk=$!
$NV notes/experiments/2026-11-26-conv-wgrad/wgrad.cu -o build/wgrad -lcudnn -lcuda &
a=$!
$NV notes/experiments/2026-11-26-cnn-mixed/steps.cu -o build/steps -lcublas -lcublasLt -lcudnn -ldl &
b=$!
wait $a $b
echo "built at $((SECONDS-start)) s"
timeout 150 build/wgrad f16
timeout 100 build/wgrad bf16
for p in f16 bf16; do timeout 30 build/steps resnet18 128 3 10 $p; done
timeout 30 build/steps small 128 3 50 f16
echo "runs done at $((SECONDS-start)) s"
while kill -0 $mk 2>/dev/null && [ $((SECONDS-start)) -lt 530 ]; do sleep 2; done
echo "gpu_conv build done at $((SECONDS-start)) s"
[ -x build/gpu/gpu_conv ] && timeout $((570 - (SECONDS-start))) build/gpu/gpu_conv 2>&1 | tail -20
echo "all done at $((SECONDS-start)) s"
