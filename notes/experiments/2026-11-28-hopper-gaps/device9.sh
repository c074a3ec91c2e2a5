# splitk with 2 (as built), 3 or 4 blocks an SM (HPDL__SPLITK_BLOCKS_PER_SM), now that a second
# kernel adds the slices from 4 slices on: bench/gemm --mlp f16 and f32, in turns, two rounds.
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv > $OUT/gpu.txt
for i in 1 2; do
  for b in b2 b3 b4; do
    bin=build/exp/gemm_bps${b#b}
    for t in f16 f32; do
      timeout 100 $bin --mlp --precision $t --output $OUT/${b}_${t}_$i > $OUT/${b}_${t}_$i.log 2>&1
    done
  done
done
grep -H -E "geomean" $OUT/*_*_*/gemm_mlp.csv | grep -E "auto" | sed 's/,ratio.*//'
cd $OUT && tar czf logs.tgz *.log b2_* b3_* b4_* && rm -rf *.log b2_* b3_* b4_*
