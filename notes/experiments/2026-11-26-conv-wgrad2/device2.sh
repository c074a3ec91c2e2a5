#!/usr/bin/env bash
# The backward-filter with every tile given the same number of blocks: ncu on conv2/3_x (L2 hit
# rate, DRAM), each kernel's time at the GPU's own clocks (ours and cuDNN's), bench/conv
# backward-filter f16/bf16 on the wgmma rung; the f32 floor of ResNet-18's twin check on the GPU.
# One H100, $OUT set; about 5 minutes.
set -u
O=${OUT:?set OUT}; mkdir -p $O build
start=$SECONDS
log() { echo "[$((SECONDS-start)) s] $*" | tee -a $O/summary.log; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $O/summary.log
make features > /dev/null
NV="nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -DHPDL_HAVE_CUDNN -lineinfo -I."
make -j16 build/bench/conv > $O/build.log 2>&1 & p1=$!
$NV notes/experiments/2026-11-26-conv-wgrad/wgrad.cu -o build/wgrad -lcudnn -lcuda > $O/build_wgrad.log 2>&1 & p2=$!
$NV notes/experiments/2026-11-26-f32-floor/gpu_floor.cu -o build/gpu_floor -lcublas -lcudnn -lcuda > $O/build_floor.log 2>&1 & p3=$!
wait $p2 $p3
log "wgrad and gpu_floor built"
timeout 200 build/gpu_floor resnet18 2 3 > $O/gpu_floor_resnet18.log 2>&1 & p4=$!
timeout 90 ncu --clock-control none --metrics gpu__time_duration.sum build/wgrad f16 "r50 conv" once > $O/ncu_times.txt 2>&1
log "kernel times rc=$?"
for l in "r50 conv2" "r50 conv3" "r50 conv4"; do
  timeout 90 ncu -k regex:wgmma_wgrad --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats \
      build/wgrad f16 "$l" once > "$O/ncu_${l// /_}.txt" 2>&1
  log "ncu $l rc=$? $(grep -E 'L2 Hit Rate|DRAM Throughput|Duration' "$O/ncu_${l// /_}.txt" | tr -s ' ' | tr '\n' ';')"
done
timeout 60 build/wgrad f16 "r50 conv" > $O/wgrad_f16.log 2>&1; grep -E "ratio|geomean" $O/wgrad_f16.log | tee -a $O/summary.log
wait $p1
log "bench built"
for p in f16 bf16; do
  timeout 60 build/bench/conv --precision $p --pass backward-filter --rung wgmma --output $O/conv_${p}_backward-filter > $O/conv_${p}_wgrad.log 2>&1
  log "bench/conv $p backward-filter rc=$?"; grep -E "geometric|r50_conv._3x3.*wgmma" $O/conv_${p}_wgrad.log | tee -a $O/summary.log
done
wait $p4
log "floor: $(cat $O/gpu_floor_resnet18.log | tail -13)"
timeout 60 build/gpu_floor small 8 3 > $O/gpu_floor_small.log 2>&1
cd $O && tar czf runs.tgz conv_* ncu_* gpu_floor_* wgrad_* build*.log 2>/dev/null && rm -rf conv_* ncu_* gpu_floor_* wgrad_* build*.log
log done
