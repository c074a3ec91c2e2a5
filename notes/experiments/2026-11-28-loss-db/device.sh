#!/bin/bash
# The loss kernel giving the last layer's db at every batch (a4511a7): gpu_mlp,
# gpu_mpi_dp on two ranks sharing the GPU, the step in its graph in turns with
# d03e0b0's (probe_step), then the committed bench/mlp run (with PyTorch).
set -u
B=build/h90
O=/tmp/w; mkdir -p $O/res
export HPDL_COMMIT=$(cat .commit)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader > $O/gpu.txt
timeout 150 $B/gpu/gpu_mlp > $O/gpu_mlp.log 2>&1; echo "rc=$?" >> $O/gpu_mlp.log
tail -2 $O/gpu_mlp.log
timeout 120 mpirun --oversubscribe --bind-to none -np 2 $B/gpu/gpu_mpi_dp > $O/gpu_mpi_dp.log 2>&1; echo "rc=$?" >> $O/gpu_mpi_dp.log
tail -3 $O/gpu_mpi_dp.log
for r in 1 2; do
  for cfg in "f16 512 128" "f16 512 3000" "f16 2048 512" "f32 2048 3000"; do
    set -- $cfg
    $B/exp/probe_step $1 $2 $3 >> $O/probe_before.log 2>&1
    $B/exp/probe_step_xent $1 $2 $3 >> $O/probe_after.log 2>&1
  done
done
cat $O/probe_before.log $O/probe_after.log | grep -v "^variant" | paste - -
if grep -q " 0 failed" $O/gpu_mlp.log; then
  ( time timeout 300 $B/bench/mlp --output $O/res ) > $O/mlp.log 2>&1; echo "mlp rc $?" >> $O/mlp.log
  tail -2 $O/mlp.log; cat $O/res/mlp_detail.csv
fi
tar czf $OUT/w.tgz -C /tmp w
