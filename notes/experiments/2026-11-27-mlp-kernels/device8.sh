# One H200: gpu_gemm with the splitk defaults changed (2 blocks an SM, 8
# slices added at once); bench/gemm --mlp f16 and f32, the new defaults
# (new) against the old ones (base), two rounds in turns.
export HPDL_COMMIT=$(cat .commit)
build/gpu/gpu_gemm > $OUT/gpu_gemm.log 2>&1; echo "gpu_gemm rc $?" >> $OUT/gpu_gemm.log; tail -2 $OUT/gpu_gemm.log
for i in 1 2; do
  for b in base new; do
    bin=build/exp/gemm_base; [ $b = new ] && bin=build/bench/gemm
    for t in f16 f32 bf16; do
      $bin --mlp --precision $t --output $OUT/${b}_${t}_$i > $OUT/${b}_${t}_$i.log 2>&1
    done
  done
done
grep -H -E "^  auto " $OUT/*.log
cd $OUT && tar czf res.tgz *.log && rm -rf *.log base_* new_*
