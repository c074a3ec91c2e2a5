#!/usr/bin/env bash
# Two H200s. Three builds of bench/dp_scaling:
#   B  the committed code (1c15610);
#   S  the 1-GPU step's first-layer dW through the 2-GPU step's GEMM kernel
#      (C stored from the staged tile), less the posts;
#   P  B with the plain padded mma GEMM storing C through shared memory
#      everywhere (../2026-11-29-fused-epilogue/plain_epilogue.diff).
# First every kernel of one short focus run of each, traced by CUPTI
# (trace.c as CUDA_INJECTION64_PATH); then the short focus rows of B, S, P
# in turns, three rounds, untraced.
# Binaries built on the host for sm_90a, carried as xz with the
# Fashion-MNIST files (xz) in build/c20.
set -u -o pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
C=build/c20; B=$C/x; W=/tmp/w; mkdir -p $B $W/r
exec > >(tee "$W/r/device.log") 2>&1
MPIRUN="mpirun --allow-run-as-root --bind-to none -x NCCL_NVLS_ENABLE -x HPDL_COMMIT"
start=$SECONDS; step() { echo "== $1 ($((SECONDS - start)) s)"; }
pack() { tar czf $OUT/$1.tgz -C $W $1; }
for f in $C/*.xz; do xz -dc $f > $B/$(basename $f .xz); chmod +x $B/$(basename $f .xz); done
mkdir -p .raw; for f in $C/data/*.xz; do xz -dc $f > .raw/$(basename $f .xz); done
MNIST_DIR=.raw scripts/data.sh data/fashion-mnist >/dev/null || echo "no Fashion-MNIST"
cupti=$(find / -name 'libcupti.so*' -not -path '/proc/*' 2>/dev/null | head -1); echo "cupti: $cupti"
export LD_LIBRARY_PATH=$(dirname "$cupti"):${LD_LIBRARY_PATH:-}
export HPDL_COMMIT=1c15610
short="--focus --algo ipc --reps 10 --pieces 1 --halve 0 --ctas 0 --prio 0 --no-torch"
for v in B S P; do
  d=$W/trace/$v; mkdir -p $d; step "dp$v traced"
  timeout 120 $MPIRUN -x LD_LIBRARY_PATH -x CUDA_INJECTION64_PATH=$PWD/$C/libtrace.so -x TRACE_DIR=$d -np 2 \
    $B/dp$v $short --data data/fashion-mnist --output $d > $d/dp_scaling.log 2>&1
  echo "rc=$?" >> $d/dp_scaling.log; grep "no overlap  " $d/dp_scaling.log; ls -la $d | head
done; pack trace
for round in 1 2 3; do for v in B S P; do
  d=$W/ab/$v$round; mkdir -p $d; step "dp$v round $round"
  timeout 60 $MPIRUN -np 2 $B/dp$v $short --data data/fashion-mnist --output $d > $d/dp_scaling.log 2>&1
  echo "rc=$?" >> $d/dp_scaling.log; grep "^no overlap,2048" $d/dp_scaling_focus.csv | cut -d, -f3,11,12,17
done; done; pack ab
step done; pack r
