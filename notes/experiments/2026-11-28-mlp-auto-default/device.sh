#!/usr/bin/env bash
# examples/mlp_train with the model's default now AUTO (hpdl's own kernels): --check (CPU and GPU
# from the same weights) in f64, f32 and f16, then 20 epochs of 784-512-10, batch 32, lr 0.05,
# f32 and f16, as the committed curves (bench/results/h100-80gb-hbm3/mlp_curve_*.csv, cuBLAS then).
#   from the repository root, Fashion-MNIST's .gz files in .gz/:  OUT=<dir> .../device.sh
set -u -o pipefail
OUT=${OUT:?set OUT to the output folder}
mkdir -p "$OUT/w"
exec > >(tee "$OUT/w/device.log") 2>&1
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
MNIST_DIR=.gz scripts/data.sh data/fashion-mnist > /dev/null || echo "no Fashion-MNIST"
E=build/h90/examples/mlp_train
for p in f64 f32 f16; do
  timeout 60 $E --check --precision $p > "$OUT/w/check_$p.log" 2>&1; echo "check $p rc $?"; tail -2 "$OUT/w/check_$p.log"
done
for p in f32 f16; do
  timeout 120 $E --precision $p --epochs 20 --csv "$OUT/w/curve_$p.csv" --util-csv "$OUT/w/util_$p.csv" > "$OUT/w/train_$p.log" 2>&1
  echo "train $p rc $?"; tail -3 "$OUT/w/train_$p.log"
done
cd "$OUT" && tar czf runs.tgz w && rm -rf w
