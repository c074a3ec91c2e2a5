# The one-tile rung's K split with the slices added by each tile's last slice (probe_hopper)
# against a second kernel adding them (probe_hopper_prev), in turns, two rounds; gpu_gemm's
# split tests, and memcheck and racecheck on the split test.
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv > $OUT/gpu.txt
for r in 1 2; do
  for b in prev new; do
    bin=build/exp/probe_hopper_prev; [ $b = new ] && bin=build/exp/probe_hopper
    timeout 120 $bin > $OUT/split_$b$r.csv 2>&1; echo "$b$r rc $?"
  done
done
grep -h check $OUT/split_new1.csv | awk -F, '$4 > 0.01'
grep -h -E '^dw_l0_h512_b3000,.*(auto|wgmma,|cublas)' $OUT/split_prev1.csv $OUT/split_new1.csv $OUT/split_prev2.csv $OUT/split_new2.csv
build/gpu/gpu_gemm > $OUT/gpu_gemm.log 2>&1; echo "gpu_gemm rc $?"; tail -1 $OUT/gpu_gemm.log
timeout 200 compute-sanitizer --tool memcheck build/gpu/gpu_gemm test_gemm_hopper_split_k > $OUT/memcheck_split.log 2>&1; echo "memcheck rc $?"; tail -n 1 $OUT/memcheck_split.log
timeout 200 compute-sanitizer --tool racecheck build/gpu/gpu_gemm test_gemm_hopper_split_k > $OUT/racecheck_split.log 2>&1; echo "racecheck rc $?"; tail -n 1 $OUT/racecheck_split.log
