#!/usr/bin/env bash
# One GPU: step_layers with the element-wise pass on the sums kernel's grid (new: 2 blocks an SM),
# on 8 blocks an SM (a8), and with the sums kernel on 4 (a8s4), beside 291e532 (old), in turns.
set -u -o pipefail
B=build/x; O=$OUT/r; mkdir -p $B $O
for f in build/carry4/*.gz; do n=$(basename $f .gz); gunzip -c $f > $B/$n && chmod +x $B/$n; done
for round in 1 2; do for b in 2048 512; do for v in old new a8 a8s4; do
  echo "== $v batch $b round $round"
  timeout 60 $B/step_layers_$v $b f16 auto > $O/${v}_b${b}_r$round.txt 2>&1; grep -E "batch norm|relu|whole" $O/${v}_b${b}_r$round.txt
done; done; done
tar czf /tmp/all.tgz -C $OUT . && rm -rf $OUT/* && mv /tmp/all.tgz $OUT/
