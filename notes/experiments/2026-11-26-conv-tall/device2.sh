#!/usr/bin/env bash
# The tall boxes after the fix (the box was overwritten when the tall boxes were turned down), on
# one H100, binaries built on the host (-O3, sm_90a) and carried:
#   build/wgrad_base  headers of fdcc7b6 (build/base), build/wgrad_tall  the library now,
#   build/wgrad_slack the library with the tall boxes taken for up to 15 % more k steps and tiles
#                     lined up while at most 10 % of the SMs idle (build/slack);
# then gpu_conv whole, and bench/conv for f16, bf16 (every rung and pass) and f32 Winograd.
set -u
O=${OUT:?set OUT}; export HPDL_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
start=$SECONDS
log() { echo "[$((SECONDS-start)) s] $*" | tee -a $O/summary.log; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a $O/summary.log; log "commit $HPDL_COMMIT"
for r in 1 2; do for b in base tall slack; do
  timeout 60 build/wgrad_$b f16 r50 > $O/wgrad_${b}_$r.log 2>&1; log "wgrad $b run $r rc=$?"
  grep -E "conv. 3x3|geomean" $O/wgrad_${b}_$r.log | tee -a $O/summary.log
done; done
mkdir -p $O/conv
for p in f16 bf16; do
  timeout 150 build/bench/conv --precision $p --output $O/conv > $O/conv/conv_$p.log 2>&1
  log "bench/conv $p rc=$?"; grep -E "geometric|stem" $O/conv/conv_$p.log | tee -a $O/summary.log
done
timeout 60 build/bench/conv --precision f32 --rung winograd --output $O/conv/winograd > $O/conv/conv_f32.log 2>&1
log "bench/conv f32 winograd rc=$?"; grep -E "geometric" $O/conv/conv_f32.log | tee -a $O/summary.log
timeout 240 build/gpu/gpu_conv > $O/gpu_conv.log 2>&1; log "gpu_conv rc=$? $(tail -1 $O/gpu_conv.log)"
grep -E "FAIL|error" $O/gpu_conv.log | head -20 | tee -a $O/summary.log
cd $O && tar czf runs.tgz conv wgrad_* gpu_conv.log && rm -rf conv wgrad_* gpu_conv.log
