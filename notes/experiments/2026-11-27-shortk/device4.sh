# At the commit with the narrow kernel's one-slice rule: gpu_gemm, gpu_mlp; bench/gemm --mlp f16
# and f32 in turns with the build before the rule (gemm_prev), two rounds; then the committed
# run: bench/gemm --mlp (f32, f16, bf16) and bench/mlp.
export HPDL_COMMIT=$(cat .commit)
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv > $OUT/gpu.txt
build/gpu/gpu_gemm > $OUT/gpu_gemm.log 2>&1; echo "gpu_gemm rc $?" >> $OUT/gpu_gemm.log; tail -2 $OUT/gpu_gemm.log
build/gpu/gpu_mlp > $OUT/gpu_mlp.log 2>&1; echo "gpu_mlp rc $?" >> $OUT/gpu_mlp.log; tail -2 $OUT/gpu_mlp.log
for i in 1 2; do
  for b in prev new; do
    bin=build/exp/gemm_prev; [ $b = new ] && bin=build/bench/gemm
    for t in f16 f32; do
      timeout 100 $bin --mlp --precision $t --output $OUT/${b}_${t}_$i > $OUT/${b}_${t}_$i.log 2>&1
    done
  done
done
grep -H -E "geomean" $OUT/*_f*_*/gemm_mlp.csv | grep -E "auto|best"
timeout 200 build/bench/gemm --mlp --output $OUT/res > $OUT/gemm_mlp.log 2>&1; echo "gemm --mlp rc $?"; grep -E "geomean" $OUT/res/gemm_mlp.csv | grep -E "auto|best"
timeout 300 build/bench/mlp --output $OUT/res > $OUT/mlp.log 2>&1; echo "mlp rc $?"
cd $OUT && tar czf logs.tgz *.log prev_* new_* && tar czf res.tgz res && rm -rf *.log prev_* new_* res
