# One H200: gpu_gemm with AUTO taking f32's 3xTF32 rung where its tiles
# fill 2/5 of the SMs (was 3/4); bench/gemm --mlp f32 with it (new) and
# without it (prev: 9eb5ebc's build), two rounds in turns.
export HPDL_COMMIT=$(cat .commit)
build/gpu/gpu_gemm > $OUT/gpu_gemm.log 2>&1; echo "gpu_gemm rc $?" >> $OUT/gpu_gemm.log; tail -2 $OUT/gpu_gemm.log
grep -E "^FAIL|failed" $OUT/gpu_gemm.log | head -5
for i in 1 2; do
  for b in prev new; do
    bin=build/exp/gemm_prev; [ $b = new ] && bin=build/bench/gemm
    timeout 100 $bin --mlp --precision f32 --output $OUT/${b}_f32_$i > $OUT/${b}_f32_$i.log 2>&1
  done
done
grep -H -E "^  auto " $OUT/*_f32_*.log
for f in prev_f32_1 new_f32_1; do echo "== $f"; grep -E "dw_l0 .* auto" $OUT/$f.log | awk '{print $2,$3,$4,$9,$10,$11}'; done
cd $OUT && tar czf logs.tgz *.log && rm -rf *.log prev_* new_*
