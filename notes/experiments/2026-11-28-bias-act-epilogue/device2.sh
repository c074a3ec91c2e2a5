#!/bin/bash
# gpu_gemm + gpu_mlp with the bias-activation epilogue, the step against 0cc17d9's, then bench/mlp.
B=build/h90
O=/tmp/e; mkdir -p $O
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv > $O/gpu.txt
timeout 90 $B/gpu/gpu_gemm > $O/gpu_gemm.log 2>&1; echo "rc=$?" >> $O/gpu_gemm.log
grep -E "FAIL|bias_act|passed" $O/gpu_gemm.log | tail -6
timeout 60 $B/gpu/gpu_mlp > $O/gpu_mlp.log 2>&1; echo "rc=$?" >> $O/gpu_mlp.log
tail -2 $O/gpu_mlp.log
for r in 1 2; do
  for cfg in "f16 512 3000" "f16 2048 32" "f16 2048 128" "f16 512 512" "f16 2048 512" "f16 2048 3000" "f32 512 512" "f32 2048 32"; do
    set -- $cfg
    echo "base $cfg $($B/exp/probe_step_base $1 $2 $3 | tail -2 | paste -sd' ')" >> $O/probe.log
    echo "epilogue $cfg $($B/exp/probe_step_epi $1 $2 $3 | tail -2 | paste -sd' ')" >> $O/probe.log
  done
done
cat $O/probe.log
mkdir -p $O/mlp
HPDL_COMMIT=$(cat .commit) timeout 240 $B/bench/mlp --output $O/mlp > $O/mlp.log 2>&1; echo "rc=$?" >> $O/mlp.log
tail -30 $O/mlp.log
cd $O && tar czf $OUT/r.tgz .
