#!/usr/bin/env bash
# One GPU: bench/cnn's default run (small CNN and ResNet-18 at 32 and 128) for bench/results/h200/cnn.csv,
# then ncu's memory and warp-state sections on one step's batch-norm sums kernels (step_layers new2, 2048).
set -u -o pipefail
export HPDL_COMMIT=${COMMIT:-unknown}
B=build/x; O=$OUT/r; mkdir -p $B $O/cnn
for f in cnn step_layers_new2; do gunzip -c build/carry6/$f.gz > $B/$f && chmod +x $B/$f; done
start=$SECONDS; step() { echo "== $1 ($((SECONDS - start)) s)"; }
step cnn; timeout ${CNN_S:-400} $B/cnn --seed 2026 --output $O/cnn > $O/cnn/cnn.log 2>&1
echo "rc=$?" >> $O/cnn/cnn.log; grep -A8 "^net" $O/cnn/cnn.log; tail -n 1 $O/cnn/cnn.log
step ncu; timeout 120 ncu --kernel-name regex:"bn_nhwc_(sums|apply)" --launch-count 8 --section MemoryWorkloadAnalysis \
  --section WarpStateStats --section Occupancy --section LaunchStats --section SpeedOfLight \
  $B/step_layers_new2 2048 f16 auto > $O/ncu_sums.txt 2>&1; echo "rc=$?" >> $O/ncu_sums.txt; tail -n 2 $O/ncu_sums.txt
step done
tar czf /tmp/all.tgz -C $OUT . && rm -rf $OUT/* && mv /tmp/all.tgz $OUT/
