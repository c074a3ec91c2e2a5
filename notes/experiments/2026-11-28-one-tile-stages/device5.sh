#!/bin/bash
# The one-tile rung's tiles in pairs sharing B (gg_p1, probe_step_p1) against
# unpaired (gg_p0, -DHPDL__WG_ONE_TILE_PAIRS=0; probe_step at d03e0b0), in turns;
# gpu_gemm with pairs; racecheck on the split test.
B=build/h90
O=/tmp/o5; mkdir -p $O
timeout 240 $B/gpu/gpu_gemm > $O/gpu_gemm.log 2>&1; echo "rc=$?" >> $O/gpu_gemm.log
tail -3 $O/gpu_gemm.log
for r in 1 2; do
  for v in p0 p1; do $B/exp/gg_$v > $O/gg_${v}_run$r.csv 2>&1; done
done
for r in 1 2; do
  for cfg in "f16 512 3000" "f16 512 512" "f16 2048 512" "f16 2048 3000"; do
    set -- $cfg
    $B/exp/probe_step $1 $2 $3 >> $O/probe_p0.log 2>&1
    $B/exp/probe_step_p1 $1 $2 $3 >> $O/probe_p1.log 2>&1
  done
done
timeout 200 compute-sanitizer --tool racecheck $B/gpu/gpu_gemm test_gemm_hopper_split_k > $O/racecheck.log 2>&1
tail -4 $O/racecheck.log
tar czf $OUT/o5.tgz -C /tmp o5
paste -d, $O/gg_p0_run1.csv $O/gg_p1_run1.csv $O/gg_p0_run2.csv $O/gg_p1_run2.csv | awk -F, 'NR>1{printf "%5s %5s %-7s p0 %6s %6s p1 %6s %6s cub %6s\n",$1,$2,$3,$7,$25,$16,$34,$8}'
cat $O/probe_p0.log $O/probe_p1.log | grep -v "^variant" | paste - -
