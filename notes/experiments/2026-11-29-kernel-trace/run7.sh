#!/usr/bin/env bash
# Two H200s: the profile of the CME 213 project's Q2.1 with
# scripts/kernel_trace.sh (mlp_train_dp, H 512, 1500 rows a rank, NCCL, two
# epochs), its sums without the roofline probes (--skip "roofline rates")
# as bench/results/h200-x2/profile_dp_*. The binary built on the host for
# sm_90a, carried as xz with the Fashion-MNIST files (xz) in build/c25.
set -u -o pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0 HPDL_COMMIT=${HPDL_COMMIT:?}
C=build/c25; B=$C/x; W=/tmp/w; mkdir -p $B $W
exec > >(tee "$W/device.log") 2>&1
xz -dc $C/mlp_train_dp.xz > $B/mlp_train_dp; chmod +x $B/mlp_train_dp
mkdir -p .raw; for f in $C/data/*.xz; do xz -dc $f > .raw/$(basename $f .xz); done
MNIST_DIR=.raw scripts/data.sh data/fashion-mnist >/dev/null || echo "no Fashion-MNIST"
timeout 120 scripts/kernel_trace.sh $W/trace mpirun --allow-run-as-root --bind-to none -np 2 \
  $B/mlp_train_dp --hidden 512 --batch 1500 --epochs 2
echo "rc=$?"
python3 scripts/kernel_trace.py $W/trace --skip "roofline rates" --csv $W/trace/profile_dp
tar czf $OUT/profile.tgz -C $W trace device.log
