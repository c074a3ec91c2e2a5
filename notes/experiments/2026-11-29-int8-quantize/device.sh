#!/usr/bin/env bash
# One H200, the quantisation four columns a thread: gpu_quant, then the whole bench/quantize (its
# CSVs for bench/results/h200). Binaries built on the host for sm_90a; COMMIT names their commit.
set -u
O=${OUT:?}/r; mkdir -p $O
export HPDL_COMMIT=${COMMIT:?}
exec > >(tee $O/summary.log) 2>&1
start=$SECONDS; at() { echo "== $1 ($((SECONDS-start)) s)"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p build/x; for f in gpu_quant quantize; do gunzip -c build/carry4/$f.gz > build/x/$f; chmod +x build/x/$f; done
at "gpu_quant"; timeout 200 build/x/gpu_quant > $O/gpu_quant.log 2>&1; echo "rc=$?"; tail -n 1 $O/gpu_quant.log
at "bench/quantize"; mkdir -p $O/q; timeout 300 build/x/quantize --output $O/q > $O/q/quantize.log 2>&1; echo "rc=$?"
grep -A3 "MLP inference" $O/q/quantize.log; grep "batch 256" $O/q/quantize.log; tail -n 1 $O/q/quantize.log
(cd ${OUT} && tar czf all.tgz r && rm -rf r)
at "done"
