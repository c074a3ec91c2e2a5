# One H200: gpu_gemm (the narrow kernel's tests also under memcheck and
# racecheck), bench/gemm --mlp f16 and f32 with the narrow MN-major kernel
# (new) and without it (base, -DHPDL__NARROW_MN=0), two rounds in turns,
# then bench/mlp (hpdl's own kernels against the cuBLAS-backed epoch).
export HPDL_COMMIT=$(cat .commit)
build/gpu/gpu_gemm > $OUT/gpu_gemm.log 2>&1; echo "gpu_gemm rc $?" >> $OUT/gpu_gemm.log; tail -2 $OUT/gpu_gemm.log
timeout 150 compute-sanitizer --tool memcheck build/gpu/gpu_gemm test_gemm_narrow_mn > $OUT/memcheck.log 2>&1; echo "memcheck rc $?"; tail -n 1 $OUT/memcheck.log
timeout 150 compute-sanitizer --tool racecheck build/gpu/gpu_gemm test_gemm_narrow_mn > $OUT/racecheck.log 2>&1; echo "racecheck rc $?"; tail -n 1 $OUT/racecheck.log
for i in 1 2; do
  for b in base new; do
    bin=build/exp/gemm_base; [ $b = new ] && bin=build/bench/gemm
    for t in f16 f32; do
      timeout 100 $bin --mlp --precision $t --output $OUT/${b}_${t}_$i > $OUT/${b}_${t}_$i.log 2>&1
    done
  done
done
grep -H -E "^  auto " $OUT/*.log
grep -h -E "dw_l1 .* auto" $OUT/new_*_1.log
timeout 300 build/bench/mlp --output $OUT/mlp > $OUT/mlp.log 2>&1; echo "mlp rc $?"
cd $OUT && tar czf res.tgz *.log base_* new_* mlp && rm -rf *.log base_* new_* mlp
