#!/usr/bin/env bash
# Review: the element-wise int8 epilogue takes the border table too (its per-tap loop removed):
# gpu_quant (its element-wise cases: output channels not a multiple of 16), memcheck of the conv
# tests, and bench/quantize's CNN rows once (timing unchanged expected: ResNet-18 uses the box path).
set -u
O=${OUT:?}
export HPDL_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
exec > >(tee $O/summary.log) 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 120 build/gpu/gpu_quant > $O/gpu_quant.log 2>&1; echo "gpu_quant rc=$?"; tail -1 $O/gpu_quant.log
timeout 200 compute-sanitizer --tool memcheck build/gpu/gpu_quant test_conv_i8_exact > $O/memcheck.log 2>&1; echo "memcheck rc=$?"; tail -1 $O/memcheck.log
timeout 150 build/bench/quantize --max-size 512 --output /tmp/q > $O/quantize.log 2>&1; echo "quantize rc=$?"; grep "batch 256" $O/quantize.log
