#!/usr/bin/env bash
# Two H200s: scripts/kernel_trace.sh on mlp_train_dp (the profile of the
# CME 213 project's Q2.1), NCCL and the NVLink one-shot; the built code is
# d0ae1e2's, the tracer scripts/kernel_trace.{sh,c,py} as first committed.
set -u -o pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0 HPDL_COMMIT=d0ae1e2
C=build/c25; B=$C/x; W=/tmp/w; mkdir -p $B $W
exec > >(tee "$W/device.log") 2>&1
xz -dc $C/mlp_train_dp.xz > $B/mlp_train_dp; chmod +x $B/mlp_train_dp
mkdir -p .raw; for f in $C/data/*.xz; do xz -dc $f > .raw/$(basename $f .xz); done
MNIST_DIR=.raw scripts/data.sh data/fashion-mnist >/dev/null || echo "no Fashion-MNIST"
for algo in nccl ipc; do
  echo "== $algo"
  timeout 120 scripts/kernel_trace.sh $W/$algo mpirun --allow-run-as-root --bind-to none -np 2 \
    $B/mlp_train_dp --hidden 512 --batch 1500 --epochs 2 --algo $algo
  echo "rc=$?"; du -sh $W/$algo
done
tar czf $OUT/kt.tgz --exclude="trace.*.csv" -C $W nccl ipc device.log
(cd $W && tar czf $OUT/raw.tgz nccl/trace.*.csv)
