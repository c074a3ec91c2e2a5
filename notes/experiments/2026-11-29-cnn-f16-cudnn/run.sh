#!/usr/bin/env bash
# One GPU: bench/cnn resnet18 (with the f16 cudnn variant) over BATCHES, then bench/conv f64 --quick.
set -u -o pipefail
export HPDL_COMMIT=${COMMIT}
B=build/h90/x; O=$OUT/r; mkdir -p $B $O/cnn $O/conv-f64
for f in cnn conv; do gunzip -c build/carry/$f.gz > $B/$f && chmod +x $B/$f; done
nvidia-smi --query-gpu=index,name,clocks.max.sm --format=csv,noheader
start=$SECONDS; step() { echo "== $1 ($((SECONDS - start)) s)"; }
step cnn; timeout ${CNN_S:-240} $B/cnn resnet18 --batch ${BATCHES:-512,2048} --output $O/cnn > $O/cnn/cnn.log 2>&1
echo "rc=$?" >> $O/cnn/cnn.log; grep -A6 "^net" $O/cnn/cnn.log; tail -n 1 $O/cnn/cnn.log
step "conv f64"; timeout ${CONV_S:-120} $B/conv --precision f64 ${CONV_ARGS:---quick} --output $O/conv-f64 > $O/conv-f64/conv.log 2>&1
echo "rc=$?" >> $O/conv-f64/conv.log; tail -n 30 $O/conv-f64/conv.log
step done
tar czf /tmp/all.tgz -C $OUT . && rm -rf $OUT/* && mv /tmp/all.tgz $OUT/
