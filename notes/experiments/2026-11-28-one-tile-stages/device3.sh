#!/bin/bash
# The one-tile Hopper rung with 4 stages (built -DHPDL__WG_ONE_TILE_STAGES=4, and
# probe_step at d03e0b0) and 5 (this change), in turns: the f16 MLP products in
# graphs, the step in its graph; then gpu_gemm with 5 stages.
B=build/h90
O=/tmp/o3; mkdir -p $O
for r in 1 2; do
  for s in 4 5; do $B/exp/gemm_graph_s$s > $O/gemm_graph_s${s}_run$r.csv 2>&1; done
done
for r in 1 2; do
  for cfg in "f16 512 3000" "f16 512 512" "f16 2048 512" "f16 2048 3000"; do
    set -- $cfg
    $B/exp/probe_step $1 $2 $3 >> $O/probe_s4.log 2>&1
    $B/exp/probe_step_s5 $1 $2 $3 >> $O/probe_s5.log 2>&1
  done
done
timeout 200 $B/gpu/gpu_gemm > $O/gpu_gemm.log 2>&1; echo "rc=$?" >> $O/gpu_gemm.log
tar czf $OUT/o3.tgz -C /tmp o3
tail -n 2 $O/gpu_gemm.log; cat $O/probe_s4.log $O/probe_s5.log | grep -v "^variant" | paste - - 
