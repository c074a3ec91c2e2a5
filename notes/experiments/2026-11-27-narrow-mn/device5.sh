# One H200, at the commit: gpu_gemm (the narrow kernels' tests also under
# memcheck and racecheck), bench/gemm --mlp f16 with the tensor-core narrow
# kernel (new) and without the narrow kernels (base), two rounds in turns;
# then the committed run: bench/gemm --mlp (f32, f16, bf16) and bench/mlp.
export HPDL_COMMIT=$(cat .commit)
build/gpu/gpu_gemm > $OUT/gpu_gemm.log 2>&1; echo "gpu_gemm rc $?" >> $OUT/gpu_gemm.log; tail -2 $OUT/gpu_gemm.log
timeout 150 compute-sanitizer --tool memcheck build/gpu/gpu_gemm test_gemm_narrow_mn > $OUT/memcheck.log 2>&1; echo "memcheck rc $?"; tail -n 1 $OUT/memcheck.log
timeout 150 compute-sanitizer --tool racecheck build/gpu/gpu_gemm test_gemm_narrow_mn > $OUT/racecheck.log 2>&1; echo "racecheck rc $?"; tail -n 1 $OUT/racecheck.log
for i in 1 2; do
  for b in base new; do
    bin=build/exp/gemm_base; [ $b = new ] && bin=build/bench/gemm
    timeout 100 $bin --mlp --precision f16 --output $OUT/${b}_f16_$i > $OUT/${b}_f16_$i.log 2>&1
  done
done
grep -H -E "^  auto " $OUT/*_f16_*.log
grep -h -E "dw_l1 .* auto" $OUT/new_f16_1.log
timeout 200 build/bench/gemm --mlp --output $OUT/res > $OUT/gemm_mlp.log 2>&1; echo "gemm --mlp rc $?"; grep -E "^  auto|geomean" $OUT/gemm_mlp.log | head
timeout 300 build/bench/mlp --output $OUT/res > $OUT/mlp.log 2>&1; echo "mlp rc $?"
cd $OUT && tar czf logs.tgz *.log base_* new_* && rm -rf *.log base_* new_*
