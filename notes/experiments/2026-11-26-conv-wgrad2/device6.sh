#!/usr/bin/env bash
# bench/conv at one commit on one GPU, the binary built on the host and carried
# (make build/bench/conv GPU_CC=90 NVOPT=-O3): f16 and bf16 with every rung, f32 with the
# Winograd rung, each against cuDNN in turns. One H100, $OUT set; about 3 minutes.
set -u
O=${OUT:?set OUT}; mkdir -p $O
start=$SECONDS
log() { echo "[$((SECONDS-start)) s] $*" | tee -a $O/summary.log; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $O/summary.log
for p in f16 bf16; do
  timeout 120 build/bench/conv --precision $p --output $O/conv_$p > $O/conv_$p.log 2>&1
  log "bench/conv $p rc=$?"; grep -E "geometric|stem.*(cudnn|few-mma)" $O/conv_$p.log | tee -a $O/summary.log
done
timeout 60 build/bench/conv --precision f32 --rung winograd --output $O/conv_f32 > $O/conv_f32.log 2>&1
log "bench/conv f32 winograd rc=$?"; grep -E "geometric" $O/conv_f32.log | tee -a $O/summary.log
cd $O && tar czf runs.tgz conv_f16 conv_bf16 conv_f32 conv_*.log && rm -rf conv_f16 conv_bf16 conv_f32 conv_*.log
log done
