#!/usr/bin/env bash
# The MLP's GEMMs on hpdl's own kernels (2026-11-26): tests/gpu_gemm.cu (every
# rung with the new splitk one on the sweep's shapes; splitk and AUTO on the
# MLP's five products at odd sizes, twice for the same bits; AUTO's choice;
# splitk inside a captured graph), racecheck on the graph test and memcheck
# on the f16 MLP products (the mma.sync path), then bench/gemm --mlp: the
# five products of one training step of 784 -> H -> 10 for H in {512, 2048}
# and B in {32, 128, 512, 3000}, each rung checked against cuBLAS, then
# timed in turns with it, and the geometric means per type.
# Run from the repository root on one H100/H200 with $OUT an output folder:
#     OUT=/tmp/out bash notes/experiments/2026-11-26-mlp-gemm/device.sh
# Writes under $OUT (7 files): build.log, gpu_gemm.log (the sanitizer runs
# appended), bench.log, and the bench's gemm_mlp.csv, gemm_mlp_all.csv and
# their .context files. At most 290 + 90 + 30 + 50 + 70 s: under 9 minutes.
set -u
OUT=${OUT:?set OUT to an output folder}
mkdir -p "$OUT" build
t0=$(date +%s)
say() { echo "[$(( $(date +%s) - t0 )) s] $*"; }

say "building gpu_gemm and bench/gemm"
if ! timeout 290 make -j16 build/gpu/gpu_gemm build/bench/gemm >"$OUT/build.log" 2>&1; then
    say "build failed or timed out: tail of build.log"; tail -30 "$OUT/build.log"; exit 1
fi

say "tests/gpu_gemm"
timeout 90 build/gpu/gpu_gemm >"$OUT/gpu_gemm.log" 2>&1
say "gpu_gemm exit $?: $(tail -1 "$OUT/gpu_gemm.log")"
grep -E "FAIL|failed|differ|want|written|wrong" "$OUT/gpu_gemm.log" | head -30

if command -v compute-sanitizer >/dev/null; then
    say "compute-sanitizer racecheck: splitk in a graph"
    echo "---- compute-sanitizer --tool racecheck build/gpu/gpu_gemm splitk_graph" >>"$OUT/gpu_gemm.log"
    timeout 30 compute-sanitizer --tool racecheck --error-exitcode 3 build/gpu/gpu_gemm splitk_graph >>"$OUT/gpu_gemm.log" 2>&1
    say "racecheck exit $?: $(tail -3 "$OUT/gpu_gemm.log" | grep -E 'SUMMARY|passed' | tr '\n' ' ')"
    say "compute-sanitizer memcheck: splitk and AUTO on the MLP's f16 products"
    echo "---- compute-sanitizer --tool memcheck build/gpu/gpu_gemm mlp_f16" >>"$OUT/gpu_gemm.log"
    timeout 50 compute-sanitizer --tool memcheck --error-exitcode 3 build/gpu/gpu_gemm mlp_f16 >>"$OUT/gpu_gemm.log" 2>&1
    say "memcheck exit $?: $(tail -3 "$OUT/gpu_gemm.log" | grep -E 'SUMMARY|passed' | tr '\n' ' ')"
fi

say "bench/gemm --mlp"
timeout 70 build/bench/gemm --mlp --output "$OUT" >"$OUT/bench.log" 2>&1
say "bench exit $?"
grep -E "geometric|^  |WRONG" "$OUT/bench.log"
grep -E "^(f32|f16|bf16) " "$OUT/bench.log" | awk '$8 == "auto"' | head -130
say "done"
