#!/bin/bash
# The rest of the checks for the paired backward-filter (eafa418's header), one H200: gpu_conv's
# f32 and f64 cases (the new shapes on every other rung), gpu_cnn (training uses the paired
# kernel on its 256- and 512-channel layers), and gpu_conv's f16 cases under compute-sanitizer's
# memcheck. Binaries built on the host for sm_90a, carried gzipped in build/carry11.
set -u
C=build/carry11
gunzip -f $C/*.gz
mkdir -p $OUT/c
{ time $C/gpu_conv test_conv_f32; time $C/gpu_conv test_conv_f64; } > $OUT/c/gpu_conv_f32_f64.log 2>&1
{ time $C/gpu_cnn; } > $OUT/c/gpu_cnn.log 2>&1
{ time HPDL_TEST_SMALL=1 timeout 300 compute-sanitizer --tool memcheck $C/gpu_conv test_conv_f16; } \
    > $OUT/c/memcheck_gpu_conv_f16.log 2>&1
tar czf $OUT/c.tgz -C $OUT c && rm -rf $OUT/c
