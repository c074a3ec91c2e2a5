#!/usr/bin/env bash
# One GPU: bench/conv f16 alone first, then gpu_cnn and gpu_conv's filters in two lanes beside each other.
set -u -o pipefail
export HPDL_COMMIT=${COMMIT}
B=build/h90/x; O=$OUT/r; mkdir -p $B $O
for f in conv gpu_conv gpu_cnn; do gunzip -c build/carry/$f.gz > $B/$f && chmod +x $B/$f; done
nvidia-smi --query-gpu=index,name,clocks.max.sm --format=csv,noheader
start=$SECONDS; step() { echo "== $1 ($((SECONDS - start)) s)"; }
if [ -n "${CONV:-f16}" ]; then
  mkdir -p $O/conv-f16; step "conv f16"
  timeout ${CONV_S:-200} $B/conv --precision f16 --output $O/conv-f16 > $O/conv-f16/conv.log 2>&1
  echo "rc=$?" >> $O/conv-f16/conv.log; grep -i "geometric\|rc=" $O/conv-f16/conv.log | tail -n 4
fi
lane() { for item in "$@"; do IFS=: read -r name filter <<< "$item"; log=$O/${name}_${filter:-all}.log; step "$name $filter"
  timeout ${TEST_S:-300} $B/$name $filter > $log 2>&1; echo "rc=$?" >> $log; grep -v "^ok" $log | tail -n 5; done; }
lane $LANE0 > $O/lane0.out 2>&1 & lane $LANE1 > $O/lane1.out 2>&1 & wait
cat $O/lane0.out $O/lane1.out; step done
tar czf /tmp/all.tgz -C $OUT . && rm -rf $OUT/* && mv /tmp/all.tgz $OUT/
