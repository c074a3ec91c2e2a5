#!/usr/bin/env bash
# The convolution table for the README: f16, bf16 (every rung and pass) and f32 Winograd, each
# into its own folder (bench/conv writes conv.csv and conv_all.csv). Binary built on the host
# (-O3, sm_90a) and carried. One H100, $OUT set; about 3 minutes.
set -u
O=${OUT:?set OUT}; export HPDL_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
start=$SECONDS
log() { echo "[$((SECONDS-start)) s] $*" | tee -a $O/summary.log; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a $O/summary.log; log "commit $HPDL_COMMIT"
for p in f16 bf16; do
  mkdir -p $O/conv_$p
  timeout 150 build/bench/conv --precision $p --output $O/conv_$p > $O/conv_$p/conv_$p.log 2>&1
  log "bench/conv $p rc=$?"; grep -E "geometric|unsteady|WRONG" $O/conv_$p/conv_$p.log | tee -a $O/summary.log
done
mkdir -p $O/conv_f32
timeout 60 build/bench/conv --precision f32 --rung winograd --output $O/conv_f32 > $O/conv_f32/conv_f32.log 2>&1
log "bench/conv f32 winograd rc=$?"; grep -E "geometric" $O/conv_f32/conv_f32.log | tee -a $O/summary.log
cd $O && tar czf runs.tgz conv_f16 conv_bf16 conv_f32 && rm -rf conv_f16 conv_bf16 conv_f32
