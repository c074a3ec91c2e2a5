# One H200: the splitk rung's slices: as committed (base), about 2 blocks
# an SM instead of 4 (bpsm2), the last slice adding 8 slices' sums at once
# instead of 4 (unroll8); bench/gemm --mlp f16 and f32, two rounds in turns.
export HPDL_COMMIT=$(cat .commit)
for i in 1 2; do
  for b in base bpsm2 unroll8; do
    bin=build/exp/gemm_$b; [ $b = base ] && bin=build/bench/gemm
    for t in f16 f32; do
      $bin --mlp --precision $t --output $OUT/${b}_${t}_$i > $OUT/${b}_${t}_$i.log 2>&1
    done
  done
done
grep -H -E "^  auto " $OUT/*.log
cd $OUT && tar czf res.tgz *.log && rm -rf *.log base_* bpsm2_* unroll8_*
