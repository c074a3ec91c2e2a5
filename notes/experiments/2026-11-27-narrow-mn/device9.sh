# One H200: gpu_gemm with the thin Hopper kernel on two warpgroups taking
# alternate k-steps (memcheck and racecheck on its test); bench/gemm --mlp
# f16 with it (new) and without it (prev: 3d9a4e4's build), two rounds in
# turns.
export HPDL_COMMIT=$(cat .commit)
build/gpu/gpu_gemm > $OUT/gpu_gemm.log 2>&1; echo "gpu_gemm rc $?" >> $OUT/gpu_gemm.log; tail -2 $OUT/gpu_gemm.log
grep -E "^FAIL|failed" $OUT/gpu_gemm.log | head -5
timeout 120 compute-sanitizer --tool memcheck build/gpu/gpu_gemm test_gemm_hopper_thin > $OUT/memcheck.log 2>&1; echo "memcheck rc $?"; tail -n 1 $OUT/memcheck.log
timeout 120 compute-sanitizer --tool racecheck build/gpu/gpu_gemm test_gemm_hopper_thin > $OUT/racecheck.log 2>&1; echo "racecheck rc $?"; tail -n 1 $OUT/racecheck.log
for i in 1 2; do
  for b in prev new; do
    bin=build/exp/gemm_prev; [ $b = new ] && bin=build/bench/gemm
    timeout 100 $bin --mlp --precision f16 --output $OUT/${b}_f16_$i > $OUT/${b}_f16_$i.log 2>&1
  done
done
grep -H -E "^  auto " $OUT/*_f16_*.log
for f in prev_f16_1 new_f16_1; do echo "== $f"; grep -E "(fwd_l0|dw_l0) .* auto" $OUT/$f.log | awk '{print $2,$3,$4,$9,$10,$11}'; done
cd $OUT && tar czf logs.tgz *.log && rm -rf *.log prev_* new_*
