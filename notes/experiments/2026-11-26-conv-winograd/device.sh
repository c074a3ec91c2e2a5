#!/usr/bin/env bash
# The f32 Winograd rung: gpu_conv (every rung against the f64 CPU twin, the Winograd
# rung's refusals) and bench/conv's f32 forward pass of the winograd rung against cuDNN.
# Run from the repository root with $OUT an output folder; about 6-8 minutes on one H200.
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
exec > >(tee "$O/device.log") 2>&1
start=$SECONDS
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
git log --oneline -1
make -j16 build/gpu/gpu_conv build/bench/conv > "$O/build.log" 2>&1 || { echo "build failed"; tail -30 "$O/build.log"; exit 1; }
echo "built at $((SECONDS - start)) s"
timeout 300 build/gpu/gpu_conv > "$O/gpu_conv.log" 2>&1; echo "gpu_conv exit $? at $((SECONDS - start)) s"
tail -15 "$O/gpu_conv.log"
timeout 150 build/bench/conv --precision f32 --pass forward --rung winograd --output "$O" > "$O/bench_conv.log" 2>&1
echo "bench/conv exit $? at $((SECONDS - start)) s"
grep -E "3x3|geometric" "$O/bench_conv.log"
