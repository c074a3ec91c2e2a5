#!/bin/bash
# int8 convolution epilogue from the registers (2026-11-26): correctness and speed on one H100/H200.
# Run from the repository root with $OUT set; about 4-5 minutes.
set -u
OUT=${OUT:-out}
mkdir -p "$OUT" build
nvidia-smi -L > "$OUT/gpu.txt" 2>&1
( make -j16 build/gpu/gpu_quant build/bench/quantize > "$OUT/build.log" 2>&1 ) &
nvcc -std=c++17 -O3 -I. -gencode arch=compute_90a,code=sm_90a \
    notes/experiments/2026-11-26-conv-epilogue/layers.cu -o build/layers_f16 -lcublas -ldl -lcuda > "$OUT/build_layers.log" 2>&1
wait
{
    timeout 150 build/gpu/gpu_quant
    echo "rc=$?"
} > "$OUT/gpu_quant.log" 2>&1
{
    timeout 60 compute-sanitizer --tool memcheck build/gpu/gpu_quant test_conv
    echo "rc=$?"
} > "$OUT/memcheck.log" 2>&1
{
    timeout 60 build/layers_f16 256
    timeout 60 build/layers_f16 256
} > "$OUT/layers.log" 2>&1
{
    timeout 100 build/bench/quantize
    echo "rc=$?"
} > "$OUT/quantize_full.log" 2>&1
grep -i "batch 256" "$OUT/quantize_full.log" > "$OUT/quantize_batch256.log"
tail -3 "$OUT/gpu_quant.log"; grep -E "ERROR SUMMARY" "$OUT/memcheck.log"; grep -iE "sum|total" "$OUT/layers.log"
cat "$OUT/quantize_batch256.log"
