# One H200: gpu_gemm with the thin kernel; bench/gemm --mlp f16 with and
# without it (HPDL__WG_THIN_MAX_ROWS=0), twice each in turns; ncu durations.
export HPDL_COMMIT=$(cat .commit)
build/gpu/gpu_gemm > $OUT/gpu_gemm.log 2>&1; echo "gpu_gemm rc $?" >> $OUT/gpu_gemm.log
for i in 1 2; do
  build/bench/gemm --mlp --precision f16 --output $OUT/thin$i > $OUT/thin$i.log 2>&1
  build/exp/gemm_nothin --mlp --precision f16 --output $OUT/nothin$i > $OUT/nothin$i.log 2>&1
done
build/exp/probe_kernels f16 > $OUT/probe_f16.txt
ncu --metrics gpu__time_duration.sum,launch__grid_size,launch__block_size,launch__registers_per_thread \
    --csv build/exp/probe_kernels f16 > $OUT/ncu_f16.csv 2> $OUT/ncu_f16.err
cd $OUT && tar czf res.tgz *.log *.txt *.csv *.err thin* nothin* && rm -rf *.log *.txt *.csv *.err thin* nothin*
