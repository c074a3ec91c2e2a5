#!/usr/bin/env bash
# One GPU: the batch-norm kernels with 2 pixels a thread instead of 4 (fewer registers) on 3 and 4
# blocks an SM (u2b3, u2b4), against 841310a (new2: 4 pixels, 2 blocks), in turns at 2048 and 512, twice.
set -u -o pipefail
B=build/x; O=$OUT/r; mkdir -p $B $O
for f in build/carry9/*.gz; do n=$(basename $f .gz); gunzip -c $f > $B/$n && chmod +x $B/$n; done
for round in 1 2; do for b in 2048 512; do for v in new2 u2b3 u2b4; do
  echo "== $v batch $b round $round"
  timeout 60 $B/step_layers_$v $b f16 auto > $O/${v}_b${b}_r$round.txt 2>&1; grep -E "batch norm|whole" $O/${v}_b${b}_r$round.txt
done; done; done
tar czf /tmp/all.tgz -C $OUT . && rm -rf $OUT/* && mv /tmp/all.tgz $OUT/
