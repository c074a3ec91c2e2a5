# gpu_gemm (the short-K test also under memcheck and racecheck); bench/gemm --mlp
# (f16, f32) in turns with the build before the short-K kernel (gemm_prev), two rounds.
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv > $OUT/gpu.txt
build/gpu/gpu_gemm > $OUT/gpu_gemm.log 2>&1; echo "gpu_gemm rc $?" >> $OUT/gpu_gemm.log; tail -2 $OUT/gpu_gemm.log
timeout 150 compute-sanitizer --tool memcheck build/gpu/gpu_gemm test_gemm_shortk > $OUT/memcheck.log 2>&1; echo "memcheck rc $?"; tail -n 1 $OUT/memcheck.log
timeout 150 compute-sanitizer --tool racecheck build/gpu/gpu_gemm test_gemm_shortk > $OUT/racecheck.log 2>&1; echo "racecheck rc $?"; tail -n 1 $OUT/racecheck.log
for i in 1 2; do
  for b in prev new; do
    bin=build/exp/gemm_prev; [ $b = new ] && bin=build/bench/gemm
    for t in f16 f32; do
      timeout 100 $bin --mlp --precision $t --output $OUT/${b}_${t}_$i > $OUT/${b}_${t}_$i.log 2>&1
    done
  done
done
grep -H -E "geomean" $OUT/*_f*_*/gemm_mlp.csv | grep -E "auto|best"
cd $OUT && tar czf logs.tgz *.log prev_* new_* && rm -rf *.log prev_* new_*
