#!/bin/bash
# The narrow-rows kernel under its rule (M >= 512, K <= 1024) and the backward-data
# product's epilogue (mask + column sums in the short-K kernel): gpu_gemm, gpu_mlp, the
# step in its graph in turns against the build without either (probe_step_head), ncu per
# node at f16 H 512 batch 3000, then bench/mlp with PyTorch.
R=$(pwd); B=build/h90
O=/tmp/e; mkdir -p $O
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv > $O/gpu.txt
timeout 100 $B/gpu/gpu_gemm > $O/gpu_gemm.log 2>&1; echo "rc=$?" >> $O/gpu_gemm.log
grep -E "FAIL|narrow_rows|shortk_delta|passed" $O/gpu_gemm.log | tail -6
timeout 80 $B/gpu/gpu_mlp > $O/gpu_mlp.log 2>&1; echo "rc=$?" >> $O/gpu_mlp.log
grep -E "FAIL|passed" $O/gpu_mlp.log | tail -4
for r in 1 2; do
  for cfg in "f16 512 3000" "f16 512 512" "f16 512 128" "f16 512 32" "f16 2048 3000" "f16 2048 512" "f16 2048 128" "f16 2048 32" "f32 512 3000" "f32 512 32" "f32 2048 512" "f32 2048 32"; do
    set -- $cfg
    for v in head new; do
      echo "$v $cfg $($B/exp/probe_step_$v $1 $2 $3 | tail -2 | paste -sd' ')" >> $O/probe.log
    done
  done
done
cat $O/probe.log
timeout 80 ncu --csv --graph-profiling node --clock-control none --cache-control none --metrics gpu__time_duration.sum $B/exp/probe_step_new f16 512 3000 1 > $O/ncu_new_f16_512_3000.csv 2>&1
python3 $R/notes/experiments/2026-11-28-step-overhead/ncu_steps.py $O/ncu_new_f16_512_3000.csv 2>&1 | tail -12
cp $O/* $OUT/ 2>/dev/null
mkdir -p $OUT/mlp
HPDL_COMMIT=$(cat .commit) timeout 300 $B/bench/mlp --output $OUT/mlp > $OUT/mlp/mlp.log 2>&1; echo "rc=$?" >> $OUT/mlp/mlp.log
tail -12 $OUT/mlp/mlp.log
