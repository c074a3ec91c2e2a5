#!/usr/bin/env bash
# One GPU: ResNet-18 trained on Fashion-MNIST with the fused batch norms, to 94 % test accuracy as
# bench/results/h200/cnn_tta_resnet18 (seed 1: 15 epochs, 67.5 s, before), in f32 and f16,
# and cnn_train --check (the GPU's steps against the CPU twin's).
set -u -o pipefail
export HPDL_COMMIT=${COMMIT:-unknown}
B=build/x; O=$OUT/r; mkdir -p $B $O
t=$SECONDS; make B=build/dev GPU_CC=90 build/dev/examples/cnn_train > $O/build.log 2>&1 || { tail -n 20 $O/build.log; exit 1; }
cp build/dev/examples/cnn_train $B/; echo "built in $((SECONDS - t)) s (the binary and the data do not fit in one carry)"
MNIST_DIR=.gz scripts/data.sh data/fashion-mnist > $O/data.log 2>&1 || { cat $O/data.log; exit 1; }
start=$SECONDS; step() { echo "== $1 ($((SECONDS - start)) s)"; }
step check; timeout 120 $B/cnn_train --net resnet18 --check > $O/check.log 2>&1; echo "rc=$?" >> $O/check.log; tail -n 3 $O/check.log
for p in f32 f16; do step "tta $p"
  timeout 200 $B/cnn_train --net resnet18 --precision $p --batch 128 --lr 0.05 --epochs 20 --schedule cosine --augment 2 \
    --flip --target-acc 0.94 --runs 1 --seed 1 --output $O/$p > $O/tta_$p.log 2>&1; echo "rc=$?" >> $O/tta_$p.log
  tail -n 4 $O/tta_$p.log
done
step done
tar czf /tmp/all.tgz -C $OUT . && rm -rf $OUT/* && mv /tmp/all.tgz $OUT/
