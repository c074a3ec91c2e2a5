#!/usr/bin/env bash
# ResNet-18 on Fashion-MNIST, time to accuracy TARGET: seeds 1..RUNS on GPU 0 and RUNS+1..2 RUNS on
# GPU 1 at the same time (cnn_train --runs each), under $OUT in one archive.
set -u -o pipefail
export HPDL_COMMIT=${COMMIT}
O=$OUT/r; mkdir -p $O build/examples
gunzip -c build/carry2/cnn_train.gz > build/examples/cnn_train && chmod +x build/examples/cnn_train
MNIST_DIR=.gz scripts/data.sh data/fashion-mnist > /dev/null || echo "no Fashion-MNIST"
nvidia-smi --query-gpu=index,name,clocks.max.sm --format=csv,noheader
start=$SECONDS
args="--net resnet18 --batch 128 --lr ${LR:-0.05} --epochs ${EPOCHS:-20} --schedule cosine ${EXTRA:-} --target-acc ${TARGET:-0.94} --runs ${RUNS:-3}"
echo "cnn_train $args"
for g in 0 1; do
  mkdir -p $O/gpu$g
  timeout ${TTA_S:-480} build/examples/cnn_train $args --seed $((1 + g * ${RUNS:-3})) --device $g --output $O/gpu$g > $O/gpu$g/cnn_tta.log 2>&1 &
done
wait
for g in 0 1; do echo "== GPU $g"; tail -12 $O/gpu$g/cnn_tta.log; done
echo "== done ($((SECONDS - start)) s)"
tar czf /tmp/all.tgz -C $OUT . && rm -rf $OUT/* && mv /tmp/all.tgz $OUT/
