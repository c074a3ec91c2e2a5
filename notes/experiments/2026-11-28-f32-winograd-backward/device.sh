#!/usr/bin/env bash
# bench/conv's f32 Winograd rung in both layouts, then tests/gpu_conv; everything under $OUT in one archive.
set -u -o pipefail
export HPDL_COMMIT=${COMMIT}
B=build/h90; mkdir -p $B/bench $B/gpu $OUT/r
start=$SECONDS; step() { echo "== $1 ($((SECONDS - start)) s)"; }
for f in ${BINS:-conv gpu_conv}; do d=bench; [[ $f == gpu_* ]] && d=gpu; gunzip -c build/carry/$f.gz > $B/$d/$f && chmod +x $B/$d/$f; done
nvidia-smi --query-gpu=index,name,clocks.max.sm --format=csv,noheader
for lay in ${LAYOUTS:-nchw nhwc}; do
  step "conv f32 $lay"; mkdir -p $OUT/r/$lay
  timeout ${CONV_S:-150} $B/bench/conv --precision f32 --layout $lay ${CONV_ARGS:---rung winograd} --output $OUT/r/$lay > $OUT/r/$lay/conv.log 2>&1
  echo "rc=$?" >> $OUT/r/$lay/conv.log; grep -v "^ *$" $OUT/r/$lay/conv.log | tail -${TAIL:-25}
done
for tf in ${TESTS:-gpu_conv:}; do t=${tf%%:*}; f=${tf#*:}
  step "$t $f"; timeout ${TEST_S:-380} $B/gpu/$t $f > $OUT/r/$t.log 2>&1; echo "rc=$?" >> $OUT/r/$t.log; tail -15 $OUT/r/$t.log
done
if [[ -n ${CNN:-} ]]; then
  step "cnn $CNN"; mkdir -p $OUT/r/cnn
  timeout ${CNN_S:-300} $B/bench/cnn $CNN --output $OUT/r/cnn > $OUT/r/cnn/cnn.log 2>&1; echo "rc=$?" >> $OUT/r/cnn/cnn.log; tail -30 $OUT/r/cnn/cnn.log
fi
step done
tar czf /tmp/all.tgz -C $OUT . && rm -rf $OUT/* && mv /tmp/all.tgz $OUT/
