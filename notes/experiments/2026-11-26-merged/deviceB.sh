#!/usr/bin/env bash
# After merging the small CNN's step (few-channel kernels, small GEMMs, fused bias gradients) and
# quantize_cnn --cpu-images (2026-11-26): build on the device (make -j16, sm_90a), the GPU tests,
# small-CNN step times and ncu sums, bench/cnn (both nets, PyTorch in the same run), then
# ResNet-18 on Fashion-MNIST (bf16, 15 epochs) through quantize_cnn on the GPU (CPU reference
# logits on the first 1000 test images).
# Output: deviceB.log, tests.log, ncu_small.txt, cnn.log, cnn/ (csv, context), qcnn.tar.gz.
set -u
O=${OUT:?}
export HPDL_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
exec > >(tee $O/deviceB.log) 2>&1
start=$SECONDS
at() { echo "== $1 ($((SECONDS-start)) s)"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
(MNIST_DIR=.gz scripts/data.sh data/fashion-mnist > /dev/null 2>&1) &
data=$!
at "build"
timeout 330 make -j16 --no-print-directory build/gpu/gpu_conv build/gpu/gpu_cnn build/bench/cnn build/examples/cnn_train \
    build/examples/quantize_cnn > $O/build.log 2>&1 &
mk=$!
timeout 330 nvcc -std=c++17 -I. -O3 -gencode arch=compute_90a,code=sm_90a -DHPDL_HAVE_CUDNN \
    notes/experiments/2026-11-26-cnn-mixed/steps.cu -o build/steps -lcublas -lcublasLt -lcudnn -ldl
wait $mk; echo "make exit $?"; grep -E "error|warning" $O/build.log | head
wait $data
at "tests"
timeout 150 build/gpu/gpu_conv > $O/tests.log 2>&1; echo "gpu_conv exit $?"
timeout 120 build/gpu/gpu_cnn >> $O/tests.log 2>&1; echo "gpu_cnn exit $?"
grep -E "FAIL|error [0-9]|passed|failed" $O/tests.log | tail -20
at "small CNN step times and ncu sums"
for p in f32 f16; do for b in 32 128; do timeout 30 build/steps small $b 3 100 $p; done; done
for run in "small 32 1 1 f32" "small 32 1 1 f16"; do
    echo "### steps $run"
    timeout 60 ncu --metrics gpu__time_duration.sum --print-summary per-kernel build/steps $run 2>&1 | grep -v "^==PROF=="
done > $O/ncu_small.txt
at "ResNet-18 on Fashion-MNIST, then quantize_cnn"
W=$(mktemp -d); mkdir -p $W/resnet18
timeout 60 build/examples/cnn_train --net resnet18 --precision bf16 --batch 128 --lr 0.05 --epochs 15 \
    --schedule cosine --augment 2 --flip --save $W/r18.ckpt > $W/resnet18/cnn_train.log 2>&1; echo "train exit $?"
tail -3 $W/resnet18/cnn_train.log
timeout 150 stdbuf -oL build/examples/quantize_cnn --net resnet18 --load $W/r18.ckpt --precision bf16 --device 0 \
    --threads 16 --cpu-images 1000 --output $W/resnet18 > $W/resnet18/quantize_cnn.log 2>&1; echo "quantize exit $?"
tail -14 $W/resnet18/quantize_cnn.log
rm -f $W/r18.ckpt; tar -czf $O/qcnn.tar.gz -C $W resnet18
at "bench/cnn"
mkdir -p $O/cnn
timeout $((585 - (SECONDS-start))) build/bench/cnn --output $O/cnn > $O/cnn.log 2>&1; tail -8 $O/cnn.log
at "done"
