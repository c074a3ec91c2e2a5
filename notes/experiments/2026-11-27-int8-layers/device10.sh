#!/usr/bin/env bash
# The register epilogue's column constants loaded once per column pair for both rows (the loops
# swapped): gpu_quant, memcheck of its conv tests, the convolutions against f16 and cuDNN, and
# bench/quantize whole into $OUT/q (the CSVs), then its CNN rows once more.
set -u
O=${OUT:?}
export HPDL_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
exec > >(tee $O/summary.log) 2>&1
start=$SECONDS
at() { echo "== $1 ($((SECONDS-start)) s)"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
at "gpu_quant"; timeout 120 build/gpu/gpu_quant > $O/gpu_quant.log 2>&1; echo "rc=$?"; tail -1 $O/gpu_quant.log
at "memcheck"; timeout 200 compute-sanitizer --tool memcheck build/gpu/gpu_quant test_conv_i8_exact > $O/memcheck.log 2>&1; echo "rc=$?"; tail -1 $O/memcheck.log
at "layers"; timeout 90 build/int8_vs_f16 256 2>&1 | tee $O/layers.log | tail -14
at "bench/quantize"; mkdir -p $O/q; timeout 240 build/bench/quantize --output $O/q > $O/q/quantize.log 2>&1; echo "rc=$?"; grep -A4 'CNN inference' $O/q/quantize.log
at "bench/quantize again"; timeout 150 build/bench/quantize --max-size 512 --output /tmp/q2 > $O/quantize_again.log 2>&1; echo "rc=$?"; grep -A4 'CNN inference' $O/quantize_again.log
(cd $O && tar czf q.tgz q && rm -rf q)
at "done"
