#!/usr/bin/env bash
# Host-built (build90/, sm_90a) checks and benches after the int8 wgmma convolution and the f16
# kernel's generalisation: gpu_conv f16/bf16, gpu_quant (+ memcheck of its conv tests), ResNet-18's
# int8 layers, bench/quantize's CNN rows, then bench/cnn (CNN training against PyTorch).
set -u
O=${OUT:?}; mkdir -p $O/cnn
export HPDL_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
exec > >(tee $O/device.log) 2>&1
start=$SECONDS
at() { echo "== $1 ($((SECONDS-start)) s)"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
at "gpu_conv f16, bf16"; timeout 60 build90/gpu/gpu_conv test_conv_f16 2>&1 | tail -3; timeout 60 build90/gpu/gpu_conv test_conv_bf16 2>&1 | tail -3
at "gpu_quant"; timeout 60 build90/gpu/gpu_quant > $O/gpu_quant.log 2>&1; tail -22 $O/gpu_quant.log
at "memcheck gpu_quant test_conv"; timeout 60 compute-sanitizer --tool memcheck --error-exitcode 3 build90/gpu/gpu_quant test_conv 2>&1 | tail -4
at "int8 layers"; timeout 40 build90/layers 256 2>&1 | tail -24
at "bench/quantize"; timeout 100 build90/bench/quantize --max-size 512 --output /tmp/q > $O/bench_quantize.log 2>&1; grep -A4 'CNN inference' $O/bench_quantize.log
at "bench/cnn"; timeout $((545 - (SECONDS-start))) build90/bench/cnn --output $O/cnn > $O/cnn/cnn.log 2>&1; tail -12 $O/cnn/cnn.log
at "done"
