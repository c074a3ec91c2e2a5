#!/usr/bin/env bash
# One GPU: gpu_cnn and gpu_conv's layer tests beside each other; step_layers from 291e532 (old),
# with batch norm + ReLU fused (new) and with batch norm + residual sum + ReLU fused too (new2),
# in turns at 2048 and 512, twice; then bench/cnn resnet18 at 32, 128, 512 and 2048.
set -u -o pipefail
export HPDL_COMMIT=${COMMIT:-unknown}
B=build/x; O=$OUT/r; mkdir -p $B $O/cnn
for f in build/carry5/*.gz; do n=$(basename $f .gz); gunzip -c $f > $B/$n && chmod +x $B/$n; done
nvidia-smi --query-gpu=index,name,clocks.max.sm --format=csv,noheader
start=$SECONDS; step() { echo "== $1 ($((SECONDS - start)) s)"; }
lane() { for item in "$@"; do IFS=: read -r name filter <<< "$item"; log=$O/${name}_${filter:-all}.log; step "$name $filter"
  timeout ${TEST_S:-200} $B/$name $filter > $log 2>&1; echo "rc=$?" >> $log; grep -v "^ok" $log | tail -n 4; done; }
lane gpu_cnn: > $O/lane0.out 2>&1 & lane gpu_conv:layers_f16 gpu_conv:layers_bf16 gpu_conv:layers_f32 gpu_conv:layers_f64 > $O/lane1.out 2>&1 & wait
cat $O/lane0.out $O/lane1.out
for round in 1 2; do for b in 2048 512; do for v in old new new2; do
  step "$v batch $b round $round"
  timeout 60 $B/step_layers_$v $b f16 auto > $O/${v}_b${b}_r$round.txt 2>&1; grep -E "batch norm|relu|residual|whole" $O/${v}_b${b}_r$round.txt
done; done; done
step cnn; timeout ${CNN_S:-330} $B/cnn resnet18 --batch 32,128,512,2048 --output $O/cnn > $O/cnn/cnn.log 2>&1
echo "rc=$?" >> $O/cnn/cnn.log; grep -A6 "^net" $O/cnn/cnn.log; tail -n 1 $O/cnn/cnn.log; step done
tar czf /tmp/all.tgz -C $OUT . && rm -rf $OUT/* && mv /tmp/all.tgz $OUT/
