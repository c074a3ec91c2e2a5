#!/usr/bin/env bash
# bench/conv at one commit on one GPU: f16 and bf16 with every rung, f32 with the Winograd rung,
# each against cuDNN in turns; then gpu_conv (every case) and gpu_cnn.
# One H100, $OUT set; about 9 minutes.
set -u
O=${OUT:?set OUT}; mkdir -p $O build
start=$SECONDS
log() { echo "[$((SECONDS-start)) s] $*" | tee -a $O/summary.log; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $O/summary.log
echo "commit $(cat .commit 2>/dev/null)" >> $O/summary.log
make features > /dev/null
make -j16 build/bench/conv > $O/build.log 2>&1
log "bench built"
make -j16 build/gpu/gpu_conv build/gpu/gpu_cnn > $O/build_tests.log 2>&1 & p1=$!
for p in f16 bf16; do
  timeout 150 build/bench/conv --precision $p --output $O/conv_$p > $O/conv_$p.log 2>&1
  log "bench/conv $p rc=$?"; grep -E "geometric|stem.*(cudnn|few-mma)" $O/conv_$p.log | tee -a $O/summary.log
done
timeout 100 build/bench/conv --precision f32 --rung winograd --output $O/conv_f32 > $O/conv_f32.log 2>&1
log "bench/conv f32 winograd rc=$?"; grep -E "geometric" $O/conv_f32.log | tee -a $O/summary.log
wait $p1
log "tests built: $(ls build/gpu/gpu_conv build/gpu/gpu_cnn 2>&1 | tr '\n' ' ')"
timeout 200 build/gpu/gpu_conv > $O/gpu_conv.log 2>&1; log "gpu_conv rc=$? $(tail -1 $O/gpu_conv.log)"
timeout $((570 - (SECONDS-start))) build/gpu/gpu_cnn > $O/gpu_cnn.log 2>&1; log "gpu_cnn rc=$? $(tail -1 $O/gpu_cnn.log)"
grep -E "^FAIL" $O/gpu_conv.log $O/gpu_cnn.log | head | tee -a $O/summary.log
cd $O && tar czf runs.tgz conv_f16 conv_bf16 conv_f32 build*.log conv_*.log gpu_*.log 2>/dev/null && rm -rf conv_f16 conv_bf16 conv_f32 build*.log conv_*.log gpu_*.log
log done
