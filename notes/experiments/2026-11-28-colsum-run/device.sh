#!/bin/bash
# The committed bench/mlp run (with PyTorch) on the binaries built at d03e0b0 (HEAD's code).
set -u
export HPDL_COMMIT=$(cat .commit)
mkdir -p /tmp/w/res
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader > /tmp/w/gpu.txt
( time timeout 420 build/h90/bench/mlp --output /tmp/w/res ) > /tmp/w/mlp.log 2>&1; echo "mlp rc $?" >> /tmp/w/mlp.log
tar czf $OUT/final.tgz -C /tmp w
tail -5 /tmp/w/mlp.log; cat /tmp/w/res/mlp_detail.csv 2>/dev/null | head -40
