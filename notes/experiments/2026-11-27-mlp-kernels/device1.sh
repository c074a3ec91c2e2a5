# One H200: gpu_gemm at HEAD (the split's last slice K), then the kernels
# cuBLAS and AUTO run for each MLP product (ncu, f16 and f32).
set -x
export HPDL_COMMIT=$(cat .commit)
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv > $OUT/gpu.txt
build/gpu/gpu_gemm > $OUT/gpu_gemm.log 2>&1; echo "gpu_gemm rc $?" >> $OUT/gpu_gemm.log
for t in f16 f32; do
  build/exp/probe_kernels $t > $OUT/probe_$t.txt
  ncu --metrics gpu__time_duration.sum,launch__grid_size,launch__block_size,launch__registers_per_thread \
      --csv build/exp/probe_kernels $t > $OUT/ncu_$t.csv 2> $OUT/ncu_$t.err
done
(cd $OUT && tar czf res.tgz *.log *.txt *.csv *.err && rm -f *.log *.txt *.csv *.err)
# Whole sections for the slowest products, cuBLAS's kernels and AUTO's
for spec in "f32 dw_l1 2048 3000" "f32 fwd_l1 2048 3000" "f16 dw_l1 2048 3000" "f16 fwd_l0 512 32"; do
  set -- $spec
  ncu --set full --kernel-name regex:'^[^p]' --export $OUT/full_$1_$2_$3_$4 build/exp/probe_kernels $spec > /dev/null 2>> $OUT/ncu_full.err
done
cd $OUT && tar czf full.tgz full_* ncu_full.err && rm -f full_* ncu_full.err
