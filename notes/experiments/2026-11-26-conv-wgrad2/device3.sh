#!/usr/bin/env bash
# Backward-filter tiles of 3 pieces (and 1) where 4 left columns empty, with the aligned grid:
# gpu_conv's 16-bit tests, wgrad.cu, bench/conv backward-filter f16/bf16 (wgmma rung) and the
# whole f16 bench (every pass, the wgmma rung) for one run with all targets.
# One H100, $OUT set; about 8 minutes.
set -u
O=${OUT:?set OUT}; mkdir -p $O build
start=$SECONDS
log() { echo "[$((SECONDS-start)) s] $*" | tee -a $O/summary.log; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $O/summary.log
make features > /dev/null
NV="nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -DHPDL_HAVE_CUDNN -lineinfo -I."
make -j16 build/gpu/gpu_conv build/bench/conv > $O/build.log 2>&1 & p1=$!
$NV notes/experiments/2026-11-26-conv-wgrad/wgrad.cu -o build/wgrad -lcudnn -lcuda > $O/build_wgrad.log 2>&1 & p2=$!
wait $p2
log "wgrad built"
timeout 60 build/wgrad f16 "r50" > $O/wgrad_f16.log 2>&1; grep -E "ratio|geomean" $O/wgrad_f16.log | tee -a $O/summary.log
timeout 60 ncu -k regex:wgmma_wgrad --section SpeedOfLight --section MemoryWorkloadAnalysis build/wgrad f16 "r50 conv2" once > $O/ncu_conv2.txt 2>&1
log "ncu conv2 $(grep -E 'L2 Hit Rate|DRAM Throughput|Duration|L2 Cache Throughput' $O/ncu_conv2.txt | tr -s ' ' | tr '\n' ';')"
wait $p1
log "built: $(ls build/gpu/gpu_conv build/bench/conv 2>&1 | tr '\n' ' ')"
for p in f16 bf16; do
  timeout 60 build/bench/conv --precision $p --pass backward-filter --rung wgmma --output $O/conv_${p}_backward-filter > $O/conv_${p}_wgrad.log 2>&1
  log "bench/conv $p backward-filter rc=$?"; grep -E "geometric|r50_conv._(3x3|1x1).*wgmma" $O/conv_${p}_wgrad.log | tee -a $O/summary.log
done
for t in test_conv_f16 test_conv_bf16; do
  timeout 150 build/gpu/gpu_conv $t > $O/gpu_conv_$t.log 2>&1; log "gpu_conv $t rc=$? $(tail -1 $O/gpu_conv_$t.log)"
  grep -E "^FAIL|expected" $O/gpu_conv_$t.log | head -5 | tee -a $O/summary.log
done
for p in f16 bf16; do
  [ $((SECONDS-start)) -gt 480 ] && { log "skipped full $p (time)"; continue; }
  timeout 90 build/bench/conv --precision $p --rung wgmma --output $O/conv_${p}_all > $O/conv_${p}_all.log 2>&1
  log "bench/conv $p all passes rc=$?"; grep -E "geometric" $O/conv_${p}_all.log | tee -a $O/summary.log
done
cd $O && tar czf runs.tgz conv_* ncu_* gpu_conv_* wgrad_* build*.log 2>/dev/null && rm -rf conv_* ncu_* gpu_conv_* wgrad_* build*.log
log done
