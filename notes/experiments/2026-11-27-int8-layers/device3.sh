#!/usr/bin/env bash
# After: the int8 epilogue from the registers (notes/experiments/2026-11-26-int8-epi/epilogue.patch),
# the residual sum 16 codes a thread, the stem's image padded to 16 channels, the im2col rung in
# 32-bit arithmetic. gpu_quant, memcheck of its conv tests (whole log), the CNNs layer by layer
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
at "ncu nets"; timeout 120 ncu --profile-from-start off --metrics gpu__time_duration.sum build/int8_nets > $O/ncu_nets.txt 2>&1; echo "rc=$?"
grep -E "^  [a-zA-Z_].*\(|gpu__time_duration" $O/ncu_nets.txt | sed -E 's/\(CUtensorMap.*//; s/, Context.*//' | paste - - | awk '{print $NF, $1, $2, $3}' | head -120 > $O/ncu_nets_short.txt; wc -l $O/ncu_nets_short.txt
at "done"
