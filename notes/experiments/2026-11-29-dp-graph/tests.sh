#!/usr/bin/env bash
# Two H200s: the data-parallel driver's local gradient replayed from CUDA
# graphs (G), and the MLP's and CNN's captures through the one helper
# (hpdl__record_graph): gpu_mpi_dp on one rank and on two, its fused case
# under memcheck, gpu_mlp and gpu_cnn on GPU 0. Binaries built on the host
# for sm_90a, carried as xz in build/c26.
set -u -o pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
C=build/c26; B=$C/x; W=/tmp/w; mkdir -p $B $W/tests
exec > >(tee "$W/tests/device.log") 2>&1
start=$SECONDS; step() { echo "== $1 ($((SECONDS - start)) s)"; }
for f in $C/*.xz; do xz -dc $f > $B/$(basename $f .xz); chmod +x $B/$(basename $f .xz); done
MPIRUN="mpirun --allow-run-as-root --bind-to none -x NCCL_NVLS_ENABLE"
for n in 1 2; do
  step "gpu_mpi_dp, $n rank(s)"
  timeout 120 $MPIRUN -np $n $B/gpu_mpi_dp > $W/tests/gpu_mpi_dp_$n.log 2>&1; echo "rc=$?" >> $W/tests/gpu_mpi_dp_$n.log
  tail -n 2 $W/tests/gpu_mpi_dp_$n.log
done
step "memcheck, the fused case"
timeout 150 $MPIRUN -np 2 compute-sanitizer --tool memcheck $B/gpu_mpi_dp test_fused > $W/tests/memcheck.log 2>&1
echo "rc=$?" >> $W/tests/memcheck.log; grep -i "error summary\|passed\|rc=" $W/tests/memcheck.log
for t in gpu_mlp gpu_cnn; do
  step "$t, GPU 0"; CUDA_VISIBLE_DEVICES=0 timeout 240 $B/$t > $W/tests/$t.log 2>&1; echo "rc=$?" >> $W/tests/$t.log
  tail -n 2 $W/tests/$t.log
done
step done; tar czf $OUT/tests.tgz -C $W tests
