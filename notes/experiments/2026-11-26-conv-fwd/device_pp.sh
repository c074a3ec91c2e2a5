#!/usr/bin/env bash
# Ping-pong consumers in the wgmma convolution (2026-11-26): correctness (gpu_conv f16/bf16, gpu_quant
# int8 bit-exact, memcheck of the int8 convolutions), then bench/conv's wgmma rung (f16) with the
# launcher's tile widths and with 128-wide ping-pong tiles for every layer (HPDL_EXP_WG_BN128, an
# experiment switch), bench/quantize's CNN rows. Files in $OUT: device.log, build.log, conv_pp.log,
# conv_pp128.log, quantize.log, gpu.log, csv.tar.
set -u
O=${OUT:?}
export HPDL_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
exec > >(tee $O/device.log) 2>&1
start=$SECONDS
at() { echo "== $1 ($((SECONDS-start)) s)"; }
t() { local left=$((570 - (SECONDS-start))); [ $left -lt 10 ] && { echo "skipped: no time left"; return 124; }
      timeout $(( $1 < left ? $1 : left )) "${@:2}"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "commit $HPDL_COMMIT"
make -j16 build/bench/conv build/bench/quantize build/gpu/gpu_conv build/gpu/gpu_quant > $O/build.log 2>&1 &
mk=$!
nvcc -std=c++17 -I. -O3 -gencode arch=compute_90a,code=sm_90a -DHPDL_HAVE_CUDNN -lineinfo \
    notes/experiments/2026-11-26-conv-fwd/fwd.cu -o build/fwd -lcudnn -lcuda
at "fwd built"
t 60 build/fwd f16 "r50 conv"
HPDL_EXP_WG_BN128=1 t 60 build/fwd f16 "r50 conv"
wait $mk; echo "build exit $?"; grep -E "error" $O/build.log | head
mkdir -p $O/a $O/b $O/q
at "gpu_conv, gpu_quant"
( t 150 build/gpu/gpu_conv test_conv_f16 2>&1 | tail -3; t 150 build/gpu/gpu_conv test_conv_bf16 2>&1 | tail -3
  t 120 build/gpu/gpu_quant 2>&1 | tail -4
  t 60 compute-sanitizer --tool memcheck --error-exitcode 3 build/gpu/gpu_quant test_conv 2>&1 | tail -3 ) > $O/gpu.log 2>&1
cat $O/gpu.log
at "bench/conv f16 wgmma"; t 90 build/bench/conv --precision f16 --rung wgmma --output $O/a > $O/conv_pp.log 2>&1
grep -E "geometric" $O/conv_pp.log; grep -E "r50_conv.*(forward|backward-data) +wgmma" $O/conv_pp.log
at "bench/conv f16 wgmma, 128-wide"; HPDL_EXP_WG_BN128=1 t 90 build/bench/conv --precision f16 --rung wgmma --output $O/b > $O/conv_pp128.log 2>&1
grep -E "geometric" $O/conv_pp128.log; grep -E "r50_conv.*(forward|backward-data) +wgmma" $O/conv_pp128.log
at "bench/quantize"; t 150 build/bench/quantize --output $O/q > $O/quantize.log 2>&1; grep -E "batch 256" $O/quantize.log
tar cf $O/csv.tar -C $O a b q && rm -rf $O/a $O/b $O/q
at "done"
