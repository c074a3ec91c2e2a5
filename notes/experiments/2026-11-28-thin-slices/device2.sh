#!/bin/bash
# Second device call: the column sums in runs (gpu_mlp, the step in a graph),
# the GPU tests not run in the first, the Hopper GEMMs of the b 3000 step under ncu.
B=build/h90
O=/tmp/o2; mkdir -p $O
( timeout 450 $B/gpu/gpu_conv > $O/gpu_conv.log 2>&1; echo "rc=$?" >> $O/gpu_conv.log ) &
for t in gpu_mlp gpu_gemm gpu_optim gpu_checks gpu_vecadd gpu_matpow; do
  timeout 200 $B/gpu/$t > $O/$t.log 2>&1; echo "rc=$?" >> $O/$t.log
done
wait
for cfg in "f16 512 3000" "f16 2048 32" "f16 2048 3000" "f32 2048 3000" "f32 512 512"; do
  set -- $cfg
  $B/exp/probe_step $1 $2 $3 > $O/probe_$1_$2_$3.log 2>&1
done
timeout 60 ncu --csv --graph-profiling node --clock-control none --cache-control none --metrics gpu__time_duration.sum $B/exp/probe_step f16 512 3000 1 > $O/ncu_f16_512_3000.csv 2>&1
timeout 90 ncu --graph-profiling node --clock-control none -k regex:gemm_wgmma --launch-count 4 --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy $B/exp/probe_step f16 512 3000 1 > $O/ncu_wgmma_sol.txt 2>&1
tar czf $OUT/o2.tgz -C /tmp o2
tail -n 2 $O/gpu_*.log; cat $O/probe_*.log
