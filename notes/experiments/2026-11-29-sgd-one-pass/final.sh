#!/usr/bin/env bash
# Two H200s, the code with the one-pass SGD step: the committed runs of
# dp_scaling --focus --algo ipc (every setting, PyTorch DDP first) and
# bench/mlp (GPU 0, PyTorch in the same run), and two more short focus
# runs for the spread of E. Binaries built on the host for sm_90a, carried
# gzipped with the Fashion-MNIST files (xz) in build/c5. Each phase is
# packed as it ends, so a call cut short still brings back what finished.
set -u -o pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
export HPDL_COMMIT=${COMMIT}
C=build/c5; B=$C/x; W=/tmp/w; mkdir -p $B $W/r
exec > >(tee "$W/r/device.log") 2>&1
MPIRUN="mpirun --allow-run-as-root --bind-to none -x NCCL_NVLS_ENABLE -x HPDL_COMMIT"
start=$SECONDS; step() { echo "== $1 ($((SECONDS - start)) s)"; }
pack() { tar czf $OUT/$1.tgz -C $W $1; }
nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm --format=csv,noheader
for f in $C/*.gz; do gunzip -c $f > $B/$(basename $f .gz); chmod +x $B/$(basename $f .gz); done
mkdir -p .raw; for f in $C/data/*.xz; do xz -dc $f > .raw/$(basename $f .xz); done
MNIST_DIR=.raw scripts/data.sh data/fashion-mnist >/dev/null || echo "no Fashion-MNIST"
step "focus, every setting, PyTorch DDP first"; mkdir -p $W/focus
timeout 300 $MPIRUN -np 2 $B/dp_scaling --focus --algo ipc --reps 10 --data data/fashion-mnist --output $W/focus \
  > $W/focus/dp_scaling.log 2>&1; echo "rc=$?" >> $W/focus/dp_scaling.log
grep "^no overlap,\|^pytorch" $W/focus/dp_scaling_focus.csv; pack focus
short="--focus --algo ipc --reps 10 --pieces 1 --halve 0 --ctas 0 --prio 0 --no-torch"
for round in 1 2; do
  d=$W/short/$round; mkdir -p $d; step "short focus $round"
  timeout 60 $MPIRUN -np 2 $B/dp_scaling $short --data data/fashion-mnist --output $d > $d/dp_scaling.log 2>&1
  echo "rc=$?" >> $d/dp_scaling.log; grep "^no overlap,2048" $d/dp_scaling_focus.csv
done; pack short
step "bench/mlp (GPU 0)"; mkdir -p $W/mlp
CUDA_VISIBLE_DEVICES=0 timeout 200 $B/mlp --output $W/mlp > $W/mlp/mlp.log 2>&1; echo "rc=$?" >> $W/mlp/mlp.log
tail -n 3 $W/mlp/mlp.log; pack mlp
step done; pack r
