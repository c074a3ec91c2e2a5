#!/usr/bin/env bash
# One GPU: after the batch norm's grid is worked out once a call (for both passes), gpu_cnn and
# gpu_conv's layer tests beside each other.
set -u -o pipefail
B=build/x; O=$OUT/r; mkdir -p $B $O
for f in build/carry12/*.gz; do n=$(basename $f .gz); gunzip -c $f > $B/$n && chmod +x $B/$n; done
lane() { for item in "$@"; do IFS=: read -r name filter <<< "$item"; log=$O/${name}_${filter:-all}.log; echo "== $name $filter"
  timeout 200 $B/$name $filter > $log 2>&1; echo "rc=$?" >> $log; grep -v "^ok" $log | tail -n 4; done; }
lane gpu_cnn: > $O/lane0.out 2>&1 & lane gpu_conv:layers_f16 gpu_conv:layers_bf16 gpu_conv:layers_f32 gpu_conv:layers_f64 > $O/lane1.out 2>&1 & wait
cat $O/lane0.out $O/lane1.out
tar czf /tmp/all.tgz -C $OUT . && rm -rf $OUT/* && mv /tmp/all.tgz $OUT/
