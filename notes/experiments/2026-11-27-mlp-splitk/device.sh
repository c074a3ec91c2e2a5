#!/usr/bin/env bash
# One GPU (2026-11-27): bench/gemm --mlp with the splitk rung's slice sums added one load at a time
# (gemm_old, the commit before) against the overlapped loads (gemm_r) and two other splits of K
# (gemm_r_1_8: about one block per SM, slices at least 8 steps of 32; gemm_r_2_4: two blocks, 4
# steps), each against cuBLAS in turns; gemm_r again last (run-to-run spread). build.sh makes them.
#   OUT=<dir> notes/experiments/2026-11-27-mlp-splitk/device.sh
set -u
O=${OUT:?set OUT}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $O/summary.log
cat .commit 2>/dev/null | tee -a $O/summary.log
for v in gemm_old gemm_r gemm_r_1_8 gemm_r_2_4 gemm_r; do
    d=$O/$v; [ -d $d ] && d=${d}_again
    mkdir -p $d
    timeout 150 build/exp/$v --mlp --output $d > $d/bench.log 2>&1; echo "$v rc=$?" | tee -a $O/summary.log
    grep -i "geomean" $d/gemm_mlp.csv | tee -a $O/summary.log
done
tar -C $O -cf $O/runs.tar $(cd $O && ls -d gemm_*) && rm -rf $O/gemm_*
