#!/usr/bin/env bash
# One GPU: every f16 rung against cuBLAS on the MLP's first-layer forward at small batches
# (X W0: B x H x 784, NN), to see whether a Hopper rung with 64-row tiles (wgmma) beats the
# persistent one (128 x 256 tiles: 1-16 of them) there.  OUT=<dir> .../device2.sh
set -u
OUT=${OUT:?set OUT}
for s in 32x512x784 128x2048x784 512x2048x784 512x512x784; do
    echo "== $s"
    timeout 100 build/bench/gemm --shape $s --precision f16 --output "$OUT/$s" 2>&1 | grep -E "^ *(cublas|naive|mma|wgmma|splitk|auto|hpdl)|ratio|rung" | head -20
done
