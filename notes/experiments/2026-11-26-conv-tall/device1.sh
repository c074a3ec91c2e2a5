#!/usr/bin/env bash
# The tall x boxes (../2026-11-26-conv-wgrad2/tall_box.diff) measured: binaries built on the host
# (build/wgrad_base from the headers without it in build/base, build/wgrad_tall, build/bench/conv
# and build/gpu/gpu_conv with it; all -O3 sm_90a), carried. One H100, $OUT set.
set -u
O=${OUT:?set OUT}
start=$SECONDS
log() { echo "[$((SECONDS-start)) s] $*" | tee -a $O/summary.log; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee -a $O/summary.log
for r in 1 2; do for b in base tall; do
  timeout 60 build/wgrad_$b f16 r50 > $O/wgrad_${b}_$r.log 2>&1; log "wgrad $b run $r rc=$?"
  grep -E "conv. 3x3|geomean" $O/wgrad_${b}_$r.log | tee -a $O/summary.log
done; done
for t in test_conv_f16 test_conv_bf16; do
  timeout 150 build/gpu/gpu_conv $t > $O/gpu_conv_$t.log 2>&1; log "gpu_conv $t rc=$? $(tail -1 $O/gpu_conv_$t.log)"
done
for p in f16 bf16; do
  timeout 90 build/bench/conv --precision $p --pass backward-filter --rung wgmma --output $O/conv_${p}_wgrad > $O/conv_${p}_wgrad.log 2>&1
  log "bench/conv $p backward-filter rc=$?"; grep -iE "geometric|geomean" $O/conv_${p}_wgrad.log | tee -a $O/summary.log
done
cd $O && tar czf runs.tgz conv_* gpu_conv_* wgrad_* && rm -rf conv_* gpu_conv_* wgrad_*
