#!/usr/bin/env bash
# int8 convolution on the tensor cores and the quantized CNN on the GPU
# (2026-11-26): tests/gpu_quant.cu (every int8 kernel against its CPU twin,
# byte for byte; the conv and CNN cases once more under compute-sanitizer)
# and bench/quantize (GEMM sizes up to 2048 to save time, the MLP rows, the
# new CNN rows: int8 vs hpdl f16/f32 and PyTorch f16 inference, batch 256).
# Run from the repository root on one H100/H200 with $OUT an output folder:
#     OUT=/tmp/out bash notes/experiments/2026-11-26-int8-conv/device.sh
# Writes under $OUT: build.log, gpu_quant.log, memcheck.log, bench.log and
# the bench's CSVs (quantize.csv, quantize_gemm.csv, quantize_mlp.csv).
# Budget: build <= 6 min (the two programs in parallel), tests and bench
# <= 3 min together.
set -u
OUT=${OUT:?set OUT to an output folder}
mkdir -p "$OUT"
t0=$(date +%s)
say() { echo "[$(( $(date +%s) - t0 )) s] $*"; }

say "building gpu_quant and bench/quantize"
if ! timeout 360 make -j16 build/gpu/gpu_quant build/bench/quantize >"$OUT/build.log" 2>&1; then
    say "build failed or timed out: tail of build.log"; tail -30 "$OUT/build.log"; exit 1
fi

say "tests/gpu_quant"
timeout 120 build/gpu/gpu_quant >"$OUT/gpu_quant.log" 2>&1
say "gpu_quant exit $?: $(tail -1 "$OUT/gpu_quant.log")"
grep -E "FAIL|differ|wrong" "$OUT/gpu_quant.log" | head -20

if command -v compute-sanitizer >/dev/null; then
    say "compute-sanitizer memcheck on the convolution tests"
    timeout 60 compute-sanitizer --tool memcheck --error-exitcode 3 build/gpu/gpu_quant test_conv >"$OUT/memcheck.log" 2>&1
    say "memcheck exit $?: $(grep -E 'ERROR SUMMARY|passed' "$OUT/memcheck.log" | tr '\n' ' ')"
fi

remaining=$(( 530 - ($(date +%s) - t0) ))
[ "$remaining" -gt 30 ] || { say "no time left for the bench"; exit 0; }
say "bench/quantize (limit ${remaining} s)"
HPDL_RESULTS="$OUT" timeout "$remaining" build/bench/quantize --max-size 2048 >"$OUT/bench.log" 2>&1
say "bench exit $?"
grep -A4 "CNN inference" "$OUT/bench.log"
tail -2 "$OUT/bench.log"
