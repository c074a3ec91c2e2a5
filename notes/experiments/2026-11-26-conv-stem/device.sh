#!/usr/bin/env bash
# The few-channel tensor-core rung (few-mma, forward and backward-filter for C <= 8): stem.cu (the
# stems and the small CNN's layers against cuDNN and AUTO's earlier paths), gpu_conv (every rung x
# type x layout against the f64 twin), bench/conv's forward rows in f16 and bf16 (every rung; the
# ResNet-50 stem's ratio to cuDNN) and its backward-filter rows for few-mma. One H200, run from the
# repository root; logs in $OUT (7 files), under 9 minutes.
set -u
O=${OUT:-/tmp/out}; mkdir -p $O
exec > >(tee $O/device.log) 2>&1
start=$SECONDS
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
make features   # cuDNN: the Makefile adds -DHPDL_HAVE_CUDNN -lcudnn when it finds cudnn.h
mkdir -p build /tmp/conv_f16 /tmp/conv_bf16 /tmp/conv_wgrad
make -j16 build/gpu/gpu_conv build/bench/conv > $O/build.log 2>&1 &
mk=$!
nvcc -std=c++17 -I. -O3 -gencode arch=compute_90a,code=sm_90a -DHPDL_HAVE_CUDNN -lineinfo \
    notes/experiments/2026-11-26-conv-stem/stem.cu -o build/stem_exp -lcublas -lcublasLt -lcudnn -ldl
echo "stem.cu built at $((SECONDS-start)) s"
timeout 150 build/stem_exp > $O/stem.log 2>&1; echo "stem exit $? at $((SECONDS-start)) s"
grep -E "r50_stem|cifar_stem" $O/stem.log
wait $mk || { echo "build failed"; tail -30 $O/build.log; }
echo "gpu_conv and bench/conv built at $((SECONDS-start)) s"
timeout $((400 - (SECONDS-start))) build/gpu/gpu_conv > $O/gpu_conv.log 2>&1
echo "gpu_conv exit $? at $((SECONDS-start)) s"
grep -E "few-mma|error|passed" $O/gpu_conv.log | tail -20
# forward, every rung: all layers if time allows, else --quick (conv3_x, a 1x1, the stem)
for p in f16 bf16; do
    left=$((470 - (SECONDS-start)))
    if [ $left -gt 200 ]; then q=; t=$((left / 2)); else q=--quick; t=$((left > 40 ? left / 2 : 20)); fi
    timeout $t build/bench/conv $q --precision $p --pass forward --output /tmp/conv_$p > $O/bench_conv_$p.log 2>&1
    echo "bench/conv $q $p forward exit $? at $((SECONDS-start)) s"
    grep -E "r50_stem|geometric|r50_conv3_3x3" $O/bench_conv_$p.log | grep -v unsupported
done
timeout $((530 - (SECONDS-start))) build/bench/conv --quick --rung few-mma --pass backward-filter \
    --output /tmp/conv_wgrad > $O/bench_conv_wgrad.log 2>&1
echo "bench/conv backward-filter exit $? at $((SECONDS-start)) s"
grep r50_stem $O/bench_conv_wgrad.log
echo "all done at $((SECONDS-start)) s"
