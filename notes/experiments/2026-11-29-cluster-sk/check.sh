#!/bin/bash
# The GPU tests whose kernels share the changed Hopper code (the stages' release, the slices'
# adding), on one H200, each under a time limit; then ncu's names of cuBLAS's kernels on the
# probe's products (sk_probe refs). Binaries built on the host for sm_90a, carried gzipped in
# $CARRY. Usage: bash check.sh
set -u
C=${CARRY:-build/carry15}
gunzip -f $C/*.gz
mkdir -p $OUT/r
for t in gpu_gemm gpu_quant gpu_mlp gpu_fp8 gpu_cnn; do
  [ -x $C/$t ] && timeout 300 $C/$t > $OUT/r/$t.log 2>&1
done
for f in test_conv_f16 test_conv_bf16; do timeout 300 $C/gpu_conv $f; done > $OUT/r/gpu_conv.log 2>&1
[ -x $C/probe ] && timeout 120 ncu --csv --section LaunchStats $C/probe refs > $OUT/r/ncu_cublas.csv 2>&1
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
