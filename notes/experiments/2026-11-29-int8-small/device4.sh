#!/usr/bin/env bash
# One H200, the direct convolution with channel groups: gpu_quant, the layers one by one
# (nets.cu), then the whole bench/quantize (its CSVs for bench/results/h200). Binaries built on
# the host for sm_90a.
set -u
O=${OUT:?}/r; mkdir -p $O
export HPDL_COMMIT=${COMMIT:-unknown}
exec > >(tee $O/summary.log) 2>&1
start=$SECONDS; at() { echo "== $1 ($((SECONDS-start)) s)"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p build/x; for f in gpu_quant int8_nets quantize; do gunzip -c build/carry4/$f.gz > build/x/$f; chmod +x build/x/$f; done
at "gpu_quant"; timeout 200 build/x/gpu_quant > $O/gpu_quant.log 2>&1; echo "rc=$?"; grep -v "^ok" $O/gpu_quant.log | tail -n 15
at "int8_nets"; timeout 120 build/x/int8_nets > $O/nets.log 2>&1; echo "rc=$?"; grep -A14 "^small" $O/nets.log | head -16
at "bench/quantize"; mkdir -p $O/q; timeout 300 build/x/quantize --output $O/q > $O/q/quantize.log 2>&1; echo "rc=$?"
grep -A3 "CNN inference" $O/q/quantize.log; tail -n 2 $O/q/quantize.log
(cd ${OUT} && tar czf all.tgz r && rm -rf r)
at "done"
