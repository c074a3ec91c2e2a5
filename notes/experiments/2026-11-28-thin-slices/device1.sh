#!/bin/bash
# One device call: the thin kernel's slices, the MLP step's kernels under ncu,
# then every single-GPU test program (all built on the host for sm_90a and
# carried in build/h90).
B=build/h90
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv > $OUT/gpu.txt
$B/exp/thin_slices > $OUT/thin1.csv 2>&1
for cfg in "f16 2048 32" "f16 512 3000" "f16 2048 128"; do
  set -- $cfg
  PROBE_LIST=1 $B/exp/probe_step $1 $2 $3 > $OUT/probe_$1_$2_$3.log 2>&1
  timeout 60 ncu --csv --graph-profiling node --clock-control none --cache-control none --metrics gpu__time_duration.sum $B/exp/probe_step $1 $2 $3 1 > $OUT/ncu_$1_$2_$3.csv 2>&1
done
for t in ${TESTS:-gpu_cnn gpu_conv gpu_quant gpu_fp8 gpu_model_parallel}; do
  timeout 150 $B/gpu/$t > $OUT/$t.log 2>&1; echo "rc=$?" >> $OUT/$t.log
done
tail -n 2 $OUT/gpu_*.log
