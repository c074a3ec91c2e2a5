#!/usr/bin/env bash
# Backward-filter k steps of 64 vs 32 pixels; gpu_conv; the int8 convolution's tests and bench rows.
# Ran at a15a232, where the pixels per k step were a macro (HPDL__CONV_WGRAD_PIX); the kernel now fixes 64.
set -u
O=${OUT:-/tmp/out}; mkdir -p $O build
exec > >(tee $O/device_pix.log) 2>&1
start=$SECONDS
NV="nvcc -std=c++17 -I. -O3 -gencode arch=compute_90a,code=sm_90a -DHPDL_HAVE_CUDNN"
make -j16 build/gpu/gpu_conv build/gpu/gpu_quant build/bench/quantize > $O/build.log 2>&1 &
mk=$!
$NV notes/experiments/2026-11-26-conv-wgrad/wgrad.cu -o build/wgrad64 -lcudnn -lcuda &
a=$!
$NV -DHPDL__CONV_WGRAD_PIX=32 notes/experiments/2026-11-26-conv-wgrad/wgrad.cu -o build/wgrad32 -lcudnn -lcuda &
b=$!
wait $a $b
echo "wgrad built at $((SECONDS-start)) s"
timeout 60 build/wgrad64 f16 r | grep -v odd
timeout 60 build/wgrad32 f16 | grep -v '^r18 l[0-9] 1x1'
echo "wgrad done at $((SECONDS-start)) s"
while kill -0 $mk 2>/dev/null && [ $((SECONDS-start)) -lt 400 ]; do sleep 2; done
echo "make done at $((SECONDS-start)) s"; grep -E 'error' $O/build.log | head
[ -x build/gpu/gpu_conv ] && timeout 100 build/gpu/gpu_conv 2>&1 | tail -12
[ -x build/gpu/gpu_quant ] && timeout 90 build/gpu/gpu_quant > $O/gpu_quant.log 2>&1; tail -25 $O/gpu_quant.log
left=$((585 - (SECONDS-start)))
echo "bench/quantize with $left s left"
[ -x build/bench/quantize ] && [ $left -gt 30 ] && HPDL_RESULTS=$O timeout $left build/bench/quantize --max-size 2048 > $O/bench_quantize.log 2>&1
grep -A8 -i "CNN inference" $O/bench_quantize.log | head -30; tail -3 $O/bench_quantize.log
echo "all done at $((SECONDS-start)) s"
