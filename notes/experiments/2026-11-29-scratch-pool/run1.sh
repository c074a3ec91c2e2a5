#!/bin/bash
# One H200: the scratch pool's eager cost (old and new header in turns), 16-bit
# backward-data of few-channel layers (AUTO, IM2COL through f32, MMA, cuDNN),
# the GPU tests whose kernels take scratch memory, and paleo_gpu's layer table.
# Binaries built on the host for sm_90a, carried gzipped in build/carry3.
set -u
cd build/carry3 && for f in *.gz; do gunzip -f "$f"; done; chmod +x *; cd ../..
B=build/carry3
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
for i in 1 2; do
  for v in old new; do echo "# $v $i"; $B/scratch_$v; done
done > $OUT/scratch.csv 2>&1
$B/stem_dgrad > $OUT/stem_dgrad.csv 2>&1
for t in gpu_conv gpu_cnn gpu_quant; do
  ( time $B/$t ) > $OUT/$t.log 2>&1; tail -1 $OUT/$t.log
done
mkdir -p $OUT/h200
HPDL_COMMIT=${HPDL_COMMIT:-unknown} $B/paleo_gpu --output $OUT/h200 > $OUT/paleo.log 2>&1; echo "paleo rc=$?"
