#!/usr/bin/env bash
# Time to accuracy of the small CNN on Fashion-MNIST over seeds: RUNS runs (5) of cnn_train with
# seeds 1..RUNS, each stopped at the first epoch whose test accuracy reaches TARGET (0.90), with the
# settings of notes/cnn.md's 0.906 run (batch 32, lr 0.02, SGD 0.9, wd 5e-4, cosine over 20 epochs).
# Writes DIR/cnn_tta.csv (+ .context): per seed its epochs and training seconds (evaluation
# excluded), then mean, std and coefficient of variation over the runs that reached TARGET; log in
# DIR/cnn_tta.log. Run it on two GPUs and compare the two folders' CSVs.
#   scripts/gpu_cnn_tta.sh [DIR]   DIR: results/<gpu> (the GPU's name as make bench names it)
#   RUNS=10 TARGET=0.9 EPOCHS=20 scripts/gpu_cnn_tta.sh
# Builds build/examples/cnn_train and data/fashion-mnist when they are missing. Exit status:
# cnn_train's (1 when a run missed TARGET).
set -u
cd "$(dirname "$0")/.." || exit 1
NAME=gpu_cnn_tta
. scripts/cnn_train_setup.sh "$@"
build/examples/cnn_train --net small --batch 32 --lr 0.02 --epochs "${EPOCHS:-20}" --target-acc "${TARGET:-0.90}" \
    --runs "${RUNS:-5}" --seed 1 --output "$DIR" 2>&1 | tee "$DIR/cnn_tta.log"
rc=${PIPESTATUS[0]}
echo "gpu_cnn_tta: $gpu, exit $rc, $DIR/cnn_tta.csv"
exit "$rc"
