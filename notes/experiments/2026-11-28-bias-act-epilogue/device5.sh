#!/bin/bash
# The bias put into the accumulators after the first copies are issued (0da6813) against
# d2c3158 (before them) and 0cc17d9 (no fused epilogue): gpu_gemm's epilogue test, gpu_mlp, the
# step in its graph in turns, ncu per kernel at H 512 batch 3000 and 512, then bench/mlp.
R=$(pwd); B=build/h90
O=/tmp/e; mkdir -p $O
timeout 90 $B/gpu/gpu_gemm bias_act > $O/gpu_gemm.log 2>&1; echo "rc=$?" >> $O/gpu_gemm.log
grep -E "FAIL|bias_act|passed" $O/gpu_gemm.log | tail -3
timeout 120 $B/gpu/gpu_mlp > $O/gpu_mlp.log 2>&1; echo "rc=$?" >> $O/gpu_mlp.log
grep -E "FAIL|passed" $O/gpu_mlp.log | tail -3
for r in 1; do
  for cfg in "f16 512 3000" "f16 512 512" "f16 2048 32" "f16 2048 128" "f16 512 32"; do
    set -- $cfg
    for v in base prev epi; do
      echo "$v $cfg $($B/exp/probe_step_$v $1 $2 $3 | tail -1)" >> $O/probe.log
    done
  done
done
cat $O/probe.log
for cfg in "512 3000" "512 512"; do
  set -- $cfg
  timeout 80 ncu --csv --graph-profiling node --clock-control none --cache-control none --metrics gpu__time_duration.sum $B/exp/probe_step_epi f16 $1 $2 1 > $O/ncu_now_f16_$1_$2.csv 2>&1
  python3 $R/notes/experiments/2026-11-28-step-overhead/ncu_steps.py $O/ncu_now_f16_$1_$2.csv | grep -A12 " own:" | grep -E "own:|wgmma"
done
mkdir -p $O/mlp
HPDL_COMMIT=$(cat .commit) timeout 240 $B/bench/mlp --output $O/mlp > $O/mlp.log 2>&1; echo "rc=$?" >> $O/mlp.log
tail -13 $O/mlp.log
cd $O && tar czf $OUT/r.tgz .
