#!/bin/bash
# After the column pairs (d6ecc1b), one H200: gpu_conv's f16 cases under compute-sanitizer's
# memcheck (the paired kernels of both kinds), then its f32 cases (the new shapes on the f32 rungs).
set -u
C=build/carry12
gunzip -f $C/*.gz
mkdir -p $OUT/c2
{ time HPDL_TEST_SMALL=1 timeout 150 compute-sanitizer --tool memcheck $C/gpu_conv test_conv_f16; } \
    > $OUT/c2/memcheck_gpu_conv_f16.log 2>&1
{ time timeout 100 $C/gpu_conv test_conv_f32; } > $OUT/c2/gpu_conv_f32.log 2>&1
tar czf $OUT/c2.tgz -C $OUT c2 && rm -rf $OUT/c2
