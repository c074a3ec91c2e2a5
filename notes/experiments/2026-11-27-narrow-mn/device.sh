# One H200: gpu_gemm with the narrow MN-major kernel (its tests under
# memcheck and racecheck), then bench/gemm --mlp f16 and f32 with it (new)
# and without it (base: -DHPDL__NARROW_MN=0), two rounds in turns.
export HPDL_COMMIT=$(cat .commit)
build/gpu/gpu_gemm > $OUT/gpu_gemm.log 2>&1; echo "gpu_gemm rc $?" >> $OUT/gpu_gemm.log; tail -2 $OUT/gpu_gemm.log
timeout 150 compute-sanitizer --tool memcheck build/gpu/gpu_gemm test_gemm_narrow_mn > $OUT/memcheck.log 2>&1; echo "memcheck rc $?"; tail -1 $OUT/memcheck.log
timeout 100 compute-sanitizer --tool racecheck build/gpu/gpu_gemm test_gemm_narrow_mn > $OUT/racecheck.log 2>&1; echo "racecheck rc $?"; tail -1 $OUT/racecheck.log
for i in 1 2; do
  for b in base new; do
    bin=build/exp/gemm_base; [ $b = new ] && bin=build/bench/gemm
    for t in f16 f32; do
      timeout 100 $bin --mlp --precision $t --output $OUT/${b}_${t}_$i > $OUT/${b}_${t}_$i.log 2>&1
    done
  done
done
grep -H -E "^  auto " $OUT/*.log
grep -h -E "dw_l1 .* auto" $OUT/*_1.log
cd $OUT && tar czf res.tgz *.log && rm -rf *.log base_* new_*
