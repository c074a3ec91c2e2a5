#!/usr/bin/env bash
# The im2col rung for few-channel int8 convolutions: gpu_quant (every conv case on mma, wgmma,
# im2col against the CPU), the two CNNs layer by layer before (int8_nets_base) and after
# (int8_nets), ResNet-18's convolutions int8 vs f16 vs cuDNN per layer, ncu of s1/s2sc.
set -u
O=${OUT:?}
export HPDL_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
exec > >(tee $O/summary.log) 2>&1
start=$SECONDS
at() { echo "== $1 ($((SECONDS-start)) s)"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
at "gpu_quant"; timeout 120 build/gpu/gpu_quant > $O/gpu_quant.log 2>&1; echo "rc=$?"; tail -16 $O/gpu_quant.log
at "nets before"; timeout 100 build/int8_nets_base 2>&1 | tee $O/nets_base.log | tail -60
at "nets after"; timeout 100 build/int8_nets > $O/nets_after.log 2>&1; echo "rc=$?"; grep -E "^\S|sums|conv" $O/nets_after.log | head -40
at "layers"; timeout 90 build/int8_vs_f16 256 2>&1 | tee $O/layers.log | tail -14
at "ncu"
for l in s1 s2sc; do
  timeout 80 ncu -k regex:hpdl__conv --clock-control none --section SpeedOfLight --section WarpStateStats \
    --section SchedulerStats --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis \
    build/int8_vs_f16 256 $l > $O/ncu_$l.txt 2>&1; echo "ncu $l rc=$?"
done
grep -E "hpdl__|Duration|Compute \(SM\) Throughput|Memory Throughput|L2 Cache Throughput|Issue Slots Busy|Registers Per|Achieved Occupancy|Block Size|Grid Size|Warp Cycles Per Issued" $O/ncu_s1.txt | head -40
cd $O && tar czf ncu.tgz ncu_*.txt && rm -f ncu_*.txt
at "done"
