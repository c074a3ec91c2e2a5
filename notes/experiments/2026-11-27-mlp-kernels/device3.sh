# One H200: gpu_gemm (thin kernel with 128-row blocks, refill while the
# next step runs); bench/gemm --mlp f16: thin up to 512 rows, none, all rows.
export HPDL_COMMIT=$(cat .commit)
build/gpu/gpu_gemm > $OUT/gpu_gemm.log 2>&1; echo "gpu_gemm rc $?" >> $OUT/gpu_gemm.log
for i in 1 2; do
  build/bench/gemm --mlp --precision f16 --output $OUT/thin$i > $OUT/thin$i.log 2>&1
  build/exp/gemm_nothin --mlp --precision f16 --output $OUT/nothin$i > $OUT/nothin$i.log 2>&1
  build/exp/gemm_thinall --mlp --precision f16 --output $OUT/thinall$i > $OUT/thinall$i.log 2>&1
done
cd $OUT && tar czf res.tgz *.log thin* nothin* && rm -rf *.log thin* nothin*
