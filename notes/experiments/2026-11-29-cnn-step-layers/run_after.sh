#!/usr/bin/env bash
# One GPU: bench/cnn resnet18 over BATCHES alone, then gpu_cnn and gpu_conv's batch-norm layer tests beside each other.
set -u -o pipefail
export HPDL_COMMIT=${COMMIT}
B=build/h90/x; O=$OUT/r; mkdir -p $B $O/cnn
for f in cnn gpu_conv gpu_cnn; do gunzip -c build/carry/$f.gz > $B/$f && chmod +x $B/$f; done
nvidia-smi --query-gpu=index,name,clocks.max.sm --format=csv,noheader
start=$SECONDS; step() { echo "== $1 ($((SECONDS - start)) s)"; }
step cnn; timeout ${CNN_S:-200} $B/cnn resnet18 --batch ${BATCHES:-512,2048} --output $O/cnn > $O/cnn/cnn.log 2>&1
echo "rc=$?" >> $O/cnn/cnn.log; grep -A4 "^net" $O/cnn/cnn.log; tail -n 1 $O/cnn/cnn.log
lane() { for item in "$@"; do IFS=: read -r name filter <<< "$item"; log=$O/${name}_${filter:-all}.log; step "$name $filter"
  timeout ${TEST_S:-200} $B/$name $filter > $log 2>&1; echo "rc=$?" >> $log; grep -v "^ok" $log | tail -n 4; done; }
lane gpu_cnn: > $O/lane0.out 2>&1 & lane gpu_conv:layers_f16 gpu_conv:layers_bf16 gpu_conv:layers_f32 > $O/lane1.out 2>&1 & wait
cat $O/lane0.out $O/lane1.out; step done
tar czf /tmp/all.tgz -C $OUT . && rm -rf $OUT/* && mv /tmp/all.tgz $OUT/
