#!/usr/bin/env bash
# One GPU (2026-11-27): with the 16-bit packs, do one-step splitk slices pay now?
# gemm_base (the library at 14bd015, slices of 2+ 32-deep steps) against gemm_ms1
# (-DHPDL__SPLITK_MIN_STEPS=1), bench/gemm --mlp in turns, twice each.
#   OUT=<dir> notes/experiments/2026-11-27-splitk-packs/device_steps.sh
set -u
OUT=${OUT:?set OUT}
for v in gemm_base gemm_ms1 gemm_ms1 gemm_base; do
    d=$OUT/$v; [ -d $d ] && d=${d}_2; mkdir -p $d
    timeout 150 build/exp/$v --mlp --output $d > $d/bench.log 2>&1 || echo "$v failed"
    echo "$v: $(grep -E 'geomean_auto' $d/gemm_mlp.csv | cut -d, -f1,2 | tr '\n' ' ')"
done
tar -C $OUT -cf $OUT/runs.tar $(cd $OUT && ls -d gemm_*) && rm -rf $OUT/gemm_*
