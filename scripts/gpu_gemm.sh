#!/usr/bin/env bash
# Builds the GEMM tests and bench on the GPU machine, runs the tests (unless
# TESTS=0), then bench/gemm with the given arguments; the log, the CSVs and
# the chart data go under $OUT.
#   device tool:  scripts/gpu_gemm.sh              (every type and size)
#                 TESTS=0 scripts/gpu_gemm.sh --quick --type f16
set -u
OUT=${OUT:-bench/results/gpu}
mkdir -p "$OUT"
echo "== machine"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader
echo "== build"
make --no-print-directory -j"$(nproc)" build/gpu/gpu_gemm build/bench/gemm > "$OUT/gemm_build.log" 2>&1 ||
    { tail -n 30 "$OUT/gemm_build.log"; exit 1; }
if [ "${TESTS:-1}" != 0 ]; then
    echo "== tests"
    build/gpu/gpu_gemm > "$OUT/gpu_gemm.log" 2>&1
    echo "gpu_gemm exit $?: $(tail -n 1 "$OUT/gpu_gemm.log")"
fi
echo "== bench/gemm $*"
HPDL_RESULTS="$OUT" build/bench/gemm "$@" > "$OUT/gemm.log" 2>&1
echo "bench exit $?"
# the fast rungs and cuBLAS, in short
grep -E "^(f32|f64|f16|bf16|tf32) " "$OUT/gemm.log" | grep -E " (cublas|warptile|mma|wgmma_persistent|wgmma_cluster|mma.sync_peak) " |
    grep -v -E "unsupported|skipped" | awk '{printf "%-5s %5s %5s %5s %-17s %8s %7s\n", $1, $2, $3, $4, $5, $7, $8}'
