# The thin kernel with its 128-row tile split between two warpgroups (probe_hopper) against the
# kernel before (probe_hopper_prev, one warpgroup), in turns, two rounds: checks, then times.
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv > $OUT/gpu.txt
for r in 1 2; do
  for b in prev new; do
    bin=build/exp/probe_hopper_prev; [ $b = new ] && bin=build/exp/probe_hopper
    timeout 120 $bin > $OUT/$b$r.csv 2>&1; echo "$b$r rc $?"
  done
done
grep -h check $OUT/new1.csv | awk -F, '$4 > 0.01'
grep -h -E '^fwd_l0_h2048_b512,.*(auto|wgmma,|cublas)' $OUT/prev1.csv $OUT/new1.csv $OUT/prev2.csv $OUT/new2.csv
