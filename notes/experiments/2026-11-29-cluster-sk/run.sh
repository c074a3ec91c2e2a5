#!/bin/bash
# The Hopper rungs on few tiles and long K, on one H200: sk_probe.cu built against the header before
# and after (probe_old, probe_new; the first run also had probe_new9/4/2, stream-K piece costs of
# 9, 4 and 2 k-steps), each run twice in opposite orders; then gpu_gemm (the tests whose names
# contain one of TEST, else all). Binaries built on the host for sm_90a, carried gzipped in $CARRY.
# Each binary runs under a time limit (a hang once cost a whole call). Usage: bash run.sh [TEST...]
set -u
C=${CARRY:-build/carry14}
gunzip -f $C/*.gz
mkdir -p $OUT/r
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $OUT/r/gpu.txt
V=$(cd $C && ls probe_* | sed 's/probe_//')
for v in $V; do timeout 60 $C/probe_$v > $OUT/r/probe1_$v.csv 2>&1; done
for v in $(echo $V | tr ' ' '\n' | tac); do timeout 60 $C/probe_$v > $OUT/r/probe2_$v.csv 2>&1; done
if [ -x $C/gpu_gemm ]; then
  if [ $# -gt 0 ]; then for t in "$@"; do timeout 150 $C/gpu_gemm $t; done; else timeout 150 $C/gpu_gemm; fi > $OUT/r/gpu_gemm.log 2>&1
fi
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
