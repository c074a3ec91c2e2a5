#!/usr/bin/env bash
# One GPU: tests/gpu_conv's f32 test (its cuDNN case failed at 44158ae) at ea004b7 (old) and at
# the working tree (new), then the full bench/gemm (the committed gemm*.csv). Binaries prebuilt
# in build/exp (GPU_CC=90 NVOPT=-O3; old from a worktree of ea004b7), carried.
#   from the repository root:  OUT=<dir> notes/experiments/2026-11-27-conv-cudnn/device.sh
set -u -o pipefail
OUT=${OUT:?set OUT to the output folder}
mkdir -p "$OUT/gemm"
exec > >(tee "$OUT/device.log") 2>&1
export HPDL_COMMIT=$(cat .commit 2>/dev/null)
echo "== $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader) at $HPDL_COMMIT"
for v in old new; do
    s=$SECONDS
    timeout 100 build/exp/gpu_conv_$v conv_f32 > "$OUT/conv_$v.log" 2>&1
    echo "gpu_conv_$v conv_f32: rc $? in $((SECONDS - s)) s"; grep -E "error|FAIL|passed" "$OUT/conv_$v.log" | head -n 6
done
s=$SECONDS
timeout 380 build/exp/gemm --output "$OUT/gemm" > "$OUT/gemm.log" 2>&1
echo "bench/gemm: rc $? in $((SECONDS - s)) s"
cat "$OUT/gemm/gemm.csv" 2>/dev/null
tar -C "$OUT" -cf "$OUT/gemm.tar" gemm && rm -rf "$OUT/gemm"
