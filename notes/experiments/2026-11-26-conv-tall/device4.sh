#!/usr/bin/env bash
# The timing helpers with the gate (the GPU starts the timed rounds once all are queued): its
# test (gpu_vecadd), then the convolution table again (f16, bf16 every rung and pass, f32
# Winograd). Binaries built on the host (-O3, sm_90a) and carried. One H100, $OUT set; ~3 minutes.
set -u
O=${OUT:?set OUT}; export HPDL_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
start=$SECONDS
log() { echo "[$((SECONDS-start)) s] $*" | tee -a $O/summary.log; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a $O/summary.log; log "commit $HPDL_COMMIT"
timeout 60 build/gpu/gpu_vecadd > $O/gpu_vecadd.log 2>&1; log "gpu_vecadd rc=$? $(tail -1 $O/gpu_vecadd.log)"
grep -E "FAIL|expected" $O/gpu_vecadd.log | tee -a $O/summary.log
mkdir -p $O/conv
for p in f16 bf16; do
  timeout 150 build/bench/conv --precision $p --output $O/conv > $O/conv/conv_$p.log 2>&1
  log "bench/conv $p rc=$?"; grep -E "geometric|unsteady|WRONG" $O/conv/conv_$p.log | tee -a $O/summary.log
done
timeout 60 build/bench/conv --precision f32 --rung winograd --output $O/conv/winograd > $O/conv/conv_f32.log 2>&1
log "bench/conv f32 winograd rc=$?"; grep -E "geometric" $O/conv/conv_f32.log | tee -a $O/summary.log
cd $O && tar czf runs.tgz conv gpu_vecadd.log && rm -rf conv gpu_vecadd.log
