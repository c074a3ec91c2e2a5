#!/bin/bash
# The logits made by the loss kernel on the own-kernel path: gpu_mlp, the step in its
# graph against 0cc17d9's (probe_step_base) in turns, ncu per kernel at H 512 batch 3000,
# then bench/mlp.
R=$(pwd); B=build/h90
O=/tmp/e; mkdir -p $O
timeout 120 $B/gpu/gpu_mlp > $O/gpu_mlp.log 2>&1; echo "rc=$?" >> $O/gpu_mlp.log
grep -E "FAIL|own_kernels|passed|error" $O/gpu_mlp.log | tail -5
for r in 1 2; do
  for cfg in "f16 512 3000" "f16 2048 32" "f16 2048 128" "f16 512 512" "f16 2048 512" "f16 2048 3000" "f16 512 32" "f32 512 512" "f32 2048 32"; do
    set -- $cfg
    echo "base $cfg $($B/exp/probe_step_base $1 $2 $3 | tail -2 | paste -sd' ')" >> $O/probe.log
    echo "now $cfg $($B/exp/probe_step_epi $1 $2 $3 | tail -2 | paste -sd' ')" >> $O/probe.log
  done
done
cat $O/probe.log
timeout 80 ncu --csv --graph-profiling node --clock-control none --cache-control none --metrics gpu__time_duration.sum $B/exp/probe_step_epi f16 512 3000 1 > $O/ncu_now_f16_512_3000.csv 2>&1
python3 $R/notes/experiments/2026-11-28-step-overhead/ncu_steps.py $O/ncu_now_f16_512_3000.csv | grep -A12 " own:"
mkdir -p $O/mlp
HPDL_COMMIT=$(cat .commit) timeout 240 $B/bench/mlp --output $O/mlp > $O/mlp.log 2>&1; echo "rc=$?" >> $O/mlp.log
tail -13 $O/mlp.log
cd $O && tar czf $OUT/r.tgz .
