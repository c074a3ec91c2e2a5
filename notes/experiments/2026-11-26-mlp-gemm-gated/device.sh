#!/usr/bin/env bash
# bench/gemm --mlp again with the timing gate (every round queued before the GPU starts): the MLP
# step's products are 3-60 us, where the host's queueing could land inside the intervals before.
# Binary built on the host (-O3, sm_90a) and carried. One GPU, $OUT set; about 1 minute.
set -u
O=${OUT:?set OUT}; export HPDL_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $O/summary.log
timeout 150 build/bench/gemm --mlp --output $O > $O/bench.log 2>&1; echo "bench/gemm --mlp rc=$?" | tee -a $O/summary.log
grep -i "geomean\|geometric" $O/bench.log | tee -a $O/summary.log
