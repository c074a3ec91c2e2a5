#!/usr/bin/env bash
# One H200: where the int8 CNN forward's time goes (host_graph), the layers one by one
# (the 2026-11-27 nets.cu), and bench/quantize's CNN rows. Binaries built on the host for
# sm_90a (commit in $COMMIT), carried gzipped in build/carry4.
set -u
O=${OUT:?}/r; mkdir -p $O
export HPDL_COMMIT=${COMMIT:-unknown}
exec > >(tee $O/summary.log) 2>&1
start=$SECONDS; at() { echo "== $1 ($((SECONDS-start)) s)"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p build/x; for f in host_graph int8_nets quantize; do gunzip -c build/carry4/$f.gz > build/x/$f; chmod +x build/x/$f; done
at "host_graph"; timeout 120 build/x/host_graph > $O/host_graph.log 2>&1; echo "rc=$?"; cat $O/host_graph.log
at "int8_nets"; timeout 120 build/x/int8_nets > $O/nets.log 2>&1; echo "rc=$?"; grep -B1 -A14 "^small" $O/nets.log | head -16
at "bench/quantize CNN rows"; timeout 200 build/x/quantize --max-size 512 --cnn 1 --output $O/q > $O/quantize.log 2>&1; echo "rc=$?"; grep "batch 256" $O/quantize.log
(cd ${OUT} && tar czf all.tgz r && rm -rf r)
at "done"
