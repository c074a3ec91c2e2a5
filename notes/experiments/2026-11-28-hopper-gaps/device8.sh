# splitk's slices added by a second kernel from 16 (as built), 8 or 4 slices on
# (HPDL__SPLITK_ADD_APART; the second kernel starts while the first finishes since 54cf0b9):
# bench/gemm --mlp f16 and f32, in turns, two rounds.
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv > $OUT/gpu.txt
for i in 1 2; do
  for b in a16 a8 a4; do
    bin=build/bench/gemm; [ $b = a8 ] && bin=build/exp/gemm_apart8; [ $b = a4 ] && bin=build/exp/gemm_apart4
    for t in f16 f32; do
      timeout 100 $bin --mlp --precision $t --output $OUT/${b}_${t}_$i > $OUT/${b}_${t}_$i.log 2>&1
    done
  done
done
grep -H -E "geomean" $OUT/*_*_*/gemm_mlp.csv | grep -E "auto" | sed 's/,ratio.*//'
cd $OUT && tar czf logs.tgz *.log a16_* a8_* a4_* && rm -rf *.log a16_* a8_* a4_*
