#!/usr/bin/env bash
# One GPU: step_layers with the batch norm's loads first (bnloads) and with the residual sum's
# backward swapping buffers (swap), in turns, twice at 2048; then gpu_cnn on the swap build.
set -u -o pipefail
O=$OUT/r; mkdir -p $O build/x
for f in step_layers_bnloads step_layers_swap gpu_cnn; do gunzip -c build/carry/$f.gz > build/x/$f && chmod +x build/x/$f; done
for round in 1 2; do for v in bnloads swap; do
  echo "== $v round $round"; timeout 60 build/x/step_layers_$v 2048 f16 auto > $O/${v}_r$round.txt 2>&1
  grep -E "residual|whole" $O/${v}_r$round.txt
done; done
echo "== gpu_cnn"; timeout 200 build/x/gpu_cnn > $O/gpu_cnn.log 2>&1; echo "rc=$?" >> $O/gpu_cnn.log; tail -n 3 $O/gpu_cnn.log
