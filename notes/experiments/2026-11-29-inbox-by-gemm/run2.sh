#!/usr/bin/env bash
# Two H200s, the short focus rows (no PyTorch) in turns, four rounds:
#   0  982ea1f, before;
#   B  9e93f60: the inbox emptied by the next GEMM before its product, and
#      the fused kernel's shares aligned;
#   C  982ea1f with the aligned shares only;
#   D  B with the emptying in the GEMM's epilogue, beside its posts
#      (epilogue.diff).
# Binaries built on the host for sm_90a, carried as xz with the
# Fashion-MNIST files (xz) in build/c8.
set -u -o pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
export HPDL_COMMIT=${COMMIT}
C=build/c8; B=$C/x; W=/tmp/w; mkdir -p $B $W/r
exec > >(tee "$W/r/device.log") 2>&1
MPIRUN="mpirun --allow-run-as-root --bind-to none -x NCCL_NVLS_ENABLE -x HPDL_COMMIT"
start=$SECONDS; step() { echo "== $1 ($((SECONDS - start)) s)"; }
pack() { tar czf $OUT/$1.tgz -C $W $1; }
for f in $C/*.xz; do xz -dc $f > $B/$(basename $f .xz); chmod +x $B/$(basename $f .xz); done
mkdir -p .raw; for f in $C/data/*.xz; do xz -dc $f > .raw/$(basename $f .xz); done
MNIST_DIR=.raw scripts/data.sh data/fashion-mnist >/dev/null || echo "no Fashion-MNIST"
short="--focus --algo ipc --reps 10 --pieces 1 --halve 0 --ctas 0 --prio 0 --no-torch"
for round in 1 2 3 4; do for v in 0 B C D; do
  d=$W/ab2/$v$round; mkdir -p $d; step "dp$v round $round"
  timeout 60 $MPIRUN -np 2 $B/dp$v $short --data data/fashion-mnist --output $d > $d/dp_scaling.log 2>&1
  echo "rc=$?" >> $d/dp_scaling.log; grep "^no overlap,2048" $d/dp_scaling_focus.csv | cut -d, -f3,11,12,17
done; done; pack ab2
step done; pack r
