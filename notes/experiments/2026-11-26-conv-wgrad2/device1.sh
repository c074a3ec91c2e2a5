#!/usr/bin/env bash
# Where the backward-filter's time goes after the producers' change (ncu on conv2/3/5_x),
# the forward's tile widths chosen by rounds (bench/conv forward and backward-data, wgmma rung),
# and the f32 floor of ResNet-18's twin check on the GPU. One H100, $OUT set; about 6 minutes.
set -u
O=${OUT:?set OUT}; mkdir -p $O build
start=$SECONDS
log() { echo "[$((SECONDS-start)) s] $*" | tee -a $O/summary.log; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $O/summary.log
make features > /dev/null
NV="nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -DHPDL_HAVE_CUDNN -lineinfo -I."
make -j16 build/bench/conv > $O/build.log 2>&1 & p1=$!
$NV notes/experiments/2026-11-26-conv-wgrad/wgrad.cu -o build/wgrad -lcudnn -lcuda > $O/build_wgrad.log 2>&1 & p2=$!
$NV notes/experiments/2026-11-26-f32-floor/gpu_floor.cu -o build/gpu_floor -lcublas -lcuda > $O/build_floor.log 2>&1 & p3=$!
wait $p2
log "wgrad built"
timeout 150 build/gpu_floor resnet18 2 3 > $O/gpu_floor_resnet18.log 2>&1 & p4=$!
for l in "r50 conv2" "r50 conv3" "r50 conv5"; do
  timeout 90 ncu -k regex:wgmma_wgrad --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats \
      --section SchedulerStats --section ComputeWorkloadAnalysis build/wgrad f16 "$l" once > "$O/ncu_${l// /_}.txt" 2>&1
  log "ncu $l rc=$?"
done
timeout 120 ncu -k regex:wgmma_wgrad --set full --import-source yes -o /tmp/w3 build/wgrad f16 "r50 conv3" once > /dev/null 2>&1
ncu -i /tmp/w3.ncu-rep --page source --csv --print-source sass 2>/dev/null | gzip > $O/wgrad_conv3_sass.csv.gz
log "ncu source view done"
wait $p1
log "bench built"
for p in f16 bf16; do
  for pass in forward backward-data; do
    timeout 60 build/bench/conv --precision $p --pass $pass --rung wgmma --output $O/conv_${p}_$pass > $O/conv_${p}_$pass.log 2>&1
    log "bench/conv $p $pass rc=$?"; grep -E "geometric|1x1" $O/conv_${p}_$pass.log | tee -a $O/summary.log
  done
done
wait $p3 $p4
log "floor rc: $(tail -4 $O/gpu_floor_resnet18.log)"
timeout 60 build/gpu_floor small 8 3 > $O/gpu_floor_small.log 2>&1
cd $O && tar czf runs.tgz conv_* ncu_* gpu_floor_* build*.log 2>/dev/null && rm -rf conv_* ncu_* gpu_floor_* build*.log
log done
