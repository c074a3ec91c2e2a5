#!/usr/bin/env bash
# Where the time goes (2026-11-26, fifth round): Fashion-MNIST ResNet-18 in bf16 with augmentation
# (the 94 % target), ncu's per-kernel sums of one training step (ResNet-18 f16 batch 128, small CNN
# f32/f16 batch 32), and ncu's full sections of the first f16 forward wgmma convolution of
# ResNet-18 (C = K = 64, 32x32) and of the first int8 wgmma convolution (same shape, batch 256).
# Binaries built on the host for sm_90a: build90/examples/cnn_train, build90/steps
# (notes/experiments/2026-11-26-cnn-mixed/steps.cu), build90/int8_layers
# (notes/experiments/2026-11-26-int8-wgmma/layers.cu).
set -u
O=${OUT:?}; B=build90
exec > >(tee $O/device1.log) 2>&1
start=$SECONDS
at() { echo "== $1 ($((SECONDS-start)) s)"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
MNIST_DIR=.gz scripts/data.sh data/fashion-mnist > /dev/null 2>&1 || echo "data.sh failed"
at "Fashion-MNIST ResNet-18 bf16, augmented"
timeout 240 $B/examples/cnn_train --net resnet18 --data data/fashion-mnist --precision bf16 --batch 128 --lr 0.05 \
    --epochs 15 --schedule cosine --augment 2 --flip > $O/fashion_resnet18_bf16_aug.log 2>&1
echo "exit $?"; tail -18 $O/fashion_resnet18_bf16_aug.log
at "step times"
timeout 30 $B/steps resnet18 128 3 20 f16; timeout 30 $B/steps small 32 3 100 f32; timeout 30 $B/steps small 32 3 100 f16
at "ncu per-kernel sums"
for run in "resnet18 128 1 1 f16" "small 32 1 1 f32" "small 32 1 1 f16"; do
    echo "### steps $run"
    timeout 150 ncu --metrics gpu__time_duration.sum --print-summary per-kernel $B/steps $run 2>&1 | grep -v "^==PROF=="
done > $O/ncu_steps.txt
at "ncu full: f16 forward wgmma, ResNet-18 stage 1"
timeout 120 ncu --set full -k hpdl__conv_wgmma -c 1 $B/steps resnet18 128 0 1 f16 > $O/ncu_conv_f16_s1.txt 2>&1
at "ncu full: int8 wgmma, ResNet-18 stage 1"
timeout 120 ncu --set full -k hpdl__conv_wgmma -c 1 $B/int8_layers 256 > $O/ncu_conv_i8_s1.txt 2>&1
at "int8 layers"
timeout 60 $B/int8_layers 256 | tail -13
at "done"
