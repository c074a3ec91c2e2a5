#!/usr/bin/env bash
# One GPU: NHWC batch-norm inference through the element-wise pass, whose threads compute their
# channels' coefficients from the running statistics (no buffer, no kernel before it). gpu_conv's
# layer tests (against the f64 twin) and gpu_cnn beside each other, then paleo_gpu built from 291e532
# (old) and with the change (new), in turns, twice: cnn_layers.csv holds each layer's time alone.
set -u -o pipefail
export HPDL_COMMIT=${COMMIT:-unknown}
B=build/x; O=$OUT/r; mkdir -p $B $O
for f in build/carry11/*.gz; do n=$(basename $f .gz); gunzip -c $f > $B/$n && chmod +x $B/$n; done
start=$SECONDS; step() { echo "== $1 ($((SECONDS - start)) s)"; }
lane() { for item in "$@"; do IFS=: read -r name filter <<< "$item"; log=$O/${name}_${filter:-all}.log; step "$name $filter"
  timeout ${TEST_S:-200} $B/$name $filter > $log 2>&1; echo "rc=$?" >> $log; grep -v "^ok" $log | tail -n 4; done; }
lane gpu_cnn: > $O/lane0.out 2>&1 & lane gpu_conv:layers_f16 gpu_conv:layers_bf16 gpu_conv:layers_f32 gpu_conv:layers_f64 > $O/lane1.out 2>&1 & wait
cat $O/lane0.out $O/lane1.out
for round in 1 2; do for v in old new; do step "paleo_gpu $v round $round"
  timeout 150 $B/paleo_gpu_$v --output $O/${v}_r$round > $O/paleo_${v}_r$round.log 2>&1; echo "rc=$?" >> $O/paleo_${v}_r$round.log
  grep ",bn," $O/${v}_r$round/cnn_layers.csv | awk -F, '{s+=$9; n++} END {print n " batch norms, measured ms summed: " s}'
done; done
step done
tar czf /tmp/all.tgz -C $OUT . && rm -rf $OUT/* && mv /tmp/all.tgz $OUT/
