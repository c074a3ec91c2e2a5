#!/usr/bin/env bash
# bench/cnn resnet18 at batch 2048 from three builds (A: the cuDNN scratch capped at 1 GB;
# B: the scratch limited by free memory; C: B with the cuDNN workspace cap at 8 GB), then tests.
set -u -o pipefail
export HPDL_COMMIT=${COMMIT}
B=build/h90; O=$OUT/r; mkdir -p $B/x $O
for f in cnnA cnnB cnnC $TESTS; do gunzip -c build/carry/$f.gz > $B/x/$f && chmod +x $B/x/$f; done
nvidia-smi --query-gpu=index,name,clocks.max.sm,memory.total --format=csv,noheader
start=$SECONDS; step() { echo "== $1 ($((SECONDS - start)) s)"; }
for v in $VARIANTS; do
  mkdir -p $O/cnn$v; step "cnn$v"
  timeout ${CNN_S:-200} $B/x/cnn$v resnet18 --batch ${BATCHES:-2048} --output $O/cnn$v > $O/cnn$v/cnn.log 2>&1
  echo "rc=$?" >> $O/cnn$v/cnn.log; grep -A12 "^net" $O/cnn$v/cnn.log | head -14; tail -n 2 $O/cnn$v/cnn.log
done
for t in $TESTS; do
  step "$t"; timeout ${TEST_S:-240} $B/x/$t > $O/$t.log 2>&1; echo "rc=$?" >> $O/$t.log; grep -v "^ok" $O/$t.log | tail -n 8
done
step done
tar czf /tmp/all.tgz -C $OUT . && rm -rf $OUT/* && mv /tmp/all.tgz $OUT/
