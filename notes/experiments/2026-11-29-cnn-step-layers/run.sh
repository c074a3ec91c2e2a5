#!/usr/bin/env bash
# One GPU: hpdl's step by layer kind (step_layers, built here and carried gzipped) and PyTorch
# AMP's kernels by kind (torch_kernels.py), at each batch of BATCHES.
set -u -o pipefail
D=notes/experiments/2026-11-29-cnn-step-layers; O=$OUT/r; mkdir -p $O build/x
gunzip -c build/carry/step_layers.gz > build/x/step_layers && chmod +x build/x/step_layers
nvidia-smi --query-gpu=index,name,clocks.max.sm --format=csv,noheader
for b in ${BATCHES:-2048 512}; do
  for conv in auto cudnn; do
    echo "== hpdl $b f16 $conv"; timeout 120 build/x/step_layers $b f16 $conv 2>&1 | tee $O/hpdl_b${b}_f16_$conv.txt
  done
  echo "== torch $b"; timeout 120 python3 $D/torch_kernels.py $b 2>&1 | tee $O/torch_b$b.txt
done
