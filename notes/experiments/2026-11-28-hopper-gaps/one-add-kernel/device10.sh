# One kernel adds the slices for both splits (hpdl__add_tile_slices_kernel, a thread per 4
# outputs; splitk's took one per output): gpu_gemm, memcheck on the split tests, then
# bench/gemm --mlp f16 and f32 in turns with the build before (gemm_prev), two rounds.
build/gpu/gpu_gemm > $OUT/gpu_gemm.log 2>&1; echo "gpu_gemm rc $?"; tail -1 $OUT/gpu_gemm.log
for t in test_gemm_splitk_apart test_gemm_hopper_split_k; do
  timeout 200 compute-sanitizer --tool memcheck build/gpu/gpu_gemm $t > $OUT/memcheck_$t.log 2>&1; echo "memcheck $t rc $?"; tail -n 1 $OUT/memcheck_$t.log
done
for i in 1 2; do
  for b in prev new; do
    bin=build/exp/gemm_prev; [ $b = new ] && bin=build/bench/gemm
    for t in f16 f32; do
      timeout 100 $bin --mlp --precision $t --output $OUT/${b}_${t}_$i > $OUT/${b}_${t}_$i.log 2>&1
    done
  done
done
grep -H -E "geomean" $OUT/*_*_*/gemm_mlp.csv | grep -E "auto" | sed 's/,ratio.*//'
cd $OUT && tar czf logs.tgz *.log prev_* new_* && rm -rf *.log prev_* new_*
