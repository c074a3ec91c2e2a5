#!/usr/bin/env bash
# The convolution table again with the bench's anchor check (cuDNN in turns timed again where it
# ran 1.5x slower than alone), gpu_cnn whole on the tall boxes, and ResNet-18's epoch (bench/cnn)
# with the column widths picked by rounds. Binaries built on the host (-O3, sm_90a) and carried.
# One H100, $OUT set; about 7 minutes.
set -u
O=${OUT:?set OUT}; export HPDL_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
start=$SECONDS
log() { echo "[$((SECONDS-start)) s] $*" | tee -a $O/summary.log; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a $O/summary.log; log "commit $HPDL_COMMIT"
mkdir -p $O/conv
for p in f16 bf16; do
  timeout 150 build/bench/conv --precision $p --output $O/conv > $O/conv/conv_$p.log 2>&1
  log "bench/conv $p rc=$?"; grep -E "geometric|unsteady|WRONG" $O/conv/conv_$p.log | tee -a $O/summary.log
done
timeout 60 build/bench/conv --precision f32 --rung winograd --output $O/conv/winograd > $O/conv/conv_f32.log 2>&1
log "bench/conv f32 winograd rc=$?"; grep -E "geometric" $O/conv/conv_f32.log | tee -a $O/summary.log
timeout 150 build/gpu/gpu_cnn > $O/gpu_cnn.log 2>&1; log "gpu_cnn rc=$? $(tail -1 $O/gpu_cnn.log)"
grep -E "FAIL|expected" $O/gpu_cnn.log | head | tee -a $O/summary.log
mkdir -p $O/cnn
timeout 150 build/bench/cnn resnet18 --output $O/cnn > $O/cnn/cnn.log 2>&1; log "bench/cnn resnet18 rc=$?"
tail -8 $O/cnn/cnn.log | tee -a $O/summary.log
cd $O && tar czf runs.tgz conv cnn gpu_cnn.log && rm -rf conv cnn gpu_cnn.log
