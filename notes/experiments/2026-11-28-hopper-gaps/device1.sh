# Every Hopper rung and cuBLAS on the five f16 products that trail most, in turns (two rounds),
# then ncu's launch statistics of each rung's kernels (names, grids, clusters, durations).
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv > $OUT/gpu.txt
for r in 1 2; do timeout 120 build/exp/probe_hopper > $OUT/probe$r.csv 2>&1; echo "probe rc $?"; done
timeout 240 ncu --section LaunchStats --section SpeedOfLight --csv build/exp/probe_hopper once > $OUT/ncu.csv 2> $OUT/ncu.err; echo "ncu rc $?"
cat $OUT/probe1.csv
