#!/usr/bin/env bash
# One GPU: splitk's narrow tiles 32 deep for 16-bit operands (gemm_deep, -DHPDL__SPLITK_NARROW_DEEP)
# against the library's 16 deep (gemm_base), bench/gemm --mlp in turns, twice each.
#   OUT=<dir> notes/experiments/2026-11-27-wgmma-few-tiles/device5.sh
set -u
OUT=${OUT:?set OUT}
for v in gemm_base gemm_deep gemm_deep gemm_base; do
    d=$OUT/$v; [ -d $d ] && d=${d}_2; mkdir -p $d
    timeout 150 build/exp/$v --mlp --output $d > $d/bench.log 2>&1 || echo "$v failed"
    echo "$v: $(grep -E 'geomean_auto' $d/gemm_mlp.csv | cut -d, -f1,2 | tr '\n' ' ')"
    awk -F, '$14 == "auto" && ($10 == "fwd_l1" || $10 == "dw_l1") && $7 == "f16" { printf "  %s h%s b%s %s %.3f\n", $7, $8, $9, $10, $6 }' $d/gemm_mlp_all.csv | tr '\n' ' '; echo
done
tar -C $OUT -cf $OUT/runs.tar $(cd $OUT && ls -d gemm_*) && rm -rf $OUT/gemm_*
