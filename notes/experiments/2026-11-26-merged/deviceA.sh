#!/usr/bin/env bash
# After merging the batch-norm sums, the wgmma convolution's box-store epilogue and quantize_cnn's
# GPU path (2026-11-26): build every program they touch on the device (make -j16, sm_90a),
# then the GPU tests (gpu_conv, gpu_quant + memcheck of its convolutions, gpu_cnn),
# ResNet-18's layers int8/f16 (layers_f16) and bench/cnn. build/ stays on the machine for the
# next call while it is warm.
set -u
O=${OUT:?}
export HPDL_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
exec > >(tee $O/deviceA.log) 2>&1
start=$SECONDS
at() { echo "== $1 ($((SECONDS-start)) s)"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
(MNIST_DIR=.gz scripts/data.sh data/fashion-mnist > /dev/null 2>&1) &
data=$!
at "build"
timeout 330 make -j16 --no-print-directory build/gpu/gpu_conv build/gpu/gpu_quant build/gpu/gpu_cnn build/bench/conv \
    build/bench/quantize build/bench/cnn build/examples/cnn_train build/examples/quantize_cnn > $O/build.log 2>&1 &
mk=$!
timeout 330 nvcc -std=c++17 -O3 -I. -gencode arch=compute_90a,code=sm_90a \
    notes/experiments/2026-11-26-conv-epilogue/layers.cu -o build/layers_f16 -lcublas -ldl
wait $mk; echo "make exit $?"; grep -E "error|warning" $O/build.log | head
wait $data
at "gpu_conv f16, bf16"; timeout 90 build/gpu/gpu_conv test_conv_f16 2>&1 | tail -3; timeout 90 build/gpu/gpu_conv test_conv_bf16 2>&1 | tail -3
at "gpu_quant"; timeout 90 build/gpu/gpu_quant > $O/gpu_quant.log 2>&1; echo "exit $?"; grep -v "^ok" $O/gpu_quant.log | tail -8
at "memcheck gpu_quant test_conv"; timeout 60 compute-sanitizer --tool memcheck --error-exitcode 3 build/gpu/gpu_quant test_conv 2>&1 | tail -3
at "gpu_cnn"; timeout 120 build/gpu/gpu_cnn 2>&1 | tail -3
at "ResNet-18 layers, batch 256"; timeout 45 build/layers_f16 256 2>&1 | tail -13
at "bench/cnn"
mkdir -p $O/cnn
timeout $((575 - (SECONDS-start))) build/bench/cnn --output $O/cnn > $O/cnn.log 2>&1; tail -8 $O/cnn.log
at "done"
