#!/bin/bash
# The one-tile rung's copies issued by the four warps (gg_spread, probe_step_spread)
# against thread 0 issuing all five (gg_head at f82929a; probe_step at d03e0b0), in turns.
B=build/h90
O=/tmp/o6; mkdir -p $O
timeout 240 $B/gpu/gpu_gemm > $O/gpu_gemm.log 2>&1; echo "rc=$?" >> $O/gpu_gemm.log
tail -2 $O/gpu_gemm.log
for r in 1 2; do
  for v in head spread; do $B/exp/gg_$v > $O/gg_${v}_run$r.csv 2>&1; done
done
for r in 1 2; do
  for cfg in "f16 512 3000" "f16 512 512" "f16 2048 512" "f16 2048 3000" "f16 512 128"; do
    set -- $cfg
    $B/exp/probe_step $1 $2 $3 >> $O/probe_head.log 2>&1
    $B/exp/probe_step_spread $1 $2 $3 >> $O/probe_spread.log 2>&1
  done
done
timeout 120 compute-sanitizer --tool racecheck $B/gpu/gpu_gemm test_gemm_hopper_split > $O/racecheck.log 2>&1
tail -2 $O/racecheck.log
tar czf $OUT/o6.tgz -C /tmp o6
paste -d, $O/gg_head_run1.csv $O/gg_spread_run1.csv $O/gg_head_run2.csv $O/gg_spread_run2.csv | awk -F, 'NR>1{a+=$7;b+=$16;c+=$25;d+=$34; printf "%5s %5s %-7s head %6s %6s spread %6s %6s cub %6s\n",$1,$2,$3,$7,$25,$16,$34,$8} END{printf "sums head %.1f %.1f spread %.1f %.1f\n",a,c,b,d}'
cat $O/probe_head.log $O/probe_spread.log | grep -v "^variant" | paste - -
