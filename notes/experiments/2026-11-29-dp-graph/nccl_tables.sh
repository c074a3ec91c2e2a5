#!/usr/bin/env bash
# Two H200s, the code of 912b041 (the local gradient replayed from graphs):
# the NCCL tables of bench/dp_scaling again, made as d0ae1e2's were (the full
# run with PyTorch DDP, then --focus --algo nccl --reps 3), which ran the
# local gradient eagerly. The binary built on the host for sm_90a, carried
# as xz with the Fashion-MNIST files (xz) in build/c27.
set -u -o pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0 HPDL_COMMIT=912b041
C=build/c27; B=$C/x; W=/tmp/w; mkdir -p $B $W/full $W/nccl
exec > >(tee "$W/device.log") 2>&1
MPIRUN="mpirun --allow-run-as-root --bind-to none -x NCCL_NVLS_ENABLE -x HPDL_COMMIT"
start=$SECONDS; step() { echo "== $1 ($((SECONDS - start)) s)"; }
xz -dc $C/dpG.xz > $B/dp_scaling; chmod +x $B/dp_scaling
mkdir -p .raw; for f in $C/data/*.xz; do xz -dc $f > .raw/$(basename $f .xz); done
MNIST_DIR=.raw scripts/data.sh data/fashion-mnist >/dev/null || echo "no Fashion-MNIST"
step "full tables, PyTorch DDP"
timeout 330 $MPIRUN -np 2 $B/dp_scaling --data data/fashion-mnist --output $W/full > $W/full/dp_scaling.log 2>&1
echo "rc=$?" >> $W/full/dp_scaling.log; tail -n 3 $W/full/dp_scaling.log
tar czf $OUT/full.tgz -C $W full
step "focus, NCCL"
timeout 200 $MPIRUN -np 2 $B/dp_scaling --focus --algo nccl --reps 3 --data data/fashion-mnist --output $W/nccl \
  > $W/nccl/dp_scaling.log 2>&1; echo "rc=$?" >> $W/nccl/dp_scaling.log
grep "^no overlap," $W/nccl/dp_scaling_focus.csv
step done; tar czf $OUT/nccl.tgz -C $W nccl device.log
