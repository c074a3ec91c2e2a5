#!/usr/bin/env bash
# After the border-class table (the padding correction one load an output of a border pixel,
# where it looped over the outside taps), on top of device3's changes. gpu_quant, memcheck of its conv tests (whole log), the CNNs layer by layer
# (before: int8_nets_base), the convolutions per layer against f16 and cuDNN, bench/quantize.
set -u
O=${OUT:?}
export HPDL_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
exec > >(tee $O/summary.log) 2>&1
start=$SECONDS
at() { echo "== $1 ($((SECONDS-start)) s)"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
at "gpu_quant"; timeout 120 build/gpu/gpu_quant > $O/gpu_quant.log 2>&1; echo "rc=$?"; grep -v "^ok" $O/gpu_quant.log | tail -14
at "memcheck"; timeout 150 compute-sanitizer --tool memcheck build/gpu/gpu_quant test_conv_i8_exact > $O/memcheck.log 2>&1; echo "rc=$?"
grep -c "Invalid" $O/memcheck.log; grep -m3 -A12 "Invalid" $O/memcheck.log | head -45; tail -3 $O/memcheck.log
at "nets after"; timeout 100 build/int8_nets > $O/nets_after.log 2>&1; echo "rc=$?"; grep -E "batch|sums|conv|add|quantize|linear" $O/nets_after.log | head -70
at "layers"; timeout 90 build/int8_vs_f16 256 2>&1 | tee $O/layers.log | tail -14
at "bench/quantize"; timeout 150 build/bench/quantize --max-size 512 --output /tmp/q > $O/bench_quantize.log 2>&1; grep -A4 'CNN inference' $O/bench_quantize.log
at "done"
