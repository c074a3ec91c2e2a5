#!/usr/bin/env bash
# Two H200s. The SGD step of the single-GPU MLP in one pass (B) against the
# two-pass kernel (A, the commit before): tests, then bench/mlp A and B on
# GPU 0, then the data-parallel focus rows A and B in turns, then B with
# PyTorch DDP in the same run. Binaries built on the host for sm_90a and
# carried gzipped, with the Fashion-MNIST files as xz (build/c1).
set -u -o pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
export HPDL_COMMIT=${COMMIT}
B=build/h90/x; C=build/c1; mkdir -p $B $OUT/r
exec > >(tee "$OUT/r/device.log") 2>&1
MPIRUN="mpirun --allow-run-as-root --bind-to none -x NCCL_NVLS_ENABLE -x HPDL_COMMIT"
start=$SECONDS; step() { echo "== $1 ($((SECONDS - start)) s)"; }
nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm --format=csv,noheader
for f in $C/bin/*.gz; do gunzip -c $f > $B/$(basename $f .gz); chmod +x $B/$(basename $f .gz); done
mkdir -p .raw; for f in $C/data/*.xz; do xz -dc $f > .raw/$(basename $f .xz); done
MNIST_DIR=.raw scripts/data.sh data/fashion-mnist >/dev/null || echo "no Fashion-MNIST"
step "gpu_gemm (GPU 1) beside gpu_mlp and gpu_fp8 (GPU 0)"
CUDA_VISIBLE_DEVICES=1 timeout 300 $B/gpu_gemm > $OUT/r/gpu_gemm.log 2>&1 & gemm=$!
CUDA_VISIBLE_DEVICES=0 timeout 200 $B/gpu_mlp > $OUT/r/gpu_mlp.log 2>&1; echo "rc=$?" >> $OUT/r/gpu_mlp.log
CUDA_VISIBLE_DEVICES=0 timeout 200 $B/gpu_fp8 > $OUT/r/gpu_fp8.log 2>&1; echo "rc=$?" >> $OUT/r/gpu_fp8.log
wait $gemm; echo "rc=$?" >> $OUT/r/gpu_gemm.log; tail -n 2 $OUT/r/gpu_mlp.log $OUT/r/gpu_fp8.log $OUT/r/gpu_gemm.log
step "gpu_mpi_dp"
timeout 120 $MPIRUN -np 2 $B/gpu_mpi_dp > $OUT/r/gpu_mpi_dp.log 2>&1; echo "rc=$?" >> $OUT/r/gpu_mpi_dp.log; tail -n 2 $OUT/r/gpu_mpi_dp.log
for v in A B; do
  step "mlp$v"; mkdir -p $OUT/mlp$v
  CUDA_VISIBLE_DEVICES=0 timeout 240 $B/mlp$v --output $OUT/mlp$v > $OUT/mlp$v/mlp.log 2>&1; echo "rc=$?" >> $OUT/mlp$v/mlp.log
done
short="--focus --algo ipc --reps 10 --pieces 1 --halve 0 --ctas 0 --prio 0"
for round in 1 2 3; do for v in A B; do
  d=$OUT/ab/$v$round; mkdir -p $d; step "dp$v round $round"
  timeout 200 $MPIRUN -np 2 $B/dp$v $short --no-torch --data data/fashion-mnist --output $d > $d/dp_scaling.log 2>&1
  echo "rc=$?" >> $d/dp_scaling.log; grep "^no overlap,2048" $d/dp_scaling_focus.csv
done; done
mkdir -p $OUT/final; step "dpB with PyTorch DDP"
timeout 300 $MPIRUN -np 2 $B/dpB $short --data data/fashion-mnist --output $OUT/final > $OUT/final/dp_scaling.log 2>&1
echo "rc=$?" >> $OUT/final/dp_scaling.log; grep "^no overlap,\|^pytorch" $OUT/final/dp_scaling_focus.csv
step done
tar czf /tmp/all.tgz -C $OUT . && rm -rf $OUT/* && mv /tmp/all.tgz $OUT/
