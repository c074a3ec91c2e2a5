#!/usr/bin/env bash
# Two H200s: dp_scaling --focus measuring each row's 1-GPU and 2-GPU runs one after the other
# (dp_prev, 4c14fe4) against in alternating rounds (train_pair), each with PyTorch DDP first,
# twice each, alternating, in one lease. Binaries built on the host for sm_90a, carried gzipped.
set -u -o pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export NCCL_NVLS_ENABLE=0 # NVLink multicast stays off
O=$OUT/r; mkdir -p $O
exec > >(tee "$O/device.log") 2>&1
B=build/h90
MPIRUN="mpirun --allow-run-as-root --bind-to none -x NCCL_NVLS_ENABLE"
start=$SECONDS
step() { echo "== $1 ($((SECONDS - start)) s)"; }
step machine
nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm --format=csv,noheader
for f in dp_prev dp_scaling; do mkdir -p $B/bench && gunzip -c build/carry/$f.gz > $B/bench/$f && chmod +x $B/bench/$f; done
MNIST_DIR=.gz scripts/data.sh data/fashion-mnist >/dev/null || echo "no Fashion-MNIST"
focus() { # binary, log
    timeout ${FOCUS_S:-150} $MPIRUN -np 2 $B/bench/$1 --focus --algo ipc --reps 10 --pieces 1 --halve 0 --ctas 8 --prio 1 \
        --data data/fashion-mnist > $O/$2.log 2>&1; echo "rc=$?" >> $O/$2.log
    grep -E "no overlap( |separate)|pytorch ddp|rc=" $O/$2.log | grep -v v1
}
for i in ${PAIRS:-1 2}; do
    step "dp_prev $i"; focus dp_prev prev$i
    step "dp_scaling $i"; focus dp_scaling new$i
done
step done
