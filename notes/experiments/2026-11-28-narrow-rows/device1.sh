#!/bin/bash
# The 16-bit narrow products of many rows in one tensor-core pass (hpdl__gemm_narrow_rows_tc):
# gpu_gemm and gpu_mlp at the new build, then the MLP step in its graph in turns against the
# build without it (probe_step_head), with 32-row blocks (nrt), 16-row blocks (nrt16) and taken
# from 129 rows (nrt129), then ncu per graph node for f16 H 512 batch 3000.
R=$(pwd); B=build/h90
O=/tmp/e; mkdir -p $O
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv > $O/gpu.txt
timeout 100 $B/gpu/gpu_gemm > $O/gpu_gemm.log 2>&1; echo "rc=$?" >> $O/gpu_gemm.log
grep -E "FAIL|narrow_rows|passed" $O/gpu_gemm.log | tail -6
timeout 60 $B/gpu/gpu_mlp > $O/gpu_mlp.log 2>&1; echo "rc=$?" >> $O/gpu_mlp.log
tail -2 $O/gpu_mlp.log
for r in 1 2; do
  for cfg in "f16 512 3000" "f16 2048 3000" "f16 512 512" "f16 2048 512"; do
    set -- $cfg
    for v in head nrt nrt16 nrt129; do
      echo "$v $cfg $($B/exp/probe_step_$v $1 $2 $3 | tail -2 | paste -sd' ')" >> $O/probe.log
    done
  done
done
cat $O/probe.log
for v in head nrt nrt16; do
  timeout 80 ncu --csv --graph-profiling node --clock-control none --cache-control none --metrics gpu__time_duration.sum $B/exp/probe_step_$v f16 512 3000 1 > $O/ncu_${v}_f16_512_3000.csv 2>&1
done
for f in $O/ncu_*.csv; do echo "== $f"; python3 $R/notes/experiments/2026-11-28-step-overhead/ncu_steps.py $f 2>&1 | tail -25; done
cp $O/* $OUT/ 2>/dev/null
