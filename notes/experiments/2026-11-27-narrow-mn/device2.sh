# One H200: ncu on the narrow MN-major kernel, f16 against f32, at
# 512 x 10 x 128 and 2048 x 10 x 3000 (durations of every kernel, then the
# full sections of the narrow kernel's second call per type).
for s in "512 128" "2048 3000"; do
  set -- $s
  ncu --metrics gpu__time_duration.sum,launch__grid_size,dram__bytes_read.sum,sm__cycles_active.avg \
      build/exp/narrow_probe $1 $2 > $OUT/dur_$1_$2.txt 2>&1
  ncu --set full --kernel-name regex:narrow --launch-skip 1 --launch-count 1 build/exp/narrow_probe $1 $2 > $OUT/full_f16_$1_$2.txt 2>&1
  ncu --set full --kernel-name regex:narrow --launch-skip 3 --launch-count 1 build/exp/narrow_probe $1 $2 > $OUT/full_f32_$1_$2.txt 2>&1
done
grep -E "narrow|Kernel2|nvjet|splitK|gpu__time|dram__bytes" $OUT/dur_*.txt | head -60
