#!/usr/bin/env bash
# The int8 convolution on wgmma (2026-11-26): tests/gpu_quant.cu (every
# convolution case on both rungs, mma and wgmma, byte for byte against the
# CPU; the quantized CNNs with their convolutions on each rung), the
# convolution tests once more under compute-sanitizer, layers.cu (ResNet-18's
# int8 convolutions at batch 256 on both rungs: outputs compared, ms and
# TOPS per layer), bench/quantize's CNN rows (int8 by AUTO and by mma, hpdl
# f16/f32, PyTorch f16; GEMMs up to 2048 only), and, if it builds in time,
# tests/gpu_conv's f16/bf16 cases (the f16 wgmma kernel was made generic
# over the element type).
# Run from the repository root on one H100/H200 with $OUT an output folder:
#     OUT=/tmp/out bash notes/experiments/2026-11-26-int8-wgmma/device.sh
# Writes under $OUT (8 files): build.log, gpu_quant.log (the memcheck run
# appended), layers.log, bench.log, gpu_conv.log (its build, then its
# tests) and the bench's CSVs (quantize.csv, quantize_gemm.csv,
# quantize_mlp.csv).
set -u
OUT=${OUT:?set OUT to an output folder}
mkdir -p "$OUT" build
t0=$(date +%s)
say() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
left() { echo $(( 530 - ($(date +%s) - t0) )); }
EXP=notes/experiments/2026-11-26-int8-wgmma
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)

say "building gpu_quant, bench/quantize and layers; gpu_conv beside them"
timeout 480 make -j16 build/gpu/gpu_conv >"$OUT/gpu_conv.log" 2>&1 &
conv_build=$!
timeout 300 "$NVCC" -std=c++17 -O3 -I. -gencode arch=compute_90a,code=sm_90a $EXP/layers.cu -o build/int8_layers \
    -lcublas -ldl >"$OUT/layers.log" 2>&1 &
layers_build=$!
if ! timeout 360 make -j16 build/gpu/gpu_quant build/bench/quantize >"$OUT/build.log" 2>&1; then
    say "build failed or timed out: tail of build.log"; tail -30 "$OUT/build.log"; exit 1
fi

say "tests/gpu_quant"
timeout 150 build/gpu/gpu_quant >"$OUT/gpu_quant.log" 2>&1
say "gpu_quant exit $?: $(tail -1 "$OUT/gpu_quant.log")"
grep -E "FAIL|differ|wrong" "$OUT/gpu_quant.log" | head -30

if command -v compute-sanitizer >/dev/null; then
    say "compute-sanitizer memcheck on the convolution tests"
    echo "---- compute-sanitizer --tool memcheck build/gpu/gpu_quant test_conv" >>"$OUT/gpu_quant.log"
    timeout 90 compute-sanitizer --tool memcheck --error-exitcode 3 build/gpu/gpu_quant test_conv >>"$OUT/gpu_quant.log" 2>&1
    say "memcheck exit $?: $(tail -3 "$OUT/gpu_quant.log" | grep -E 'ERROR SUMMARY|passed' | tr '\n' ' ')"
fi

wait $layers_build
if [ -x build/int8_layers ]; then
    say "ResNet-18's int8 convolutions, layer by layer"
    timeout 60 build/int8_layers 256 >>"$OUT/layers.log" 2>&1
    say "layers exit $?"; tail -13 "$OUT/layers.log"
else
    say "layers did not build: tail of layers.log"; tail -20 "$OUT/layers.log"
fi

budget=$(( $(left) - 60 ))
if [ "$budget" -gt 30 ]; then
    say "bench/quantize (limit ${budget} s)"
    HPDL_RESULTS="$OUT" timeout "$budget" build/bench/quantize --max-size 2048 >"$OUT/bench.log" 2>&1
    say "bench exit $?"
    grep -A4 "CNN inference" "$OUT/bench.log"
    tail -2 "$OUT/bench.log"
else
    say "no time left for the bench"
fi

while kill -0 $conv_build 2>/dev/null && [ "$(left)" -gt 20 ]; do sleep 2; done
if [ -x build/gpu/gpu_conv ] && ! kill -0 $conv_build 2>/dev/null && [ "$(left)" -gt 20 ]; then
    say "tests/gpu_conv f16 and bf16 (limit $(left) s)"
    echo "---- build/gpu/gpu_conv test_conv_f16; build/gpu/gpu_conv test_conv_bf16" >>"$OUT/gpu_conv.log"
    timeout "$(left)" bash -c 'build/gpu/gpu_conv test_conv_f16; build/gpu/gpu_conv test_conv_bf16' >>"$OUT/gpu_conv.log" 2>&1
    say "gpu_conv exit $?"; grep -E "^(ok|FAIL)|passed" "$OUT/gpu_conv.log"
else
    say "gpu_conv not built in time (see gpu_conv.log)"; kill $conv_build 2>/dev/null
fi
say "done"
