#!/usr/bin/env bash
# The CNN measurements of 2026-11-26 on one GPU (H200 or H100), from the repository root:
#   MODE=quick (default), < 9 minutes: build cnn_train, paleo_gpu and gpu_mlp (in parallel), run
#   gpu_mlp's two NVML sampler tests, then
#     1. time to 90 % of the small CNN on Fashion-MNIST, 5 seeds     scripts/gpu_cnn_tta.sh
#     2. NVML utilisation, eager then CUDA graphs, 15 s each           scripts/gpu_cnn_util.sh --quick
#     3. the CNNs' layers against PALEO (and paleo_gpu's other parts)  build/examples/paleo_gpu
#   MODE=util: the real utilisation series, over 3 minutes each: ~6.5 minutes, plus ~3 minutes of
#     build unless cnn_train is already built on the machine; else run it twice, MODES=eager
#     then MODES=graphs (each call's results.tar.gz then holds one series).
# Needs Fashion-MNIST's four .gz files in .gz/ (or data/fashion-mnist already there).
# Output, 2 files: $OUT/device.log (everything, CSVs included) and $OUT/results.tar.gz (the folder
# <gpu>/ with the CSVs and their .context files, for bench/results/<gpu>/).
set -u
OUT=${OUT:-/tmp/cnn-tta-out}
MODE=${MODE:-quick}
mkdir -p "$OUT" || exit 1
exec > >(tee "$OUT/device.log") 2>&1
start=$SECONDS
stamp() { echo "== $1 ($((SECONDS - start)) s)"; }
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)
slug=$(echo "$gpu" | tr 'A-Z' 'a-z' | sed -e 's/nvidia //' -e 's/[^a-z0-9]\{1,\}/-/g' -e 's/-$//')
work=$(mktemp -d)
DIR=$work/$slug
mkdir -p "$DIR"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv
export HPDL_COMMIT=${HPDL_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
stamp "data"
[ -s data/fashion-mnist/t10k-labels-idx1-ubyte ] || MNIST_DIR=.gz scripts/data.sh data/fashion-mnist || exit 1
stamp "build"
targets=build/examples/cnn_train
[ "$MODE" = quick ] && targets="$targets build/examples/paleo_gpu build/gpu/gpu_mlp"
timeout 420 make -j16 --no-print-directory $targets || { stamp "build failed"; exit 1; }
stamp "built"
if [ "$MODE" = quick ]; then
    stamp "0. the NVML sampler's tests (its CSV's folder and .context)"
    timeout 60 build/gpu/gpu_mlp nvml_sampler
    stamp "1. time to accuracy"
    timeout 150 scripts/gpu_cnn_tta.sh "$DIR"
    stamp "2. utilisation (quick)"
    timeout 120 scripts/gpu_cnn_util.sh --quick "$DIR"
    stamp "3. layers against PALEO"
    timeout 120 build/examples/paleo_gpu --output "$DIR"
else
    stamp "2. utilisation (over 3 minutes each: ${MODES:-eager graphs})"
    timeout 500 scripts/gpu_cnn_util.sh "$DIR"
fi
stamp "results"
for f in "$DIR"/cnn_tta.csv "$DIR"/cnn_layers.csv; do [ -f "$f" ] && { echo "-- ${f##*/}"; cat "$f"; }; done
tar -czf "$OUT/results.tar.gz" -C "$work" "$slug"
rm -rf "$work"
stamp "done"
