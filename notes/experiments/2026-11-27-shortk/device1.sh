# gpu_gemm, then bench/gemm --mlp in turns: the build before the short-K kernel (gemm_prev) and after.
set -x
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv > $OUT/gpu.txt
[ -z "$SKIP_TESTS" ] && { ./build/gpu/gpu_gemm > $OUT/gpu_gemm.log 2>&1; echo "gpu_gemm rc $?" >> $OUT/gpu_gemm.log; }
for r in 1 2; do
  for b in prev new; do
    bin=$PWD/build/exp/gemm_prev; [ $b = new ] && bin=$PWD/build/bench/gemm
    for p in f16 f32; do
      d=$OUT/run$r-$b-$p; mkdir -p $d; (cd $d && $bin --mlp --precision $p > log.txt 2>&1)
    done
  done
done
cd $OUT && tar czf results.tgz run[12]-* && rm -rf run[12]-*
