#!/usr/bin/env bash
# One GPU, second round (2026-11-27): bench/gemm --mlp with 16-bit splitk shapes on the FMA
# kernel (gemm_fma1: narrow, fma3: narrow and short, fma7: all) and with more slices (r_8_2: 8
# blocks per SM; r_4_1: slices of one 32-deep step), gemm_r (this commit's library) first and last.
#   OUT=<dir> notes/experiments/2026-11-27-mlp-splitk/device2.sh      (build2.sh makes them)
set -u
O=${OUT:?set OUT}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $O/summary2.log
cat .commit 2>/dev/null | tee -a $O/summary2.log
for v in gemm_r gemm_fma1 gemm_fma3 gemm_fma7 gemm_r_8_2 gemm_r_4_1 gemm_r; do
    d=$O/$v; [ -d $d ] && d=${d}_again
    mkdir -p $d
    timeout 150 build/exp/$v --mlp --output $d > $d/bench.log 2>&1; echo "$v rc=$?" | tee -a $O/summary2.log
    grep -E "geomean_(auto|splitk|best_own)" $d/gemm_mlp.csv | cut -d, -f1,2 | tee -a $O/summary2.log
done
tar -C $O -cf $O/runs2.tar $(cd $O && ls -d gemm_*) && rm -rf $O/gemm_*
