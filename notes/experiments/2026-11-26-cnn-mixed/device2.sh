#!/usr/bin/env bash
# After the 16-byte element-wise passes: gpu_cnn, step times; then the time-to-accuracy study (quick mode).
set -u
O=${OUT:-/tmp/out}; mkdir -p $O build
exec > >(tee $O/device2.log) 2>&1
start=$SECONDS
MNIST_DIR=.gz scripts/data.sh data/fashion-mnist > /dev/null 2>&1 &
make -j16 build/gpu/gpu_cnn build/examples/cnn_train build/examples/paleo_gpu build/gpu/gpu_mlp > $O/build.log 2>&1 &
mk=$!
nvcc -std=c++17 -I. -O3 -gencode arch=compute_90a,code=sm_90a -DHPDL_HAVE_CUDNN notes/experiments/2026-11-26-cnn-mixed/steps.cu -o build/steps -lcublas -lcublasLt -lcudnn -ldl
for p in f16 bf16 f32; do timeout 30 build/steps resnet18 128 3 10 $p; done
timeout 30 build/steps small 128 3 50 f16; timeout 30 build/steps small 32 3 100 f16; timeout 30 build/steps small 32 3 100 f32
wait $mk; echo "built at $((SECONDS-start)) s"; grep -E ' error' $O/build.log | head
timeout 120 build/gpu/gpu_cnn 2>&1 | tail -14
echo "gpu_cnn done at $((SECONDS-start)) s"
OUT=$O/tta bash notes/experiments/2026-11-26-cnn-tta/device.sh > /dev/null 2>&1
tail -40 $O/tta/device.log
echo "all done at $((SECONDS-start)) s"
