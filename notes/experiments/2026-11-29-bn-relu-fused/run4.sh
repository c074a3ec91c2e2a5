#!/usr/bin/env bash
# One GPU: the batch-norm kernels' occupancy. step_layers of 841310a (new2: 98 and 87 registers a
# thread, two blocks an SM) against builds whose sums kernel keeps its double sums in shared
# memory instead of registers, with __launch_bounds__ and the grid at 2, 3 and 4 blocks an SM
# (b2, b3, b4), in turns at 2048 and 512, twice.
set -u -o pipefail
B=build/x; O=$OUT/r; mkdir -p $B $O
for f in build/carry7/*.gz; do n=$(basename $f .gz); gunzip -c $f > $B/$n && chmod +x $B/$n; done
for round in 1 2; do for b in 2048 512; do for v in new2 b2 b3 b4; do
  echo "== $v batch $b round $round"
  timeout 60 $B/step_layers_$v $b f16 auto > $O/${v}_b${b}_r$round.txt 2>&1; grep -E "batch norm|whole" $O/${v}_b${b}_r$round.txt
done; done; done
for v in new2 b3; do echo "== ncu $v"
  timeout 100 ncu --kernel-name regex:"bn_nhwc_(sums|apply)" --launch-count 4 --section SpeedOfLight --section Occupancy \
    --section LaunchStats $B/step_layers_$v 2048 f16 auto > $O/ncu_$v.txt 2>&1; echo "rc=$?" >> $O/ncu_$v.txt
done
tar czf /tmp/all.tgz -C $OUT . && rm -rf $OUT/* && mv /tmp/all.tgz $OUT/
