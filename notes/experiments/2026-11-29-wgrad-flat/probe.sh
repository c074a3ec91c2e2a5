#!/bin/bash
# wgrad_probe.cu against the header before (403a9d2) and after (6865f9d: tall boxes across tiles):
# event times, then ncu on one call per layer (every kernel of it). One H200.
set -u
C=build/carry9
gunzip -f $C/*.gz
mkdir -p $OUT/p
for v in before after; do
  $C/probe_$v > $OUT/p/probe_$v.txt 2>&1
  ncu --profile-from-start off --csv --section SpeedOfLight --section MemoryWorkloadAnalysis \
      --section WarpStateStats --section LaunchStats $C/probe_$v > $OUT/p/ncu_$v.csv 2> $OUT/p/ncu_$v.err
done
tar czf $OUT/p.tgz -C $OUT p && rm -rf $OUT/p
