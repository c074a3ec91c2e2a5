#!/usr/bin/env bash
# The quantization lab's table on GPU-trained networks (one H200 or H100, 16 cores), from the
# repository root, < 9 minutes with the two programs prebuilt:
#   1. the small CNN: cnn_train --net small (f32, batch 32, lr 0.02, cosine over 10 epochs, --save;
#      not the CPU table's 3 epochs on the CPU, 150 s each), then quantize_cnn --load
#      --device 0: the float steps and the calibration on the GPU, the integer-only steps on the
#      CPU (16 threads) and on the GPU, their logits compared on all 10000 test images;
#   2. ResNet-18: cnn_train --precision bf16 (EPOCHS [15], --augment 2 --flip, --save; the
#      per-epoch log), then quantize_cnn --net resnet18 --load --precision bf16 --device 0 the same.
# quantize_cnn exits 1 when a GPU logit differs from the CPU's; each step's exit status is logged.
# Binaries: ${B:-build}/examples/{cnn_train,quantize_cnn}, built here (make -j16, several minutes:
# over the budget with the training) unless present; prebuild them on the host with
#   make B=build90 GPU_CC=90 -j2 build90/examples/cnn_train build90/examples/quantize_cnn
# and run with B=build90 (GPU_CC=90 builds quantize_cnn.c with nvcc, as a GPU machine's make does).
# Needs Fashion-MNIST's four .gz files in .gz/ (or data/fashion-mnist already there).
# Output, 2 files: $OUT/device.log (everything, the CSVs included) and $OUT/results.tar.gz
# (<gpu>/small/ and <gpu>/resnet18/: quantize_cnn.csv, its ranges and weight histograms, contexts).
set -u
OUT=${OUT:-/tmp/qcnn-resnet18-out}
B=${B:-build}
EPOCHS=${EPOCHS:-15}
mkdir -p "$OUT" || exit 1
exec > >(tee "$OUT/device.log") 2>&1
start=$SECONDS
stamp() { echo "== $1 ($((SECONDS - start)) s)"; }
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)
slug=$(echo "$gpu" | tr 'A-Z' 'a-z' | sed -e 's/nvidia //' -e 's/[^a-z0-9]\{1,\}/-/g' -e 's/-$//')
work=$(mktemp -d)
mkdir -p "$work/$slug/small" "$work/$slug/resnet18"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv
nproc
export HPDL_COMMIT=${HPDL_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
stamp "data"
[ -s data/fashion-mnist/t10k-labels-idx1-ubyte ] || MNIST_DIR=.gz scripts/data.sh data/fashion-mnist || exit 1
stamp "build (only what is missing)"
missing=""
for p in cnn_train quantize_cnn; do [ -x "$B/examples/$p" ] || missing="$missing $B/examples/$p"; done
if [ -n "$missing" ]; then
    timeout 420 make -j16 --no-print-directory B="$B" $missing || { stamp "build failed"; exit 1; }
fi
stamp "built"

stamp "1a. small CNN: cnn_train f32, 10 epochs"
timeout 120 "$B/examples/cnn_train" --net small --batch 32 --lr 0.02 --epochs 10 --save "$work/small.ckpt"
echo "rc=$?"
stamp "1b. small CNN: quantize_cnn --device 0, all 10000 test images"
timeout 150 "$B/examples/quantize_cnn" --net small --load "$work/small.ckpt" --device 0 --threads 16 \
    --output "$work/$slug/small"
echo "rc=$?"

stamp "2a. ResNet-18: cnn_train bf16, $EPOCHS epochs"
timeout 300 "$B/examples/cnn_train" --net resnet18 --precision bf16 --batch 128 --lr 0.05 --epochs "$EPOCHS" \
    --schedule cosine --augment 2 --flip --save "$work/resnet18.ckpt"
echo "rc=$?"
stamp "2b. ResNet-18: quantize_cnn --device 0, all 10000 test images"
timeout 240 "$B/examples/quantize_cnn" --net resnet18 --load "$work/resnet18.ckpt" --precision bf16 --device 0 \
    --threads 16 --output "$work/$slug/resnet18"
echo "rc=$?"

stamp "results"
for net in small resnet18; do echo "-- $net/quantize_cnn.csv"; cat "$work/$slug/$net/quantize_cnn.csv"; done
tar -czf "$OUT/results.tar.gz" -C "$work" "$slug"
rm -rf "$work"
stamp "done"
