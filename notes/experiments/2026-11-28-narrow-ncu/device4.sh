#!/usr/bin/env bash
# B read as 16-byte pieces in the one-pass kernel: ncu on the trailing products, gpu_gemm,
# gpu_mlp, then bench/gemm --mlp (f32, f16, bf16) twice, into res1/ and res2/ (binaries of .commit);
# all of it tarred (a run brings back at most 8 files).
set -u -o pipefail
export HPDL_COMMIT=$(cat .commit)
B=build/h90
OUT0=$OUT; OUT=$OUT/w
mkdir -p "$OUT/res1" "$OUT/res2"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
timeout 100 ncu --csv --metrics gpu__time_duration.sum,launch__grid_size,launch__block_size,dram__bytes_read.sum,lts__t_bytes.sum,launch__registers_per_thread \
  $B/exp/probe_narrow 3 > $OUT/ncu.csv 2> $OUT/ncu.err; echo "ncu rc $?"
timeout 150 $B/gpu/gpu_gemm > $OUT/gpu_gemm.log 2>&1; echo "gpu_gemm rc $?"; grep -E "FAIL|passed" $OUT/gpu_gemm.log | tail -3
timeout 100 $B/gpu/gpu_mlp > $OUT/gpu_mlp.log 2>&1; echo "gpu_mlp rc $?"; tail -n 1 $OUT/gpu_mlp.log
for i in 1 2; do
  timeout 200 $B/bench/gemm --mlp --output "$OUT/res$i" > "$OUT/gemm_mlp$i.log" 2>&1; echo "gemm --mlp rc $?"
  grep -E "geomean_(auto|best)" "$OUT/res$i/gemm_mlp.csv"
done
cd "$OUT0" && tar czf runs.tgz w && rm -rf w
