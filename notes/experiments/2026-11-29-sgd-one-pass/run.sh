#!/usr/bin/env bash
# Two H200s. The SGD step of the single-GPU MLP in one pass (B, the tree as
# it is) against the two-pass kernel (A: one_pass.diff taken back): tests,
# then bench/mlp B on GPU 0, then the data-parallel focus rows A and B in
# turns, then B with PyTorch DDP in the same run. Built here (the carry
# holds only the Fashion-MNIST files, as xz, in build/c1).
set -u -o pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
export HPDL_COMMIT=${COMMIT}
B=build/d/x; C=build/c1; mkdir -p $B $OUT/r
exec > >(tee "$OUT/r/device.log") 2>&1
MPIRUN="mpirun --allow-run-as-root --bind-to none -x NCCL_NVLS_ENABLE -x HPDL_COMMIT"
start=$SECONDS; step() { echo "== $1 ($((SECONDS - start)) s)"; }
nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm --format=csv,noheader
mkdir -p .raw; for f in $C/data/*.xz; do xz -dc $f > .raw/$(basename $f .xz); done
MNIST_DIR=.raw scripts/data.sh data/fashion-mnist >/dev/null || echo "no Fashion-MNIST"
step "build B"
timeout 300 make -j16 B=build/d GPU_CC=90 build/d/bench/dp_scaling build/d/gpu/gpu_mlp build/d/gpu/gpu_mpi_dp \
  build/d/gpu/gpu_fp8 build/d/bench/mlp > $OUT/r/build.log 2>&1 || { echo "build failed"; tail -n 20 $OUT/r/build.log; }
for f in bench/dp_scaling gpu/gpu_mlp gpu/gpu_mpi_dp gpu/gpu_fp8; do cp build/d/$f $B/; done
cp build/d/bench/mlp $B/mlpB; mv $B/dp_scaling $B/dpB
step "build A"
patch -R -p1 < notes/experiments/2026-11-29-sgd-one-pass/one_pass.diff > /dev/null
timeout 200 make -j16 B=build/a GPU_CC=90 build/a/bench/dp_scaling >> $OUT/r/build.log 2>&1 && cp build/a/bench/dp_scaling $B/dpA
patch -p1 < notes/experiments/2026-11-29-sgd-one-pass/one_pass.diff > /dev/null
step "gpu_mlp and gpu_fp8 (GPU 0)"
CUDA_VISIBLE_DEVICES=0 timeout 200 $B/gpu_mlp > $OUT/r/gpu_mlp.log 2>&1; echo "rc=$?" >> $OUT/r/gpu_mlp.log
CUDA_VISIBLE_DEVICES=0 timeout 200 $B/gpu_fp8 > $OUT/r/gpu_fp8.log 2>&1; echo "rc=$?" >> $OUT/r/gpu_fp8.log
tail -n 2 $OUT/r/gpu_mlp.log $OUT/r/gpu_fp8.log
step "gpu_mpi_dp"
timeout 120 $MPIRUN -np 2 $B/gpu_mpi_dp > $OUT/r/gpu_mpi_dp.log 2>&1; echo "rc=$?" >> $OUT/r/gpu_mpi_dp.log; tail -n 2 $OUT/r/gpu_mpi_dp.log
step "mlpB"; mkdir -p $OUT/mlpB
CUDA_VISIBLE_DEVICES=0 timeout 240 $B/mlpB --output $OUT/mlpB > $OUT/mlpB/mlp.log 2>&1; echo "rc=$?" >> $OUT/mlpB/mlp.log
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
