#!/usr/bin/env bash
# Two H200s, the code of 819d846: gpu_mpi_dp's fused case under memcheck on
# two ranks, then four more short focus runs (no PyTorch) for the spread of
# E. Binaries built on the host for sm_90a, carried as xz with the
# Fashion-MNIST files (xz) in build/c11.
set -u -o pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0 HPDL_COMMIT=819d846
C=build/c11; B=$C/x; W=/tmp/w; mkdir -p $B $W/check
exec > >(tee "$W/check/device.log") 2>&1
MPIRUN="mpirun --allow-run-as-root --bind-to none -x NCCL_NVLS_ENABLE -x HPDL_COMMIT"
start=$SECONDS; step() { echo "== $1 ($((SECONDS - start)) s)"; }
for f in $C/*.xz; do xz -dc $f > $B/$(basename $f .xz); chmod +x $B/$(basename $f .xz); done
mkdir -p .raw; for f in $C/data/*.xz; do xz -dc $f > .raw/$(basename $f .xz); done
MNIST_DIR=.raw scripts/data.sh data/fashion-mnist >/dev/null || echo "no Fashion-MNIST"
for tool in memcheck synccheck; do
  step "$tool, the fused case"
  timeout 150 $MPIRUN -np 2 compute-sanitizer --tool $tool $B/gpu_mpi_dp test_fused > $W/check/$tool.log 2>&1
  echo "rc=$?" >> $W/check/$tool.log; grep -i "error summary\|passed\|rc=" $W/check/$tool.log
done
short="--focus --algo ipc --reps 10 --pieces 1 --halve 0 --ctas 0 --prio 0 --no-torch"
for round in 1 2 3 4; do
  d=$W/check/short$round; mkdir -p $d; step "short focus $round"
  timeout 60 $MPIRUN -np 2 $B/dpE2 $short --data data/fashion-mnist --output $d > $d/dp_scaling.log 2>&1
  echo "rc=$?" >> $d/dp_scaling.log; grep "^no overlap,2048" $d/dp_scaling_focus.csv | cut -d, -f3,11,12,17
done
step done
tar czf $OUT/check.tgz -C $W check
