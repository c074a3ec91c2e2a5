#!/bin/bash
# A change to the wgmma rung's backward-filter, on one H200 (flat k steps, then tall boxes across
# tiles): gpu_conv, then bench/conv's backward-filter on the wgmma rung before
# (conv_before: c877eaf) and after, in turns, f16 then bf16. Binaries built on the host for sm_90a,
# carried gzipped in build/carry8. Usage: bash run.sh COMMIT [TEST...] (the commit the "after"
# binaries are; gpu_conv's tests whose names contain one of TEST, else all).
set -u
C=build/carry8
gunzip -f $C/*.gz
mkdir -p $OUT/r
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $OUT/r/gpu.txt
if [ $# -gt 1 ]; then for t in "${@:2}"; do $C/gpu_conv $t; done; else $C/gpu_conv; fi > $OUT/r/gpu_conv.log 2>&1
for prec in f16 bf16; do
  for b in conv_before conv; do
    HPDL_COMMIT=$1 $C/$b --precision $prec --pass backward-filter --rung wgmma --output $OUT/r/$b-$prec \
      > $OUT/r/$b-$prec.log 2>&1
  done
done
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
