#!/usr/bin/env bash
# Two GPUs, host-built binaries: model_parallel at DEPTH 24 (naive, GPipe, 1F1B; activation memory), bounded to ~100 s.
set -u
export NCCL_NVLS_ENABLE=0 HPDL_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
O=${OUT:?}; mkdir -p $O/g2
start=$SECONDS
timeout 100 build90/bench/model_parallel --gpus 2 --depth 24 --micro 4,8 --output $O/g2 > $O/model_parallel.log 2>&1
echo "rc $? in $((SECONDS-start)) s"; tail -25 $O/model_parallel.log
