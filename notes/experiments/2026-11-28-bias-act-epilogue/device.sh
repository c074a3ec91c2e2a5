#!/bin/bash
# The MLP's bias + activation in the forward GEMM's epilogue: gpu_gemm (all of
# it: every kernel's store changed) and gpu_mlp, then the step in its graph
# against a4511a7's (probe_step_xent), in turns.
B=build/h90
O=/tmp/e; mkdir -p $O
timeout 70 $B/gpu/gpu_gemm > $O/gpu_gemm.log 2>&1; echo "rc=$?" >> $O/gpu_gemm.log
grep -E "FAIL|bias_act|passed" $O/gpu_gemm.log | tail -4
timeout 40 $B/gpu/gpu_mlp > $O/gpu_mlp.log 2>&1; echo "rc=$?" >> $O/gpu_mlp.log
tail -2 $O/gpu_mlp.log
for r in 1 2; do
  for cfg in "f16 512 3000" "f16 2048 32" "f16 2048 128" "f16 512 512" "f16 2048 512"; do
    set -- $cfg
    echo "a4511a7 $cfg $($B/exp/probe_step_xent $1 $2 $3 | tail -2 | paste -sd' ')" >> $O/probe.log
    echo "epilogue $cfg $($B/exp/probe_step_epi $1 $2 $3 | tail -2 | paste -sd' ')" >> $O/probe.log
  done
done
cat $O/probe.log
cp $O/* $OUT/ 2>/dev/null
