#!/usr/bin/env bash
# The small CNN's time to 90 % over 5 seeds (scripts/gpu_cnn_tta.sh) and the 3-minute NVML
# utilisation series, eager then CUDA graphs (scripts/gpu_cnn_util.sh), on the GPU present (an
# H100 on 2026-11-26), with cnn_train built on the host for sm_90a (build90/examples/cnn_train,
# copied to build/ where the scripts look for it). Output: device.log, results.tar.gz (<gpu>/).
set -u
O=${OUT:?}
export HPDL_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
exec > >(tee $O/device.log) 2>&1
start=$SECONDS
at() { echo "== $1 ($((SECONDS-start)) s)"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv
mkdir -p build/examples && cp build90/examples/cnn_train build/examples/cnn_train && touch build/examples/cnn_train
MNIST_DIR=.gz scripts/data.sh data/fashion-mnist > /dev/null 2>&1 || echo "data.sh failed"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)
slug=$(echo "$gpu" | tr 'A-Z' 'a-z' | sed -e 's/nvidia //' -e 's/[^a-z0-9]\{1,\}/-/g' -e 's/-$//')
W=$(mktemp -d); DIR=$W/$slug; mkdir -p $DIR
at "time to accuracy"; timeout 150 scripts/gpu_cnn_tta.sh $DIR | tail -12
at "utilisation, 185 s eager then 185 s graphs"; timeout $((585 - (SECONDS-start))) scripts/gpu_cnn_util.sh $DIR | grep -v "^epoch"
tar -czf $O/results.tar.gz -C $W $slug
at "done"
