#!/usr/bin/env bash
# After the one-pass kernel for short K: ncu on the trailing products, gpu_gemm,
# then bench/gemm --mlp (f32, f16, bf16) into res/ (binaries of .commit).
set -u -o pipefail
export HPDL_COMMIT=$(cat .commit)
B=build/h90
mkdir -p "$OUT/res"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
timeout 100 ncu --csv --metrics gpu__time_duration.sum,launch__grid_size,launch__block_size,dram__bytes_read.sum,lts__t_bytes.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,launch__registers_per_thread \
  $B/exp/probe_narrow 3 > $OUT/ncu.csv 2> $OUT/ncu.err; echo "ncu rc $?"
timeout 150 $B/gpu/gpu_gemm > $OUT/gpu_gemm.log 2>&1; echo "gpu_gemm rc $?"; grep -E "FAIL|passed" $OUT/gpu_gemm.log | tail -3
timeout 220 $B/bench/gemm --mlp --output "$OUT/res" > "$OUT/gemm_mlp.log" 2>&1; echo "gemm --mlp rc $?"
grep -E "geomean_(auto|best)" "$OUT/res/gemm_mlp.csv"
