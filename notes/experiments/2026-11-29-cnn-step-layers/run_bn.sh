#!/usr/bin/env bash
# One GPU: step_layers built from HEAD (before) and with the sums kernel's loads issued together
# (u4b2: 4 pixels a thread, 2 blocks an SM; u8: 8 pixels; b4: 4 blocks), in turns, twice.
set -u -o pipefail
O=$OUT/r; mkdir -p $O build/x
for v in $VARIANTS; do gunzip -c build/carry/step_layers_$v.gz > build/x/step_layers_$v && chmod +x build/x/step_layers_$v; done
for round in 1 2; do for b in ${BATCHES:-2048 512}; do for v in $VARIANTS; do
  echo "== $v batch $b round $round"
  timeout 60 build/x/step_layers_$v $b f16 auto > $O/${v}_b${b}_r$round.txt 2>&1; grep -E "batch norm|whole" $O/${v}_b${b}_r$round.txt
done; done; done
