#!/usr/bin/env bash
# One GPU: gpu_cnn and gpu_conv's layer tests beside each other, then step_layers built from
# 291e532 (old) and with the fused batch norm + ReLU (new) in turns at 2048 and 512, twice,
# then ncu's speed of light on one step's batch-norm and element-wise kernels of each.
set -u -o pipefail
B=build/x; O=$OUT/r; mkdir -p $B $O
for f in build/carry3/*.gz; do n=$(basename $f .gz); gunzip -c $f > $B/$n && chmod +x $B/$n; done
nvidia-smi --query-gpu=index,name,clocks.max.sm --format=csv,noheader
start=$SECONDS; step() { echo "== $1 ($((SECONDS - start)) s)"; }
lane() { for item in "$@"; do IFS=: read -r name filter <<< "$item"; log=$O/${name}_${filter:-all}.log; step "$name $filter"
  timeout ${TEST_S:-200} $B/$name $filter > $log 2>&1; echo "rc=$?" >> $log; grep -v "^ok" $log | tail -n 4; done; }
lane gpu_cnn: > $O/lane0.out 2>&1 & lane gpu_conv:layers_f16 gpu_conv:layers_bf16 gpu_conv:layers_f32 gpu_conv:layers_f64 > $O/lane1.out 2>&1 & wait
cat $O/lane0.out $O/lane1.out
for round in 1 2; do for b in 2048 512; do for v in old new; do
  step "$v batch $b round $round"
  timeout 60 $B/step_layers_$v $b f16 auto > $O/${v}_b${b}_r$round.txt 2>&1; grep -E "batch norm|relu|whole" $O/${v}_b${b}_r$round.txt
done; done; done
for v in old new; do step "ncu $v"
  timeout 120 ncu --kernel-name regex:"bn_nhwc|elementwise" --launch-skip 0 --launch-count 60 --section SpeedOfLight \
    $B/step_layers_$v 2048 f16 auto > $O/ncu_$v.txt 2>&1; echo "rc=$?" >> $O/ncu_$v.txt; tail -n 2 $O/ncu_$v.txt
done
step done
tar czf /tmp/all.tgz -C $OUT . && rm -rf $OUT/* && mv /tmp/all.tgz $OUT/
