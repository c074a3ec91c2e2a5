# gpu_gemm (the thin and narrow-tile tests also under memcheck, the thin one under racecheck),
# the narrow-tile probe, then bench/gemm --mlp f16 and bf16 in turns with the build before
# (gemm_prev), two rounds.
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv > $OUT/gpu.txt
build/gpu/gpu_gemm > $OUT/gpu_gemm.log 2>&1; echo "gpu_gemm rc $?" >> $OUT/gpu_gemm.log; tail -2 $OUT/gpu_gemm.log
for t in test_gemm_hopper_thin test_gemm_hopper_narrow_tiles; do
  timeout 200 compute-sanitizer --tool memcheck build/gpu/gpu_gemm $t > $OUT/memcheck_$t.log 2>&1; echo "memcheck $t rc $?"; tail -n 1 $OUT/memcheck_$t.log
done
timeout 200 compute-sanitizer --tool racecheck build/gpu/gpu_gemm test_gemm_hopper_thin > $OUT/racecheck.log 2>&1; echo "racecheck rc $?"; tail -n 1 $OUT/racecheck.log
timeout 120 build/exp/probe_mid > $OUT/mid.csv 2>&1; echo "probe_mid rc $?"
for i in 1 2; do
  for b in prev new; do
    bin=build/exp/gemm_prev; [ $b = new ] && bin=build/bench/gemm
    for t in f16 bf16; do
      timeout 100 $bin --mlp --precision $t --output $OUT/${b}_${t}_$i > $OUT/${b}_${t}_$i.log 2>&1
    done
  done
done
grep -H -E "geomean" $OUT/*_f*_*/gemm_mlp.csv | grep -E "auto|best"
cd $OUT && tar czf logs.tgz *.log prev_* new_* && rm -rf *.log prev_* new_*
