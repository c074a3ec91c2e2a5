#!/usr/bin/env bash
# Two H200s. S (the 1-GPU step's first-layer dW through the 2-GPU step's
# GEMM kernel, less the posts) and SF (S, and the first layer's forward
# product also storing C from a staged tile, a kernel instance of its own,
# on one GPU and on two): gpu_mpi_dp (S) on two ranks, SF's kernels traced
# in one short focus run, then the short focus rows of S and SF in turns,
# four rounds. Binaries built on the host for sm_90a, carried as xz with the
# Fashion-MNIST files (xz) in build/c21.
set -u -o pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
C=build/c21; B=$C/x; W=/tmp/w; mkdir -p $B $W/r
exec > >(tee "$W/r/device.log") 2>&1
MPIRUN="mpirun --allow-run-as-root --bind-to none -x NCCL_NVLS_ENABLE -x HPDL_COMMIT"
start=$SECONDS; step() { echo "== $1 ($((SECONDS - start)) s)"; }
pack() { tar czf $OUT/$1.tgz -C $W $1; }
for f in $C/*.xz; do xz -dc $f > $B/$(basename $f .xz); chmod +x $B/$(basename $f .xz); done
mkdir -p .raw; for f in $C/data/*.xz; do xz -dc $f > .raw/$(basename $f .xz); done
MNIST_DIR=.raw scripts/data.sh data/fashion-mnist >/dev/null || echo "no Fashion-MNIST"
cupti=$(find / -name 'libcupti.so*' -not -path '/proc/*' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$(dirname "$cupti"):${LD_LIBRARY_PATH:-}
export HPDL_COMMIT=1c15610
step "gpu_mpi_dp (S)"
timeout 120 $MPIRUN -np 2 $B/gpu_mpi_dp > $W/r/gpu_mpi_dp.log 2>&1; echo "rc=$?" >> $W/r/gpu_mpi_dp.log
tail -n 2 $W/r/gpu_mpi_dp.log
short="--focus --algo ipc --reps 10 --pieces 1 --halve 0 --ctas 0 --prio 0 --no-torch"
d=$W/trace/SF; mkdir -p $d; step "dpSF traced"
timeout 120 $MPIRUN -x LD_LIBRARY_PATH -x CUDA_INJECTION64_PATH=$PWD/$C/libtrace.so -x TRACE_DIR=$d -np 2 \
  $B/dpSF $short --data data/fashion-mnist --output $d > $d/dp_scaling.log 2>&1
echo "rc=$?" >> $d/dp_scaling.log; grep "no overlap  " $d/dp_scaling.log; pack trace
for round in 1 2 3 4; do for v in S SF; do
  d=$W/ab/$v$round; mkdir -p $d; step "dp$v round $round"
  timeout 60 $MPIRUN -np 2 $B/dp$v $short --data data/fashion-mnist --output $d > $d/dp_scaling.log 2>&1
  echo "rc=$?" >> $d/dp_scaling.log; grep "^no overlap,2048" $d/dp_scaling_focus.csv | cut -d, -f3,11,12,17
done; done; pack ab
step done; pack r
