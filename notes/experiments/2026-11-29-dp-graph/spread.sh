#!/usr/bin/env bash
# Two H200s, the code of 912b041: five more short focus runs (no PyTorch), for
# the spread of E. The binary and the Fashion-MNIST files (xz) in build/c27.
set -u -o pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0 HPDL_COMMIT=912b041
C=build/c27; B=$C/x; W=/tmp/w; mkdir -p $B $W/spread
exec > >(tee "$W/spread/device.log") 2>&1
xz -dc $C/dpG.xz > $B/dpG; chmod +x $B/dpG
mkdir -p .raw; for f in $C/data/*.xz; do xz -dc $f > .raw/$(basename $f .xz); done
MNIST_DIR=.raw scripts/data.sh data/fashion-mnist >/dev/null || echo "no Fashion-MNIST"
short="--focus --algo ipc --reps 10 --pieces 1 --halve 0 --ctas 0 --prio 0 --no-torch"
for round in 1 2 3 4 5; do
  d=$W/spread/$round; mkdir -p $d; echo "== short focus $round"
  timeout 60 mpirun --allow-run-as-root --bind-to none -x NCCL_NVLS_ENABLE -x HPDL_COMMIT -np 2 $B/dpG $short \
    --data data/fashion-mnist --output $d > $d/dp_scaling.log 2>&1
  echo "rc=$?" >> $d/dp_scaling.log; grep "^no overlap,2048" $d/dp_scaling_focus.csv | cut -d, -f3,11,12,17
done
tar czf $OUT/spread.tgz -C $W spread
