#!/usr/bin/env bash
# bench/conv (built on the host for sm_90a into build90/): f16 every rung, bf16 the wgmma rung, both against cuDNN.
set -u
O=${OUT:-/tmp/out}; mkdir -p $O/f16 $O/bf16
exec > >(tee $O/device_bench.log) 2>&1
start=$SECONDS
export HPDL_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 330 build90/bench/conv --precision f16 --output $O/f16 > $O/f16/conv.log 2>&1
echo "f16 done at $((SECONDS-start)) s"; grep -E 'geometric|r50_stem' $O/f16/conv.log | head -20
timeout $((560 - (SECONDS-start))) build90/bench/conv --precision bf16 --rung wgmma --output $O/bf16 > $O/bf16/conv.log 2>&1
echo "bf16 done at $((SECONDS-start)) s"; grep -E 'geometric' $O/bf16/conv.log
