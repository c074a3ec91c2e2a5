#!/usr/bin/env bash
# Two H200s: the single-GPU trainer (mlp_train: one CUDA graph replay a step)
# against the data-parallel driver on one rank and on two (mlp_train_dp,
# eager launches), H 2048, f32, 512 rows a GPU, five epochs, each untraced
# and then under scripts/kernel_trace.sh, for the kernels and gaps of a
# step. Binaries built on the host for sm_90a (30dbcaf), carried as xz with
# the Fashion-MNIST files (xz) in build/c25.
set -u -o pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0 HPDL_COMMIT=30dbcaf
C=build/c25; B=$C/x; W=/tmp/w; mkdir -p $B $W
exec > >(tee "$W/device.log") 2>&1
for t in mlp_train mlp_train_dp; do xz -dc $C/$t.xz > $B/$t; chmod +x $B/$t; done
mkdir -p .raw; for f in $C/data/*.xz; do xz -dc $f > .raw/$(basename $f .xz); done
MNIST_DIR=.raw scripts/data.sh data/fashion-mnist >/dev/null || echo "no Fashion-MNIST"
MPIRUN="mpirun --allow-run-as-root --bind-to none"
args="--hidden 2048 --batch 512 --epochs 5"
declare -A RUNS=([single]="$B/mlp_train $args --precision f32" [dp1]="$MPIRUN -np 1 $B/mlp_train_dp $args --algo ipc"
                 [dp2]="$MPIRUN -np 2 $B/mlp_train_dp $args --algo ipc")
for v in single dp1 dp2; do
  echo "== $v"; timeout 120 ${RUNS[$v]} 2>&1 | tail -n 6
  echo "== $v traced"; timeout 120 scripts/kernel_trace.sh $W/$v ${RUNS[$v]} > $W/$v.log 2>&1; echo "rc=$?"
done
tar czf $OUT/steps.tgz -C $W single dp1 dp2 single.log dp1.log dp2.log device.log
