#!/usr/bin/env bash
# Not run yet. The tall x boxes of the backward-filter (tall_box.diff: one box two image rows
# taller per filter column, shared by the three filter rows; written and compiled for sm_90a on
# 2026-11-26, never run): the headers without it in build/base (carried), with it applied here,
# wgrad.cu before/after in turns, gpu_conv's 16-bit cases, bench/conv backward-filter.
#   mkdir -p build/base && cp hpdl.h hpdl_cuda.cuh build/base/ && git apply <dir>/tall_box.diff
# One H100, $OUT set; about 5 minutes.
set -u
O=${OUT:?set OUT}; mkdir -p $O build
start=$SECONDS
log() { echo "[$((SECONDS-start)) s] $*" | tee -a $O/summary.log; }
make features > /dev/null
NV="nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -DHPDL_HAVE_CUDNN -lineinfo"
W=notes/experiments/2026-11-26-conv-wgrad/wgrad.cu
make -j16 build/gpu/gpu_conv build/bench/conv > $O/build.log 2>&1 & p1=$!
$NV -I. $W -o build/wgrad_tall -lcudnn -lcuda > $O/build_wgrad.log 2>&1 & p2=$!
$NV -Ibuild/base -I. $W -o build/wgrad_base -lcudnn -lcuda >> $O/build_wgrad.log 2>&1 & p3=$!
wait $p2 $p3
for r in 1 2; do for b in base tall; do
  timeout 60 build/wgrad_$b f16 "r50" > $O/wgrad_${b}_$r.log 2>&1; log "wgrad $b run $r rc=$?"
  grep -E "conv. 3x3|geomean" $O/wgrad_${b}_$r.log | tee -a $O/summary.log
done; done
wait $p1
for t in test_conv_f16 test_conv_bf16; do
  timeout 150 build/gpu/gpu_conv $t > $O/gpu_conv_$t.log 2>&1; log "gpu_conv $t rc=$? $(tail -1 $O/gpu_conv_$t.log)"
done
for p in f16 bf16; do
  timeout 60 build/bench/conv --precision $p --pass backward-filter --rung wgmma --output $O/conv_${p}_wgrad > $O/conv_${p}_wgrad.log 2>&1
  log "bench/conv $p backward-filter rc=$?"; grep -E "geometric" $O/conv_${p}_wgrad.log | tee -a $O/summary.log
done
cd $O && tar czf runs.tgz conv_* gpu_conv_* wgrad_* build*.log && rm -rf conv_* gpu_conv_* wgrad_* build*.log
