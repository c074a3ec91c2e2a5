#!/usr/bin/env bash
# Two orders of the register epilogue, same machine, in turns: "swapped" (commit 5c6f0bb: each
# column pair's constants loaded once for both rows, a border pixel's two corrections loaded
# beside them) and "preloaded" (the same, with both rows' 16 corrections loaded before the loop).
# gpu_quant and memcheck of the preloaded build, layers.cu of both, bench/quantize CNN rows A B A B.
set -u
O=${OUT:?}
export HPDL_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
exec > >(tee $O/summary.log) 2>&1
start=$SECONDS
at() { echo "== $1 ($((SECONDS-start)) s)"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
at "gpu_quant"; timeout 120 build/gpu/gpu_quant > $O/gpu_quant.log 2>&1; echo "rc=$?"; tail -1 $O/gpu_quant.log
at "memcheck"; timeout 200 compute-sanitizer --tool memcheck build/gpu/gpu_quant test_conv_i8_exact > $O/memcheck.log 2>&1; echo "rc=$?"; tail -1 $O/memcheck.log
at "layers swapped"; timeout 90 build/int8_vs_f16_swapped 256 2>&1 | tee $O/layers_swapped.log | tail -12
at "layers preloaded"; timeout 90 build/int8_vs_f16 256 2>&1 | tee $O/layers_preloaded.log | tail -12
for r in 1 2; do
  for v in swapped preloaded; do
    b=build/bench/quantize; [ $v = swapped ] && b=build/quantize_swapped
    at "bench/quantize $v $r"; timeout 150 $b --max-size 512 --output /tmp/q_$v$r > $O/quantize_${v}_$r.log 2>&1; echo "rc=$?"; grep "resnet18  batch" $O/quantize_${v}_$r.log
  done
done
at "done"
