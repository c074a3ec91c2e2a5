#!/usr/bin/env bash
# Commit of bench/quantize's ResNet-50 int8 convolution rows (code of 94b2b7d): the whole
# bench/quantize into $OUT/q (the CSVs committed to bench/results/h200), then its CNN rows again.
set -u
O=${OUT:?}
export HPDL_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
exec > >(tee $O/summary.log) 2>&1
start=$SECONDS
at() { echo "== $1 ($((SECONDS-start)) s)"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
at "bench/quantize"; mkdir -p $O/q; timeout 400 build/bench/quantize --output $O/q > $O/q/quantize.log 2>&1; echo "rc=$?"
grep -A4 'CNN inference' $O/q/quantize.log; grep -A10 'ResNet-50' $O/q/quantize.log; tail -1 $O/q/quantize.log
at "bench/quantize again"; timeout 150 build/bench/quantize --max-size 512 --cnn 1 --output /tmp/q2 > $O/quantize_again.log 2>&1; echo "rc=$?"; grep "resnet18  batch" $O/quantize_again.log
(cd $O && tar czf q.tgz q && rm -rf q)
at "done"
