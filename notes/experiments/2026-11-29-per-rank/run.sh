#!/usr/bin/env bash
# Two H200s: each rank's own compute and reduction times (per_rank.diff,
# printed with HPDL_PER_RANK set) in the short focus rows of dp_scaling, for
# the code of 457ad4c (H) and with the staged plain GEMM epilogue of 77d4ce5
# (F, ../2026-11-29-fused-epilogue/plain_epilogue.diff), two rounds in turns.
# Binaries built on the host for sm_90a, carried as xz with the
# Fashion-MNIST files (xz) in build/c14.
set -u -o pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0 HPDL_PER_RANK=1
C=build/c14; B=$C/x; W=/tmp/w; mkdir -p $B $W/per_rank
exec > >(tee "$W/per_rank/device.log") 2>&1
MPIRUN="mpirun --allow-run-as-root --bind-to none -x NCCL_NVLS_ENABLE -x HPDL_PER_RANK"
for f in $C/*.xz; do xz -dc $f > $B/$(basename $f .xz); chmod +x $B/$(basename $f .xz); done
mkdir -p .raw; for f in $C/data/*.xz; do xz -dc $f > .raw/$(basename $f .xz); done
MNIST_DIR=.raw scripts/data.sh data/fashion-mnist >/dev/null || echo "no Fashion-MNIST"
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader
short="--focus --algo ipc --reps 10 --pieces 1 --halve 0 --ctas 0 --prio 0 --no-torch"
for round in 1 2; do for v in H F; do
  d=$W/per_rank/$v$round; mkdir -p $d; echo "== dp$v round $round"
  timeout 60 $MPIRUN -np 2 $B/dp$v $short --data data/fashion-mnist --output $d > $d/dp_scaling.log 2>&1
  echo "rc=$?" >> $d/dp_scaling.log; grep "^no overlap,2048" $d/dp_scaling_focus.csv | cut -d, -f3,11,12,17
done; done
tar czf $OUT/per_rank.tgz -C $W per_rank
