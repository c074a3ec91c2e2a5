#!/usr/bin/env bash
# FP8 on Hopper (2026-11-26): tests/gpu_fp8.cu (the casts' bits and amax
# against hpdl.h's conversions; the FP8 GEMM against hpdl_fp8_gemm_<t>,
# every pair of e4m3/e5m2, f32/f16/bf16 C, odd shapes, a stream-K shape),
# the GEMM tests once more under compute-sanitizer, then bench/gemm --fp8
# (hpdl's FP8 GEMM against cuBLASLt's FP8 GEMM at 2048^3, 4096^3, 8192^3,
# and against hpdl's f16 GEMM at 8192^3, timed in turns).
# Run from the repository root on one H100/H200 with $OUT an output folder:
#     OUT=/tmp/out bash notes/experiments/2026-11-26-fp8/device.sh
# Writes under $OUT (7 files): build.log, gpu_fp8.log (the memcheck run
# appended), bench.log, and the bench's gemm.csv, gemm_all.csv and their
# .context files. At most 280 + 80 + 30 + 60 s: under 8 minutes.
set -u
OUT=${OUT:?set OUT to an output folder}
mkdir -p "$OUT" build
t0=$(date +%s)
say() { echo "[$(( $(date +%s) - t0 )) s] $*"; }

say "building gpu_fp8 and bench/gemm"
if ! timeout 280 make -j16 build/gpu/gpu_fp8 build/bench/gemm >"$OUT/build.log" 2>&1; then
    say "build failed or timed out: tail of build.log"; tail -30 "$OUT/build.log"; exit 1
fi

say "tests/gpu_fp8"
timeout 80 build/gpu/gpu_fp8 >"$OUT/gpu_fp8.log" 2>&1
say "gpu_fp8 exit $?: $(tail -1 "$OUT/gpu_fp8.log")"
grep -E "FAIL|expected|wrong|largest" "$OUT/gpu_fp8.log" | head -30

if command -v compute-sanitizer >/dev/null; then
    say "compute-sanitizer memcheck on the small GEMM cases"
    echo "---- compute-sanitizer --tool memcheck build/gpu/gpu_fp8 test_gemm_edges" >>"$OUT/gpu_fp8.log"
    timeout 30 compute-sanitizer --tool memcheck --error-exitcode 3 build/gpu/gpu_fp8 test_gemm_edges >>"$OUT/gpu_fp8.log" 2>&1
    say "memcheck exit $?: $(tail -3 "$OUT/gpu_fp8.log" | grep -E 'ERROR SUMMARY|passed' | tr '\n' ' ')"
fi

say "bench/gemm --fp8"
timeout 60 build/bench/gemm --fp8 --output "$OUT" >"$OUT/bench.log" 2>&1
say "bench exit $?"
cat "$OUT/bench.log"
say "done"
