#!/bin/bash
# Per-kernel times (ncu, graph nodes one by one) of the f16 own-kernel step where the
# fused bias + ReLU epilogue did not pay: H 512 batch 3000 and 512, 0cc17d9 against the build carried.
R=$(pwd); B=build/h90
O=/tmp/e; mkdir -p $O
for cfg in "512 3000" "512 512"; do
  set -- $cfg
  for v in base epi; do
    timeout 80 ncu --csv --graph-profiling node --clock-control none --cache-control none --metrics gpu__time_duration.sum $B/exp/probe_step_$v f16 $1 $2 1 > $O/ncu_${v}_f16_$1_$2.csv 2>&1
  done
done
cd $O && for f in ncu_*.csv; do echo "== $f"; python3 $R/notes/experiments/2026-11-28-step-overhead/ncu_steps.py $f 2>&1; done
tar czf $OUT/ncu.tgz ncu_*
