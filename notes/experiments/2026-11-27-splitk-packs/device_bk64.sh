#!/usr/bin/env bash
# One GPU (2026-11-27): with the 16-bit packs, are 64-deep narrow tiles faster for 16-bit operands?
# gemm_base (the library at 14bd015, narrow16 tiles 32 deep) against gemm_bk64
# (-DHPDL__SPLITK_NARROW16_BK=64), bench/gemm --mlp in turns, twice each.
#   OUT=<dir> notes/experiments/2026-11-27-splitk-packs/device_bk64.sh
set -u
OUT=${OUT:?set OUT}
for v in gemm_base gemm_bk64 gemm_bk64 gemm_base; do
    d=$OUT/$v; [ -d $d ] && d=${d}_2; mkdir -p $d
    timeout 150 build/exp/$v --mlp --output $d > $d/bench.log 2>&1 || echo "$v failed"
    echo "$v: $(grep -E 'geomean_auto' $d/gemm_mlp.csv | cut -d, -f1,2 | tr '\n' ' ')"
done
tar -C $OUT -cf $OUT/runs.tar $(cd $OUT && ls -d gemm_*) && rm -rf $OUT/gemm_*
