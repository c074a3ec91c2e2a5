# Second kernels of a GEMM (the Hopper split's and splitk's slice adds) launched to start while
# the first finishes (programmatic dependent launch): gpu_gemm, memcheck and racecheck on the
# split tests, then bench/gemm --mlp (f16, bf16, f32) in turns with the build before (gemm_prev,
# at c5a9701), two rounds.
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv > $OUT/gpu.txt
build/gpu/gpu_gemm > $OUT/gpu_gemm.log 2>&1; echo "gpu_gemm rc $?"; tail -1 $OUT/gpu_gemm.log
for t in test_gemm_hopper_split_k test_gemm_splitk_apart; do
  timeout 200 compute-sanitizer --tool memcheck build/gpu/gpu_gemm $t > $OUT/memcheck_$t.log 2>&1; echo "memcheck $t rc $?"; tail -n 1 $OUT/memcheck_$t.log
  timeout 200 compute-sanitizer --tool racecheck build/gpu/gpu_gemm $t > $OUT/racecheck_$t.log 2>&1; echo "racecheck $t rc $?"; tail -n 1 $OUT/racecheck_$t.log
done
for i in 1 2; do
  for b in prev new; do
    bin=build/exp/gemm_prev; [ $b = new ] && bin=build/bench/gemm
    for t in f16 bf16 f32; do
      timeout 100 $bin --mlp --precision $t --output $OUT/${b}_${t}_$i > $OUT/${b}_${t}_$i.log 2>&1
    done
  done
done
grep -H -E "geomean" $OUT/*_*_*/gemm_mlp.csv | grep -E "auto|best" | sed 's/,ratio.*//'
cd $OUT && tar czf logs.tgz *.log prev_* new_* && rm -rf *.log prev_* new_*
