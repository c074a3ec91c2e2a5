#!/usr/bin/env bash
# The few-channel tensor-core rung (few-mma): gpu_conv (every rung x type x layout against the f64
# twin), the stems against cuDNN (stem.cu: few-mma, mma, AUTO), and bench/conv's forward rows in
# f16 and bf16 (the ResNet-50 stem's ratio to cuDNN). Run from the repository root; logs in $OUT.
set -u
O=${OUT:-/tmp/out}; mkdir -p $O
exec > >(tee $O/device.log) 2>&1
start=$SECONDS
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
make features
# cuDNN is found by the Makefile (HPDL_HAVE_CUDNN, -lcudnn) when cudnn.h is installed
mkdir -p /tmp/conv_f16 /tmp/conv_bf16
make -j16 build/gpu/gpu_conv build/bench/conv > $O/build.log 2>&1 &
mk=$!
mkdir -p build
nvcc -std=c++17 -I. -O3 -gencode arch=compute_90a,code=sm_90a -DHPDL_HAVE_CUDNN -lineinfo \
    notes/experiments/2026-11-26-conv-stem/stem.cu -o build/stem_exp -lcublas -lcublasLt -lcudnn -ldl
echo "stem.cu built at $((SECONDS-start)) s"
timeout 120 build/stem_exp | tee $O/stem.log
wait $mk || { echo "build failed"; tail -30 $O/build.log; }
echo "gpu_conv and bench/conv built at $((SECONDS-start)) s"
timeout 300 build/gpu/gpu_conv > $O/gpu_conv.log 2>&1; echo "gpu_conv exit $? at $((SECONDS-start)) s"
tail -5 $O/gpu_conv.log
# all layers if time allows (about 100 s a type), else --quick (conv3_x, a 1x1, the stem)
for p in f16 bf16; do
    left=$((520 - (SECONDS-start)))
    if [ $left -gt 200 ]; then q=; t=$((left / 2)); else q=--quick; t=$((left > 40 ? left / 2 : 20)); fi
    timeout $t build/bench/conv $q --precision $p --pass forward --output /tmp/conv_$p > $O/bench_conv_$p.log 2>&1
    echo "bench/conv $q $p exit $? at $((SECONDS-start)) s"
    grep -E "r50_stem|geometric|r50_conv3_3x3" $O/bench_conv_$p.log | grep -v unsupported
done
echo "all done at $((SECONDS-start)) s"
