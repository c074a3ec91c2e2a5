#!/bin/bash
# Pairs of row tiles in clusters of two for the wgmma rung's backward-filter, on one H200:
# gpu_conv (the tests whose names contain one of TEST, else all), bench/conv's backward-filter on
# the wgmma rung with c877eaf's binary (conv_before) and the change's, f16 then bf16, and ncu on
# wgrad_probe.cu (../2026-11-29-wgrad-flat/) built against the change's header.
# Binaries built on the host for sm_90a, carried gzipped in $CARRY (build/carry10; the probe only
# where it is there). Usage: bash run.sh COMMIT [TEST...]
set -u
C=${CARRY:-build/carry10}
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
if [ -x $C/probe ]; then
  $C/probe > $OUT/r/probe.txt 2>&1
  ncu --profile-from-start off --clock-control none --csv --section SpeedOfLight --section LaunchStats \
      $C/probe > $OUT/r/ncu_probe.csv 2>&1
fi
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
