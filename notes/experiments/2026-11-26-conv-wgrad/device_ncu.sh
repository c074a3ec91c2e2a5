#!/usr/bin/env bash
# Where the wgmma backward-filter's time goes (ncu), and a ResNet-18 f16 step's kernels.
set -u
O=${OUT:-/tmp/out}; mkdir -p $O build
exec > >(tee $O/device_ncu.log) 2>&1
start=$SECONDS
NV="nvcc -std=c++17 -I. -O3 -gencode arch=compute_90a,code=sm_90a -DHPDL_HAVE_CUDNN -lineinfo"
make -j16 build/gpu/gpu_conv > $O/build_gpu_conv.log 2>&1 &
mk=$!
$NV notes/experiments/2026-11-26-conv-wgrad/wgrad.cu -o build/wgrad -lcudnn -lcuda &
a=$!
$NV notes/experiments/2026-11-26-cnn-mixed/steps.cu -o build/steps -lcublas -lcublasLt -lcudnn -ldl &
b=$!
wait $a $b
echo "built at $((SECONDS-start)) s"
for l in "r50 conv4" "r50 conv2"; do
  timeout 120 ncu -k regex:wgmma_wgrad --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section LaunchStats build/wgrad f16 "$l" once > "$O/ncu_${l// /_}.txt" 2>&1
  timeout 60 ncu --metrics gpu__time_duration.sum,lts__t_sectors_op_red.sum,lts__t_sectors_op_atom.sum,dram__bytes_read.sum,lts__t_sector_hit_rate.pct build/wgrad f16 "$l" once > "$O/ncu_all_${l// /_}.txt" 2>&1
done
echo "wgrad ncu done at $((SECONDS-start)) s"
timeout 120 ncu --metrics gpu__time_duration.sum --print-summary per-kernel build/steps resnet18 128 1 1 f16 > $O/ncu_resnet18_f16.txt 2>&1
for p in f16 bf16; do timeout 30 build/steps resnet18 128 3 10 $p; done
timeout 100 build/wgrad f16 r
while kill -0 $mk 2>/dev/null && [ $((SECONDS-start)) -lt 500 ]; do sleep 2; done
echo "gpu_conv build done at $((SECONDS-start)) s"
[ -x build/gpu/gpu_conv ] && timeout $((580 - (SECONDS-start))) build/gpu/gpu_conv 2>&1 | tail -20
echo "all done at $((SECONDS-start)) s"
